import BluetoothCore
import L2CAP
import PropertyBased
import TestSupport
import Testing

/// Hand-built golden vectors from the field layouts of Core 5.4 Vol 3 Part A §4.
let signalingGoldens: [(String, L2CAPSignalingCommand)] = [
    ("01 01 0200 0000", .commandReject(identifier: 1, .commandNotUnderstood)),
    ("01 02 0400 0100 1700", .commandReject(identifier: 2, .signalingMTUExceeded(actualMTU: 23))),
    ("01 03 0600 0200 4000 4100", .commandReject(identifier: 3, .invalidCIDInRequest(localCID: .init(0x40), remoteCID: .init(0x41)))),
    ("01 03 0400 0900 aabb", .commandReject(identifier: 3, .other(reason: .init(9), data: [0xAA, 0xBB]))),
    ("06 04 0400 4000 4100", .disconnectionRequest(identifier: 4, .init(destinationCID: .init(0x40), sourceCID: .init(0x41)))),
    ("07 04 0400 4000 4100", .disconnectionResponse(identifier: 4, .init(destinationCID: .init(0x40), sourceCID: .init(0x41)))),
    (
        "12 05 0800 1800 2800 0000 f401",
        .connectionParameterUpdateRequest(
            identifier: 5, .init(intervalMin: 24, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500))
    ),
    ("13 05 0200 0000", .connectionParameterUpdateResponse(identifier: 5, result: .accepted)),
    ("13 05 0200 0100", .connectionParameterUpdateResponse(identifier: 5, result: .rejected)),
    (
        "14 06 0a00 8000 4000 0002 f700 0a00",
        .leCreditBasedConnectionRequest(
            identifier: 6, .init(lePSM: 0x80, sourceCID: .init(0x40), mtu: 512, mps: 247, initialCredits: 10))
    ),
    (
        "15 06 0a00 4100 0002 f700 0a00 0000",
        .leCreditBasedConnectionResponse(
            identifier: 6,
            .init(destinationCID: .init(0x41), mtu: 512, mps: 247, initialCredits: 10, result: .successful))
    ),
    (
        "15 06 0a00 0000 0000 0000 0000 0200",
        .leCreditBasedConnectionResponse(
            identifier: 6, .init(destinationCID: .null, mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported))
    ),
    ("16 07 0400 4000 0500", .flowControlCreditIndication(identifier: 7, .init(cid: .init(0x40), credits: 5))),
    (
        "17 08 0c00 2700 4000 4000 0500 4000 4100",
        .creditBasedConnectionRequest(
            identifier: 8, .init(spsm: 0x27, mtu: 64, mps: 64, initialCredits: 5, sourceCIDs: [.init(0x40), .init(0x41)]))
    ),
    (
        "18 08 0c00 4000 4000 0500 0000 5000 5100",
        .creditBasedConnectionResponse(
            identifier: 8,
            .init(mtu: 64, mps: 64, initialCredits: 5, result: .successful, destinationCIDs: [.init(0x50), .init(0x51)]))
    ),
    (
        "18 08 0800 0000 0000 0000 0200",
        .creditBasedConnectionResponse(
            identifier: 8, .init(mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported, destinationCIDs: []))
    ),
    (
        "19 09 0800 8000 8000 5000 5100",
        .creditBasedReconfigureRequest(identifier: 9, .init(mtu: 128, mps: 128, destinationCIDs: [.init(0x50), .init(0x51)]))
    ),
    ("1a 09 0200 0000", .creditBasedReconfigureResponse(identifier: 9, result: .successful)),
    ("1a 09 0200 0100", .creditBasedReconfigureResponse(identifier: 9, result: .mtuReductionNotAllowed)),
    ("08 0a 0300 010203", .unknown(code: .echoRequest, identifier: 10, data: [1, 2, 3])),
    ("0a 0b 0200 0200", .unknown(code: .informationRequest, identifier: 11, data: [2, 0])),
    ("ff 0c 0000", .unknown(code: .init(0xFF), identifier: 12, data: [])),
]

@Suite struct L2CAPSignalingTests {
    @Test func goldenBytesBothWays() throws {
        for (text, command) in signalingGoldens {
            let bytes = hex(text)
            #expect(try L2CAPSignalingCommand(decoding: bytes) == command, "decoding \(text)")
            #expect(command.encode() == bytes, "encoding \(command)")
        }
    }

    @Test func headerAloneGivesTheIdentifier() throws {
        let header = try L2CAPSignalingHeader(decoding: hex("14 2a 0a00 80"))
        #expect(header.code == .leCreditBasedConnectionRequest && header.identifier == 0x2A && header.length == 10)
        #expect(header.encode() == hex("14 2a 0a00"))
        #expect(throws: DecodeError.self) { try L2CAPSignalingHeader(decoding: hex("14 2a 0a")) }
    }

    @Test func truncatedAtEveryLengthAndTrailingBytes() {
        for (text, _) in signalingGoldens {
            let bytes = hex(text)
            for length in 0..<bytes.count {
                #expect(throws: DecodeError.self) { try L2CAPSignalingCommand(decoding: Array(bytes.prefix(length))) }
            }
            // One C-frame carries exactly one command on LE.
            #expect(throws: DecodeError.self) { try L2CAPSignalingCommand(decoding: bytes + [0x00]) }
            #expect(throws: DecodeError.self) { try L2CAPSignalingCommand(decoding: bytes + bytes) }
        }
    }

    @Test func wrongDataLengthForEachCodeIsRejected() throws {
        for (code, rule) in L2CAPSignalingCode.leLengthRule {
            for length in 0...24 {
                var bytes: [UInt8] = [code, 0x01, UInt8(length), 0x00]
                bytes += [UInt8](repeating: 0, count: length)
                // Command Reject data depends on the reason: use a reason this build does not know.
                if code == 0x01, length > 0 { bytes[4] = 0x09 }
                if rule.accepts(length) {
                    let command = try L2CAPSignalingCommand(decoding: bytes)
                    #expect(command.code.rawValue == code)
                    #expect(command.encode() == bytes)
                } else {
                    #expect(throws: DecodeError.self, "code \(code) length \(length)") {
                        try L2CAPSignalingCommand(decoding: bytes)
                    }
                }
            }
        }
    }

    @Test func wrongLengthErrorCode() {
        do {
            _ = try L2CAPSignalingCommand(decoding: hex("06 01 0300 400041"))
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidLength)
            #expect(error.reason.contains("Disconnection Request"))
        }
    }

    @Test func rejectDataMustMatchReason() {
        // Command not understood with data, MTU exceeded without its MTU or with CIDs.
        for text in ["01 01 0400 0000 1700", "01 01 0200 0100", "01 01 0600 0100 4000 4100", "01 01 0400 0200 4000"] {
            #expect(throws: DecodeError.self, "\(text)") { try L2CAPSignalingCommand(decoding: hex(text)) }
        }
    }

    @Test func everyLECodeHasACodecAndAGolden() {
        let covered = Set(signalingGoldens.map { $0.1.code.rawValue })
        for code in L2CAPSignalingCode.leLengthRule.keys {
            #expect(covered.contains(code), "no golden for code \(code)")
            #expect(L2CAPSignalingCode(code).isLECommand)
            #expect(L2CAPSignalingCode.titles[code] != nil)
            #expect(L2CAPSignalingCode.names[code] != nil)
        }
        for (_, command) in signalingGoldens {
            if case .unknown(let code, _, _) = command { #expect(!code.isLECommand) }
        }
        // Every code with a title has a name.
        #expect(Set(L2CAPSignalingCode.titles.keys) == Set(L2CAPSignalingCode.names.keys))
    }

    @Test func validation() {
        let good = L2CAPConnectionParameterUpdateRequest(
            intervalMin: 6, intervalMax: 3200, peripheralLatency: 0, timeoutMultiplier: 3200)
        #expect(throws: Never.self) { try good.validate() }
        let bad: [L2CAPConnectionParameterUpdateRequest] = [
            .init(intervalMin: 5, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500),
            .init(intervalMin: 6, intervalMax: 3201, peripheralLatency: 0, timeoutMultiplier: 500),
            .init(intervalMin: 50, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 500),
            .init(intervalMin: 6, intervalMax: 6, peripheralLatency: 500, timeoutMultiplier: 3200),
            .init(intervalMin: 6, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 9),
            .init(intervalMin: 6, intervalMax: 40, peripheralLatency: 0, timeoutMultiplier: 3201),
            // (1 + 9) × 40 × 1.25 ms × 2 = 1000 ms > 990 ms supervision timeout.
            .init(intervalMin: 6, intervalMax: 40, peripheralLatency: 9, timeoutMultiplier: 99),
        ]
        for request in bad {
            #expect(throws: DecodeError.self, "\(request)") { try request.validate() }
        }
        // The boundary itself is allowed: (1 + 9) × 40 × 2.5 ms = 1000 ms = timeout.
        #expect(throws: Never.self) {
            try L2CAPConnectionParameterUpdateRequest(
                intervalMin: 6, intervalMax: 40, peripheralLatency: 9, timeoutMultiplier: 100
            ).validate()
        }

        #expect(throws: DecodeError.self) {
            try L2CAPLECreditBasedConnectionRequest(lePSM: 0x80, sourceCID: .init(0x40), mtu: 22, mps: 23, initialCredits: 1).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPLECreditBasedConnectionRequest(lePSM: 0x80, sourceCID: .init(0x40), mtu: 23, mps: 22, initialCredits: 1).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPLECreditBasedConnectionRequest(lePSM: 0x80, sourceCID: .init(0x40), mtu: 23, mps: 65534, initialCredits: 1).validate()
        }
        #expect(throws: Never.self) {
            try L2CAPLECreditBasedConnectionRequest(lePSM: 0x80, sourceCID: .init(0x40), mtu: 23, mps: 65533, initialCredits: 0).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPLECreditBasedConnectionResponse(destinationCID: .init(0x40), mtu: 22, mps: 23, initialCredits: 1, result: .successful).validate()
        }
        #expect(throws: Never.self) {
            try L2CAPLECreditBasedConnectionResponse(destinationCID: .null, mtu: 0, mps: 0, initialCredits: 0, result: .spsmNotSupported).validate()
        }
        #expect(throws: DecodeError.self) { try L2CAPFlowControlCreditIndication(cid: .init(0x40), credits: 0).validate() }
        #expect(throws: Never.self) { try L2CAPFlowControlCreditIndication(cid: .init(0x40), credits: 65535).validate() }
        #expect(throws: DecodeError.self) {
            try L2CAPCreditBasedConnectionRequest(spsm: 0x80, mtu: 63, mps: 64, initialCredits: 1, sourceCIDs: [.init(0x40)]).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPCreditBasedConnectionRequest(spsm: 0x80, mtu: 64, mps: 63, initialCredits: 1, sourceCIDs: [.init(0x40)]).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPCreditBasedConnectionRequest(spsm: 0x80, mtu: 64, mps: 64, initialCredits: 1, sourceCIDs: []).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPCreditBasedConnectionRequest(
                spsm: 0x80, mtu: 64, mps: 64, initialCredits: 1, sourceCIDs: (0x40...0x45).map { .init($0) }
            ).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPCreditBasedConnectionResponse(mtu: 63, mps: 64, initialCredits: 1, result: .successful, destinationCIDs: [.init(0x40)]).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPCreditBasedReconfigureRequest(mtu: 64, mps: 64, destinationCIDs: []).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPCreditBasedReconfigureRequest(mtu: 64, mps: 63, destinationCIDs: [.init(0x40)]).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPSignalingCommand.disconnectionRequest(identifier: 0, .init(destinationCID: .init(0x40), sourceCID: .init(0x41))).validate()
        }
        #expect(throws: DecodeError.self) {
            try L2CAPSignalingCommand.commandReject(identifier: 1, .other(reason: .init(7), data: [1, 2, 3])).validate()
        }
        for (_, command) in signalingGoldens where command.code != .leCreditBasedConnectionResponse
            && command.code != .creditBasedConnectionResponse
        {
            #expect(throws: Never.self, "\(command)") { try command.validate() }
        }
    }

    @Test func dissections() throws {
        let request = try L2CAPSignalingCommand(decoding: hex("12 05 0800 1800 2800 0000 f401"))
        let text = request.dissection.renderText()
        #expect(request.dissection.label == "L2CAP Connection Parameter Update Request")
        #expect(text.contains("Code: L2CAP_CONNECTION_PARAMETER_UPDATE_REQ (0x12)"))
        #expect(text.contains("Identifier: 0x05"))
        #expect(text.contains("Interval Min: 24 (30.00 ms)"))
        #expect(text.contains("Interval Max: 40 (50.00 ms)"))
        #expect(text.contains("Timeout Multiplier: 500 (5000 ms)"))
        let le = try L2CAPSignalingCommand(decoding: hex("15 06 0a00 4100 0002 f700 0a00 0000"))
        #expect(le.dissection.renderText().contains("Result: Connection successful (0x0000)"))
        #expect(le.dissection.renderText().contains("Destination CID: Dynamic LE channel (0x0041)"))
        let reject = L2CAPSignalingCommand.rejectNotUnderstood(identifier: 9)
        #expect(reject.dissection.renderText().contains("Reason: Command not understood (0x0000)"))
        for (_, command) in signalingGoldens {
            #expect(command.dissection.label.hasPrefix("L2CAP "))
            #expect(command.dissection.children.count >= 3)
        }
    }

    @Test func randomBytesNeverCrashAndRoundTrip() {
        var generator = SeededGenerator(seed: 0x5_16A1)
        var decoded = 0
        for iteration in 0..<5000 {
            var bytes: [UInt8]
            if iteration % 2 == 0 {
                // A plausible header: LE code and a consistent length, random data.
                let code = UInt8.random(in: 0x00...0x1C, using: &generator)
                let length = Int.random(in: 0...20, using: &generator)
                bytes = [code, UInt8.random(in: 0...255, using: &generator), UInt8(length), 0] + generator.bytes(length)
            } else {
                bytes = generator.bytes(Int.random(in: 0...24, using: &generator))
            }
            do {
                let command = try L2CAPSignalingCommand(decoding: bytes)
                decoded += 1
                #expect(command.encode() == bytes)
                _ = command.dissection
                _ = try? command.validate()
            } catch {
                _ = error.description
            }
        }
        #expect(decoded > 500)
    }

    @Test func propertyRoundTrip() async {
        await propertyCheck(
            count: 300,
            input: Gen.uint8(), Gen.uint16(), Gen.uint16(), Gen.uint16(), Gen.uint16(), Gen.int(in: 0...5)
        ) { identifier, a, b, c, d, count in
            let cids = (0..<count).map { L2CAPChannelIdentifier(a &+ UInt16($0)) }
            let commands: [L2CAPSignalingCommand] = [
                .commandReject(identifier: identifier, .signalingMTUExceeded(actualMTU: a)),
                .commandReject(identifier: identifier, .invalidCIDInRequest(localCID: .init(b), remoteCID: .init(c))),
                .disconnectionRequest(identifier: identifier, .init(destinationCID: .init(a), sourceCID: .init(b))),
                .disconnectionResponse(identifier: identifier, .init(destinationCID: .init(c), sourceCID: .init(d))),
                .connectionParameterUpdateRequest(
                    identifier: identifier, .init(intervalMin: a, intervalMax: b, peripheralLatency: c, timeoutMultiplier: d)),
                .connectionParameterUpdateResponse(identifier: identifier, result: .init(a)),
                .leCreditBasedConnectionRequest(
                    identifier: identifier, .init(lePSM: a, sourceCID: .init(b), mtu: c, mps: d, initialCredits: a ^ d)),
                .leCreditBasedConnectionResponse(
                    identifier: identifier,
                    .init(destinationCID: .init(a), mtu: b, mps: c, initialCredits: d, result: .init(a ^ b))),
                .flowControlCreditIndication(identifier: identifier, .init(cid: .init(c), credits: d)),
                .creditBasedConnectionResponse(
                    identifier: identifier, .init(mtu: a, mps: b, initialCredits: c, result: .init(d), destinationCIDs: cids)),
                .creditBasedReconfigureResponse(identifier: identifier, result: .init(b)),
                .unknown(code: .echoResponse, identifier: identifier, data: hex("0102")),
            ]
            var all = commands
            if count > 0 {
                all.append(
                    .creditBasedConnectionRequest(
                        identifier: identifier, .init(spsm: a, mtu: b, mps: c, initialCredits: d, sourceCIDs: cids)))
                all.append(.creditBasedReconfigureRequest(identifier: identifier, .init(mtu: a, mps: b, destinationCIDs: cids)))
            }
            for command in all {
                #expect((try? L2CAPSignalingCommand(decoding: command.encode())) == command)
            }
        }
    }
}
