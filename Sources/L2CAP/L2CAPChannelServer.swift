public import BluetoothCore

/// When the link returns credits to the peer on a credit-based channel, Core 5.4 Vol 3 Part A §4.24.
public enum L2CAPChannelCreditPolicy: Hashable, Sendable, Codable {
    /// Each time a K-frame arrives and the peer's remaining credits are at or below `threshold` (nil: half the
    /// initial credits), a Flow Control Credit Indication tops them back up to the initial credits. SDUs are
    /// handed to the owner as they complete, so consuming them is immediate.
    case automatic(threshold: UInt16? = nil)
    /// Credits are returned only by ``L2CAPLink/giveCredits(_:on:)`` (the owner applies back-pressure).
    case manual
}

/// How a registered server answers an incoming LE Credit Based Connection Request, Core 5.4 Vol 3 Part A §4.23.
public enum L2CAPChannelAcceptPolicy: Sendable {
    /// Accept every request whose parameters are valid.
    case acceptAll
    /// Refuse every request with this result (e.g. insufficient authentication until the link is paired).
    case refuseAll(L2CAPConnectionResult)
    /// Decide per request (return ``L2CAPConnectionResult/successful`` to accept). Runs synchronously on the
    /// owner's executor.
    case decide(@Sendable (L2CAPLECreditBasedConnectionRequest) -> L2CAPConnectionResult)
}

/// A local service accepting credit-based channels on one LE_PSM / SPSM, Core 5.4 Vol 3 Part A §4.22 (LE Credit
/// Based Connection Request) and §4.25 (L2CAP Credit Based Connection Request, enhanced mode, up to 5 channels).
///
/// ``modes`` says which requests it takes; a request in the other mode is refused with *SPSM not supported*.
/// Enhanced mode needs ``mtu`` and ``mps`` of at least 64 (§4.25); a server with smaller values accepts LE mode
/// only. The accept policy sees an enhanced request as an LE request with the same SPSM, MTU, MPS, credits and
/// its first Source CID (one decision for all its channels).
public struct L2CAPChannelServer: Sendable {
    /// The LE_PSM / SPSM (0x0001...0x00FF).
    public var psm: UInt16
    /// The largest SDU the local side accepts (at least 23).
    public var mtu: UInt16
    /// The largest K-frame payload the local side accepts (23...65533).
    public var mps: UInt16
    /// The credits granted to the peer in the response.
    public var initialCredits: UInt16
    public var creditPolicy: L2CAPChannelCreditPolicy
    public var acceptPolicy: L2CAPChannelAcceptPolicy
    /// The modes accepted (both by default).
    public var modes: Set<L2CAPChannelMode>

    public init(
        psm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16,
        creditPolicy: L2CAPChannelCreditPolicy = .automatic(), acceptPolicy: L2CAPChannelAcceptPolicy = .acceptAll,
        modes: Set<L2CAPChannelMode> = [.leCreditBased, .enhancedCreditBased]
    ) {
        self.modes = modes
        self.psm = psm
        self.mtu = mtu
        self.mps = mps
        self.initialCredits = initialCredits
        self.creditPolicy = creditPolicy
        self.acceptPolicy = acceptPolicy
    }
}
