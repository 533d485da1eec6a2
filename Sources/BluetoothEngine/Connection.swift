public import BluetoothCore
public import HCI

/// The parameters of an LE connection as the controller reports them (Core 5.4 Vol 4 Part E §7.7.65.1, §7.7.65.3):
/// interval in 1.25 ms units, peripheral latency in connection events, supervision timeout in 10 ms units.
public struct ConnectionParameters: Hashable, Sendable, CustomStringConvertible, Codable {
    public var interval: UInt16
    public var latency: UInt16
    public var supervisionTimeout: UInt16

    public init(interval: UInt16, latency: UInt16, supervisionTimeout: UInt16) {
        self.interval = interval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    /// The interval as a duration (1.25 ms units).
    public var intervalDuration: Duration { .microseconds(Int64(interval) * 1250) }
    /// The supervision timeout as a duration (10 ms units).
    public var supervisionTimeoutDuration: Duration { .milliseconds(Int64(supervisionTimeout) * 10) }

    public var description: String {
        "interval \(Double(interval) * 1.25) ms, latency \(latency), timeout \(Int(supervisionTimeout) * 10) ms"
    }
}

/// Which side of an LE connection this host is (Core 5.4 Vol 6 Part B §1.1: central initiates, peripheral
/// advertises).
public enum ConnectionRole: String, Hashable, Sendable, Codable {
    case central
    case peripheral
}

/// One LE connection in the host's connection table, keyed by its connection handle (Core 5.4 Vol 4 Part E
/// §5.3.1). Created synchronously when LE (Enhanced) Connection Complete arrives, removed on Disconnection Complete.
public struct Connection: Hashable, Sendable, CustomStringConvertible, Codable {
    public var handle: UInt16
    public var role: ConnectionRole
    /// The peer's address, typed public or random.
    public var peer: BluetoothAddress
    /// The peer address type as the controller reported it (identity types 0x02/0x03 when it resolved an RPA).
    public var peerAddressType: LEAddressType
    public var parameters: ConnectionParameters
    /// Whether the link is encrypted (from Encryption Change).
    public var isEncrypted: Bool

    public init(handle: UInt16, role: ConnectionRole, peer: BluetoothAddress, peerAddressType: LEAddressType,
                parameters: ConnectionParameters, isEncrypted: Bool = false) {
        self.handle = handle
        self.role = role
        self.peer = peer
        self.peerAddressType = peerAddressType
        self.parameters = parameters
        self.isEncrypted = isEncrypted
    }

    public var description: String {
        "connection \(Dissection.hex16(handle)) (\(role.rawValue)) to \(peer), \(parameters)"
    }
}
