import BluetoothCore
import HCI
import TestSupport

/// Golden command packets (opcode, length, parameters) hand-built from Core 5.4 Vol 4 Part E §7 layouts;
/// LE Encrypt is the spec's own sample (Vol 6 Part C §1.1, spec-vectors.md §1.1).
enum CommandVectors {
    static let peerPublic = BluetoothAddress(0x001A_7DDA_7113)
    static let peerRandom = BluetoothAddress(0xC011_2233_4455, type: .random)
    static func zeros(_ count: Int) -> String { String(repeating: "00", count: count) }
    static let connection = LEConnectionParameters(intervalMin: 0x0006, intervalMax: 0x000C, maxLatency: 0,
                                                   supervisionTimeout: 0x00C8, minCELength: 0, maxCELength: 0)

    static let all: [(HCICommand, String)] = [
        (.disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection), "0604 03 4000 13"),
        (.readRemoteVersionInformation(handle: 0x0001), "1d04 02 0100"),
        (.setEventMask(0x2000_1FFF_FFFF_FFFF), "010c 08 ffffffffff1f0020"),
        (.reset, "030c 00"),
        (.readTransmitPowerLevel(handle: 0x0002, type: 0), "2d0c 03 0200 00"),
        (.setControllerToHostFlowControl(1), "310c 01 01"),
        (.hostBufferSize(HostBufferSize(aclDataPacketLength: 1021, totalNumACLDataPackets: 8)), "330c 07 fd03 00 0800 0000"),
        (.setEventMaskPage2(0x0080_0000), "630c 08 0000800000000000"),
        (.writeLEHostSupport(leSupportedHost: 1, unused: 0), "6d0c 02 01 00"),
        (.readLocalVersionInformation, "0110 00"),
        (.readLocalSupportedCommands, "0210 00"),
        (.readLocalSupportedFeatures, "0310 00"),
        (.readBufferSize, "0510 00"),
        (.readBDADDR, "0910 00"),
        (.readRSSI(handle: 0x0040), "0514 02 4000"),
        (.leSetEventMask(0x1F), "0120 08 1f00000000000000"),
        (.leReadBufferSize, "0220 00"),
        (.leReadBufferSizeV2, "6020 00"),
        (.leReadLocalSupportedFeatures, "0320 00"),
        (.leSetRandomAddress(peerRandom), "0520 06 5544332211c0"),
        (.leSetAdvertisingParameters(LEAdvertisingParameters()), "0620 0f 0008 0008 00 00 00 000000000000 07 00"),
        (.leReadAdvertisingPhysicalChannelTxPower, "0720 00"),
        (.leSetAdvertisingData(hex("020106 03030d18")), "0820 20 07 020106 03030d18" + zeros(24)),
        (.leSetScanResponseData(hex("050954657374")), "0920 20 06 050954657374" + zeros(25)),
        (.leSetAdvertisingEnable(true), "0a20 01 01"),
        (.leSetScanParameters(LEScanParameters()), "0b20 07 01 1000 1000 00 00"),
        (.leSetScanEnable(enable: true, filterDuplicates: true), "0c20 02 01 01"),
        (.leCreateConnection(LECreateConnectionParameters(
            scanInterval: 0x0060, scanWindow: 0x0030, peerAddressType: .random, peerAddress: peerRandom,
            connection: LEConnectionParameters())),
         "0d20 19 6000 3000 00 01 5544332211c0 00 1800 2800 0000 f401 0000 0000"),
        (.leCreateConnectionCancel, "0e20 00"),
        (.leReadFilterAcceptListSize, "0f20 00"),
        (.leClearFilterAcceptList, "1020 00"),
        (.leAddDeviceToFilterAcceptList(addressType: .public, address: peerPublic), "1120 07 00 1371da7d1a00"),
        (.leRemoveDeviceFromFilterAcceptList(addressType: .public, address: peerPublic), "1220 07 00 1371da7d1a00"),
        (.leConnectionUpdate(handle: 0x0040, parameters: connection), "1320 0e 4000 0600 0c00 0000 c800 0000 0000"),
        (.leReadRemoteFeatures(handle: 0x0040), "1620 02 4000"),
        (.leEncrypt(key: hex("bf01fb9d4ef3bc36d874f5394138684c"), plaintext: hex("1302f1e0dfcebdac7968574635241302")),
         "1720 20 bf01fb9d4ef3bc36d874f5394138684c 1302f1e0dfcebdac7968574635241302"),
        (.leRand, "1820 00"),
        (.leEnableEncryption(handle: 0x0040, randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0x1234,
                             longTermKey: hex("000102030405060708090a0b0c0d0e0f")),
         "1920 1c 4000 0807060504030201 3412 000102030405060708090a0b0c0d0e0f"),
        (.leLongTermKeyRequestReply(handle: 0x0040, longTermKey: hex("000102030405060708090a0b0c0d0e0f")),
         "1a20 12 4000 000102030405060708090a0b0c0d0e0f"),
        (.leLongTermKeyRequestNegativeReply(handle: 0x0040), "1b20 02 4000"),
        (.leReadSupportedStates, "1c20 00"),
        (.leRemoteConnectionParameterRequestReply(handle: 0x0040, parameters: connection),
         "2020 0e 4000 0600 0c00 0000 c800 0000 0000"),
        (.leRemoteConnectionParameterRequestNegativeReply(handle: 0x0040, reason: .unacceptableConnectionParameters),
         "2120 03 4000 3b"),
        (.leSetDataLength(handle: 0x0040, txOctets: 251, txTime: 2120), "2220 06 4000 fb00 4808"),
        (.leReadSuggestedDefaultDataLength, "2320 00"),
        (.leWriteSuggestedDefaultDataLength(txOctets: 251, txTime: 2120), "2420 04 fb00 4808"),
        (.leReadLocalP256PublicKey, "2520 00"),
        (.leGenerateDHKey(x: [UInt8](repeating: 0x11, count: 32), y: [UInt8](repeating: 0x22, count: 32)),
         "2620 40" + String(repeating: "11", count: 32) + String(repeating: "22", count: 32)),
        (.leAddDeviceToResolvingList(LEResolvingListEntry(
            peerIdentityAddressType: .public, peerIdentityAddress: peerPublic,
            peerIRK: [UInt8](repeating: 0xAA, count: 16), localIRK: [UInt8](repeating: 0xBB, count: 16))),
         "2720 27 00 1371da7d1a00" + String(repeating: "aa", count: 16) + String(repeating: "bb", count: 16)),
        (.leRemoveDeviceFromResolvingList(addressType: .public, address: peerPublic), "2820 07 00 1371da7d1a00"),
        (.leClearResolvingList, "2920 00"),
        (.leSetAddressResolutionEnable(true), "2d20 01 01"),
        (.leSetResolvablePrivateAddressTimeout(900), "2e20 02 8403"),
        (.leReadMaximumDataLength, "2f20 00"),
        (.leReadPHY(handle: 0x0040), "3020 02 4000"),
        (.leSetDefaultPHY(allPHYs: 0, txPHYs: 3, rxPHYs: 3), "3120 03 00 03 03"),
        (.leSetPHY(handle: 0x0040, allPHYs: 0, txPHYs: 2, rxPHYs: 2, phyOptions: 0), "3220 07 4000 00 02 02 0000"),
        (.unknown(opcode: HCIOpcode(ogf: 0x3F, ocf: 0x0001), parameters: [0x01, 0x02]), "01fc 02 0102"),
    ] + ExtendedVectors.commands.map { (HCICommand.extended($0.0), $0.1) }
}
