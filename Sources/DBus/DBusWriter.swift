/// Marshals values in little-endian order with the specification's alignment (D-Bus Specification, "Marshaling
/// (Wire Format)"). Offsets count from the start of the message, where alignment is measured (the body starts on an
/// 8-octet boundary, so a body written alone aligns the same).
///
/// What the specification forbids is refused with ``DBusError/Code/invalidArgument`` rather than sent (the bus would
/// drop the connection): a string with NUL, an invalid object path or signature, an array whose elements are not of
/// its element type or that is longer than 64 MiB, nesting deeper than 64.
public struct DBusWriter: Sendable {
    public private(set) var bytes: [UInt8] = []

    /// The longest array, in octets.
    public static let maximumArrayLength = 64 << 20
    /// The deepest nesting of containers (arrays, structs, dictionary entries and variants together).
    public static let maximumDepth = 64

    public init() {}

    public mutating func pad(to alignment: Int) {
        let remainder = bytes.count % alignment
        if remainder != 0 { bytes.append(contentsOf: repeatElement(0, count: alignment - remainder)) }
    }

    public mutating func write(_ values: [DBusValue]) throws(DBusError) {
        for value in values { try write(value) }
    }

    public mutating func write(_ value: DBusValue) throws(DBusError) {
        try write(value, depth: 0)
    }

    private mutating func write(_ value: DBusValue, depth: Int) throws(DBusError) {
        guard depth <= Self.maximumDepth else { throw DBusError(.invalidArgument, "values nested deeper than \(Self.maximumDepth)") }
        pad(to: value.type.alignment)
        switch value {
        case .byte(let v): bytes.append(v)
        case .boolean(let v): append(UInt32(v ? 1 : 0))
        case .int16(let v): append(UInt16(bitPattern: v))
        case .uint16(let v): append(v)
        case .int32(let v): append(UInt32(bitPattern: v))
        case .uint32(let v): append(v)
        case .int64(let v): append(UInt64(bitPattern: v))
        case .uint64(let v): append(v)
        case .double(let v): append(v.bitPattern)
        case .unixFD(let v): append(v)
        case .string(let text):
            try writeString(text, what: "string")
        case .objectPath(let path):
            guard DBusNames.isValidObjectPath(path) else { throw DBusError(.invalidArgument, "\"\(path)\" is not a valid object path") }
            try writeString(path, what: "object path")
        case .signature(let text):
            try writeSignature(text)
        case .variant(let inner):
            try writeSignature(inner.type.description)
            try write(inner, depth: depth + 1)
        case .array(let element, let elements):
            pad(to: 4)
            let lengthOffset = bytes.count
            append(UInt32(0))
            pad(to: element.alignment)
            let start = bytes.count
            for item in elements {
                guard item.type == element else {
                    throw DBusError(.invalidArgument, "an element of type \(item.type) in an array of \(element)")
                }
                try write(item, depth: depth + 1)
            }
            let length = bytes.count - start
            guard length <= Self.maximumArrayLength else {
                throw DBusError(.invalidArgument, "an array of \(length) octets (at most \(Self.maximumArrayLength))")
            }
            put(UInt32(length), at: lengthOffset)
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusError(.invalidArgument, "an empty struct") }
            for field in fields { try write(field, depth: depth + 1) }
        case .dictEntry(let key, let value):
            guard key.type.isBasic else { throw DBusError(.invalidArgument, "a dictionary key of type \(key.type)") }
            try write(key, depth: depth + 1)
            try write(value, depth: depth + 1)
        }
    }

    private mutating func writeString(_ text: String, what: String) throws(DBusError) {
        let utf8 = Array(text.utf8)
        guard !utf8.contains(0) else { throw DBusError(.invalidArgument, "a \(what) with a NUL character") }
        append(UInt32(utf8.count))
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }

    private mutating func writeSignature(_ text: String) throws(DBusError) {
        do {
            _ = try DBusType.parse(signature: text)
        } catch {
            throw DBusError(.invalidArgument, "invalid signature \"\(text)\": \(error.reason)")
        }
        let utf8 = Array(text.utf8)
        bytes.append(UInt8(utf8.count))
        bytes.append(contentsOf: utf8)
        bytes.append(0)
    }

    private mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private mutating func put(_ value: UInt32, at offset: Int) {
        withUnsafeBytes(of: value.littleEndian) { raw in
            for (index, byte) in raw.enumerated() { bytes[offset + index] = byte }
        }
    }
}

/// The naming rules of the D-Bus Specification ("Valid Object Paths", "Valid Names").
public enum DBusNames {
    /// `/`, or `/` followed by elements of `[A-Za-z0-9_]` separated by single slashes, no trailing slash.
    public static func isValidObjectPath(_ path: String) -> Bool {
        let bytes = Array(path.utf8)
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        guard bytes.last != UInt8(ascii: "/") else { return false }
        var previousSlash = false
        for byte in bytes {
            if byte == UInt8(ascii: "/") {
                if previousSlash { return false }
                previousSlash = true
            } else {
                guard isElementCharacter(byte) else { return false }
                previousSlash = false
            }
        }
        return true
    }

    /// An interface or error name: at least two dot-separated elements of `[A-Za-z_][A-Za-z0-9_]*`, at most 255.
    public static func isValidInterfaceName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count <= 255 else { return false }
        let elements = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
            return element.allSatisfy(isElementCharacter)
        }
    }

    /// A member name: one element of `[A-Za-z_][A-Za-z0-9_]*`, at most 255.
    public static func isValidMemberName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 255, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return bytes.allSatisfy(isElementCharacter)
    }

    private static func isElementCharacter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }
}
