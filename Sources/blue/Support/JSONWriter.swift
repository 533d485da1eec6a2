/// Compact JSON text (RFC 8259) of the values blue's `--json` lines and files are built from: `[String: Any]`,
/// `[Any]`, strings, booleans, integers, finite floating-point numbers, ``JSONValue``, ``JSONNull`` and `nil`.
/// Object names are sorted as Foundation's `JSONSerialization` sorts ASCII names (`.sortedKeys`, see
/// ``namePrecedes(_:_:)``), and numbers and escapes are written as it writes them, so lines keep their shape. Written here
/// because FoundationEssentials has no `JSONSerialization` (`blue` leaves Foundation and its ICU out).
enum JSONWriter {
    /// The text of `value`; nil when it holds something JSON cannot say (an infinite number, another type).
    static func text(_ value: Any, escapingSlashes: Bool = false) -> String? {
        var output = ""
        guard write(value, escapingSlashes: escapingSlashes, to: &output) else { return nil }
        return output
    }

    /// A number as JSON writes it ("1" for 1.0, "0.25"); nil when it is not finite.
    static func text(of number: Double) -> String? {
        guard number.isFinite else { return nil }
        let text = number.description
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }

    /// Whether `lhs` sorts before `rhs`, as `JSONSerialization`'s `.sortedKeys` sorts ASCII names (Unicode's root
    /// collation, numeric and case-insensitive): punctuation before digits before letters, punctuation in the
    /// collation's order, runs of digits by value, letters without regard to case and, only where two names differ
    /// in nothing else, lower case first. Other characters follow the letters, by code point.
    static func namePrecedes(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.unicodeScalars), right = Array(rhs.unicodeScalars)
        var i = 0, j = 0
        while i < left.count, j < right.count {
            if let leftRun = digitRun(left, from: i), let rightRun = digitRun(right, from: j) {
                if leftRun.value != rightRun.value { return leftRun.value < rightRun.value }
                i = leftRun.end
                j = rightRun.end
                continue
            }
            let a = weight(left[i]), b = weight(right[j])
            if a != b { return a < b }
            i += 1
            j += 1
        }
        if left.count - i != right.count - j { return left.count - i < right.count - j }
        // Equal but for case: the first letter that differs decides, lower case first.
        for (a, b) in zip(left, right) where a != b {
            return a.properties.isLowercase
        }
        return false
    }

    /// The ASCII punctuation and symbols in the root collation's order (CLDR), before digits and letters.
    private static let punctuationOrder = Array(" _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$".unicodeScalars)

    /// A character's place: punctuation by the table, then digits, then letters folded to lower case, then the rest.
    private static func weight(_ scalar: Unicode.Scalar) -> UInt32 {
        if let place = punctuationOrder.firstIndex(of: scalar) { return UInt32(place) }
        switch scalar.value {
        case 0x30...0x39: return 0x100 + scalar.value
        case 0x41...0x5A: return 0x200 + scalar.value + 0x20
        case 0x61...0x7A: return 0x200 + scalar.value
        default: return 0x1000 + scalar.value
        }
    }

    /// The digits starting at `start` (ASCII), their value (saturating) and where they end.
    private static func digitRun(_ scalars: [Unicode.Scalar], from start: Int) -> (value: UInt64, end: Int)? {
        var end = start
        var value: UInt64 = 0
        while end < scalars.count, (0x30...0x39).contains(scalars[end].value) {
            let (times, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (sum, carried) = times.addingReportingOverflow(UInt64(scalars[end].value - 0x30))
            value = overflowed || carried ? .max : sum
            end += 1
        }
        return end > start ? (value, end) : nil
    }

    private static func write(_ value: Any, escapingSlashes: Bool, to output: inout String) -> Bool {
        switch value {
        case let json as JSONValue:
            return write(json, escapingSlashes: escapingSlashes, to: &output)
        case is JSONNull:
            output += "null"
        case let flag as Bool:
            output += flag ? "true" : "false"
        case let text as String:
            writeString(text, escapingSlashes: escapingSlashes, to: &output)
        case let text as Substring:
            writeString(String(text), escapingSlashes: escapingSlashes, to: &output)
        case let integer as any BinaryInteger:
            output += "\(integer)"
        case let number as Double:
            guard let text = text(of: number) else { return false }
            output += text
        case let number as Float:
            guard let text = text(of: Double(number.description) ?? Double(number)) else { return false }
            output += text
        case let object as [String: Any]:
            output += "{"
            for (position, member) in object.sorted(by: { namePrecedes($0.key, $1.key) }).enumerated() {
                if position > 0 { output += "," }
                writeString(member.key, escapingSlashes: escapingSlashes, to: &output)
                output += ":"
                guard write(member.value, escapingSlashes: escapingSlashes, to: &output) else { return false }
            }
            output += "}"
        case let list as [Any]:
            output += "["
            for (position, element) in list.enumerated() {
                if position > 0 { output += "," }
                guard write(element, escapingSlashes: escapingSlashes, to: &output) else { return false }
            }
            output += "]"
        default:
            // An optional: nothing is null, something is written as itself (an `Any` may hold `String?`).
            let mirror = Mirror(reflecting: value)
            guard mirror.displayStyle == .optional else { return false }
            guard let held = mirror.children.first?.value else {
                output += "null"
                return true
            }
            return write(held, escapingSlashes: escapingSlashes, to: &output)
        }
        return true
    }

    private static func write(_ value: JSONValue, escapingSlashes: Bool, to output: inout String) -> Bool {
        switch value {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .number(let text): output += text
        case .string(let text): writeString(text, escapingSlashes: escapingSlashes, to: &output)
        case .array(let list):
            return write(list as [Any], escapingSlashes: escapingSlashes, to: &output)
        case .object(let object):
            return write(object as [String: Any], escapingSlashes: escapingSlashes, to: &output)
        }
        return true
    }

    private static func writeString(_ text: String, escapingSlashes: Bool, to output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "/": output += escapingSlashes ? "\\/" : "/"
            case "\u{08}": output += "\\b"
            case "\u{0C}": output += "\\f"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}

/// JSON's `null` in a `[String: Any]` built for ``JSONWriter`` (Foundation's `NSNull`, which FoundationEssentials
/// does not have).
struct JSONNull: Sendable {}
