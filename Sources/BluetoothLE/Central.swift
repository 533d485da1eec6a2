public import BluetoothCore
public import BluetoothEngine

/// A central connected to the local peripheral (Core 5.4 Vol 3 Part C §2.2.2: the GAP Central role on the other
/// end of the link), as ``BluetoothStack/connections()`` yields it. Identity: one object per connection.
public final class Central: Sendable, Hashable, CustomStringConvertible {
    let link: PeerLink

    init(link: PeerLink) {
        self.link = link
    }

    /// The central's address.
    public var address: BluetoothAddress { link.connection.peer }
    /// The HCI connection handle of the link.
    public var connectionHandle: UInt16 { link.handle }
    /// The connection as the host reported it at connection time.
    public var connection: Connection { link.connection }
    /// The ATT_MTU of the connection (23 until an exchange).
    public var mtu: Int { link.mtuValue.load() }
    /// The longest notification value that is sent whole (ATT_MTU − 3).
    public var maximumNotificationLength: Int { mtu - 3 }
    /// Whether the link is still up.
    public var isConnected: Bool { link.disconnection.value == nil }

    /// Disconnects and waits until the link is down.
    public func disconnect() async throws { try await link.disconnect() }

    /// Waits until the link ends and returns the HCI reason (Vol 1 Part F). Cancelling throws `CancellationError`.
    public func disconnected() async throws -> HCIStatus { try await link.disconnection.wait() }

    public static func == (lhs: Central, rhs: Central) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "central \(address) (\(Dissection.hex16(connectionHandle)))" }
}
