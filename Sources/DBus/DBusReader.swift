/// Unmarshals values of a message in either byte order (D-Bus Specification, "Marshaling (Wire Format)"), for any
/// bytes at all: every read is bounds-checked, padding must be zero, booleans 0 or 1, strings valid UTF-8 without
/// NUL and NUL-terminated, object paths and signatures valid, array lengths within the data and 64 MiB, nesting at
/// most 64 deep. A failure is ``DBusError/Code/decode`` with the offset.
public struct DBusReader: Sendable {
    public let bytes: [UInt8]
    public private(set) var offset: Int
    /// Where alignment is measured from (the message's first octet).
    let origin: Int
    let bigEndian: Bool

    public init(bytes: [UInt8], offset: Int = 0, origin: Int = 0, bigEndian: Bool = false) {
        self.bytes = bytes
        self.offset = offset
        self.origin = origin
        self.bigEndian = bigEndian
    }

    public var isAtEnd: Bool { offset >= bytes.count }

    /// Reads one value of each type, in order.
    public mutating func read(_ types: [DBusType]) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        for type in types { values.append(try read(type, depth: 0)) }
        return values
    }

    public mutating func read(_ type: DBusType) throws(DBusError) -> DBusValue {
        try read(type, depth: 0)
    }

    mutating func skipPadding(to alignment: Int) throws(DBusError) {
        let remainder = (offset - origin) % alignment
        guard remainder != 0 else { return }
        let count = alignment - remainder
        guard offset + count <= bytes.count else { throw DBusError.decode("padding beyond the data", at: offset) }
        for index in offset..<(offset + count) where bytes[index] != 0 {
            throw DBusError.decode("non-zero padding", at: index)
        }
        offset += count
    }

    private mutating func read(_ type: DBusType, depth: Int) throws(DBusError) -> DBusValue {
        guard depth <= DBusWriter.maximumDepth else { throw DBusError.decode("values nested deeper than 64", at: offset) }
        try skipPadding(to: type.alignment)
        switch type {
        case .byte: return .byte(try readByte())
        case .boolean:
            let start = offset
            let raw = try readInteger(UInt32.self)
            guard raw <= 1 else { throw DBusError.decode("boolean of value \(raw)", at: start) }
            return .boolean(raw == 1)
        case .int16: return .int16(Int16(bitPattern: try readInteger(UInt16.self)))
        case .uint16: return .uint16(try readInteger(UInt16.self))
        case .int32: return .int32(Int32(bitPattern: try readInteger(UInt32.self)))
        case .uint32: return .uint32(try readInteger(UInt32.self))
        case .int64: return .int64(Int64(bitPattern: try readInteger(UInt64.self)))
        case .uint64: return .uint64(try readInteger(UInt64.self))
        case .double: return .double(Double(bitPattern: try readInteger(UInt64.self)))
        case .unixFD: return .unixFD(try readInteger(UInt32.self))
        case .string: return .string(try readString())
        case .objectPath:
            let start = offset
            let path = try readString()
            guard DBusNames.isValidObjectPath(path) else { throw DBusError.decode("invalid object path \"\(path)\"", at: start) }
            return .objectPath(path)
        case .signature: return .signature(try readSignature())
        case .variant:
            let start = offset
            let signature = try readSignature()
            let types: [DBusType]
            do {
                types = try DBusType.parse(signature: signature)
            } catch {
                throw DBusError.decode("variant signature \"\(signature)\": \(error.reason)", at: start)
            }
            guard types.count == 1, let inner = types.first else {
                throw DBusError.decode("variant signature \"\(signature)\" is not one single complete type", at: start)
            }
            return .variant(try read(inner, depth: depth + 1))
        case .array(let element):
            let start = offset
            let length = Int(try readInteger(UInt32.self))
            guard length <= DBusWriter.maximumArrayLength else {
                throw DBusError.decode("array of \(length) octets (at most \(DBusWriter.maximumArrayLength))", at: start)
            }
            try skipPadding(to: element.alignment)
            let end = offset + length
            guard end <= bytes.count else { throw DBusError.decode("array of \(length) octets beyond the data", at: start) }
            var elements: [DBusValue] = []
            while offset < end {
                elements.append(try read(element, depth: depth + 1))
            }
            guard offset == end else { throw DBusError.decode("array elements overrun its length of \(length)", at: start) }
            return .array(element, elements)
        case .structure(let fields):
            var values: [DBusValue] = []
            for field in fields { values.append(try read(field, depth: depth + 1)) }
            return .structure(values)
        case .dictEntry(let key, let value):
            let keyValue = try read(key, depth: depth + 1)
            return .dictEntry(keyValue, try read(value, depth: depth + 1))
        }
    }

    mutating func readByte() throws(DBusError) -> UInt8 {
        guard offset < bytes.count else { throw DBusError.decode("data ends", at: offset) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readInteger<T: FixedWidthInteger>(_: T.Type) throws(DBusError) -> T {
        let size = MemoryLayout<T>.size
        guard offset + size <= bytes.count else { throw DBusError.decode("data ends inside a \(size)-octet integer", at: offset) }
        var value: T = 0
        for index in 0..<size {
            let byte = T(bytes[offset + index])
            value |= bigEndian ? byte << (8 * (size - 1 - index)) : byte << (8 * index)
        }
        offset += size
        return value
    }

    private mutating func readString() throws(DBusError) -> String {
        let start = offset
        let length = Int(try readInteger(UInt32.self))
        guard length <= bytes.count - offset - 1 else { throw DBusError.decode("string of \(length) octets beyond the data", at: start) }
        return try text(count: length, from: start)
    }

    private mutating func readSignature() throws(DBusError) -> String {
        let start = offset
        let length = Int(try readByte())
        guard length <= bytes.count - offset - 1 else { throw DBusError.decode("signature of \(length) octets beyond the data", at: start) }
        let text = try text(count: length, from: start)
        do {
            _ = try DBusType.parse(signature: text)
        } catch {
            throw DBusError.decode("invalid signature \"\(text)\": \(error.reason)", at: start)
        }
        return text
    }

    /// `count` octets of UTF-8 without NUL, then the terminating NUL.
    private mutating func text(count: Int, from start: Int) throws(DBusError) -> String {
        let slice = bytes[offset..<(offset + count)]
        guard !slice.contains(0) else { throw DBusError.decode("text with a NUL character", at: start) }
        guard bytes[offset + count] == 0 else { throw DBusError.decode("text without its terminating NUL", at: offset + count) }
        guard let text = String(validating: slice, as: UTF8.self) else { throw DBusError.decode("text that is not UTF-8", at: start) }
        offset += count + 1
        return text
    }
}
