public import BluetoothCore

/// A local name as carried in the Shortened / Complete Local Name AD types (Core Specification Supplement
/// Part A §1.2). The octets are kept as received: ``string`` is nil when they are not valid UTF-8, and encoding
/// always reproduces them.
public struct LocalName: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The octets on the air.
    public var bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }
    public init(_ string: String) { bytes = Array(string.utf8) }
    public init(stringLiteral value: String) { self.init(value) }

    /// The name, or nil when the octets are not valid UTF-8.
    public var string: String? { String(validating: bytes, as: UTF8.self) }

    /// The name; invalid UTF-8 shown with replacement characters.
    public var displayString: String { String(decoding: bytes, as: UTF8.self) }

    /// The name in quotes, or the octets in hex when they are not UTF-8.
    public var description: String {
        if let string { return "\"\(string)\"" }
        return "invalid UTF-8: \(Dissection.bytes(bytes))"
    }
}

/// The Class of Device AD type (Core Specification Supplement Part A §1.6; Assigned Numbers "Baseband"): a
/// 24-bit value, carried in 3 octets.
public struct ClassOfDevice: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The 24-bit value (higher bits are always zero).
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue & 0xFF_FFFF }

    /// Bits 12...8.
    public var majorDeviceClass: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 8) & 0x1F }
    /// Bits 7...2.
    public var minorDeviceClass: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 2) & 0x3F }
    /// Bits 23...13.
    public var majorServiceClasses: UInt16 { UInt16(truncatingIfNeeded: rawValue >> 13) }

    public var description: String {
        let digits = String(rawValue, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 6 - digits.count)) + digits
    }
}

/// The Peripheral Connection Interval Range AD type (Core Specification Supplement Part A §1.9): preferred
/// minimum and maximum connection intervals in units of 1.25 ms; 0xFFFF means "no specific value".
public struct ConnectionIntervalRange: Hashable, Sendable, CustomStringConvertible {
    /// Minimum interval, units of 1.25 ms (0xFFFF: no specific minimum).
    public var minimum: UInt16
    /// Maximum interval, units of 1.25 ms (0xFFFF: no specific maximum).
    public var maximum: UInt16

    public init(minimum: UInt16, maximum: UInt16) {
        self.minimum = minimum
        self.maximum = maximum
    }

    static func text(_ value: UInt16) -> String {
        if value == 0xFFFF { return "no specific value (0xFFFF)" }
        let microseconds = UInt32(value) * 1250
        return "\(Dissection.hex16(value)) (\(milliseconds(microseconds)))"
    }

    public var description: String { "min \(Self.text(minimum)), max \(Self.text(maximum))" }
}

/// The LE Role AD type (Core Specification Supplement Part A §1.17).
public struct LERole: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "LE role"
    public static let names: [UInt8: String] = [
        0x00: "Only Peripheral Role supported",
        0x01: "Only Central Role supported",
        0x02: "Peripheral and Central Role supported, Peripheral Role preferred for connection establishment",
        0x03: "Peripheral and Central Role supported, Central Role preferred for connection establishment",
    ]

    public static let peripheralOnly = LERole(0x00)
    public static let centralOnly = LERole(0x01)
    public static let peripheralPreferred = LERole(0x02)
    public static let centralPreferred = LERole(0x03)
}

/// The LE Supported Features AD type (Core Specification Supplement Part A §1.19): the link layer feature bit
/// field (Core 5.4 Vol 6 Part B §4.6), least significant octet first; trailing zero octets may be omitted, so
/// the octets are kept as sent.
public struct LESupportedFeatures: Hashable, Sendable, CustomStringConvertible {
    /// The octets on the air, least significant first.
    public var bytes: [UInt8]
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Whether feature bit `bit` is set (bits beyond the octets sent are clear).
    public func contains(bit: Int) -> Bool {
        guard bit >= 0 else { return false }
        let index = bit / 8
        guard index < bytes.count else { return false }
        return bytes[index] & (1 << UInt8(bit % 8)) != 0
    }

    /// The numbers of the bits that are set.
    public var setBits: [Int] {
        (0..<(bytes.count * 8)).filter { contains(bit: $0) }
    }

    static let knownBits: [Int: String] = [
        0: "LE Encryption", 1: "Connection Parameters Request Procedure", 2: "Extended Reject Indication",
        3: "Peripheral-initiated Features Exchange", 4: "LE Ping", 5: "LE Data Packet Length Extension",
        6: "LL Privacy", 7: "Extended Scanner Filter Policies", 8: "LE 2M PHY",
        9: "Stable Modulation Index - Transmitter", 10: "Stable Modulation Index - Receiver", 11: "LE Coded PHY",
        12: "LE Extended Advertising", 13: "LE Periodic Advertising", 14: "Channel Selection Algorithm #2",
        15: "LE Power Class 1", 16: "Minimum Number of Used Channels Procedure", 17: "Connection CTE Request",
        18: "Connection CTE Response", 19: "Connectionless CTE Transmitter", 20: "Connectionless CTE Receiver",
        21: "Antenna Switching During CTE Transmission (AoD)", 22: "Antenna Switching During CTE Reception (AoA)",
        23: "Receiving Constant Tone Extensions", 24: "Periodic Advertising Sync Transfer - Sender",
        25: "Periodic Advertising Sync Transfer - Recipient", 26: "Sleep Clock Accuracy Updates",
        27: "Remote Public Key Validation", 28: "Connected Isochronous Stream - Central",
        29: "Connected Isochronous Stream - Peripheral", 30: "Isochronous Broadcaster", 31: "Synchronized Receiver",
        32: "Connected Isochronous Stream (Host Support)", 33: "LE Power Control Request",
        34: "LE Power Control Request (second bit)", 35: "LE Path Loss Monitoring", 36: "Periodic Advertising ADI support",
        37: "Connection Subrating", 38: "Connection Subrating (Host Support)", 39: "Channel Classification",
    ]

    /// The name of feature bit `bit` (Core 5.4 Vol 6 Part B §4.6), nil for a bit this module does not name.
    public static func name(ofBit bit: Int) -> String? { knownBits[bit] }

    /// "LE Encryption, LE 2M PHY, bit 40".
    public var description: String {
        let names = setBits.map { Self.knownBits[$0] ?? "bit \($0)" }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }
}

/// Formats a number of microseconds as milliseconds without Foundation: "7.5 ms", "1000 ms".
func milliseconds(_ microseconds: UInt32) -> String {
    let whole = microseconds / 1000
    var fraction = microseconds % 1000
    guard fraction != 0 else { return "\(whole) ms" }
    var digits = ""
    var width = 3
    while fraction % 10 == 0 { fraction /= 10; width -= 1 }
    let text = String(fraction)
    digits = String(repeating: "0", count: max(0, width - text.count)) + text
    return "\(whole).\(digits) ms"
}
