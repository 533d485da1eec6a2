import BluetoothCore
import HCI
import TestSupport

/// Golden event packets (code, length, parameters) hand-built from Core 5.4 Vol 4 Part E §7.7 layouts; the LE
/// Encrypt Command Complete is the spec's own sample (Vol 6 Part C §1.1, spec-vectors.md §1.1).
enum EventVectors {
    static let peerPublic = BluetoothAddress(0x001A_7DDA_7113)
    static let peerRandom = BluetoothAddress(0xC011_2233_4455, type: .random)
    static let localRPA = BluetoothAddress(0x4A11_2233_4455, type: .random)
    static let noRPA = BluetoothAddress(0, type: .random)

    static func complete(_ opcode: HCIOpcode, _ returned: HCIReturnParameters) -> HCIEvent {
        .commandComplete(numHCICommandPackets: 1, opcode: opcode, returnParameters: returned)
    }

    static let connection = LEConnectionComplete(
        handle: 0x0040, role: .central, peerAddressType: .random, peerAddress: peerRandom,
        connectionInterval: 0x0018, supervisionTimeout: 0x01F4)
    static let enhanced = LEEnhancedConnectionComplete(
        connection: LEConnectionComplete(handle: 0x0040, role: .peripheral, peerAddressType: .public,
                                         peerAddress: peerPublic, connectionInterval: 0x0018, supervisionTimeout: 0x01F4,
                                         centralClockAccuracy: 1),
        localResolvablePrivateAddress: localRPA, peerResolvablePrivateAddress: noRPA)
    static let enhancedHex = "00 4000 01 00 1371da7d1a00 5544332211 4a 000000000000 1800 0000 f401 01"

    static let all: [(HCIEvent, String)] = [
        (.disconnectionComplete(status: .success, handle: 0x0040, reason: .remoteUserTerminatedConnection), "05 04 00 4000 13"),
        (.encryptionChange(status: .success, handle: 0x0040, encryptionEnabled: 1), "08 04 00 4000 01"),
        (.encryptionChangeV2(status: .success, handle: 0x0040, encryptionEnabled: 1, encryptionKeySize: 16), "59 05 00 4000 01 10"),
        (.readRemoteVersionInformationComplete(status: .success, handle: 0x0040, version: 0x0D,
                                               companyIdentifier: .nordicSemiconductor, subversion: 0x1234),
         "0c 08 00 4000 0d 5900 3412"),
        (.commandComplete(numHCICommandPackets: 2, opcode: .leEncrypt, returnParameters:
            .leEncrypt(status: .success, encryptedData: hex("66c6c2278e3b8e053e7ea326521bad99"))),
         "0e 14 02 1720 00 66c6c2278e3b8e053e7ea326521bad99"),
        (complete(.reset, .status(.success)), "0e 04 01 030c 00"),
        (complete(.readBDADDR, .readBDADDR(status: .success, address: peerPublic)), "0e 0a 01 0910 00 1371da7d1a00"),
        (complete(.leReadBufferSize, .leReadBufferSize(status: .success, leACLDataPacketLength: 251, totalNumLEACLDataPackets: 15)),
         "0e 07 01 0220 00 fb00 0f"),
        (complete(.leReadBufferSizeV2, .leReadBufferSizeV2(status: .success, leACLDataPacketLength: 251,
                                                            totalNumLEACLDataPackets: 15, isoDataPacketLength: 0,
                                                            totalNumISODataPackets: 0)),
         "0e 0a 01 6020 00 fb00 0f 0000 00"),
        (complete(.leRand, .leRand(status: .success, randomNumber: 0x0102_0304_0506_0708)), "0e 0c 01 1820 00 0807060504030201"),
        (complete(.readRSSI, .readRSSI(status: .success, handle: 0x0040, rssi: -50)), "0e 07 01 0514 00 4000 ce"),
        (complete(.leReadMaximumDataLength, .leReadMaximumDataLength(status: .success, maxTxOctets: 251, maxTxTime: 17040,
                                                                      maxRxOctets: 251, maxRxTime: 17040)),
         "0e 0c 01 2f20 00 fb00 9042 fb00 9042"),
        (complete(.readLocalVersionInformation, .readLocalVersionInformation(status: .success, version: HCILocalVersionInformation(
            hciVersion: 0x0D, hciSubversion: 0, lmpVersion: 0x0D, companyIdentifier: CompanyIdentifier(0x05F1), lmpSubversion: 0))),
         "0e 0c 01 0110 00 0d 0000 0d f105 0000"),
        (complete(.readLocalSupportedCommands, .readLocalSupportedCommands(status: .success, commands: (0..<64).map { UInt8($0) })),
         "0e 44 01 0210 00" + Hex.encode((0..<64).map { UInt8($0) })),
        (complete(.readLocalSupportedFeatures, .readLocalSupportedFeatures(status: .success, features: 0x0000_0060_0000_0000)),
         "0e 0c 01 0310 00 0000000060000000"),
        (complete(.readBufferSize, .readBufferSize(status: .success, aclDataPacketLength: 1021, synchronousDataPacketLength: 0,
                                                    totalNumACLDataPackets: 8, totalNumSynchronousDataPackets: 0)),
         "0e 0b 01 0510 00 fd03 00 0800 0000"),
        (complete(.readTransmitPowerLevel, .readTransmitPowerLevel(status: .success, handle: 0x0040, txPowerLevel: 4)),
         "0e 07 01 2d0c 00 4000 04"),
        (complete(.leReadLocalSupportedFeatures, .leReadLocalSupportedFeatures(status: .success, features: 0x01FF)),
         "0e 0c 01 0320 00 ff01000000000000"),
        (complete(.leReadAdvertisingPhysicalChannelTxPower, .leReadAdvertisingPhysicalChannelTxPower(status: .success, txPowerLevel: -4)),
         "0e 05 01 0720 00 fc"),
        (complete(.leReadFilterAcceptListSize, .leReadFilterAcceptListSize(status: .success, size: 8)), "0e 05 01 0f20 00 08"),
        (complete(.leReadResolvingListSize, .leReadResolvingListSize(status: .success, size: 16)), "0e 05 01 2a20 00 10"),
        (complete(.leReadPeerResolvableAddress, .leReadPeerResolvableAddress(
            status: .success, address: BluetoothAddress(0x4A11_2233_4455, type: .random))), "0e 0a 01 2b20 00 55443322114a"),
        (complete(.leReadLocalResolvableAddress, .leReadLocalResolvableAddress(
            status: .unknownConnectionIdentifier, address: BluetoothAddress(0, type: .random))), "0e 0a 01 2c20 02 000000000000"),
        (complete(.leReadSupportedStates, .leReadSupportedStates(status: .success, states: 0x0000_03FF_FFFF_FFFF)),
         "0e 0c 01 1c20 00 ffffffffff030000"),
        (complete(.leReadSuggestedDefaultDataLength, .leReadSuggestedDefaultDataLength(status: .success, txOctets: 27, txTime: 328)),
         "0e 08 01 2320 00 1b00 4801"),
        (complete(.leReadPHY, .leReadPHY(status: .success, handle: 0x0040, txPHY: .le2M, rxPHY: .le2M)), "0e 08 01 3020 00 4000 02 02"),
        (complete(.leLongTermKeyRequestReply, .statusAndHandle(status: .success, handle: 0x0040)), "0e 06 01 1a20 00 4000"),
        (complete(.leLongTermKeyRequestNegativeReply, .statusAndHandle(status: .success, handle: 0x0040)), "0e 06 01 1b20 00 4000"),
        (complete(.leRemoteConnectionParameterRequestReply, .statusAndHandle(status: .success, handle: 0x0040)),
         "0e 06 01 2020 00 4000"),
        (complete(.leRemoteConnectionParameterRequestNegativeReply, .statusAndHandle(status: .success, handle: 0x0040)),
         "0e 06 01 2120 00 4000"),
        (complete(.leSetDataLength, .statusAndHandle(status: .success, handle: 0x0040)), "0e 06 01 2220 00 4000"),
        (complete(.leReadPHY, .status(.unknownCommand)), "0e 04 01 3020 01"),
        (complete(HCIOpcode(0xFC01), .raw([0x01])), "0e 04 01 01fc 01"),
        (.commandComplete(numHCICommandPackets: 1, opcode: .noOperation, returnParameters: .raw([])), "0e 03 01 0000"),
        (.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leCreateConnection), "0f 04 00 01 0d20"),
        (.hardwareError(hardwareCode: 5), "10 01 05"),
        (.numberOfCompletedPackets([HCICompletedPackets(handle: 0x0040, count: 1), HCICompletedPackets(handle: 0x0041, count: 2)]),
         "13 09 02 4000 0100 4100 0200"),
        (.dataBufferOverflow(linkType: 1), "1a 01 01"),
        (.encryptionKeyRefreshComplete(status: .success, handle: 0x0040), "30 03 00 4000"),
        (.vendor([1, 2, 3]), "ff 03 010203"),
        (.unknown(code: HCIEventCode(0x57), parameters: [0xAA, 0xBB]), "57 02 aabb"),
        // LE Meta subevents
        (.leMeta(.connectionComplete(connection)), "3e 13 01 00 4000 00 01 5544332211c0 1800 0000 f401 00"),
        (.leMeta(.advertisingReport([
            LEAdvertisingReport(eventType: .advInd, address: peerPublic, data: hex("020106"), rssi: -60),
            LEAdvertisingReport(eventType: .scanResponse, address: peerRandom, data: hex("050954657374"), rssi: -70),
        ])), "3e 1f 02 02 00 00 1371da7d1a00 03 020106 c4 04 01 5544332211c0 06 050954657374 ba"),
        (.leMeta(.connectionUpdateComplete(status: .success, handle: 0x0040, connectionInterval: 6, peripheralLatency: 0,
                                           supervisionTimeout: 200)), "3e 0a 03 00 4000 0600 0000 c800"),
        (.leMeta(.readRemoteFeaturesComplete(status: .success, handle: 0x0040, features: 0x01FF)),
         "3e 0c 04 00 4000 ff01000000000000"),
        (.leMeta(.longTermKeyRequest(handle: 0x0040, randomNumber: 0, encryptedDiversifier: 0)),
         "3e 0d 05 4000 0000000000000000 0000"),
        (.leMeta(.remoteConnectionParameterRequest(handle: 0x0040, intervalMin: 6, intervalMax: 12, maxLatency: 0, timeout: 200)),
         "3e 0b 06 4000 0600 0c00 0000 c800"),
        (.leMeta(.dataLengthChange(handle: 0x0040, maxTxOctets: 251, maxTxTime: 2120, maxRxOctets: 251, maxRxTime: 2120)),
         "3e 0b 07 4000 fb00 4808 fb00 4808"),
        (.leMeta(.readLocalP256PublicKeyComplete(status: .success, x: [UInt8](repeating: 0x11, count: 32),
                                                 y: [UInt8](repeating: 0x22, count: 32))),
         "3e 42 08 00" + String(repeating: "11", count: 32) + String(repeating: "22", count: 32)),
        (.leMeta(.generateDHKeyComplete(status: .success, dhKey: [UInt8](repeating: 0x33, count: 32))),
         "3e 22 09 00" + String(repeating: "33", count: 32)),
        (.leMeta(.enhancedConnectionComplete(enhanced)), "3e 1f 0a " + enhancedHex),
        (.leMeta(.enhancedConnectionCompleteV2(enhanced, advertisingHandle: 0, syncHandle: 0xFFFF)),
         "3e 22 29 " + enhancedHex + " 00 ffff"),
        (.leMeta(.directedAdvertisingReport([LEDirectedAdvertisingReport(
            addressType: .random, address: peerRandom, directAddressType: .random, directAddress: localRPA, rssi: -40)])),
         "3e 12 0b 01 01 01 5544332211c0 01 5544332211 4a d8"),
        (.leMeta(.phyUpdateComplete(status: .success, handle: 0x0040, txPHY: .le2M, rxPHY: .le2M)), "3e 06 0c 00 4000 02 02"),
        (.leMeta(.extendedAdvertisingReport([LEExtendedAdvertisingReport(
            eventType: 0x0013, addressType: .public, address: peerPublic, primaryPHY: .le1M, secondaryPHY: LEPhy(0),
            advertisingSID: 0xFF, txPower: 127, rssi: -55, data: hex("020106"))])),
         "3e 1d 0d 01 1300 00 1371da7d1a00 01 00 ff 7f c9 0000 00 000000000000 03 020106"),
        (.leMeta(.unknown(subevent: LESubeventCode(0x14), parameters: [0x40, 0x00, 0x01])), "3e 04 14 400001"),
    ] + ExtendedVectors.returnParameters + ExtendedVectors.events.map { (HCIEvent.leMeta(.extended($0.0)), $0.1) }
}
