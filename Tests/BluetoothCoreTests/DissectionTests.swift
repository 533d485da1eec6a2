import BluetoothCore
import TestSupport
import Testing

@Suite struct DissectionTests {
    @Test func jsonEscaping() {
        #expect(Dissection.jsonString("plain") == #""plain""#)
        #expect(Dissection.jsonString("a\"b") == #""a\"b""#)
        #expect(Dissection.jsonString("back\\slash") == #""back\\slash""#)
        #expect(Dissection.jsonString("l1\nl2\r\t") == #""l1\nl2\r\t""#)
        #expect(Dissection.jsonString("\u{0}\u{1}\u{1F}") == #""\u0000\u0001\u001f""#)
        #expect(Dissection.jsonString("°C 😀") == "\"°C 😀\"")
        #expect(Dissection.jsonString("\u{7F}") == "\"\u{7F}\"")
    }

    @Test func renderJSONAndText() {
        let tree = Dissection("ATT Read Response", nil, [
            Dissection("Opcode", "0x0B"),
            Dissection("Value", "\"quoted\"\n", [Dissection("Inner")]),
        ])
        #expect(tree.renderJSON() == #"{"label":"ATT Read Response","children":[{"label":"Opcode","value":"0x0B"},{"label":"Value","value":"\"quoted\"\n","children":[{"label":"Inner"}]}]}"#)
        #expect(tree.renderText() == "ATT Read Response\n  Opcode: 0x0B\n  Value: \"quoted\"\n\n    Inner")
        #expect(Dissection("x").renderText(indent: 2) == "    x")
    }

    @Test func valueHelpers() {
        #expect(Dissection.hex16(0x2A) == "0x002A")
        #expect(Dissection.hex16(0xFFFF) == "0xFFFF")
        #expect(Dissection.hex8(0x0A) == "0x0A")
        #expect(Dissection.hex8(0xAB) == "0xAB")
        #expect(Dissection.bytes([]) == "(empty)")
        #expect(Dissection.bytes([0x01]) == "01 (1 byte)")
        #expect(Dissection.bytes([0x01, 0xAB]) == "01 ab (2 bytes)")
    }

    @Test func randomStringsGiveValidJSONStrings() {
        var generator = SeededGenerator(seed: 0x150)
        for _ in 0..<2000 {
            let scalars = (0..<Int.random(in: 0...12, using: &generator)).compactMap { _ in
                Unicode.Scalar(UInt32.random(in: 0...0x7F, using: &generator))
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            let json = Dissection.jsonString(text)
            #expect(json.first == "\"" && json.last == "\"")
            // No raw control characters survive, and every quote inside is escaped.
            #expect(!json.unicodeScalars.contains { $0.value < 0x20 })
            #expect(Self.unescape(json) == text)
        }
    }

    /// A small JSON string decoder for the test (the escapes jsonString emits).
    static func unescape(_ json: String) -> String? {
        var scalars = Array(json.unicodeScalars)
        guard scalars.count >= 2, scalars.first == "\"", scalars.last == "\"" else { return nil }
        scalars = Array(scalars[1..<(scalars.count - 1)])
        var out = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\"" { return nil }
            guard scalar == "\\" else { out.append(scalar); index += 1; continue }
            guard index + 1 < scalars.count else { return nil }
            switch scalars[index + 1] {
            case "\"": out.append("\""); index += 2
            case "\\": out.append("\\"); index += 2
            case "n": out.append("\n"); index += 2
            case "r": out.append("\r"); index += 2
            case "t": out.append("\t"); index += 2
            case "u":
                guard index + 6 <= scalars.count,
                      let value = UInt32(String(String.UnicodeScalarView(scalars[(index + 2)..<(index + 6)])), radix: 16),
                      let decoded = Unicode.Scalar(value)
                else { return nil }
                out.append(decoded)
                index += 6
            default: return nil
            }
        }
        return String(out)
    }
}
