import ATT
import BluetoothCore
import PropertyBased
import Testing
import TestSupport

@Suite("ATT golden vectors")
struct ATTGoldenTests {
    @Test("spec-vectors §2.2 BlueZ exchange decodes and encodes", arguments: ATTGoldens.blueZExchange)
    func blueZExchange(_ golden: ATTGolden) throws {
        try checkBothWays(golden)
    }

    @Test("spec-vectors §2.2 more BlueZ PDUs", arguments: ATTGoldens.blueZExtra)
    func blueZExtra(_ golden: ATTGolden) throws {
        try checkBothWays(golden)
    }

    @Test("spec-vectors §2.2 canonical single PDUs", arguments: ATTGoldens.canonical)
    func canonical(_ golden: ATTGolden) throws {
        try checkBothWays(golden)
    }

    @Test("hand-built PDUs", arguments: ATTGoldens.handBuilt)
    func handBuilt(_ golden: ATTGolden) throws {
        try checkBothWays(golden)
    }

    func checkBothWays(_ golden: ATTGolden) throws {
        #expect(!golden.bytes.isEmpty, "bad hex in test \(golden.name)")
        let decoded = try ATTPDU(decoding: golden.bytes)
        #expect(decoded == golden.pdu, "\(golden.name)")
        #expect(golden.pdu.encode() == golden.bytes, "\(golden.name)")
        #expect(decoded.opcode.rawValue == golden.bytes.first)
        // Every golden vector is a well-formed PDU with real handles.
        #expect(throws: Never.self) { try decoded.validate() }
        // Decoding from a slice of a larger buffer gives the same value.
        let padded = [0xEE] + golden.bytes + [0xEE]
        #expect(try ATTPDU(decoding: padded[1..<(padded.count - 1)]) == golden.pdu)
    }

    @Test func decodedFieldsOfBlueZVectors() throws {
        guard case .readByGroupTypeResponse(let response) = try ATTPDU(decoding: hex("111490009600efcdab8967452301000000000ca00000"))
        else { Issue.record("not a Read By Group Type Response"); return }
        #expect(response.elementLength == 20)
        #expect(try BluetoothUUID(littleEndianBytes: response.elements[0].value).uuidString == "0000A00C-0000-0000-0123-456789ABCDEF")

        guard case .readByTypeResponse(let characteristics) = try ATTPDU(decoding: hex("091514f08215f0efcdab89674523010000000009b00000"))
        else { Issue.record("not a Read By Type Response"); return }
        #expect(characteristics.elementLength == 21)
        #expect(characteristics.elements[0].value[0] == 0x82)

        guard case .signedWriteCommand(_, _, let signature) = try ATTPDU(decoding: hex("d20300010200000000b3a8594127ebc2c0"))
        else { Issue.record("not a Signed Write Command"); return }
        #expect(signature.signCounter == 0)
        #expect(signature.mac == hex("b3a8594127ebc2c0"))
        #expect(ATTAuthenticationSignature(signCounter: 1, mac: hex("273974f4392a232a"))?.bytes == hex("01000000273974f4392a232a"))
        #expect(ATTAuthenticationSignature(bytes: [1, 2, 3]) == nil)
    }

    @Test func a128BitFormOfA16BitUUIDDecodesToTheSameUUID() throws {
        // Read By Type Request for 0x2803 given in its 128-bit form.
        let long = try ATTPDU(decoding: hex("080100ffff" + "fb349b5f80000080001000000328" + "0000"))
        #expect(long == .readByTypeRequest(range: range1toFFFF, attributeType: BluetoothUUID(0x2803)))
        // It re-encodes in the 16-bit form (documented normalisation).
        #expect(long.encode() == hex("080100ffff0328"))
    }
}

@Suite("ATT opcode table")
struct ATTOpcodeTableTests {
    /// One sample per opcode: the first golden vector using it.
    static var samples: [UInt8: ATTGolden] {
        var samples: [UInt8: ATTGolden] = [:]
        for golden in ATTGoldens.all where samples[golden.pdu.opcode.rawValue] == nil {
            samples[golden.pdu.opcode.rawValue] = golden
        }
        return samples
    }

    @Test("every opcode in the table has a codec and round-trips a sample", arguments: ATTOpcodeTable.entries)
    func everyOpcodeHasACodec(_ entry: ATTOpcodeInfo) throws {
        let sample = try #require(Self.samples[entry.opcode.rawValue], "no sample for \(entry.name)")
        let bytes = sample.pdu.encode()
        #expect(entry.lengthRule.accepts(bytes.count), "\(entry.name): \(bytes.count) vs \(entry.lengthRule)")
        let decoded = try ATTPDU(decoding: bytes)
        #expect(decoded == sample.pdu)
        #expect(decoded.kind == entry.kind)
        #expect(decoded.dissection.label == entry.name)
        #expect(entry.opcode.name == entry.name)
        #expect(entry.identifier.hasPrefix("ATT_"))
    }

    @Test func everySampleOpcodeIsInTheTable() {
        for opcode in Self.samples.keys {
            #expect(ATTOpcodeTable.info(for: ATTOpcode(opcode)) != nil)
        }
        #expect(Self.samples.count == ATTOpcodeTable.entries.count)
        #expect(ATTOpcodeTable.entries.count == 31)
        #expect(Set(ATTOpcodeTable.entries.map(\.opcode)).count == ATTOpcodeTable.entries.count)
    }

    @Test func kindsAndResponses() {
        for entry in ATTOpcodeTable.entries {
            switch entry.kind {
            case .request:
                // Each request is answered by the next opcode, whose kind is response.
                #expect(entry.responseOpcode?.rawValue == entry.opcode.rawValue + 1)
                #expect(entry.responseOpcode?.kind == .response)
            default:
                #expect(entry.responseOpcode == nil)
            }
            #expect(entry.opcode.isCommand == (entry.kind == .command))
        }
        #expect(ATTOpcode.signedWriteCommand.hasAuthenticationSignature)
        #expect(ATTOpcode.signedWriteCommand.isCommand)
        #expect(ATTOpcode.signedWriteCommand.method == 0x12)
        #expect(ATTOpcode.writeCommand.method == ATTOpcode.writeRequest.method)
        #expect(!ATTOpcode.writeRequest.isCommand)
        #expect(ATTOpcode.handleValueIndication.kind == .indication)
        #expect(ATTOpcode.handleValueConfirmation.kind == .confirmation)
        #expect(ATTOpcode.multipleHandleValueNotification.kind == .notification)
        #expect(ATTOpcode.readRequest.responseOpcode == .readResponse)
        #expect(ATTOpcode(0x14).kind == nil)
        #expect(ATTOpcode.readByTypeRequest.description == "Read By Type Request (0x08)")
        #expect(ATTOpcode(0x3F).description == "Unknown ATT opcode (0x3F)")
    }

    @Test("wrong lengths per the table throw", arguments: ATTOpcodeTable.entries)
    func wrongLengths(_ entry: ATTOpcodeInfo) {
        for length in 1...40 where !entry.lengthRule.accepts(length) {
            let bytes = [entry.opcode.rawValue] + [UInt8](repeating: 0x01, count: length - 1)
            do {
                _ = try ATTPDU(decoding: bytes)
                Issue.record("\(entry.name) of \(length) octets decoded")
            } catch {
                #expect(error.code == .invalidLength || error.code == .truncated)
                #expect(error.reason.contains(entry.name))
            }
        }
    }

    @Test func lengthRules() {
        #expect(ATTLengthRule.exact(3).accepts(3) && !ATTLengthRule.exact(3).accepts(4))
        #expect(ATTLengthRule.oneOf([7, 21]).accepts(21) && !ATTLengthRule.oneOf([7, 21]).accepts(9))
        let stepped = ATTLengthRule.stepped(minimum: 5, step: 2)
        #expect(stepped.accepts(5) && stepped.accepts(7) && !stepped.accepts(6) && !stepped.accepts(3))
        #expect(ATTLengthRule.stepped(minimum: 5, step: 0).accepts(5))
        #expect(!ATTLengthRule.stepped(minimum: 5, step: 0).accepts(6))
        #expect(stepped.minimumLength == 5)
        #expect(ATTLengthRule.oneOf([7, 21]).description == "7 or 21 octets")
    }
}

@Suite("ATT hostile input")
struct ATTHostileTests {
    @Test("truncation at every length never crashes; fixed-length PDUs throw", arguments: ATTGoldens.all)
    func truncation(_ golden: ATTGolden) {
        let bytes = golden.bytes
        for length in 0..<bytes.count {
            let prefix = Array(bytes.prefix(length))
            do {
                let pdu = try ATTPDU(decoding: prefix)
                // A shorter PDU of a variable-length kind may be valid; then it must be self-consistent.
                #expect(pdu.encode() == prefix, "\(golden.name) cut to \(length)")
                if case .exact = pdu.opcode.info?.lengthRule { Issue.record("fixed-length \(golden.name) cut to \(length) decoded") }
            } catch {
                #expect(DecodeError.Code.allCases.contains(error.code))
            }
        }
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: []) }
    }

    @Test("trailing bytes on fixed-length PDUs throw", arguments: ATTGoldens.all)
    func trailing(_ golden: ATTGolden) {
        guard let rule = golden.pdu.opcode.info?.lengthRule else { return }
        let extended = golden.bytes + [0x00]
        switch rule {
        case .exact, .oneOf:
            #expect(throws: DecodeError.self) { try ATTPDU(decoding: extended) }
        default:
            // Variable-length PDUs either absorb the octet into a value or reject it; never crash.
            if let pdu = try? ATTPDU(decoding: extended) { #expect(pdu.encode() == extended) }
        }
    }

    @Test func readByTypeResponseElementLengthZero() {
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("09000200")) }
        do { _ = try ATTPDU(decoding: hex("0900020003000400")) } catch {
            #expect(error.code == .invalidLength)
            #expect(error.offset == 1)
        }
    }

    @Test func readByTypeResponseElementLengthTooSmall() throws {
        let error = try #require(throws: DecodeError.self) { try ATTPDU(decoding: hex("0901020003")) }
        #expect(error.code == .invalidLength)
        #expect(error.reason.contains("smaller than a handle"))
    }

    @Test func readByTypeResponseElementLengthNotDividingTheRest() throws {
        // Length 3, 5 octets of data.
        let error = try #require(throws: DecodeError.self) { try ATTPDU(decoding: hex("09030200010300")) }
        #expect(error.code == .invalidLength)
        #expect(error.reason.contains("whole number"))
        // Length 7 as in BlueZ row 12, one octet missing.
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("09070200020300002a" + "0300")) }
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("0907020002030000")) }
        // spec-vectors.md §2.2's printing of BlueZ's 128-bit characteristic, one 00 too many: 22 octets, length 21.
        let typo = try #require(throws: DecodeError.self) {
            try ATTPDU(decoding: hex("091514f08215f0efcdab8967452301000000000009b00000"))
        }
        #expect(typo.code == .invalidLength)
    }

    @Test func readByGroupTypeResponseBadLengths() {
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("110001000400")) }  // length 0
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("1103010004000118")) }  // smaller than 4
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("11060100040001180500")) }  // not dividing
    }

    @Test func findInformationResponseBadFormats() {
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("050304000129")) }  // format 3
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("05000400012900")) }  // format 0
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("05010400012905")) }  // pairs do not divide
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("050204000129")) }  // 128-bit format, 4 octets
    }

    @Test func otherBadPDUs() {
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("1802")) }  // execute write flags 0x02
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("18ff")) }
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("0e0300")) }  // one handle
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("0e03000500ff")) }  // odd
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("080100ffff0d180000")) }  // 4-octet UUID
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("2303000900aabb05000100cc")) }  // length over data
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("230300050001020304ff")) }  // one tuple
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("2303000200aabb050001")) }  // cut in length
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("21010000aa")) }  // cut in second length field... 1 octet
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("d2030000000000b3a8594127ebc2")) }  // short signature
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("0a030000")) }
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("1300")) }
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("1e00")) }
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("07050008")) }
        #expect(throws: DecodeError.self) { try ATTPDU(decoding: hex("070500080001")) }
    }

    @Test func readMultipleVariableResponseTruncationRules() throws {
        // The final value may be cut by the MTU: decodes with isTruncated.
        guard case .readMultipleVariableResponse(let response) = try ATTPDU(decoding: hex("21020001020500030405"))
        else { Issue.record("not a Read Multiple Variable Response"); return }
        #expect(response.isTruncated)
        #expect(response.values == [[1, 2], [3, 4, 5]])
        #expect(response.tuples[1].length == 5)
        // A list cut inside a length field is rejected.
        let cut = try #require(throws: DecodeError.self) { try ATTPDU(decoding: hex("2102000102" + "05")) }
        #expect(cut.code == .truncated)
        // Only the last tuple may be truncated when building.
        #expect(throws: DecodeError.self) {
            try ATTReadMultipleVariableResponse(tuples: [ATTLengthValue(length: 4, truncatedValue: [1])!, ATTLengthValue(value: [])!])
        }
        #expect(ATTLengthValue(length: 1, truncatedValue: [1, 2]) == nil)
    }

    @Test func unknownOpcodes() throws {
        for opcode: UInt8 in [0x00, 0x14, 0x15, 0x1A, 0x1C, 0x1F, 0x22, 0x24, 0x3F, 0x7F, 0x92, 0xFF] {
            let error = try #require(throws: DecodeError.self) { try ATTPDU(decoding: [opcode, 0x01, 0x00]) }
            #expect(error.code == .unknownType)
        }
    }

    @Test func randomBytesNeverCrash() {
        var generator = SeededGenerator(seed: 0xA77)
        let known = ATTOpcodeTable.entries.map(\.opcode.rawValue)
        var decodedCount = 0
        for _ in 0..<5000 {
            let length = Int.random(in: 0...48, using: &generator)
            var bytes = generator.bytes(length)
            if !bytes.isEmpty, Bool.random(using: &generator) {
                bytes[0] = known.randomElement(using: &generator) ?? 0x01
            }
            do {
                let pdu = try ATTPDU(decoding: bytes)
                decodedCount += 1
                _ = pdu.dissection.renderText()
                _ = try? pdu.validate()
                // Value round trip (UUIDs normalise, so compare values, not bytes).
                #expect(try ATTPDU(decoding: pdu.encode()) == pdu)
            } catch {
                _ = ATTPDU.errorResponse(answeringUndecodable: bytes)
            }
        }
        #expect(decodedCount > 100)
    }

    @Test func randomMutationsOfGoldensNeverCrash() throws {
        var generator = SeededGenerator(seed: 42)
        let goldens = ATTGoldens.all.map(\.bytes)
        for _ in 0..<4000 {
            guard var bytes = goldens.randomElement(using: &generator), !bytes.isEmpty else { continue }
            let index = Int.random(in: 0..<bytes.count, using: &generator)
            bytes[index] = UInt8.random(in: 0...255, using: &generator)
            if Bool.random(using: &generator) { bytes += generator.bytes(Int.random(in: 0...4, using: &generator)) }
            if let pdu = try? ATTPDU(decoding: bytes) {
                #expect(try ATTPDU(decoding: pdu.encode()) == pdu)
            }
        }
    }
}

@Suite("ATT server answers")
struct ATTServerAnswerTests {
    @Test func undecodableRequests() {
        // Unknown opcode without the command flag: Request Not Supported.
        #expect(ATTPDU.errorResponse(answeringUndecodable: [0x22, 0x01])
            == .errorResponse(requestOpcode: ATTOpcode(0x22), handle: 0, error: .requestNotSupported))
        // Known request with a wrong length: Invalid PDU.
        #expect(ATTPDU.errorResponse(answeringUndecodable: hex("0a03"))
            == .errorResponse(requestOpcode: .readRequest, handle: 0, error: .invalidPDU))
        #expect(ATTPDU.errorResponse(answeringUndecodable: hex("1802"))
            == .errorResponse(requestOpcode: .executeWriteRequest, handle: 0, error: .invalidPDU))
        // Commands, known or not, are silently ignored.
        #expect(ATTPDU.errorResponse(answeringUndecodable: hex("5203")) == nil)
        #expect(ATTPDU.errorResponse(answeringUndecodable: hex("d20300")) == nil)
        #expect(ATTPDU.errorResponse(answeringUndecodable: hex("7f")) == nil)
        #expect(ATTOpcode(0x7F).errorForUndecodableRequest == nil)
        // Non-requests are not answered either.
        #expect(ATTPDU.errorResponse(answeringUndecodable: hex("1e00")) == nil)
        #expect(ATTPDU.errorResponse(answeringUndecodable: hex("0b")) == nil)
        #expect(ATTPDU.errorResponse(answeringUndecodable: [UInt8]()) == nil)
        #expect(ATTOpcode(0x94).errorForUndecodableRequest == .requestNotSupported)
    }

    @Test func validateFindsBadRangesAndZeroHandles() throws {
        let inverted = ATTPDU.readByTypeRequest(range: ATTHandleRange(start: 5, end: 4), attributeType: BluetoothUUID(0x2803))
        let violation = try #require(throws: ATTProtocolViolation.self) { try inverted.validate() }
        #expect(violation.error == .invalidHandle)
        #expect(violation.handle == 5)
        #expect(violation.errorResponse == .errorResponse(requestOpcode: .readByTypeRequest, handle: 5, error: .invalidHandle))

        let zeroStart = try ATTPDU(decoding: hex("100000ffff0028"))
        let zero = try #require(throws: ATTProtocolViolation.self) { try zeroStart.validate() }
        #expect(zero.errorResponse == .errorResponse(requestOpcode: .readByGroupTypeRequest, handle: 0, error: .invalidHandle))

        #expect(throws: ATTProtocolViolation.self) { try ATTPDU(decoding: hex("0a0000")).validate() }
        #expect(throws: ATTProtocolViolation.self) { try ATTPDU(decoding: hex("0e03000000")).validate() }
        #expect(throws: ATTProtocolViolation.self) { try ATTPDU(decoding: hex("0405000400")).validate() }
        #expect(throws: ATTProtocolViolation.self) { try ATTPDU(decoding: hex("060000ffff00280d18")).validate() }
        // Commands and notifications are reported but never answered.
        let command = try #require(throws: ATTProtocolViolation.self) { try ATTPDU(decoding: hex("52000001")).validate() }
        #expect(command.errorResponse == nil)
        #expect(throws: ATTProtocolViolation.self) { try ATTPDU(decoding: hex("1b0000aa")).validate() }
        // Values built in code with too few handles.
        let short = try #require(throws: ATTProtocolViolation.self) { try ATTPDU.readMultipleRequest(handles: [3]).validate() }
        #expect(short.error == .invalidPDU)
        #expect(throws: ATTProtocolViolation.self) { try ATTPDU.findByTypeValueResponse([]).validate() }
        // A range of one handle is fine.
        #expect(throws: Never.self) { try ATTPDU.findInformationRequest(ATTHandleRange(start: 4, end: 4)).validate() }
        #expect(ATTHandleRange(start: 3, end: 3).isValid && !ATTHandleRange(start: 0, end: 3).isValid)
        #expect(ATTHandleRange.all.contains(0xFFFF) && !ATTHandleRange.all.contains(0))
    }

    @Test func constructorsRejectWhatCannotBeEncoded() {
        #expect(throws: DecodeError.self) { try ATTReadByTypeResponse(elements: []) }
        #expect(throws: DecodeError.self) {
            try ATTReadByTypeResponse(elements: [ATTHandleValue(handle: 1, value: [1]), ATTHandleValue(handle: 2, value: [1, 2])])
        }
        #expect(throws: DecodeError.self) { try ATTReadByTypeResponse(elements: [ATTHandleValue(handle: 1, value: .init(repeating: 0, count: 254))]) }
        #expect(throws: Never.self) { try ATTReadByTypeResponse(elements: [ATTHandleValue(handle: 1, value: .init(repeating: 0, count: 253))]) }
        #expect(throws: DecodeError.self) {
            try ATTReadByGroupTypeResponse(elements: [ATTAttributeGroupData(handle: 1, endGroupHandle: 2, value: .init(repeating: 0, count: 252))])
        }
        #expect(throws: DecodeError.self) { try ATTReadByGroupTypeResponse(elements: []) }
        #expect(throws: DecodeError.self) {
            try ATTFindInformationResponse(format: .uuid16, information: [ATTHandleUUID(handle: 1, uuid: blueZService128)])
        }
        #expect(throws: DecodeError.self) { try ATTFindInformationResponse(information: []) }
        #expect((try? ATTFindInformationResponse(information: [ATTHandleUUID(handle: 1, uuid: blueZService128)]))?.format == .uuid128)
        #expect(throws: DecodeError.self) { try ATTMultipleHandleValueNotification(tuples: [ATTHandleValue(handle: 1, value: [])]) }
        #expect(throws: DecodeError.self) { try ATTReadMultipleVariableResponse(tuples: []) }
        #expect(ATTLengthValue(value: .init(repeating: 0, count: 65536)) == nil)
    }
}

@Suite("ATT server input")
struct ATTServerInputTests {
    @Test func classifies() {
        #expect(ATTServerInput(classifying: hex("0a0300")) == .process(.readRequest(handle: 3)))
        #expect(ATTServerInput(classifying: hex("0a0000"))
            == .respond(.errorResponse(requestOpcode: .readRequest, handle: 0, error: .invalidHandle)))
        #expect(ATTServerInput(classifying: hex("08050004000328"))
            == .respond(.errorResponse(requestOpcode: .readByTypeRequest, handle: 5, error: .invalidHandle)))
        #expect(ATTServerInput(classifying: hex("0a03"))
            == .respond(.errorResponse(requestOpcode: .readRequest, handle: 0, error: .invalidPDU)))
        #expect(ATTServerInput(classifying: hex("2a0300"))
            == .respond(.errorResponse(requestOpcode: ATTOpcode(0x2A), handle: 0, error: .requestNotSupported)))
        if case .ignore = ATTServerInput(classifying: hex("5200")) {} else { Issue.record("short command answered") }
        if case .ignore = ATTServerInput(classifying: hex("520000aa")) {} else { Issue.record("zero-handle command answered") }
        if case .ignore = ATTServerInput(classifying: hex("6a0300")) {} else { Issue.record("unknown command answered") }
        if case .ignore = ATTServerInput(classifying: []) {} else { Issue.record("empty PDU answered") }
        #expect(ATTServerInput(classifying: hex("1e")) == .process(.handleValueConfirmation))
    }
}
