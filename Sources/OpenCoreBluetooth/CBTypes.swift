#if canImport(Darwin)
public import Foundation
#endif

#if !canImport(Darwin)
/// Seconds since 2001-01-01 00:00:00 UTC, as on Apple platforms (Linux Foundation does not define it). Used by the
/// iOS 17 disconnect callback and the `kCBAdvDataTimestamp` advertisement value.
public typealias CFAbsoluteTime = Double
#endif

/// The state of a Bluetooth manager (CoreBluetooth `CBManagerState`, raw values as in Apple's SDK).
public enum CBManagerState: Int, Sendable, Hashable, CustomStringConvertible {
    case unknown = 0
    case resetting = 1
    case unsupported = 2
    case unauthorized = 3
    case poweredOff = 4
    case poweredOn = 5

    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .resetting: "resetting"
        case .unsupported: "unsupported"
        case .unauthorized: "unauthorized"
        case .poweredOff: "poweredOff"
        case .poweredOn: "poweredOn"
        }
    }
}

/// The app's authorization to use Bluetooth (CoreBluetooth `CBManagerAuthorization`). Linux has no privacy
/// prompt: OpenCoreBluetooth always reports `.allowedAlways` (access to an adapter is decided by the transport:
/// the HCI user channel needs CAP_NET_ADMIN, a TCP controller needs the port).
public enum CBManagerAuthorization: Int, Sendable, Hashable {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case allowedAlways = 3
}

/// Deprecated since iOS 10; use `CBManagerState`.
@available(iOS, deprecated: 10.0, message: "Use CBManagerState instead")
@available(macOS, deprecated: 10.13, message: "Use CBManagerState instead")
public enum CBCentralManagerState: Int, Sendable, Hashable {
    case unknown = 0, resetting = 1, unsupported = 2, unauthorized = 3, poweredOff = 4, poweredOn = 5
}

/// Deprecated since iOS 10; use `CBManagerState`.
@available(iOS, deprecated: 10.0, message: "Use CBManagerState instead")
@available(macOS, deprecated: 10.13, message: "Use CBManagerState instead")
public enum CBPeripheralManagerState: Int, Sendable, Hashable {
    case unknown = 0, resetting = 1, unsupported = 2, unauthorized = 3, poweredOff = 4, poweredOn = 5
}

/// Deprecated since iOS 13; use `CBManagerAuthorization`.
@available(iOS, deprecated: 13.0, message: "Use CBManagerAuthorization instead")
@available(macOS, deprecated: 10.15, message: "Use CBManagerAuthorization instead")
public enum CBPeripheralManagerAuthorizationStatus: Int, Sendable, Hashable {
    case notDetermined = 0, restricted = 1, denied = 2, authorized = 3
}

/// The connection state of a remote peripheral (CoreBluetooth `CBPeripheralState`).
public enum CBPeripheralState: Int, Sendable, Hashable {
    case disconnected = 0
    case connecting = 1
    case connected = 2
    case disconnecting = 3
}

/// How a central writes a characteristic value: ATT Write Request or Write Command (Core 5.4 Vol 3 Part G §4.9).
public enum CBCharacteristicWriteType: Int, Sendable, Hashable {
    case withResponse = 0
    case withoutResponse = 1
}

/// The latency a peripheral manager asks a central for (CoreBluetooth `CBPeripheralManagerConnectionLatency`).
public enum CBPeripheralManagerConnectionLatency: Int, Sendable, Hashable {
    case low = 0
    case medium = 1
    case high = 2
}

/// A connection event reported to `centralManager(_:connectionEventDidOccur:for:)`.
public enum CBConnectionEvent: Int, Sendable, Hashable {
    case peerDisconnected = 0
    case peerConnected = 1
}

/// The properties of a characteristic: the GATT Characteristic Properties bit field (Core 5.4 Vol 3 Part G
/// §3.3.1.1, 0x01-0x80) plus Apple's two encryption bits (0x100, 0x200).
public struct CBCharacteristicProperties: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let broadcast = CBCharacteristicProperties(rawValue: 0x01)
    public static let read = CBCharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = CBCharacteristicProperties(rawValue: 0x04)
    public static let write = CBCharacteristicProperties(rawValue: 0x08)
    public static let notify = CBCharacteristicProperties(rawValue: 0x10)
    public static let indicate = CBCharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = CBCharacteristicProperties(rawValue: 0x40)
    public static let extendedProperties = CBCharacteristicProperties(rawValue: 0x80)
    public static let notifyEncryptionRequired = CBCharacteristicProperties(rawValue: 0x100)
    public static let indicateEncryptionRequired = CBCharacteristicProperties(rawValue: 0x200)
}

/// Read/write permissions of a local attribute (CoreBluetooth `CBAttributePermissions`; "writeable" sic).
public struct CBAttributePermissions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    public static let readable = CBAttributePermissions(rawValue: 0x01)
    public static let writeable = CBAttributePermissions(rawValue: 0x02)
    public static let readEncryptionRequired = CBAttributePermissions(rawValue: 0x04)
    public static let writeEncryptionRequired = CBAttributePermissions(rawValue: 0x08)
}

/// Keys of `registerForConnectionEvents(options:)`.
public struct CBConnectionEventMatchingOption: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// `[CBUUID]`: at most 4 services.
    public static let serviceUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionServiceUUIDs")
    /// `[UUID]`: peripheral identifiers.
    public static let peripheralUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionPeripheralUUIDs")
}

/// An L2CAP LE credit-based channel's protocol/service multiplexer (Core 5.4 Vol 3 Part A §4.22).
public typealias CBL2CAPPSM = UInt16
