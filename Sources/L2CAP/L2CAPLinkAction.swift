/// Why ``L2CAPLink`` asks its owner to drop the whole ACL link.
///
/// The L2CAP rules for LE close a misbehaving *channel*, not the link: every K-frame and credit violation of
/// §3.4.3 and §4.24 ends in a Disconnection Request for that channel only, and malformed signaling is answered
/// with a Command Reject. The only link-level action is optional: when
/// ``L2CAPLinkConfiguration/disconnectLinkOnSignalingTimeout`` is on, an expired signaling request (RTX,
/// Vol 3 Part A §6.2.1) reports the peer as unresponsive.
public enum L2CAPLinkDisconnectReason: Hashable, Sendable {
    /// A signaling request got no response within the RTX timeout.
    case signalingTimeout
}

/// What ``L2CAPLink`` asks its owner to do, in order, Core 5.4 Vol 3 Part A.
public enum L2CAPLinkAction: Hashable, Sendable {
    /// Send this complete L2CAP basic frame (header included) on the link; the owner fragments it into ACL
    /// packets.
    case send([UInt8])
    /// A payload received on a fixed channel (ATT 0x0004 or SMP 0x0006), for the protocol above: a slice of the
    /// received frame, not a copy of it.
    case deliverFixed(L2CAPChannelIdentifier, ArraySlice<UInt8>)
    /// A credit-based channel is open (either side initiated).
    case channelOpened(L2CAPChannelInfo)
    /// Our LE Credit Based Connection Request for the channel with this local CID failed; the CID is free again.
    case channelConnectFailed(L2CAPChannelIdentifier, L2CAPChannelConnectFailure)
    /// A complete SDU received on the channel with this local CID.
    case sdu(L2CAPChannelIdentifier, [UInt8])
    /// The channel with this local CID is closed; nothing more is sent or delivered on it.
    case channelClosed(L2CAPChannelIdentifier, L2CAPChannelCloseReason)
    /// An enhanced credit-based channel's MTU/MPS changed (§4.27, §4.28): the peer's after its Credit Based
    /// Reconfigure Request we accepted, or ours after the peer accepted our request. The info is the new state.
    case channelReconfigured(L2CAPChannelInfo)
    /// Our Credit Based Reconfigure Request for these channels (local CIDs) failed; nothing changed.
    case channelReconfigureFailed([L2CAPChannelIdentifier], L2CAPChannelReconfigureFailure)
    /// Credits arrived and the channel's send queue is empty: the sender may continue.
    case creditsAvailable(L2CAPChannelIdentifier)
    /// Central only: the Peripheral asked for these (valid) connection parameters. The owner tries an LE
    /// Connection Update and then calls ``L2CAPLink/respondToConnectionParameterUpdate(identifier:accepted:)``.
    case connectionParameterUpdateRequested(identifier: UInt8, L2CAPConnectionParameterUpdateRequest)
    /// Peripheral only: the Central's answer to our Connection Parameter Update Request (false also when it was
    /// rejected as not understood, timed out, or the link closed).
    case connectionParameterUpdateResponse(accepted: Bool)
    /// Drop the ACL link (see ``L2CAPLinkDisconnectReason`` for when).
    case disconnectLink(L2CAPLinkDisconnectReason)
}
