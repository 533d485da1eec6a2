/// A strict JSON reader (RFC 8259): one value, optionally surrounded by whitespace, in UTF-8 (a byte order mark is
/// skipped). Nesting deeper than ``maximumDepth`` is refused rather than recursed into, so a hostile file cannot
/// exhaust the stack. Written here because FoundationEssentials has no `JSONSerialization`, and `JSONDecoder` does
/// not say where a document went wrong or keep a number's text.
struct JSONReader {
    static let maximumDepth = 512

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The value `bytes` hold.
    static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        var reader = JSONReader(bytes)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { reader.index = 3 }
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == bytes.count else { throw reader.failure("Garbage at end") }
        return value
    }

    private func failure(_ reason: String, at offset: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset ?? index, reason: reason)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ literal: String, _ value: JSONValue) throws(JSONSyntaxError) -> JSONValue {
        let start = index
        for byte in literal.utf8 {
            guard current == byte else { throw failure("Invalid value", at: start) }
            index += 1
        }
        return value
    }

    private mutating func value(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard let byte = current else { throw failure("Unexpected end of file") }
        switch byte {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("Invalid value")
        }
    }

    private mutating func object(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw failure("Too many nested arrays or objects") }
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure("Badly formed object: expected a name in quotes") }
            let name = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("Badly formed object: expected ':' after a name") }
            index += 1
            skipWhitespace()
            members[name] = try value(depth: depth)
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            case nil: throw failure("Unexpected end of file")
            default: throw failure("Badly formed object: expected ',' or '}'")
            }
        }
    }

    private mutating func array(depth: Int) throws(JSONSyntaxError) -> JSONValue {
        guard depth <= Self.maximumDepth else { throw failure("Too many nested arrays or objects") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth))
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            case nil: throw failure("Unexpected end of file")
            default: throw failure("Badly formed array: expected ',' or ']'")
            }
        }
    }

    private mutating func digits() -> Int {
        let start = index
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        return index - start
    }

    private mutating func number() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        let integerStart = index
        let integerDigits = digits()
        guard integerDigits > 0 else { throw failure("Invalid number", at: start) }
        guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
            throw failure("Number with a leading zero", at: start)
        }
        if current == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw failure("Invalid number: no digit after the decimal point") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw failure("Invalid number: no digit in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        // As Foundation: a number no double holds (1e400) is refused, not read as infinity.
        guard let value = Double(text), value.isFinite else { throw failure("Number out of range", at: start) }
        return .number(text)
    }

    private mutating func hexQuad() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("Invalid escape sequence") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("Invalid escape sequence")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func string() throws(JSONSyntaxError) -> String {
        let start = index
        index += 1
        var text: [UInt8] = []
        while true {
            guard let byte = current else { throw failure("Unterminated string", at: start) }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: text, as: UTF8.self) else {
                    throw failure("Invalid UTF-8 in a string", at: start)
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard let escaped = current else { throw failure("Unterminated string", at: start) }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escaped)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"):
                    let escapeStart = index - 2
                    var scalar = try hexQuad()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                            throw failure("Unpaired surrogate in a \\u escape", at: escapeStart)
                        }
                        index += 2
                        let low = try hexQuad()
                        guard (0xDC00...0xDFFF).contains(low) else { throw failure("Unpaired surrogate in a \\u escape", at: escapeStart) }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else {
                        throw failure("Unpaired surrogate in a \\u escape", at: escapeStart)
                    }
                    text.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: throw failure("Invalid escape sequence", at: index - 2)
                }
            case 0x00..<0x20:
                throw failure("Unescaped control character in a string")
            default:
                text.append(byte)
                index += 1
            }
        }
    }
}
