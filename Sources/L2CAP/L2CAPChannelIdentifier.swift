public import BluetoothCore

/// An L2CAP channel identifier (CID), Core 5.4 Vol 3 Part A §2.1, Tables 2.1 (ACL-U) and 2.2 (LE-U).
///
/// Fixed channels have names; on LE the dynamically allocated range is 0x0040...0x007F.
public struct L2CAPChannelIdentifier: OpenCode, Comparable, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static let codeKind = "L2CAP channel"

    /// 0x0000: never used (the null identifier).
    public static let null = Self(0x0000)
    /// 0x0001: L2CAP signaling channel on ACL-U (BR/EDR).
    public static let signaling = Self(0x0001)
    /// 0x0002: connectionless channel (BR/EDR).
    public static let connectionless = Self(0x0002)
    /// 0x0004: Attribute Protocol.
    public static let attributeProtocol = Self(0x0004)
    /// 0x0005: LE L2CAP signaling channel.
    public static let leSignaling = Self(0x0005)
    /// 0x0006: Security Manager Protocol (LE).
    public static let securityManager = Self(0x0006)
    /// 0x0007: BR/EDR Security Manager.
    public static let brEdrSecurityManager = Self(0x0007)

    /// The LE dynamically allocated range (Table 2.2).
    public static let leDynamicRange: ClosedRange<UInt16> = 0x0040...0x007F

    /// Whether this CID is in the LE dynamically allocated range 0x0040...0x007F.
    public var isLEDynamic: Bool { Self.leDynamicRange.contains(rawValue) }

    public static let names: [UInt16: String] = [
        0x0000: "Null identifier",
        0x0001: "L2CAP Signaling channel",
        0x0002: "Connectionless channel",
        0x0004: "Attribute protocol",
        0x0005: "LE L2CAP Signaling channel",
        0x0006: "Security Manager protocol",
        0x0007: "BR/EDR Security Manager",
    ]

    /// Known name, "Dynamic LE channel (0x0040)" in the LE dynamic range, else "Unknown L2CAP channel (0x..)".
    public var description: String {
        if let name { return "\(name) (\(hexValue))" }
        if isLEDynamic { return "Dynamic LE channel (\(hexValue))" }
        return "Unknown \(Self.codeKind) (\(hexValue))"
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
