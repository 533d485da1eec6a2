import BluetoothCore
import HCI
import PropertyBased
import Testing
import TestSupport

@Suite struct EventsTests {
    @Test func goldenVectorsBothWays() throws {
        for (event, text) in EventVectors.all {
            let bytes = hex(text)
            #expect(!bytes.isEmpty, "bad hex for \(event)")
            #expect(event.encode() == bytes, "encode \(event.dissection.label): \(Hex.encode(event.encode()))")
            #expect(try HCIEvent(decoding: bytes) == event, "decode \(text)")
        }
    }

    @Test func leEncryptSpecSample() throws {
        let event = try HCIEvent(decoding: hex("0e14 02 1720 00 66c6c2278e3b8e053e7ea326521bad99"))
        guard case .commandComplete(2, .leEncrypt, .leEncrypt(.success, let data)) = event else {
            Issue.record("not an LE Encrypt Command Complete: \(event)")
            return
        }
        #expect(Array(data.reversed()) == hex("99ad1b5226a37e3e058e3b8e27c2c666"))
    }

    @Test func everyCommandHasTypedReturnParameters() throws {
        let covered = Set(EventVectors.all.compactMap { event, _ -> HCIOpcode? in
            if case .commandComplete(_, let opcode, _) = event { return opcode }
            return nil
        })
        for (opcode, info) in HCICommand.table {
            guard let length = info.returnParametersLength else {
                // Answered by Command Status: an error-only Command Complete still decodes.
                #expect(try HCIReturnParameters(opcode: opcode, bytes: [0x01]) == .status(.unknownCommand))
                continue
            }
            let zeros = [UInt8](repeating: 0, count: length)
            let returned = try HCIReturnParameters(opcode: opcode, bytes: zeros)
            if case .raw = returned { Issue.record("\(info.name) return parameters are raw") }
            #expect(returned.encode() == zeros, "\(info.name)")
            #expect(returned.status == .success)
            if length > 1 {
                #expect(covered.contains(opcode), "no Command Complete golden vector for \(info.name)")
                #expect(try HCIReturnParameters(opcode: opcode, bytes: [0x0C]) == .status(.commandDisallowed))
                #expect(throws: DecodeError.self) { try HCIReturnParameters(opcode: opcode, bytes: [0x00]) }
                #expect(throws: DecodeError.self) { try HCIReturnParameters(opcode: opcode, bytes: zeros + [0]) }
                #expect(throws: DecodeError.self) { try HCIReturnParameters(opcode: opcode, bytes: Array(zeros.dropLast())) }
            }
            #expect(throws: DecodeError.self) { try HCIReturnParameters(opcode: opcode, bytes: []) }
        }
    }

    @Test func dissectionUsesSpecNames() {
        let complete = EventVectors.all[6].0.dissection
        #expect(complete.label == "Command Complete")
        let text = complete.renderText()
        #expect(text.contains("Command_Opcode: Read BD_ADDR (0x1009)"))
        #expect(text.contains("Status: Success (0x00)"))
        #expect(text.contains("BD_ADDR: 00:1A:7D:DA:71:13"))
        let connection = HCIEvent.leMeta(.connectionComplete(EventVectors.connection)).dissection
        #expect(connection.label == "LE Connection Complete")
        let connectionText = connection.renderText()
        #expect(connectionText.contains("Connection_Interval: 0x0018 (30.000 ms)"))
        #expect(connectionText.contains("Peer_Address_Type: Random Device Address (0x01)"))
        #expect(connectionText.contains("Role: Central (0x00)"))
        let disconnection = EventVectors.all[0].0.dissection.renderText()
        #expect(disconnection.contains("Reason: Remote User Terminated Connection (0x13)"))
        let report = EventVectors.all.first { if case .leMeta(.advertisingReport) = $0.0 { true } else { false } }
        #expect(report?.0.dissection.renderText().contains("Event_Type: SCAN_RSP (0x04)") == true)
        for (event, _) in EventVectors.all {
            #expect(!event.dissection.renderJSON().isEmpty)
        }
    }

    @Test func commandResponseGivesOpcodeCreditsAndStatus() {
        let complete = EventVectors.complete(.readRSSI, .readRSSI(status: .success, handle: 1, rssi: -3)).commandResponse
        #expect(complete?.opcode == .readRSSI && complete?.numHCICommandPackets == 1 && complete?.status == .success)
        let status = HCIEvent.commandStatus(status: .commandDisallowed, numHCICommandPackets: 2, opcode: .leCreateConnection)
        #expect(status.commandResponse?.status == .commandDisallowed)
        #expect(HCIEvent.hardwareError(hardwareCode: 0).commandResponse == nil)
        #expect(HCICommand.table[.leCreateConnection]?.answeredByCommandStatus == true)
        #expect(HCICommand.table[.reset]?.answeredByCommandStatus == false)
    }

    @Test func advertisingDataIsExposedRaw() throws {
        let event = try HCIEvent(decoding: hex("3e 1f 02 02 00 00 1371da7d1a00 03 020106 c4 04 01 5544332211c0 06 050954657374 ba"))
        guard case .leMeta(.advertisingReport(let reports)) = event else {
            Issue.record("not an advertising report")
            return
        }
        #expect(reports.map(\.data) == [hex("020106"), hex("050954657374")])
        #expect(reports[1].address.type == .random)
        #expect(reports.map(\.rssi) == [-60, -70])
    }

    @Test func propertyRoundTrips() async {
        await propertyCheck(
            count: 300,
            input: Gen.uint16(in: 0...0x0EFF), Gen.uint16(), Gen.uint8(), Gen.uint64(), Gen.int(in: 0...31), Gen.int(in: 1...4)
        ) { handle, value, byte, wide, length, count in
            let data = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ Int(byte)) }
            let address = BluetoothAddress(wide, type: byte & 1 == 0 ? .public : .random)
            let reports = (0..<count).map { index in
                LEAdvertisingReport(eventType: LEAdvertisingReportType(byte), address: address,
                                    data: Array(data.dropFirst(index)), rssi: Int8(truncatingIfNeeded: Int(byte) &+ index))
            }
            let connection = LEConnectionComplete(
                status: .success, handle: handle, role: LERole(byte), peerAddressType: LEAddressType(address.type),
                peerAddress: address, connectionInterval: value, peripheralLatency: value, supervisionTimeout: value,
                centralClockAccuracy: byte)
            let events: [HCIEvent] = [
                .disconnectionComplete(status: HCIStatus(byte), handle: handle, reason: HCIStatus(byte)),
                .commandStatus(status: HCIStatus(byte), numHCICommandPackets: byte, opcode: HCIOpcode(value)),
                .commandComplete(numHCICommandPackets: byte, opcode: .leRand,
                                 returnParameters: .leRand(status: .success, randomNumber: wide)),
                .commandComplete(numHCICommandPackets: byte, opcode: .readRSSI,
                                 returnParameters: .readRSSI(status: .success, handle: handle, rssi: Int8(truncatingIfNeeded: value))),
                .numberOfCompletedPackets((0..<count).map { HCICompletedPackets(handle: handle, count: value &+ UInt16($0)) }),
                .leMeta(.advertisingReport(reports)),
                .leMeta(.connectionComplete(connection)),
                .leMeta(.enhancedConnectionCompleteV2(LEEnhancedConnectionComplete(connection: connection),
                                                      advertisingHandle: byte, syncHandle: value)),
                .leMeta(.longTermKeyRequest(handle: handle, randomNumber: wide, encryptedDiversifier: value)),
                .leMeta(.dataLengthChange(handle: handle, maxTxOctets: value, maxTxTime: value, maxRxOctets: 27, maxRxTime: 328)),
                .leMeta(.extendedAdvertisingReport([LEExtendedAdvertisingReport(
                    eventType: value, addressType: LEAddressType(address.type), address: address, rssi: -1, data: data)])),
                .vendor(data),
            ]
            for event in events {
                #expect((try? HCIEvent(decoding: event.encode())) == event)
            }
        }
    }
}
