/// A Bluetooth UUID: a 16-bit or 32-bit alias on the Bluetooth Base UUID, or a full 128-bit value
/// (Core 5.4 Vol 3 Part B §2.5.1).
///
/// Values are normalised so that equality follows the specification: a 128-bit UUID on the base
/// `0000xxxx-0000-1000-8000-00805F9B34FB` equals its short form, and a 32-bit UUID whose high half is zero
/// equals the 16-bit one. Strings print as CoreBluetooth prints them: "180D" for 16-bit values, "12345678"
/// for 32-bit ones, "0CDBE648-EED0-11E6-BC64-92361F002671" for the rest.
public struct BluetoothUUID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 128-bit value, most significant byte first (the order in which UUIDs are written as text).
    public let bigEndianBytes: [UInt8]

    /// The Bluetooth Base UUID, 00000000-0000-1000-8000-00805F9B34FB, most significant byte first.
    public static let baseBytes: [UInt8] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB,
    ]

    /// A 16-bit UUID (an assigned number).
    public init(_ value: UInt16) {
        self.init(uuid32: UInt32(value))
    }

    /// A 32-bit UUID.
    public init(uuid32 value: UInt32) {
        var bytes = Self.baseBytes
        bytes[0] = UInt8(truncatingIfNeeded: value >> 24)
        bytes[1] = UInt8(truncatingIfNeeded: value >> 16)
        bytes[2] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[3] = UInt8(truncatingIfNeeded: value)
        self.init(unchecked: bytes)
    }

    private init(unchecked bytes: [UInt8]) {
        bigEndianBytes = bytes
    }

    /// A 128-bit UUID from its 16 bytes, most significant first. Returns nil unless there are exactly 16.
    public init?(bigEndianBytes bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.init(unchecked: bytes)
    }

    /// Decodes the little-endian wire form: 2, 4 or 16 bytes (Vol 3 Part B §2.5.1; ATT and AD carry UUIDs so).
    public init(littleEndianBytes bytes: some Collection<UInt8>) throws(DecodeError) {
        let reversed = Array(bytes.reversed())
        switch reversed.count {
        case 2: self.init(UInt16(reversed[0]) << 8 | UInt16(reversed[1]))
        case 4:
            self.init(uuid32: reversed.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        case 16: self.init(unchecked: reversed)
        default:
            throw DecodeError(.invalidLength, at: 0, "a UUID has 2, 4 or 16 bytes, not \(reversed.count)")
        }
    }

    /// Whether the value lies on the Bluetooth Base UUID.
    public var isOnBase: Bool { bigEndianBytes[4...] == Self.baseBytes[4...] }

    /// The 32-bit alias, if the value lies on the base UUID.
    public var uuid32: UInt32? {
        guard isOnBase else { return nil }
        return bigEndianBytes[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// The 16-bit alias, if the value lies on the base UUID with a zero high half.
    public var uuid16: UInt16? {
        guard let value = uuid32, value <= 0xFFFF else { return nil }
        return UInt16(value)
    }

    /// The shortest size the UUID can be carried in: 2, 4 or 16 bytes.
    public var shortestByteCount: Int {
        if uuid16 != nil { return 2 }
        if uuid32 != nil { return 4 }
        return 16
    }

    /// The little-endian wire form in the shortest size: 2 bytes for 16-bit UUIDs, 16 bytes otherwise.
    /// (ATT carries only 2- and 16-byte UUIDs; AD structures with 32-bit lists use ``littleEndianBytes(size:)``.)
    public var littleEndianBytes: [UInt8] {
        if let short = uuid16 { return [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)] }
        return bigEndianBytes.reversed()
    }

    /// The little-endian wire form in a given size (2, 4 or 16), or nil when the value does not fit that size.
    public func littleEndianBytes(size: Int) -> [UInt8]? {
        switch size {
        case 2:
            guard let short = uuid16 else { return nil }
            return [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)]
        case 4:
            guard let value = uuid32 else { return nil }
            return (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        case 16:
            return bigEndianBytes.reversed()
        default:
            return nil
        }
    }

    /// The 128-bit little-endian wire form, whatever the alias.
    public var littleEndianBytes128: [UInt8] { bigEndianBytes.reversed() }

    /// The canonical string: "180D", "12345678", or the full 36-character form in upper case.
    public var uuidString: String {
        if let short = uuid16 { return Hex.encode(Self.bytes(of: short), uppercase: true) }
        if uuid32 != nil { return Hex.encode(bigEndianBytes[0..<4], uppercase: true) }
        return fullString
    }

    /// The 36-character form, even for 16-bit values: "0000180D-0000-1000-8000-00805F9B34FB".
    public var fullString: String {
        let hex = Hex.encode(bigEndianBytes, uppercase: true)
        let characters = Array(hex)
        var parts: [String] = []
        var start = 0
        for length in [8, 4, 4, 4, 12] {
            parts.append(String(characters[start..<(start + length)]))
            start += length
        }
        return parts.joined(separator: "-")
    }

    public var description: String { uuidString }

    /// The SIG name of an assigned 16-bit UUID (service, characteristic, descriptor, declaration, unit or member
    /// service), e.g. "Heart Rate Measurement"; nil for other values.
    public var assignedName: String? {
        guard let short = uuid16 else { return nil }
        return AssignedNumbers.name(forUUID16: short)
    }

    /// Parses a user string: 4 hex digits ("180D"), 8 ("0000180D"), or the 36-character form with dashes; an
    /// optional `0x` prefix is accepted for the short forms. Anything else gets a ``DecodeError`` saying why.
    public init(string: String) throws(DecodeError) {
        var text = string.trimmingWhitespace()
        if text.hasPrefix("0x") || text.hasPrefix("0X") { text.removeFirst(2) }
        let characters = Array(text)
        switch characters.count {
        case 4, 8:
            let bytes = try Self.hexBytes(characters, original: string)
            self.init(uuid32: bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        case 36:
            for dash in [8, 13, 18, 23] where characters[dash] != "-" {
                throw DecodeError(.malformedText, at: dash, "expected '-' at position \(dash) of \"\(string)\"")
            }
            let digits = characters.enumerated().filter { ![8, 13, 18, 23].contains($0.offset) }.map(\.element)
            self.init(unchecked: try Self.hexBytes(digits, original: string))
        case 32:
            self.init(unchecked: try Self.hexBytes(characters, original: string))
        default:
            throw DecodeError(
                .malformedText, at: 0,
                "\"\(string)\" is not a UUID: expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits with dashes")
        }
    }

    public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
        lhs.bigEndianBytes.lexicographicallyPrecedes(rhs.bigEndianBytes)
    }

    private static func bytes(of value: UInt16) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    private static func hexBytes(_ characters: [Character], original: String) throws(DecodeError) -> [UInt8] {
        for (index, character) in characters.enumerated() where !character.isHexDigit {
            throw DecodeError(.malformedText, at: index, "'\(character)' is not a hex digit in \"\(original)\"")
        }
        return try Hex.decode(String(characters))
    }
}

/// Coded as its string ("180D", "0CDBE648-EED0-11E6-BC64-92361F002671"), read back through ``init(string:)``.
extension BluetoothUUID: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(string: text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
