import BluetoothCore
import HCI
import Testing
import TestSupport

@Suite struct EventsHostileTests {
    @Test func truncationAtEveryLengthThrows() {
        for (event, text) in EventVectors.all {
            let bytes = hex(text)
            for cut in 0..<bytes.count {
                #expect(throws: DecodeError.self, "\(event.dissection.label) cut at \(cut)") {
                    try HCIEvent(decoding: Array(bytes.prefix(cut)))
                }
            }
        }
    }

    @Test func trailingBytesThrow() {
        for (event, text) in EventVectors.all {
            #expect(throws: DecodeError.self, "\(event.dissection.label) + 1") {
                try HCIEvent(decoding: hex(text) + [0x00])
            }
        }
    }

    @Test func lengthFieldMismatchesThrow() {
        // Parameter_Total_Length one more / one less than the fixed spec length, with matching data.
        for (event, text) in EventVectors.all {
            let bytes = hex(text)
            switch event {
            case .vendor, .unknown, .leMeta(.unknown), .commandComplete(_, _, .raw): continue
            default: break
            }
            let longer = [bytes[0], bytes[1] &+ 1] + bytes.dropFirst(2) + [0x00]
            #expect(throws: DecodeError.self, "\(event.dissection.label) longer") { try HCIEvent(decoding: longer) }
            let shorter = [bytes[0], bytes[1] &- 1] + bytes.dropFirst(2).dropLast()
            #expect(throws: DecodeError.self, "\(event.dissection.label) shorter") { try HCIEvent(decoding: shorter) }
        }
    }

    @Test func invalidFieldValuesThrow() {
        let cases: [(String, DecodeError.Code)] = [
            ("05 04 00 000f 13", .invalidValue),  // handle 0x0F00 with success
            ("13 04 01 4000 01", .invalidLength),  // Num_Handles 1 but 3 octets
            ("13 09 01 4000 0100 4100 0200", .invalidLength),  // Num_Handles 1 but 8 octets
            ("3e 02 02 00", .invalidValue),  // Num_Reports 0
            ("3e 02 02 1a", .invalidValue),  // Num_Reports 26
            ("3e 0b 02 01 00 00 1371da7d1a00 20", .invalidLength),  // Data_Length 32
            ("3e 0b 02 01 00 00 1371da7d1a00 05", .truncated),  // data missing
            ("3e 00", .truncated),  // no subevent code
            ("0e 02 01 03", .truncated),  // Command Complete without a full opcode
            ("0e 05 01 0910 00 13", .invalidLength),  // BD_ADDR truncated return parameters
            ("0e 04 01 0910 00", .invalidLength),  // success without the address
            ("3e 0d 05 000f 0000000000000000 0000", .invalidValue),  // LTK request for handle 0x0F00
        ]
        for (text, code) in cases {
            do {
                _ = try HCIEvent(decoding: hex(text))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.code == code, "\(text): \(error)")
            }
        }
        // 0x0EFF is the largest valid handle; the top four bits are RFU and masked off.
        #expect((try? HCIEvent(decoding: hex("13 05 01 ff0e 0100"))) == .numberOfCompletedPackets([HCICompletedPackets(handle: 0x0EFF, count: 1)]))
        #expect((try? HCIEvent(decoding: hex("13 05 01 4030 0100"))) == .numberOfCompletedPackets([HCICompletedPackets(handle: 0x0040, count: 1)]))
        #expect(throws: DecodeError.self) { try HCIEvent(decoding: hex("13 05 01 ff0f 0100")) }
        // A failed connection may carry any handle.
        #expect((try? HCIEvent(decoding: hex("3e 13 01 02 ff0f 00 01 5544332211c0 1800 0000 f401 00"))) != nil)
    }

    @Test func randomBytesNeverCrashAndDecodedValuesAreStable() {
        var generator = SeededGenerator(seed: 0x4843_4945_5654)
        let interesting: [UInt8] = [0x05, 0x08, 0x0C, 0x0E, 0x0F, 0x10, 0x13, 0x1A, 0x30, 0x3E, 0x59, 0xFF]
        let opcodes = Array(HCICommand.table.keys).sorted()
        for iteration in 0..<6000 {
            var bytes: [UInt8]
            switch iteration % 3 {
            case 0:
                // A known event code with a consistent length field.
                let parameters = generator.bytes(Int.random(in: 0...60, using: &generator))
                bytes = [interesting.randomElement(using: &generator) ?? 0x3E, UInt8(parameters.count)] + parameters
            case 1:
                // Command Complete for a known opcode with random return parameters.
                let opcode = opcodes.randomElement(using: &generator) ?? .reset
                let returned = generator.bytes(Int.random(in: 0...(2 + (HCICommand.table[opcode]?.returnParametersLength ?? 1)),
                                                          using: &generator))
                bytes = [0x0E, UInt8(3 + returned.count), 1, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8)] + returned
            default:
                // LE Meta with a known subevent and plausible lengths.
                let subevent = UInt8.random(in: 0x01...0x0E, using: &generator)
                let parameters = [subevent, UInt8.random(in: 0...3, using: &generator)]
                    + generator.bytes(Int.random(in: 0...70, using: &generator))
                bytes = [0x3E, UInt8(parameters.count)] + parameters
            }
            if let event = try? HCIEvent(decoding: bytes) {
                #expect((try? HCIEvent(decoding: event.encode())) == event, "\(Hex.encode(bytes))")
                _ = event.dissection.renderText()
            }
            _ = try? HCIEvent(decoding: generator.bytes(Int.random(in: 0...24, using: &generator)))
        }
    }
}
