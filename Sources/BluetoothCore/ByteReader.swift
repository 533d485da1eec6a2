/// A bounds-checked cursor over bytes received from a peer, a controller or a user.
///
/// Every read checks the remaining length and throws ``DecodeError`` (never traps). Multi-octet integers are
/// little-endian unless the method says otherwise, as everywhere on the air and over HCI (Core Vol 1 Part E §2.2,
/// Vol 4 Part E §5.2). Field names passed to the readers end up in the error's reason, so a failure says what
/// was expected: `truncated at offset 3: expected 2 bytes for handle, 1 remain`.
public struct ByteReader: Sendable {
    /// The bytes being read; indices are those of the original buffer.
    public let bytes: ArraySlice<UInt8>
    /// The index of the next byte to read, in `bytes`' index space.
    public private(set) var readerIndex: Int
    /// Added to every offset reported in errors, when this reader covers part of a larger buffer.
    public let baseOffset: Int

    public init(_ bytes: [UInt8], baseOffset: Int = 0) {
        self.bytes = bytes[...]
        self.readerIndex = bytes.startIndex
        self.baseOffset = baseOffset
    }

    public init(_ bytes: ArraySlice<UInt8>, baseOffset: Int = 0) {
        self.bytes = bytes
        self.readerIndex = bytes.startIndex
        self.baseOffset = baseOffset
    }

    /// The offset of the next byte from the start of the buffer (plus ``baseOffset``).
    public var offset: Int { baseOffset + (readerIndex - bytes.startIndex) }
    /// How many bytes are left.
    public var remaining: Int { bytes.endIndex - readerIndex }
    /// Whether every byte has been read.
    public var isAtEnd: Bool { readerIndex >= bytes.endIndex }

    /// An error located at the current offset.
    public func error(_ code: DecodeError.Code, _ reason: String) -> DecodeError {
        DecodeError(code, at: offset, reason)
    }

    /// `field` is read only when the bytes are missing: callers may name it with an interpolation (the type of an AD
    /// structure, of an H4 packet) without building that string for every read that succeeds.
    private func requireBytes(_ count: Int, for field: @autoclosure () -> String) throws(DecodeError) {
        guard count >= 0 else {
            throw error(.invalidLength, "negative length \(count) for \(field())")
        }
        guard remaining >= count else {
            let noun = count == 1 ? "byte" : "bytes"
            let verb = remaining == 1 ? "remains" : "remain"
            throw error(.truncated, "expected \(count) \(noun) for \(field()), \(remaining) \(verb)")
        }
    }

    /// Reads one octet.
    public mutating func readUInt8(_ field: String = "octet") throws(DecodeError) -> UInt8 {
        try requireBytes(1, for: field)
        let value = bytes[readerIndex]
        readerIndex += 1
        return value
    }

    /// Reads one signed octet (TX power, RSSI).
    public mutating func readInt8(_ field: String = "octet") throws(DecodeError) -> Int8 {
        Int8(bitPattern: try readUInt8(field))
    }

    /// Reads a little-endian unsigned integer of `byteCount` octets (1...8) into `T`.
    public mutating func readLittleEndian<T: FixedWidthInteger & UnsignedInteger>(
        _ type: T.Type = T.self, byteCount: Int = MemoryLayout<T>.size, _ field: String = "integer"
    ) throws(DecodeError) -> T {
        guard byteCount > 0, byteCount <= MemoryLayout<T>.size else {
            throw error(.invalidLength, "cannot read \(byteCount) bytes into \(T.self) for \(field)")
        }
        try requireBytes(byteCount, for: field)
        var value: T = 0
        for index in 0..<byteCount {
            value |= T(bytes[readerIndex + index]) << (8 * index)
        }
        readerIndex += byteCount
        return value
    }

    /// Reads a big-endian unsigned integer of `byteCount` octets (btsnoop headers, Eddystone fields).
    public mutating func readBigEndian<T: FixedWidthInteger & UnsignedInteger>(
        _ type: T.Type = T.self, byteCount: Int = MemoryLayout<T>.size, _ field: String = "integer"
    ) throws(DecodeError) -> T {
        guard byteCount > 0, byteCount <= MemoryLayout<T>.size else {
            throw error(.invalidLength, "cannot read \(byteCount) bytes into \(T.self) for \(field)")
        }
        try requireBytes(byteCount, for: field)
        var value: T = 0
        for index in 0..<byteCount {
            value = (value << 8) | T(bytes[readerIndex + index])
        }
        readerIndex += byteCount
        return value
    }

    public mutating func readUInt16(_ field: String = "16-bit value") throws(DecodeError) -> UInt16 {
        try readLittleEndian(UInt16.self, field)
    }

    public mutating func readUInt24(_ field: String = "24-bit value") throws(DecodeError) -> UInt32 {
        try readLittleEndian(UInt32.self, byteCount: 3, field)
    }

    public mutating func readUInt32(_ field: String = "32-bit value") throws(DecodeError) -> UInt32 {
        try readLittleEndian(UInt32.self, field)
    }

    public mutating func readUInt64(_ field: String = "64-bit value") throws(DecodeError) -> UInt64 {
        try readLittleEndian(UInt64.self, field)
    }

    /// Reads exactly `count` octets.
    public mutating func readBytes(_ count: Int, _ field: @autoclosure () -> String = "data") throws(DecodeError) -> [UInt8] {
        try requireBytes(count, for: field())
        let slice = bytes[readerIndex..<(readerIndex + count)]
        readerIndex += count
        return Array(slice)
    }

    /// Reads everything that is left (possibly nothing).
    public mutating func readRemaining() -> [UInt8] {
        let slice = bytes[readerIndex...]
        readerIndex = bytes.endIndex
        return Array(slice)
    }

    /// Splits off a reader over the next `count` octets and advances past them. Errors from the sub-reader
    /// report offsets in this buffer's terms.
    public mutating func readSubReader(_ count: Int, _ field: @autoclosure () -> String = "data") throws(DecodeError)
        -> ByteReader {
        try requireBytes(count, for: field())
        let sub = ByteReader(bytes[readerIndex..<(readerIndex + count)], baseOffset: offset)
        readerIndex += count
        return sub
    }

    /// Skips `count` octets.
    public mutating func skip(_ count: Int, _ field: String = "data") throws(DecodeError) {
        try requireBytes(count, for: field)
        readerIndex += count
    }

    /// Looks at the next octet without consuming it.
    public func peekUInt8() -> UInt8? {
        isAtEnd ? nil : bytes[readerIndex]
    }

    /// Throws ``DecodeError/Code/trailingBytes`` unless every byte was consumed. Call at the end of a PDU whose
    /// length the specification fixes.
    public func expectEnd(_ what: String) throws(DecodeError) {
        guard isAtEnd else {
            throw error(.trailingBytes, "\(remaining) unexpected byte\(remaining == 1 ? "" : "s") after \(what)")
        }
    }
}
