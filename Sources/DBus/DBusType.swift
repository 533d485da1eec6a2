/// A single complete type of the D-Bus type system (D-Bus Specification, "Type System"), as a signature spells
/// it: `y` byte, `b` boolean, `n`/`q` 16-bit, `i`/`u` 32-bit, `x`/`t` 64-bit, `d` double, `s` string, `o` object
/// path, `g` signature, `h` UNIX file descriptor index, `v` variant, `aT` array, `(…)` struct, `{KV}` dictionary
/// entry (only as an array's element, with a basic key).
public indirect enum DBusType: Hashable, Sendable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    case array(DBusType)
    case structure([DBusType])
    case dictEntry(key: DBusType, value: DBusType)

    /// The most nested arrays, and structs, a signature may have (the specification's limit for each: 32).
    public static let maximumNesting = 32
    /// The longest signature, in octets.
    public static let maximumSignatureLength = 255

    /// The type's signature text.
    public var description: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a\(element)"
        case .structure(let fields): "(\(fields.map(\.description).joined()))"
        case .dictEntry(let key, let value): "{\(key)\(value)}"
        }
    }

    /// The alignment of the type's marshaled form ("Marshaling (Wire Format)").
    public var alignment: Int {
        switch self {
        case .byte, .signature, .variant: 1
        case .int16, .uint16: 2
        case .boolean, .int32, .uint32, .string, .objectPath, .unixFD, .array: 4
        case .int64, .uint64, .double, .structure, .dictEntry: 8
        }
    }

    /// Whether the type is basic (a dictionary key may only be basic).
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .structure, .dictEntry: false
        default: true
        }
    }

    /// Parses a signature: zero or more single complete types. Throws ``DBusError/Code/decode`` for anything the
    /// specification forbids (unknown codes, empty structs, a dictionary entry outside an array or with a
    /// non-basic key, nesting beyond 32, more than 255 octets).
    public static func parse(signature text: String) throws(DBusError) -> [DBusType] {
        let bytes = Array(text.utf8)
        guard bytes.count <= maximumSignatureLength else {
            throw DBusError(.decode, "signature of \(bytes.count) octets (at most \(maximumSignatureLength))")
        }
        var parser = SignatureParser(bytes: bytes)
        var types: [DBusType] = []
        while parser.index < bytes.count {
            types.append(try parser.parseOne(arrays: 0, structs: 0, inArray: false))
        }
        return types
    }

    /// The signature of a sequence of types.
    public static func signature(of types: [DBusType]) -> String {
        types.map(\.description).joined()
    }
}

/// A recursive-descent reader of signature octets.
private struct SignatureParser {
    let bytes: [UInt8]
    var index = 0

    mutating func parseOne(arrays: Int, structs: Int, inArray: Bool) throws(DBusError) -> DBusType {
        guard index < bytes.count else { throw DBusError(.decode, "signature ends inside a type") }
        let code = bytes[index]
        index += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrays < DBusType.maximumNesting else { throw DBusError(.decode, "arrays nested deeper than 32 in a signature") }
            return .array(try parseOne(arrays: arrays + 1, structs: structs, inArray: true))
        case UInt8(ascii: "("):
            guard structs < DBusType.maximumNesting else { throw DBusError(.decode, "structs nested deeper than 32 in a signature") }
            var fields: [DBusType] = []
            while true {
                guard index < bytes.count else { throw DBusError(.decode, "unterminated struct in a signature") }
                if bytes[index] == UInt8(ascii: ")") {
                    index += 1
                    break
                }
                fields.append(try parseOne(arrays: arrays, structs: structs + 1, inArray: false))
            }
            guard !fields.isEmpty else { throw DBusError(.decode, "empty struct in a signature") }
            return .structure(fields)
        case UInt8(ascii: "{"):
            guard inArray else { throw DBusError(.decode, "dictionary entry outside an array in a signature") }
            guard structs < DBusType.maximumNesting else { throw DBusError(.decode, "structs nested deeper than 32 in a signature") }
            let key = try parseOne(arrays: arrays, structs: structs + 1, inArray: false)
            guard key.isBasic else { throw DBusError(.decode, "dictionary key of type \(key) (a key must be basic)") }
            let value = try parseOne(arrays: arrays, structs: structs + 1, inArray: false)
            guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
                throw DBusError(.decode, "dictionary entry of more than a key and a value in a signature")
            }
            index += 1
            return .dictEntry(key: key, value: value)
        default:
            throw DBusError(.decode, "unknown type code 0x\(String(code, radix: 16)) in a signature")
        }
    }
}
