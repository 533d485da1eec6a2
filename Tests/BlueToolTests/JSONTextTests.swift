import Foundation
import TestSupport
import Testing
@testable import blue

/// blue's own JSON reader and writer (FoundationEssentials has no `JSONSerialization`), checked against Foundation's
/// `JSONSerialization`, which they replace: the same text for the same object (keys in its order, its escapes), the
/// same documents accepted with the same values, syntax errors placed by line and column, and nesting bounded.
struct JSONTextTests {
    /// Foundation's text of `object` (sorted keys, slashes as they are).
    private func foundationText(_ object: Any, escapingSlashes: Bool = false) throws -> String {
        let options: JSONSerialization.WritingOptions = escapingSlashes ? [.sortedKeys, .fragmentsAllowed]
            : [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: options), as: UTF8.self)
    }

    /// ASCII names (the writer's order is Foundation's for those) with punctuation, digits and both cases.
    private static let nameAlphabet = Array("aAbBzZ0190_-/ \"\\$~.")

    /// Any text for string values (escapes, non-ASCII).
    private static let textAlphabet = Array("aZ09 _/\"\\\n\t\u{1}\u{1F}é😀")

    private func randomName(_ generator: inout SeededGenerator, from alphabet: [Character] = nameAlphabet) -> String {
        String((0..<Int.random(in: 0...6, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// A random object of strings, integers, booleans, lists and objects.
    private func randomValue(depth: Int, _ generator: inout SeededGenerator) -> Any {
        switch Int.random(in: 0..<(depth > 3 ? 4 : 6), using: &generator) {
        case 0: return randomName(&generator, from: Self.textAlphabet)
        case 1: return Int.random(in: -100_000...100_000, using: &generator)
        case 2: return Bool.random(using: &generator)
        case 3: return Int64.random(in: Int64.min...Int64.max, using: &generator)
        case 4: return (0..<Int.random(in: 0...4, using: &generator)).map { _ in randomValue(depth: depth + 1, &generator) }
        default:
            var object: [String: Any] = [:]
            for _ in 0..<Int.random(in: 0...5, using: &generator) { object[randomName(&generator)] = randomValue(depth: depth + 1, &generator) }
            return object
        }
    }

    @Test func writerGivesFoundationsTextForTheSameObject() throws {
        var generator = SeededGenerator(seed: 0x15_0E_7E_47)
        for _ in 0..<2_000 {
            let object = randomValue(depth: 0, &generator)
            for escaping in [false, true] {
                let ours = try #require(JSONWriter.text(object, escapingSlashes: escaping))
                let foundation = try foundationText(object, escapingSlashes: escaping)
                #expect(ours == foundation, "ours:       \(ours)\nFoundation: \(foundation)")
            }
        }
    }

    @Test func writerSaysNumbersNullsAndRefusalsAsFoundationDoes() throws {
        let values: [Any] = [1.0, 0.5, -2.25, 1e-5, 123456.789, 1e20, Int8(-3), UInt16(65_535), UInt64.max]
        for value in values {
            let ours = try #require(JSONWriter.text([value]))
            // The same number once read back (the last digits of a double's text may differ, its value may not).
            let back = try #require(try JSONSerialization.jsonObject(with: Data(ours.utf8)) as? [NSNumber])
            let expected = (value as! NSNumber).doubleValue
            #expect(back.count == 1 && abs(back[0].doubleValue - expected) <= abs(expected) * 1e-15, "\(value): \(ours)")
        }
        #expect(JSONWriter.text(["a": JSONNull(), "b": Optional<Int>.none as Any, "c": Optional("x") as Any]) == #"{"a":null,"b":null,"c":"x"}"#)
        #expect(JSONWriter.text([Double.infinity]) == nil)
        #expect(JSONWriter.text([Double.nan]) == nil)
        #expect(JSONWriter.text(["date": Date()]) == nil)
        #expect(JSONWriter.text("\u{1}\u{1F}\u{8}\u{C}\t") == #""\u0001\u001f\b\f\t""#)
    }

    @Test func readerAcceptsWhatFoundationAcceptsWithTheSameValues() throws {
        var generator = SeededGenerator(seed: 0x2E_AD_E2)
        var documents = [#"{"a":[1,2.5,-0,1e3,1E-2,true,false,null,"x\u00e9\ud83d\ude00\/\n"]}"#, " [ ] ", "{}", "\"\"", "0", "-12.5e+7",
                         #"{"a":1,"a":2}"#, "\u{FEFF}{}"]
        for _ in 0..<300 {
            let text = try #require(JSONWriter.text(randomValue(depth: 0, &generator)))
            documents.append(text)
            var bytes = Array(text.utf8)
            // Mutations: most are no longer JSON; both readers must agree on which are.
            for _ in 0..<3 where !bytes.isEmpty {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes.remove(at: index)
                case 1: bytes.insert(Array(",:[]{}\"0-.e\\ tn".utf8).randomElement(using: &generator)!, at: index)
                default: bytes[index] = Array("x1\"}".utf8).randomElement(using: &generator)!
                }
            }
            documents.append(String(decoding: bytes, as: UTF8.self))
        }
        var accepted = 0, refused = 0
        for document in documents {
            let data = Data(document.utf8)
            let foundation = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed)
            let ours: JSONValue?
            do {
                ours = try JSONReader.parse(Array(data))
            } catch {
                ours = nil
            }
            #expect((foundation == nil) == (ours == nil), "\(document): Foundation \(foundation == nil ? "refused" : "accepted"), ours \(ours == nil ? "refused" : "accepted")")
            guard let foundation, let ours else {
                refused += 1
                continue
            }
            accepted += 1
            let reread = try JSONSerialization.jsonObject(with: Data(try #require(JSONWriter.text(ours)).utf8), options: .fragmentsAllowed)
            #expect(try foundationText(reread) == (try foundationText(foundation)), "\(document)")
        }
        #expect(accepted > 300 && refused > 100, "accepted \(accepted), refused \(refused)")
    }

    @Test func syntaxErrorsArePlacedAndNestingIsBounded() {
        let document = Array("{\"name\": \"x\",\n \"services\": [\n  {\"uuid\": \"180D\",, }\n ]\n}\n".utf8)
        do {
            _ = try JSONReader.parse(document)
            Issue.record("parsed")
        } catch {
            let (line, column) = error.position(in: document)
            #expect(line == 3 && column == 19, "\(line):\(column) \(error.reason)")
        }
        for (text, reason) in [("[1,]", "Invalid value"), ("{\"a\" 1}", "Badly formed object"), ("\"abc", "Unterminated string"),
                               ("01", "leading zero"), ("[1] x", "Garbage at end"), ("\"\\x\"", "Invalid escape"), ("\"\\ud800\"", "Unpaired surrogate")] {
            do {
                _ = try JSONReader.parse(Array(text.utf8))
                Issue.record("\(text) parsed")
            } catch {
                #expect(error.reason.contains(reason), "\(text): \(error.reason)")
            }
        }
        let deep = Array((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        #expect(throws: JSONSyntaxError.self) { try JSONReader.parse(deep) }
        let fine = Array((String(repeating: "[", count: 500) + String(repeating: "]", count: 500)).utf8)
        #expect(throws: Never.self) { try JSONReader.parse(fine) }
    }
}
