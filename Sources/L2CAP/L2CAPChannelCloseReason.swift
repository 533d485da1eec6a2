public import BluetoothCore

/// A rule of LE Credit Based Flow Control the peer broke, Core 5.4 Vol 3 Part A §3.4.3 and §4.24. Each one makes
/// the receiver disconnect the channel (Disconnection Request), not the link.
public enum L2CAPChannelViolation: Hashable, Sendable, CustomStringConvertible, Codable {
    /// A K-frame arrived while the peer had no credits left (§3.4.3: "If a K-frame is received with no credits
    /// the channel shall be disconnected").
    case kFrameWithoutCredits
    /// The SDU reassembly rules (SDU length above the MTU, K-frame payload above the MPS, more data than the SDU
    /// length announced, first K-frame too short for the SDU length).
    case reassembly(L2CAPSDUError)
    /// A Flow Control Credit Indication took the credit count above 65535 (§4.24).
    case creditOverflow(total: Int)

    public var description: String {
        switch self {
        case .kFrameWithoutCredits: "K-frame received while the peer had no credits"
        case .reassembly(let error): error.description
        case .creditOverflow(let total): "credit count would be \(total), above 65535"
        }
    }
}

/// Why a credit-based channel closed, Core 5.4 Vol 3 Part A §4.6 and §4.7.
public enum L2CAPChannelCloseReason: Hashable, Sendable, Codable {
    /// The owner asked (``L2CAPLink/disconnect(channel:now:)``) and the peer answered.
    case localRequest
    /// The peer sent a Disconnection Request.
    case peerRequest
    /// The local side disconnected the channel because the peer broke a rule.
    case violation(L2CAPChannelViolation)
    /// Our Disconnection Request got no response within the signaling timeout (the channel is closed anyway).
    case signalingTimeout
    /// The Disconnection Request was answered with a Command Reject (the channel is closed anyway).
    case commandRejected(L2CAPCommandReject)
    /// The ACL link went down (``L2CAPLink/linkDisconnected()``).
    case linkClosed
}

/// Why an outgoing LE Credit Based Connection Request did not open a channel, Core 5.4 Vol 3 Part A §4.23.
public enum L2CAPChannelConnectFailure: Hashable, Sendable {
    /// The peer refused with this result (SPSM not supported, insufficient authentication...).
    case refused(L2CAPConnectionResult)
    /// The peer answered with a Command Reject.
    case commandRejected(L2CAPCommandReject)
    /// No response within the signaling timeout.
    case signalingTimeout
    /// The peer accepted with values the specification forbids (destination CID outside 0x0040...0x007F or
    /// already in use, MTU below 23, MPS outside 23...65533); when the destination CID was usable, the link sent
    /// a Disconnection Request for it.
    case invalidResponse(String)
    /// The ACL link went down before the response.
    case linkClosed
}

/// Why our Credit Based Reconfigure Request (Core 5.4 Vol 3 Part A §4.27) changed nothing.
public enum L2CAPChannelReconfigureFailure: Hashable, Sendable {
    /// The peer answered with this result (§4.28, Table 4.21: MTU reduction, MPS reduction on several channels,
    /// invalid destination CID, unacceptable parameters).
    case refused(L2CAPReconfigureResult)
    /// The peer answered with a Command Reject.
    case commandRejected(L2CAPCommandReject)
    /// No response within the signaling timeout.
    case signalingTimeout
    /// The ACL link went down before the response.
    case linkClosed
}
