/// The role of the local device on an LE ACL link, Core 5.4 Vol 6 Part B §1.1 (Central and Peripheral), as it
/// matters to L2CAP: only the Central answers a Connection Parameter Update Request (Vol 3 Part A §4.20), only
/// the Peripheral sends one.
public enum L2CAPLinkRole: Hashable, Sendable {
    case central
    case peripheral
}

/// The settings of one ``L2CAPLink``, Core 5.4 Vol 3 Part A §6.2 (timers).
public struct L2CAPLinkConfiguration: Hashable, Sendable {
    /// The default signaling response timeout (RTX): 30 seconds. The specification leaves the value to the
    /// implementation within 1...60 s (Vol 3 Part A §6.2.1); 30 s matches the ATT and SMP transaction timeouts.
    public static let defaultSignalingTimeout: Duration = .seconds(30)

    /// The local role on the link.
    public var role: L2CAPLinkRole
    /// How long a signaling request (LE Credit Based Connection, Disconnection, Connection Parameter Update)
    /// waits for its response before it fails (RTX).
    public var signalingTimeout: Duration
    /// Whether an expired signaling request also asks the owner to drop the ACL link (``L2CAPLinkAction/disconnectLink(_:)``
    /// with ``L2CAPLinkDisconnectReason/signalingTimeout``). Off by default: the request fails and, for a channel
    /// request, the channel is closed locally. A host that treats an unresponsive peer as a dead link turns it on.
    public var disconnectLinkOnSignalingTimeout: Bool

    public init(
        role: L2CAPLinkRole, signalingTimeout: Duration = Self.defaultSignalingTimeout,
        disconnectLinkOnSignalingTimeout: Bool = false
    ) {
        self.role = role
        self.signalingTimeout = signalingTimeout
        self.disconnectLinkOnSignalingTimeout = disconnectLinkOnSignalingTimeout
    }
}
