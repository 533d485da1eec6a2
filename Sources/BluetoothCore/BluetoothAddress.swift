/// A Bluetooth device address (BD_ADDR) with its type (Core 5.4 Vol 6 Part B §1.3).
///
/// A public address is an IEEE-assigned identifier. A random address is one of three kinds told apart by its two
/// most significant bits: static (0b11), resolvable private (0b01, hash of an IRK), non-resolvable private (0b00).
/// Text is "AA:BB:CC:DD:EE:FF", most significant byte first; on the wire the six bytes go least significant first.
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Public or random, as the HCI address-type octets say.
    public enum AddressType: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible, Codable {
        case `public` = 0x00
        case random = 0x01

        public var description: String { self == .public ? "public" : "random" }
    }

    /// What a random address is, from its top two bits (Vol 6 Part B §1.3.2); `.public` for public addresses.
    public enum Kind: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        case `public` = "public"
        case randomStatic = "random static"
        case resolvablePrivate = "resolvable private"
        case nonResolvablePrivate = "non-resolvable private"
        /// Top bits 0b10: reserved for future use.
        case reservedRandom = "reserved random"

        public var description: String { rawValue }
    }

    /// The 48-bit value; bits 47...46 are the top two bits of the first printed byte.
    public let value: UInt64
    /// Public or random.
    public let type: AddressType

    public init(_ value: UInt64, type: AddressType = .public) {
        self.value = value & 0xFFFF_FFFF_FFFF
        self.type = type
    }

    /// From the six wire bytes (least significant first).
    public init(littleEndianBytes bytes: some Collection<UInt8>, type: AddressType = .public) throws(DecodeError) {
        guard bytes.count == 6 else {
            throw DecodeError(.invalidLength, at: 0, "an address has 6 bytes, not \(bytes.count)")
        }
        self.init(bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, type: type)
    }

    /// Parses "AA:BB:CC:DD:EE:FF" (also with `-` separators), optionally followed by "/public" or "/random".
    public init(string: String, type: AddressType? = nil) throws(DecodeError) {
        var text = string.trimmingWhitespace()
        var parsedType = type ?? .public
        if let slash = text.firstIndex(of: "/") {
            let suffix = text[text.index(after: slash)...].lowercased()
            switch suffix {
            case "public", "p": parsedType = .public
            case "random", "r": parsedType = .random
            default:
                throw DecodeError(.malformedText, at: 18, "address type must be 'public' or 'random', not '\(suffix)'")
            }
            text = String(text[..<slash])
        }
        let parts = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == ":" || $0 == "-" })
        guard parts.count == 6 else {
            throw DecodeError(.malformedText, at: 0, "\"\(string)\" is not an address: expected six hex pairs like AA:BB:CC:DD:EE:FF")
        }
        var value: UInt64 = 0
        for (index, part) in parts.enumerated() {
            guard part.count == 2, part.allSatisfy(\.isHexDigit), let byte = UInt8(part, radix: 16) else {
                throw DecodeError(.malformedText, at: index * 3, "\"\(part)\" is not a hex byte in \"\(string)\"")
            }
            value = value << 8 | UInt64(byte)
        }
        self.init(value, type: parsedType)
    }

    /// The six wire bytes, least significant first (HCI, LL and SMP order).
    public var littleEndianBytes: [UInt8] {
        (0..<6).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    /// Public, or which kind of random address.
    public var kind: Kind {
        guard type == .random else { return .public }
        switch value >> 46 {
        case 0b11: return .randomStatic
        case 0b01: return .resolvablePrivate
        case 0b00: return .nonResolvablePrivate
        default: return .reservedRandom
        }
    }

    /// A valid random static address needs the top bits 0b11 and its random part neither all zeros nor all ones.
    public var isValidRandomStatic: Bool {
        let random = value & 0x3FFF_FFFF_FFFF
        return kind == .randomStatic && random != 0 && random != 0x3FFF_FFFF_FFFF
    }

    /// "AA:BB:CC:DD:EE:FF".
    public var string: String {
        littleEndianBytes.reversed().map { Hex.encode([$0], uppercase: true) }.joined(separator: ":")
    }

    /// "AA:BB:CC:DD:EE:FF" for public addresses, "AA:BB:CC:DD:EE:FF (random static)" otherwise.
    public var description: String { type == .public ? string : "\(string) (\(kind))" }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
        (lhs.value, lhs.type.rawValue) < (rhs.value, rhs.type.rawValue)
    }

    /// 00:00:00:00:00:00, public.
    public static let zero = BluetoothAddress(0)
}

/// Coded as its 48-bit value and type, read back through ``init(_:type:)`` (which keeps 48 bits).
extension BluetoothAddress: Codable {
    private enum CodingKeys: String, CodingKey { case value, type }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try container.decode(UInt64.self, forKey: .value), type: try container.decode(AddressType.self, forKey: .type))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(value, forKey: .value)
        try container.encode(type, forKey: .type)
    }
}
