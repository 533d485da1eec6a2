/// A D-Bus value with its type (D-Bus Specification, "Type System"). Arrays carry their element type, so that an
/// empty array still has a signature; a dictionary is an array of dictionary entries (`a{sv}`).
public indirect enum DBusValue: Hashable, Sendable, CustomStringConvertible {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// An index into the message's file descriptors.
    case unixFD(UInt32)
    case variant(DBusValue)
    case array(DBusType, [DBusValue])
    case structure([DBusValue])
    case dictEntry(DBusValue, DBusValue)

    /// The value's type.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .variant: .variant
        case .array(let element, _): .array(element)
        case .structure(let fields): .structure(fields.map(\.type))
        case .dictEntry(let key, let value): .dictEntry(key: key.type, value: value.type)
        }
    }

    /// `a{KV}` from pairs, in the order given.
    public static func dictionary(key: DBusType, value: DBusType, _ entries: [(DBusValue, DBusValue)]) -> DBusValue {
        .array(.dictEntry(key: key, value: value), entries.map { .dictEntry($0.0, $0.1) })
    }

    /// `a{sv}` from a Swift dictionary (keys sorted, so the bytes are stable).
    public static func properties(_ entries: [String: DBusValue]) -> DBusValue {
        dictionary(key: .string, value: .variant,
                   entries.sorted { $0.key < $1.key }.map { (.string($0.key), .variant($0.value)) })
    }

    /// `ay` from octets.
    public static func bytes(_ octets: [UInt8]) -> DBusValue {
        .array(.byte, octets.map(DBusValue.byte))
    }

    // MARK: Reading values

    /// The variant's content (recursively), or the value itself.
    public var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }

    public var stringValue: String? {
        switch unwrapped {
        case .string(let text), .objectPath(let text), .signature(let text): text
        default: nil
        }
    }

    public var boolValue: Bool? {
        if case .boolean(let value) = unwrapped { return value }
        return nil
    }

    /// Any integer type, as an Int (nil when it does not fit).
    public var intValue: Int? {
        switch unwrapped {
        case .byte(let v): Int(v)
        case .int16(let v): Int(v)
        case .uint16(let v): Int(v)
        case .int32(let v): Int(v)
        case .uint32(let v): Int(v)
        case .int64(let v): Int(v)
        case .uint64(let v): Int(exactly: v)
        case .unixFD(let v): Int(v)
        default: nil
        }
    }

    /// An `ay` as octets.
    public var bytesValue: [UInt8]? {
        guard case .array(.byte, let elements) = unwrapped else { return nil }
        return elements.map { if case .byte(let octet) = $0 { octet } else { 0 } }
    }

    /// The elements of an array.
    public var arrayValue: [DBusValue]? {
        if case .array(_, let elements) = unwrapped { return elements }
        return nil
    }

    /// The entries of a dictionary with string or object-path keys (`a{sv}`, `a{oa{sa{sv}}}`…), later keys winning.
    public var dictionaryValue: [String: DBusValue]? {
        guard case .array(.dictEntry, let entries) = unwrapped else { return nil }
        var result: [String: DBusValue] = [:]
        for case .dictEntry(let key, let value) in entries {
            guard let text = key.stringValue else { return nil }
            result[text] = value
        }
        return result
    }

    public var description: String {
        switch self {
        case .byte(let v): "\(v)"
        case .boolean(let v): "\(v)"
        case .int16(let v): "\(v)"
        case .uint16(let v): "\(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .double(let v): "\(v)"
        case .string(let v): "\"\(v)\""
        case .objectPath(let v): v
        case .signature(let v): "g\"\(v)\""
        case .unixFD(let v): "fd#\(v)"
        case .variant(let v): "<\(v)>"
        case .array(_, let elements): "[\(elements.map(\.description).joined(separator: ", "))]"
        case .structure(let fields): "(\(fields.map(\.description).joined(separator: ", ")))"
        case .dictEntry(let key, let value): "\(key): \(value)"
        }
    }
}
