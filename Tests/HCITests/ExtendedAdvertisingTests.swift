import BluetoothCore
import HCI
import PropertyBased
import Testing
import TestSupport

/// Golden packets of the extended advertising, scanning and initiating commands (Core 5.4 Vol 4 Part E
/// §7.8.52–§7.8.66), their return parameters and the LE Meta subevents §7.7.65.17–19. Derived from the spec's field
/// layouts and, byte for byte, as Bumble 0.0.236's `bumble.hci` classes build the same packets (Scan Timeout and
/// Scan Request Received, which Bumble has no class for, as its generic `HCI_LE_Meta_Event` builds them).
enum ExtendedVectors {
    static let peerPublic = BluetoothAddress(0x001A_7DDA_7113)
    static let peerRandom = BluetoothAddress(0xC011_2233_4455, type: .random)
    static let connection = LEConnectionParameters(intervalMin: 0x0006, intervalMax: 0x000C, maxLatency: 0,
                                                   supervisionTimeout: 0x00C8, minCELength: 0, maxCELength: 0)
    static func defaultConnection(latency: UInt16) -> LEConnectionParameters {
        LEConnectionParameters(intervalMin: 0x0018, intervalMax: 0x0028, maxLatency: latency, supervisionTimeout: 0x01F4)
    }

    static let commands: [(HCIExtendedCommand, String)] = [
        (.leSetAdvertisingSetRandomAddress(advertisingHandle: 1, address: peerRandom), "3520 07 01 5544332211c0"),
        (.leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
            advertisingHandle: 1, eventProperties: .legacyConnectableScannable, primaryIntervalMin: 0xA0,
            primaryIntervalMax: 0xF0, primaryChannelMap: 0x07, ownAddressType: .random, peerAddressType: .public,
            peerAddress: peerPublic, filterPolicy: 0, txPower: LEExtendedAdvertisingParameters.noTxPowerPreference,
            primaryPHY: .le1M, secondaryMaxSkip: 0, secondaryPHY: .le2M, sid: 3, scanRequestNotificationEnable: true)),
         "3620 19 01 1300 a00000 f00000 07 01 00 1371da7d1a00 00 7f 01 00 02 03 01"),
        (.leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
            advertisingHandle: 2, eventProperties: [.connectable, .includeTxPower], primaryIntervalMin: 0x01_2345,
            primaryIntervalMax: 0xFF_FFFF, primaryChannelMap: 0x01, ownAddressType: .public, peerAddressType: .random,
            peerAddress: peerRandom, filterPolicy: 3, txPower: -20, primaryPHY: .leCoded, secondaryMaxSkip: 2,
            secondaryPHY: .leCoded, sid: 0x0F, scanRequestNotificationEnable: false)),
         "3620 19 02 4100 452301 ffffff 01 00 01 5544332211c0 03 ec 03 02 03 0f 00"),
        (.leSetExtendedAdvertisingData(LEExtendedAdvertisingData(
            advertisingHandle: 1, operation: .complete, fragmentPreference: 1, data: hex("02010603030d18"))),
         "3720 0b 01 03 01 07 02010603030d18"),
        (.leSetExtendedAdvertisingData(LEExtendedAdvertisingData(
            advertisingHandle: 0, operation: .unchanged, fragmentPreference: 0, data: [])),
         "3720 04 00 04 00 00"),
        (.leSetExtendedScanResponseData(LEExtendedAdvertisingData(
            advertisingHandle: 1, operation: .complete, fragmentPreference: 1, data: hex("050954657374"))),
         "3820 0a 01 03 01 06 050954657374"),
        (.leSetExtendedAdvertisingEnable(enable: true, sets: [
            LEExtendedAdvertisingSet(advertisingHandle: 1, duration: 500, maxExtendedAdvertisingEvents: 0),
            LEExtendedAdvertisingSet(advertisingHandle: 2, duration: 0, maxExtendedAdvertisingEvents: 10),
        ]), "3920 0a 01 02 01 f401 00 02 0000 0a"),
        (.leSetExtendedAdvertisingEnable(enable: false, sets: []), "3920 02 00 00"),
        (.leReadMaximumAdvertisingDataLength, "3a20 00"),
        (.leReadNumberOfSupportedAdvertisingSets, "3b20 00"),
        (.leRemoveAdvertisingSet(advertisingHandle: 1), "3c20 01 01"),
        (.leClearAdvertisingSets, "3d20 00"),
        (.leSetExtendedScanParameters(LEExtendedScanParameters(
            ownAddressType: .random, filterPolicy: 0,
            le1M: LEExtendedScanPHYParameters(scanType: 1, interval: 0x0060, window: 0x0030),
            leCoded: LEExtendedScanPHYParameters(scanType: 0, interval: 0x0120, window: 0x0090))),
         "4120 0d 01 00 05 01 6000 3000 00 2001 9000"),
        (.leSetExtendedScanParameters(LEExtendedScanParameters(
            ownAddressType: .public, filterPolicy: 2, le1M: LEExtendedScanPHYParameters(scanType: 0, interval: 0x10, window: 0x10))),
         "4120 08 00 02 01 00 1000 1000"),
        (.leSetExtendedScanEnable(enable: true, filterDuplicates: 1, duration: 500, period: 0), "4220 06 01 01 f401 0000"),
        (.leSetExtendedScanEnable(enable: true, filterDuplicates: 2, duration: 100, period: 8), "4220 06 01 02 6400 0800"),
        (.leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            initiatorFilterPolicy: 0, ownAddressType: .public, peerAddressType: .random, peerAddress: peerRandom,
            le1M: LEExtendedInitiatingPHYParameters(scanInterval: 0x0060, scanWindow: 0x0060, connection: connection),
            leCoded: LEExtendedInitiatingPHYParameters(scanInterval: 0x0120, scanWindow: 0x0120, connection: connection))),
         "4320 2a 00 00 01 5544332211c0 05 6000 6000 0600 0c00 0000 c800 0000 0000 2001 2001 0600 0c00 0000 c800 0000 0000"),
        (.leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            initiatorFilterPolicy: 1, ownAddressType: .random, peerAddressType: .public, peerAddress: BluetoothAddress(0),
            le1M: LEExtendedInitiatingPHYParameters(scanInterval: 0x10, scanWindow: 0x10, connection: defaultConnection(latency: 0)),
            le2M: LEExtendedInitiatingPHYParameters(scanInterval: 0x20, scanWindow: 0x20, connection: defaultConnection(latency: 1)),
            leCoded: LEExtendedInitiatingPHYParameters(scanInterval: 0x30, scanWindow: 0x30, connection: defaultConnection(latency: 2)))),
         "4320 3a 01 01 00 000000000000 07 1000 1000 1800 2800 0000 f401 0000 0000"
            + " 2000 2000 1800 2800 0100 f401 0000 0000 3000 3000 1800 2800 0200 f401 0000 0000"),
    ]

    static func complete(_ opcode: HCIOpcode, _ returned: HCIReturnParameters) -> HCIEvent {
        .commandComplete(numHCICommandPackets: 1, opcode: opcode, returnParameters: returned)
    }

    static let returnParameters: [(HCIEvent, String)] = [
        (complete(.leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingParameters(status: .success, selectedTxPower: -4)),
         "0e 05 01 3620 00 fc"),
        (complete(.leReadMaximumAdvertisingDataLength, .leReadMaximumAdvertisingDataLength(status: .success, maximumLength: 1650)),
         "0e 06 01 3a20 00 7206"),
        (complete(.leReadNumberOfSupportedAdvertisingSets, .leReadNumberOfSupportedAdvertisingSets(status: .success, count: 16)),
         "0e 05 01 3b20 00 10"),
        (complete(.leSetExtendedAdvertisingEnable, .status(.success)), "0e 04 01 3920 00"),
        (.commandStatus(status: .success, numHCICommandPackets: 1, opcode: .leExtendedCreateConnection), "0f 04 00 01 4320"),
    ]

    static let events: [(HCIExtendedLEMetaEvent, String)] = [
        (.scanTimeout, "3e 01 11"),
        (.advertisingSetTerminated(LEAdvertisingSetTerminated(
            status: .success, advertisingHandle: 1, connectionHandle: 0x0040, numCompletedExtendedAdvertisingEvents: 3)),
         "3e 06 12 00 01 4000 03"),
        (.advertisingSetTerminated(LEAdvertisingSetTerminated(
            status: .advertisingTimeout, advertisingHandle: 2, connectionHandle: 0, numCompletedExtendedAdvertisingEvents: 0)),
         "3e 06 12 3c 02 0000 00"),
        (.scanRequestReceived(LEScanRequestReceived(advertisingHandle: 1, scannerAddressType: .random, scannerAddress: peerRandom)),
         "3e 09 13 01 01 5544332211c0"),
    ]
}

@Suite struct ExtendedAdvertisingTests {
    @Test func commandGoldenVectorsBothWays() throws {
        for (command, text) in ExtendedVectors.commands {
            let bytes = hex(text)
            #expect(command.encode() == bytes, "encode \(command.name): \(Hex.encode(command.encode()))")
            #expect(try HCIExtendedCommand(opcode: command.opcode, parameters: Array(bytes.dropFirst(3))) == command,
                    "typed decode \(command.name)")
            let decoded = try HCICommand(decoding: bytes)
            #expect(decoded.extendedCommand == command, "decode \(command.name)")
            #expect(decoded == .extended(command))
            #expect(decoded.opcode == command.opcode)
            #expect(decoded.name == command.name)
            #expect(HCICommand.table[command.opcode] != nil)
        }
        // Every extended opcode has a vector, and nothing else is extended.
        #expect(Set(ExtendedVectors.commands.map(\.0.opcode)) == HCIExtendedCommand.opcodes)
        #expect(HCICommand.reset.extendedCommand == nil)
        #expect(HCICommand.unknown(opcode: .leSetExtendedScanEnable, parameters: [1]).extendedCommand == nil)
    }

    @Test func tableEntries() {
        let table = HCICommand.table
        #expect(table[.leSetExtendedAdvertisingParameters]?.returnParametersLength == 2)
        #expect(table[.leReadMaximumAdvertisingDataLength]?.returnParametersLength == 3)
        #expect(table[.leReadNumberOfSupportedAdvertisingSets]?.returnParametersLength == 2)
        #expect(table[.leExtendedCreateConnection]?.answeredByCommandStatus == true)
        #expect(table[.leSetExtendedScanEnable]?.answeredByCommandStatus == false)
        let variable = Set(table.filter(\.value.isVariableLength).keys)
        #expect(variable == [.leSetExtendedAdvertisingData, .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable,
                             .leSetExtendedScanParameters, .leExtendedCreateConnection])
        #expect(HCIOpcode.leSetExtendedAdvertisingParameters.description == "LE Set Extended Advertising Parameters (0x2036)")
        #expect(HCIOpcode.leExtendedCreateConnection.rawValue == 0x2043)
    }

    @Test func eventGoldenVectorsBothWays() throws {
        for (event, text) in ExtendedVectors.events {
            let bytes = hex(text)
            let packet = HCIEvent.leMeta(.extended(event))
            #expect(packet.encode() == bytes, "encode \(event)")
            let decoded = try HCIEvent(decoding: bytes)
            #expect(decoded == packet)
            guard case .leMeta(let meta) = decoded else {
                Issue.record("not an LE Meta event: \(decoded)")
                continue
            }
            #expect(meta.extendedEvent == event)
            #expect(meta.subevent == event.subevent)
            #expect(try HCIExtendedLEMetaEvent(subevent: event.subevent, parameters: Array(bytes.dropFirst(3))) == event)
        }
        #expect(HCILEMetaEvent.unknown(subevent: LESubeventCode(0x14), parameters: []).extendedEvent == nil)
    }

    @Test func returnParametersDecodeTyped() throws {
        let power = try HCIReturnParameters(opcode: .leSetExtendedAdvertisingParameters, bytes: hex("00 fc"))
        #expect(power == .leSetExtendedAdvertisingParameters(status: .success, selectedTxPower: -4))
        #expect(power.status == .success)
        #expect(try HCIReturnParameters(opcode: .leSetExtendedAdvertisingParameters, bytes: [0x12])
            == .status(.invalidCommandParameters))
        #expect(try HCIReturnParameters(opcode: .leReadMaximumAdvertisingDataLength, bytes: hex("00 fb00"))
            == .leReadMaximumAdvertisingDataLength(status: .success, maximumLength: 251))
        for (opcode, bytes) in [(HCIOpcode.leReadMaximumAdvertisingDataLength, hex("00 fb")),
                                (.leReadNumberOfSupportedAdvertisingSets, hex("00 10 00")),
                                (.leSetExtendedAdvertisingParameters, hex("00"))] {
            #expect(throws: DecodeError.self, "\(opcode)") { try HCIReturnParameters(opcode: opcode, bytes: bytes) }
        }
    }

    @Test func dissectionUsesSpecNames() {
        func text(_ command: HCIExtendedCommand) -> String { HCICommand.extended(command).dissection.renderText() }
        let parameters = text(ExtendedVectors.commands[1].0)
        for expected in ["LE Set Extended Advertising Parameters", "Advertising_Event_Properties: 0x0013 (Connectable, Scannable, Legacy PDUs)",
                         "Primary_Advertising_Interval_Min: 0x0000A0 (100.000 ms)", "Advertising_TX_Power: 127 (no preference)",
                         "Secondary_Advertising_PHY: LE 2M", "Scan_Request_Notification_Enable: Enabled (0x01)",
                         "Primary_Advertising_Channel_Map: 0x07 (channels 37, 38, 39)", "Peer_Address: 00:1A:7D:DA:71:13"] {
            #expect(parameters.contains(expected), "\(expected) not in \(parameters)")
        }
        #expect(text(ExtendedVectors.commands[2].0).contains("Advertising_TX_Power: -20 dBm"))
        let data = text(ExtendedVectors.commands[3].0)
        #expect(data.contains("Operation: Complete data (0x03)"))
        #expect(data.contains("Advertising_Data_Length: 7"))
        let enable = text(ExtendedVectors.commands[6].0)
        #expect(enable.contains("Num_Sets: 2"))
        #expect(enable.contains("Duration: 0x01F4 (5000 ms)"))
        let scan = text(ExtendedVectors.commands[12].0)
        #expect(scan.contains("Scanning_PHYs: 0x05 (LE 1M, LE Coded)"))
        #expect(scan.contains("LE Coded"))
        #expect(scan.contains("Scan_Interval: 0x0120 (180.000 ms)"))
        let connect = text(ExtendedVectors.commands[17].0)
        #expect(connect.contains("Initiating_PHYs: 0x07 (LE 1M, LE 2M, LE Coded)"))
        #expect(connect.contains("Supervision_Timeout: 0x01F4 (5000 ms)"))
        #expect(text(.leSetExtendedScanEnable(enable: true, filterDuplicates: 2, duration: 100, period: 8))
            .contains("Period: 0x0008 (10240 ms)"))
        for (command, _) in ExtendedVectors.commands {
            #expect(command.dissection.label == command.name)
            #expect(!command.dissection.renderJSON().isEmpty)
        }
        let terminated = HCIEvent.leMeta(.extended(ExtendedVectors.events[1].0)).dissection.renderText()
        #expect(terminated.contains("LE Advertising Set Terminated"))
        #expect(terminated.contains("Num_Completed_Extended_Advertising_Events: 3"))
        #expect(terminated.contains("Connection_Handle: 0x0040"))
        let request = ExtendedVectors.events[3].0.dissection.renderText()
        #expect(request.contains("LE Scan Request Received"))
        #expect(request.contains("Scanner_Address: C0:11:22:33:44:55"))
        #expect(ExtendedVectors.events[0].0.dissection.label == "LE Scan Timeout")
        let power = ExtendedVectors.returnParameters[0].0.dissection.renderText()
        #expect(power.contains("Selected_TX_Power: -4 dBm"))
    }

    @Test func encodingClampsToTheSpecLimits() throws {
        let long = HCIExtendedCommand.leSetExtendedAdvertisingData(LEExtendedAdvertisingData(data: [UInt8](repeating: 7, count: 300)))
        #expect(long.encode().count == 3 + 255)
        #expect(long.encode()[6] == 251)
        let sets = (0..<70).map { LEExtendedAdvertisingSet(advertisingHandle: UInt8($0)) }
        let many = HCIExtendedCommand.leSetExtendedAdvertisingEnable(enable: true, sets: sets).encode()
        #expect(many[2] == 2 + 4 * 63 && many[4] == 63)
        #expect(try HCICommand(decoding: many).extendedCommand
            == .leSetExtendedAdvertisingEnable(enable: true, sets: Array(sets.prefix(63))))
        // Only the low 24 bits of a primary interval go on the wire.
        let wide = HCIExtendedCommand.leSetExtendedAdvertisingParameters(
            LEExtendedAdvertisingParameters(primaryIntervalMin: 0x0100_0020, primaryIntervalMax: 0xFF_FFFF))
        #expect(Array(wide.encode()[6..<12]) == hex("200000 ffffff"))
    }

    @Test func propertyRoundTrips() async {
        await propertyCheck(
            count: 300,
            input: Gen.uint16(in: 0...0x0EFF), Gen.uint16(), Gen.uint8(), Gen.uint64(), Gen.int(in: 0...251), Gen.bool
        ) { handle, value, byte, wide, length, flag in
            let address = BluetoothAddress(wide & 0xFFFF_FFFF_FFFF, type: flag ? .random : .public)
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(byte)) }
            let interval = UInt32(truncatingIfNeeded: wide >> 40)
            let phy = LEExtendedScanPHYParameters(scanType: byte & 1, interval: value, window: value / 2)
            let initiating = LEExtendedInitiatingPHYParameters(
                scanInterval: value, scanWindow: value, connection: LEConnectionParameters(
                    intervalMin: value, intervalMax: value &+ 1, maxLatency: UInt16(byte), supervisionTimeout: handle,
                    minCELength: 1, maxCELength: 2))
            let commands: [HCIExtendedCommand] = [
                .leSetAdvertisingSetRandomAddress(advertisingHandle: byte, address: BluetoothAddress(wide & 0xFFFF_FFFF_FFFF, type: .random)),
                .leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
                    advertisingHandle: byte, eventProperties: LEAdvertisingEventProperties(rawValue: value),
                    primaryIntervalMin: interval, primaryIntervalMax: interval, primaryChannelMap: byte,
                    ownAddressType: LEAddressType(byte & 3), peerAddressType: LEAddressType(address.type),
                    peerAddress: address, filterPolicy: byte, txPower: Int8(truncatingIfNeeded: byte),
                    primaryPHY: LEPhy(byte), secondaryMaxSkip: byte, secondaryPHY: LEPhy(byte >> 4), sid: byte & 0x0F,
                    scanRequestNotificationEnable: flag)),
                .leSetExtendedAdvertisingData(LEExtendedAdvertisingData(
                    advertisingHandle: byte, operation: LEAdvertisingDataOperation(byte % 5), fragmentPreference: byte & 1, data: data)),
                .leSetExtendedScanResponseData(LEExtendedAdvertisingData(advertisingHandle: byte, data: data)),
                .leSetExtendedAdvertisingEnable(enable: flag, sets: (0..<Int(byte % 64)).map {
                    LEExtendedAdvertisingSet(advertisingHandle: UInt8($0), duration: value, maxExtendedAdvertisingEvents: byte)
                }),
                .leRemoveAdvertisingSet(advertisingHandle: byte),
                .leSetExtendedScanParameters(LEExtendedScanParameters(
                    ownAddressType: LEAddressType(byte & 3), filterPolicy: byte & 3,
                    le1M: byte & 1 == 0 ? nil : phy, leCoded: byte & 2 == 0 ? nil : phy)),
                .leSetExtendedScanEnable(enable: flag, filterDuplicates: byte % 3, duration: value, period: handle),
                .leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
                    initiatorFilterPolicy: byte & 1, ownAddressType: LEAddressType(byte & 3),
                    peerAddressType: LEAddressType(address.type), peerAddress: address,
                    le1M: byte & 1 == 0 ? nil : initiating, le2M: byte & 2 == 0 ? nil : initiating,
                    leCoded: byte & 4 == 0 ? nil : initiating)),
            ]
            for command in commands {
                let decoded = try? HCICommand(decoding: command.encode())
                #expect(decoded?.extendedCommand == command, "\(command.name)")
                #expect(decoded == .extended(command))
            }
            let events: [HCIExtendedLEMetaEvent] = [
                .scanTimeout,
                .advertisingSetTerminated(LEAdvertisingSetTerminated(
                    status: flag ? .success : HCIStatus(byte), advertisingHandle: byte, connectionHandle: handle,
                    numCompletedExtendedAdvertisingEvents: byte)),
                .scanRequestReceived(LEScanRequestReceived(
                    advertisingHandle: byte, scannerAddressType: LEAddressType(address.type), scannerAddress: address)),
            ]
            for event in events {
                let decoded = try? HCIEvent(decoding: HCIEvent.leMeta(.extended(event)).encode())
                guard case .leMeta(let meta) = decoded else {
                    Issue.record("\(event) did not decode")
                    continue
                }
                #expect(meta.extendedEvent == event)
            }
        }
    }

    // MARK: Hostile bytes

    /// `text` must fail to decode as a command with `code`.
    private func refuse(_ text: String, _ code: DecodeError.Code, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let command = try HCICommand(decoding: hex(text))
            Issue.record("accepted \(text) as \(command)", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == code, "\(text): \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func truncationsAndWrongParameterTotalLengthsThrow() {
        for (command, text) in ExtendedVectors.commands {
            let bytes = hex(text)
            for cut in 0..<bytes.count {
                #expect(throws: DecodeError.self, "\(command.name) cut at \(cut)") { try HCICommand(decoding: Array(bytes.prefix(cut))) }
            }
            // Parameter_Total_Length one more (with a byte more) or one less (with a byte less).
            let longer = [bytes[0], bytes[1], bytes[2] &+ 1] + bytes.dropFirst(3) + [0x00]
            #expect(throws: DecodeError.self, "\(command.name) longer") { try HCICommand(decoding: longer) }
            if bytes[2] > 0 {
                let shorter = [bytes[0], bytes[1], bytes[2] &- 1] + bytes.dropFirst(3).dropLast()
                #expect(throws: DecodeError.self, "\(command.name) shorter") { try HCICommand(decoding: shorter) }
            }
            #expect(throws: DecodeError.self, "\(command.name) typed + 1") {
                try HCIExtendedCommand(opcode: command.opcode, parameters: Array(bytes.dropFirst(3)) + [0])
            }
        }
        for (event, text) in ExtendedVectors.events {
            let bytes = hex(text)
            for cut in 0..<bytes.count {
                #expect(throws: DecodeError.self, "\(event) cut at \(cut)") { try HCIEvent(decoding: Array(bytes.prefix(cut))) }
            }
            let longer = [bytes[0], bytes[1] &+ 1] + bytes.dropFirst(2) + [0x00]
            #expect(throws: DecodeError.self, "\(event) longer") { try HCIEvent(decoding: longer) }
            if bytes[1] > 1 {
                let shorter = [bytes[0], bytes[1] &- 1] + bytes.dropFirst(2).dropLast()
                #expect(throws: DecodeError.self, "\(event) shorter") { try HCIEvent(decoding: shorter) }
            }
            #expect(throws: DecodeError.self) {
                try HCIExtendedLEMetaEvent(subevent: event.subevent, parameters: Array(bytes.dropFirst(3)) + [0])
            }
        }
    }

    @Test func countsAndLengthOctetsMustMatchThePacket() {
        // Advertising_Data_Length one more / one less than the data that follows, and above 251.
        refuse("3720 0b 01 03 01 08 02010603030d18", .invalidLength)
        refuse("3720 0b 01 03 01 06 02010603030d18", .invalidLength)
        refuse("3720 04 01 03 01 01", .invalidLength)
        refuse("3820 0a 01 03 01 ff 050954657374", .invalidLength)
        refuse("3720 ff 01 03 01 fc" + String(repeating: "00", count: 251), .invalidLength)
        #expect((try? HCICommand(decoding: hex("3720 ff 01 03 01 fb" + String(repeating: "00", count: 251)))) != nil)
        refuse("3720 03 01 03 01", .invalidLength)  // shorter than the fixed part
        // Num_Sets against the sets that follow, and above 63.
        refuse("3920 0a 01 03 01 f401 00 02 0000 0a", .invalidLength)
        refuse("3920 0a 01 01 01 f401 00 02 0000 0a", .invalidLength)
        refuse("3920 02 01 01", .invalidLength)
        refuse("3920 02 01 40", .invalidValue)
        refuse("3920 01 01", .invalidLength)
        // Scanning_PHYs: one block per bit, reserved bits refused.
        refuse("4120 08 01 00 05 01 6000 3000", .invalidLength)
        refuse("4120 0d 01 00 01 01 6000 3000 00 2001 9000", .invalidLength)
        refuse("4120 08 01 00 02 01 6000 3000", .invalidValue)
        refuse("4120 08 01 00 81 01 6000 3000", .invalidValue)
        refuse("4120 03 01 00 01", .invalidLength)
        // Initiating_PHYs the same way (bits 0...2 defined).
        refuse("4320 1a 00 00 01 5544332211c0 03 6000 6000 0600 0c00 0000 c800 0000 0000", .invalidLength)
        refuse("4320 1a 00 00 01 5544332211c0 08 6000 6000 0600 0c00 0000 c800 0000 0000", .invalidValue)
        refuse("4320 0a 00 00 01 5544332211c0 01", .invalidLength)
        refuse("4320 09 00 00 01 5544332211c0", .invalidLength)
        // Enables and Filter_Duplicates.
        refuse("4220 06 02 01 f401 0000", .invalidValue)
        refuse("4220 06 01 03 f401 0000", .invalidValue)
        refuse("3920 02 02 00", .invalidValue)
        refuse("3620 19 01 1300 a00000 f00000 07 01 00 1371da7d1a00 00 7f 01 00 02 03 02", .invalidValue)
        // Fixed lengths.
        refuse("3520 06 01 5544332211", .invalidLength)
        refuse("3620 18 01 1300 a00000 f00000 07 01 00 1371da7d1a00 00 7f 01 00 02 03", .invalidLength)
        refuse("3c20 00", .invalidLength)
        refuse("3d20 01 00", .invalidLength)
        refuse("4220 05 01 01 f401 00", .invalidLength)
        refuse("3520 07 01 5544", .truncated)
        // Not an extended opcode.
        #expect(throws: DecodeError.self) { try HCIExtendedCommand(opcode: .reset, parameters: []) }
    }

    @Test func hostileEventsThrow() {
        let cases: [(String, DecodeError.Code)] = [
            ("3e 02 11 00", .invalidLength),  // Scan Timeout has no parameters
            ("3e 05 12 00 01 4000", .invalidLength),
            ("3e 07 12 00 01 4000 03 00", .invalidLength),
            ("3e 06 12 00 01 000f 03", .invalidValue),  // success with handle 0x0F00
            ("3e 08 13 01 01 5544332211", .invalidLength),
            ("3e 0a 13 01 01 5544332211c0 00", .invalidLength),
        ]
        for (text, code) in cases {
            do {
                _ = try HCIEvent(decoding: hex(text))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.code == code, "\(text): \(error)")
            }
        }
        // A terminated set that did not connect may carry any handle.
        #expect((try? HCIEvent(decoding: hex("3e 06 12 3c 01 ffff 00"))) != nil)
        #expect(throws: DecodeError.self) { try HCIExtendedLEMetaEvent(subevent: .phyUpdateComplete, parameters: []) }
    }

    @Test func randomParametersNeverCrash() {
        var generator = SeededGenerator(seed: 0x4558_5441_4456)
        let opcodes = HCIExtendedCommand.opcodes.sorted()
        for iteration in 0..<6000 {
            let opcode = opcodes[iteration % opcodes.count]
            let base = HCICommand.table[opcode]?.parameterLength ?? 0
            var parameters = generator.bytes(max(0, base + Int.random(in: -1...40, using: &generator)))
            // Often make the counted part consistent so the per-field decoders are reached.
            if iteration % 3 == 0, !parameters.isEmpty {
                switch opcode {
                case .leSetExtendedAdvertisingData where parameters.count >= 4, .leSetExtendedScanResponseData where parameters.count >= 4:
                    parameters[3] = UInt8(clamping: parameters.count - 4)
                case .leSetExtendedScanParameters where parameters.count >= 3:
                    parameters[2] &= 0x05
                case .leExtendedCreateConnection where parameters.count >= 10:
                    parameters[9] &= 0x07
                default: break
                }
            }
            let bytes = [UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), UInt8(clamping: parameters.count)] + parameters
            guard let command = try? HCICommand(decoding: bytes) else { continue }
            let typed = command.extendedCommand
            #expect(typed != nil, "\(Hex.encode(bytes)) decoded but is not typed")
            if let typed {
                #expect((try? HCICommand(decoding: typed.encode()))?.extendedCommand == typed)
            }
            _ = command.dissection.renderText()
        }
        for iteration in 0..<3000 {
            let code = UInt8(0x11 + iteration % 3)
            let parameters = generator.bytes(Int.random(in: 0...10, using: &generator))
            let bytes = [0x3E, UInt8(parameters.count + 1), code] + parameters
            if let event = try? HCIEvent(decoding: bytes) {
                // Typed: the reserved top bits of a connection handle do not survive, the meaning does.
                #expect((try? HCIEvent(decoding: event.encode())) == event)
                _ = event.dissection.renderText()
            }
        }
    }
}
