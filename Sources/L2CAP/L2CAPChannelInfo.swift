/// What the owner learns about an open LE Credit Based Flow Control channel, Core 5.4 Vol 3 Part A §4.22 and
/// §4.23: both endpoints' CIDs and both directions' MTU and MPS.
public struct L2CAPChannelInfo: Hashable, Sendable {
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
    /// Whether the local side sent the LE Credit Based Connection Request.
    public var isInitiator: Bool

    public init(
        localCID: L2CAPChannelIdentifier, remoteCID: L2CAPChannelIdentifier, psm: UInt16, localMTU: UInt16,
        localMPS: UInt16, remoteMTU: UInt16, remoteMPS: UInt16, isInitiator: Bool
    ) {
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
