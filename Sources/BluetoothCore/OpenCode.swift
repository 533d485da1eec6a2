/// A protocol code whose set of values is open: every raw value is representable (peers send values we do not
/// know, and later specifications add more), and the known ones print their specification names.
///
/// Conforming types are small structs with static members (`HCIStatus.success`), not enums, so an unknown value
/// round-trips unchanged instead of failing to decode.
public protocol OpenCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible
where RawValue: FixedWidthInteger & UnsignedInteger & Sendable {
    init(rawValue: RawValue)
    /// The names the specification gives, by value.
    static var names: [RawValue: String] { get }
    /// What the code is, for unknown values: "HCI status".
    static var codeKind: String { get }
}

extension OpenCode {
    /// The specification's name, or `nil` for a value this build does not know.
    public var name: String? { Self.names[rawValue] }

    /// Whether the value is one the specification (as this build knows it) defines.
    public var isKnown: Bool { Self.names[rawValue] != nil }

    /// The raw value as `0x..` with the width of the raw type.
    public var hexValue: String {
        let digits = String(rawValue, radix: 16, uppercase: true)
        let width = MemoryLayout<RawValue>.size * 2
        return "0x" + String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// `"Unknown Connection Identifier (0x02)"`, or `"Unknown HCI status (0x7F)"` for values without a name.
    public var description: String {
        if let name { return "\(name) (\(hexValue))" }
        return "Unknown \(Self.codeKind) (\(hexValue))"
    }
}
