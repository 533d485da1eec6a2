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
    /// The state is not known yet: every manager starts here until its first state update.
    case unknown = 0
    /// The connection to the Bluetooth service was lost for a moment; an update follows. The bundled backends never
    /// report it.
    case resetting = 1
    /// The device does not support this role; on Linux, also when there is no backend or its stack could not be opened.
    case unsupported = 2
    /// The app may not use Bluetooth. The bundled backends never report it (`CBManager.authorization` is
    /// `.allowedAlways`).
    case unauthorized = 3
    /// Bluetooth is off (or the stack was lost): scans, connections and advertising have stopped.
    case poweredOff = 4
    /// Bluetooth is on and ready: commands are accepted only in this state.
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
/// prompt: OpenCoreBluetooth reports `.allowedAlways` unless the app stands in for the user's answer
/// (``OCBApplication/bluetoothAuthorization``, `OCB_BLUETOOTH_AUTHORIZATION`); access to an adapter is decided by
/// the transport (the HCI user channel needs CAP_NET_ADMIN, a TCP controller needs the port).
public enum CBManagerAuthorization: Int, Sendable, Hashable {
    /// The user has not decided yet.
    case notDetermined = 0
    /// The app may not use Bluetooth, and the user cannot change that.
    case restricted = 1
    /// The user denied the app the use of Bluetooth.
    case denied = 2
    /// The app may use Bluetooth at any time (the default on Linux).
    case allowedAlways = 3
}

/// Deprecated since iOS 10; use `CBManagerState`.
@available(iOS, deprecated: 10.0, message: "Use CBManagerState instead")
@available(macOS, deprecated: 10.13, message: "Use CBManagerState instead")
public enum CBCentralManagerState: Int, Sendable, Hashable {
    /// The same states and raw values as `CBManagerState`.
    case unknown = 0, resetting = 1, unsupported = 2, unauthorized = 3, poweredOff = 4, poweredOn = 5
}

/// Deprecated since iOS 10; use `CBManagerState`.
@available(iOS, deprecated: 10.0, message: "Use CBManagerState instead")
@available(macOS, deprecated: 10.13, message: "Use CBManagerState instead")
public enum CBPeripheralManagerState: Int, Sendable, Hashable {
    /// The same states and raw values as `CBManagerState`.
    case unknown = 0, resetting = 1, unsupported = 2, unauthorized = 3, poweredOff = 4, poweredOn = 5
}

/// Deprecated since iOS 13; use `CBManagerAuthorization`.
@available(iOS, deprecated: 13.0, message: "Use CBManagerAuthorization instead")
@available(macOS, deprecated: 10.15, message: "Use CBManagerAuthorization instead")
public enum CBPeripheralManagerAuthorizationStatus: Int, Sendable, Hashable {
    /// As `CBManagerAuthorization`, with `authorized` for `allowedAlways`.
    case notDetermined = 0, restricted = 1, denied = 2, authorized = 3
}

/// The connection state of a remote peripheral (CoreBluetooth `CBPeripheralState`).
public enum CBPeripheralState: Int, Sendable, Hashable {
    /// No link, and no connection attempt under way.
    case disconnected = 0
    /// `connect(_:options:)` is under way (it never times out).
    case connecting = 1
    /// The link is up: the peripheral accepts commands.
    case connected = 2
    /// `cancelPeripheralConnection(_:)` is under way; `didDisconnectPeripheral` follows.
    case disconnecting = 3
}

/// How a central writes a characteristic value: ATT Write Request or Write Command (Core 5.4 Vol 3 Part G §4.9).
public enum CBCharacteristicWriteType: Int, Sendable, Hashable {
    /// An ATT Write Request (Prepare/Execute Write for long values); `peripheral(_:didWriteValueFor:error:)` follows.
    case withResponse = 0
    /// An ATT Write Command: no confirmation and no callback; at most ATT_MTU - 3 bytes.
    case withoutResponse = 1
}

/// The latency a peripheral manager asks a central for (CoreBluetooth `CBPeripheralManagerConnectionLatency`).
public enum CBPeripheralManagerConnectionLatency: Int, Sendable, Hashable {
    /// Short connection intervals, for low latency (more power).
    case low = 0
    /// A balance of latency and power.
    case medium = 1
    /// Long connection intervals, for low power (more latency).
    case high = 2
}

/// A connection event reported to `centralManager(_:connectionEventDidOccur:for:)`.
public enum CBConnectionEvent: Int, Sendable, Hashable {
    /// A matching peer disconnected.
    case peerDisconnected = 0
    /// A matching peer connected.
    case peerConnected = 1
}

/// The properties of a characteristic: the GATT Characteristic Properties bit field (Core 5.4 Vol 3 Part G
/// §3.3.1.1, 0x01-0x80) plus Apple's two encryption bits (0x100, 0x200).
public struct CBCharacteristicProperties: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// The value can be broadcast in a Server Characteristic Configuration (0x01).
    public static let broadcast = CBCharacteristicProperties(rawValue: 0x01)
    /// The value can be read (0x02).
    public static let read = CBCharacteristicProperties(rawValue: 0x02)
    /// The value can be written without response, with a Write Command (0x04).
    public static let writeWithoutResponse = CBCharacteristicProperties(rawValue: 0x04)
    /// The value can be written with response, with a Write Request (0x08).
    public static let write = CBCharacteristicProperties(rawValue: 0x08)
    /// The value can be notified, without confirmation (0x10).
    public static let notify = CBCharacteristicProperties(rawValue: 0x10)
    /// The value can be indicated, with confirmation (0x20).
    public static let indicate = CBCharacteristicProperties(rawValue: 0x20)
    /// The value can be written with a Signed Write Command (0x40).
    public static let authenticatedSignedWrites = CBCharacteristicProperties(rawValue: 0x40)
    /// More properties are in the Extended Properties descriptor (0x80).
    public static let extendedProperties = CBCharacteristicProperties(rawValue: 0x80)
    /// Apple's extension: only trusted devices can enable notifications (0x100).
    public static let notifyEncryptionRequired = CBCharacteristicProperties(rawValue: 0x100)
    /// Apple's extension: only trusted devices can enable indications (0x200).
    public static let indicateEncryptionRequired = CBCharacteristicProperties(rawValue: 0x200)
}

/// Read/write permissions of a local attribute (CoreBluetooth `CBAttributePermissions`; "writeable" sic).
public struct CBAttributePermissions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// The value can be read.
    public static let readable = CBAttributePermissions(rawValue: 0x01)
    /// The value can be written.
    public static let writeable = CBAttributePermissions(rawValue: 0x02)
    /// The value can be read only over an encrypted link.
    public static let readEncryptionRequired = CBAttributePermissions(rawValue: 0x04)
    /// The value can be written only over an encrypted link.
    public static let writeEncryptionRequired = CBAttributePermissions(rawValue: 0x08)
}

/// Keys of `registerForConnectionEvents(options:)`.
public struct CBConnectionEventMatchingOption: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// An option with this raw value.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// `[CBUUID]`: at most 4 services.
    public static let serviceUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionServiceUUIDs")
    /// `[UUID]`: peripheral identifiers.
    public static let peripheralUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionPeripheralUUIDs")
}

/// An L2CAP LE credit-based channel's protocol/service multiplexer (Core 5.4 Vol 3 Part A §4.22).
public typealias CBL2CAPPSM = UInt16
