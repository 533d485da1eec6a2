public import BluetoothCore

/// An LE address type octet as HCI commands and events carry it (Core 5.4 Vol 4 Part E §7.8.5, §7.7.65.10):
/// 0x00 public, 0x01 random, 0x02/0x03 public/random identity address (resolved by the controller), 0xFF anonymous.
public struct LEAddressType: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "LE address type"
    public static let `public` = LEAddressType(0x00)
    public static let random = LEAddressType(0x01)
    public static let publicIdentity = LEAddressType(0x02)
    public static let randomIdentity = LEAddressType(0x03)
    public static let anonymous = LEAddressType(0xFF)
    public static let names: [UInt8: String] = [
        0x00: "Public Device Address", 0x01: "Random Device Address",
        0x02: "Public Identity Address", 0x03: "Random (static) Identity Address",
        0xFF: "Anonymous",
    ]
    /// The address kind of a ``BluetoothAddress`` carrying this type: random when bit 0 is set.
    public var bluetoothAddressType: BluetoothAddress.AddressType { rawValue & 0x01 == 0 ? .public : .random }
    /// Public or random, from an address's own type.
    public init(_ type: BluetoothAddress.AddressType) { rawValue = type.rawValue }
}

/// The Advertising_Type of HCI_LE_Set_Advertising_Parameters (Core 5.4 Vol 4 Part E §7.8.5).
public struct LEAdvertisingType: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "advertising type"
    public static let connectableUndirected = LEAdvertisingType(0x00)
    public static let connectableHighDutyCycleDirected = LEAdvertisingType(0x01)
    public static let scannableUndirected = LEAdvertisingType(0x02)
    public static let nonConnectableUndirected = LEAdvertisingType(0x03)
    public static let connectableLowDutyCycleDirected = LEAdvertisingType(0x04)
    public static let names: [UInt8: String] = [
        0x00: "ADV_IND", 0x01: "ADV_DIRECT_IND (high duty cycle)", 0x02: "ADV_SCAN_IND",
        0x03: "ADV_NONCONN_IND", 0x04: "ADV_DIRECT_IND (low duty cycle)",
    ]
}

/// The Event_Type of a legacy LE Advertising Report (Core 5.4 Vol 4 Part E §7.7.65.2).
public struct LEAdvertisingReportType: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "advertising report type"
    public static let advInd = LEAdvertisingReportType(0x00)
    public static let advDirectInd = LEAdvertisingReportType(0x01)
    public static let advScanInd = LEAdvertisingReportType(0x02)
    public static let advNonconnInd = LEAdvertisingReportType(0x03)
    public static let scanResponse = LEAdvertisingReportType(0x04)
    public static let names: [UInt8: String] = [
        0x00: "ADV_IND", 0x01: "ADV_DIRECT_IND", 0x02: "ADV_SCAN_IND", 0x03: "ADV_NONCONN_IND", 0x04: "SCAN_RSP",
    ]
}

/// An LE PHY value as reported in LE Read PHY / PHY Update Complete (Core 5.4 Vol 4 Part E §7.8.47, §7.7.65.12)
/// and in extended advertising reports.
public struct LEPhy: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "PHY"
    public static let le1M = LEPhy(0x01)
    public static let le2M = LEPhy(0x02)
    public static let leCoded = LEPhy(0x03)
    public static let names: [UInt8: String] = [0x00: "No packets", 0x01: "LE 1M", 0x02: "LE 2M", 0x03: "LE Coded"]
}

/// The Role of a connection complete event (Core 5.4 Vol 4 Part E §7.7.65.1).
public struct LERole: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "role"
    public static let central = LERole(0x00)
    public static let peripheral = LERole(0x01)
    public static let names: [UInt8: String] = [0x00: "Central", 0x01: "Peripheral"]
}
