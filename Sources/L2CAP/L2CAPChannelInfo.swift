/// What the owner learns about an open LE Credit Based Flow Control channel, Core 5.4 Vol 3 Part A §4.22 and
/// §4.23: both endpoints' CIDs and both directions' MTU and MPS.
public struct L2CAPChannelInfo: Hashable, Sendable, Codable {
    /// The local endpoint (the handle the owner uses in ``L2CAPLink`` calls).
    public var localCID: L2CAPChannelIdentifier
    /// The peer's endpoint (the destination CID of outgoing K-frames).
    public var remoteCID: L2CAPChannelIdentifier
    /// The LE_PSM the channel was opened on.
    public var psm: UInt16
    /// The largest SDU the local side accepts.
    public var localMTU: UInt16
    /// The largest K-frame payload the local side accepts.
    public var localMPS: UInt16
    /// The largest SDU the peer accepts.
    public var remoteMTU: UInt16
    /// The largest K-frame payload the peer accepts.
    public var remoteMPS: UInt16
    /// Whether the local side sent the (LE) Credit Based Connection Request.
    public var isInitiator: Bool
    /// The channel's mode: LE Credit Based or Enhanced Credit Based Flow Control.
    public var mode: L2CAPChannelMode

    public init(
        localCID: L2CAPChannelIdentifier, remoteCID: L2CAPChannelIdentifier, psm: UInt16, localMTU: UInt16,
        localMPS: UInt16, remoteMTU: UInt16, remoteMPS: UInt16, isInitiator: Bool,
        mode: L2CAPChannelMode = .leCreditBased
    ) {
        self.mode = mode
        self.localCID = localCID
        self.remoteCID = remoteCID
        self.psm = psm
        self.localMTU = localMTU
        self.localMPS = localMPS
        self.remoteMTU = remoteMTU
        self.remoteMPS = remoteMPS
        self.isInitiator = isInitiator
    }
}

/// The flow control mode of a credit-based channel, Core 5.4 Vol 3 Part A §3.4: LE Credit Based Flow Control
/// (opened with LE Credit Based Connection Request 0x14, §4.22) or Enhanced Credit Based Flow Control (opened up
/// to five at a time with L2CAP Credit Based Connection Request 0x17, §4.25, and reconfigurable, §4.27). Both
/// carry K-frames the same way (§3.4.2, §3.4.3); enhanced mode needs MTU and MPS of at least 64 and lets the MTU
/// and MPS grow after opening.
public enum L2CAPChannelMode: Hashable, Sendable, Codable {
    case leCreditBased
    case enhancedCreditBased
}
