import BluetoothCore

/// The Flags AD type (Core Specification Supplement Part A §1.3; Core 5.4 Vol 3 Part C §11): discoverable mode
/// and BR/EDR support bits.
public struct ADFlags: OptionSet, Hashable, Sendable, CustomStringConvertible, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bit 0: LE Limited Discoverable Mode.
    public static let leLimitedDiscoverable = ADFlags(rawValue: 0x01)
    /// Bit 1: LE General Discoverable Mode.
    public static let leGeneralDiscoverable = ADFlags(rawValue: 0x02)
    /// Bit 2: BR/EDR Not Supported.
    public static let brEdrNotSupported = ADFlags(rawValue: 0x04)
    /// Bit 3: Simultaneous LE and BR/EDR to Same Device Capable (Controller).
    public static let simultaneousLEAndBREDRController = ADFlags(rawValue: 0x08)
    /// Bit 4: Previously Used (formerly Simultaneous LE and BR/EDR, Host).
    public static let previouslyUsed = ADFlags(rawValue: 0x10)

    /// The usual flags of a connectable LE-only peripheral: General Discoverable, BR/EDR Not Supported (0x06).
    public static let generalDiscoverableLEOnly: ADFlags = [.leGeneralDiscoverable, .brEdrNotSupported]

    /// The specification's names of the bits that are set, in bit order; reserved bits as "Reserved (bit n)".
    public var names: [String] {
        var out: [String] = []
        for bit in 0..<8 where rawValue & (1 << bit) != 0 {
            out.append(Self.bitNames[bit] ?? "Reserved (bit \(bit))")
        }
        return out
    }

    static let bitNames: [Int: String] = [
        0: "LE Limited Discoverable Mode",
        1: "LE General Discoverable Mode",
        2: "BR/EDR Not Supported",
        3: "Simultaneous LE and BR/EDR to Same Device Capable (Controller)",
        4: "Previously Used",
    ]

    /// "0x06 (LE General Discoverable Mode, BR/EDR Not Supported)".
    public var description: String {
        let hex = Dissection.hex8(rawValue)
        return names.isEmpty ? hex : "\(hex) (\(names.joined(separator: ", ")))"
    }
}
