import BluetoothCore
import HCI
import Testing
import TestSupport

@Suite struct CommandsHostileTests {
    @Test func truncationAtEveryLengthThrows() {
        for (command, text) in CommandVectors.all {
            let bytes = hex(text)
            for cut in 0..<bytes.count {
                #expect(throws: DecodeError.self, "\(command.name) cut at \(cut)") {
                    try HCICommand(decoding: Array(bytes.prefix(cut)))
                }
            }
        }
    }

    @Test func trailingBytesThrow() {
        for (command, text) in CommandVectors.all {
            #expect(throws: DecodeError.self, "\(command.name) + 1") {
                try HCICommand(decoding: hex(text) + [0x00])
            }
        }
    }

    @Test func lengthFieldMustMatchTheSpecLength() throws {
        for (opcode, info) in HCICommand.table {
            for length in [info.parameterLength - 1, info.parameterLength + 1] where length >= 0 {
                let bytes = [UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), UInt8(length)]
                    + [UInt8](repeating: 0, count: length)
                do {
                    _ = try HCICommand(decoding: bytes)
                    Issue.record("\(info.name) accepted \(length) parameter octets")
                } catch {
                    #expect(error.code == .invalidLength)
                }
            }
        }
    }

    @Test func invalidFieldValuesThrow() {
        let cases: [(String, DecodeError.Code)] = [
            ("0604 03 000f 13", .invalidValue),  // handle 0x0F00 > 0x0EFF
            ("0820 20 20" + CommandVectors.zeros(31), .invalidLength),  // Advertising_Data_Length 32
            ("0a20 01 02", .invalidValue),  // Advertising_Enable 2
            ("0c20 02 01 02", .invalidValue),
            ("0520 06 00", .truncated),  // length says 6, 1 follows
        ]
        for (text, code) in cases {
            do {
                _ = try HCICommand(decoding: hex(text))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.code == code, "\(text): \(error)")
            }
        }
        // The top four bits of a handle are masked off, not rejected.
        #expect((try? HCICommand(decoding: hex("0604 03 40f0 13"))) == .disconnect(handle: 0x40, reason: .remoteUserTerminatedConnection))
    }

    @Test func randomBytesNeverCrashAndDecodedValuesAreStable() {
        var generator = SeededGenerator(seed: 0x4843_4943_4D44)
        let opcodes = Array(HCICommand.table.keys).sorted()
        for iteration in 0..<5000 {
            var bytes: [UInt8]
            if iteration % 2 == 0, let opcode = opcodes.randomElement(using: &generator) {
                // A known opcode with a random (usually right) length: reaches the per-command decoders.
                let length = (HCICommand.table[opcode]?.parameterLength ?? 0) + Int.random(in: -1...1, using: &generator)
                bytes = [UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8), UInt8(clamping: max(0, length))]
                    + generator.bytes(max(0, length + Int.random(in: -1...1, using: &generator)))
            } else {
                bytes = generator.bytes(Int.random(in: 0...40, using: &generator))
            }
            if let command = try? HCICommand(decoding: bytes) {
                #expect((try? HCICommand(decoding: command.encode())) == command, "\(Hex.encode(bytes))")
                _ = command.dissection.renderText()
            }
        }
    }
}
