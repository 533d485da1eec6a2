public import BluetoothCore

/// The L2CAP state machine of one LE ACL link (LE-U), Core 5.4 Vol 3 Part A: the fixed channels (ATT 0x0004,
/// LE signaling 0x0005, SMP 0x0006), the LE signaling procedures (§4: Command Reject, Disconnection,
/// Connection Parameter Update, LE Credit Based Connection, Flow Control Credit Indication) and LE Credit Based
/// Flow Control channels (§3.4, §10.1): SDU segmentation into K-frames sent one per credit, reassembly, credit
/// return, and the rules that disconnect a misbehaving peer's channel.
///
/// Sans-I/O: a plain struct with no clock, thread or I/O of its own. Its owner (the Host, on its event loop)
/// feeds it complete reassembled L2CAP frames (``receive(frame:now:)``), user requests and timeouts
/// (``handleTimeout(now:)`` once ``nextDeadline`` has passed) and carries out the returned
/// ``L2CAPLinkAction``s in order. Channels are named by their local CID.
///
/// Signaling identifiers cycle through 1...255 (0 is never used) skipping those still awaiting a response
/// (§4). Every request we send waits at most ``L2CAPLinkConfiguration/signalingTimeout`` (RTX, 30 s by default)
/// for its response; responses are matched by identifier and an unexpected one is ignored.
public struct L2CAPLink: Sendable {
    /// Our signaling MTU (MTU_sig): the LE minimum, 23 octets (§4). A larger C-frame is answered with Command
    /// Reject *Signaling MTU exceeded*.
    public static let signalingMTU: UInt16 = 23

    struct PendingRequest: Hashable, Sendable {
        enum Kind: Hashable, Sendable {
            case connect(L2CAPChannelIdentifier)
            /// An L2CAP Credit Based Connection Request (§4.25) for these channels, in request order.
            case connectEnhanced([L2CAPChannelIdentifier])
            /// A Credit Based Reconfigure Request (§4.27) for these channels.
            case reconfigure([L2CAPChannelIdentifier])
            case disconnect(L2CAPChannelIdentifier)
            case connectionParameterUpdate
        }
        var kind: Kind
        var deadline: StackInstant
    }

    public let configuration: L2CAPLinkConfiguration
    var servers: [UInt16: L2CAPChannelServer] = [:]
    /// Channels by local CID.
    var channels: [L2CAPChannelIdentifier: L2CAPCreditBasedChannel] = [:]
    /// Our requests awaiting a response, by identifier.
    var pending: [UInt8: PendingRequest] = [:]
    /// Connection Parameter Update Requests received (Central) that the owner has not answered yet.
    var receivedParameterUpdates: Set<UInt8> = []
    var lastIdentifier: UInt8 = 0

    public init(configuration: L2CAPLinkConfiguration) {
        self.configuration = configuration
    }

    public init(role: L2CAPLinkRole) {
        self.init(configuration: L2CAPLinkConfiguration(role: role))
    }

    // MARK: Inspection (leak checks, tests)

    /// The earliest instant at which ``handleTimeout(now:)`` has something to do.
    public var nextDeadline: StackInstant? {
        // Asked after every packet the link handled: most links have no request pending.
        guard !pending.isEmpty else { return nil }
        var earliest: StackInstant?
        for request in pending.values where earliest.map({ request.deadline < $0 }) ?? true { earliest = request.deadline }
        return earliest
    }

    /// Our signaling requests awaiting a response.
    public var outstandingRequestCount: Int { pending.count }
    /// Received Connection Parameter Update Requests the owner has not answered.
    public var unansweredParameterUpdateCount: Int { receivedParameterUpdates.count }
    /// Credit-based channels in any state (connecting, open, disconnecting).
    public var channelCount: Int { channels.count }
    /// K-frames waiting for credits on all channels.
    public var queuedFrameCount: Int { channels.values.reduce(0) { $0 + $1.queuedFrameCount } }
    /// Channels holding a partly received SDU.
    public var reassemblingChannelCount: Int { channels.values.filter(\.reassembler.isReassembling).count }
    /// Whether nothing is left: no request, channel, queued data or unanswered request.
    public var isIdle: Bool { pending.isEmpty && receivedParameterUpdates.isEmpty && channels.isEmpty }

    /// The open channel with this local CID.
    public func channelInfo(_ channel: L2CAPChannelIdentifier) -> L2CAPChannelInfo? {
        guard let state = channels[channel], state.isOpen else { return nil }
        return state.info
    }
    /// The K-frames we may still send on the channel (credits the peer gave us).
    public func sendCredits(on channel: L2CAPChannelIdentifier) -> Int? { channels[channel]?.sendCredits }
    /// The K-frames the peer may still send on the channel (credits we gave it).
    public func peerCredits(on channel: L2CAPChannelIdentifier) -> Int? { channels[channel]?.peerCredits }
    /// The K-frames queued on the channel, waiting for credits.
    public func queuedFrameCount(on channel: L2CAPChannelIdentifier) -> Int? { channels[channel]?.queuedFrameCount }

    // MARK: Fixed channels

    /// Wraps an ATT or SMP payload in a basic frame for its fixed channel (Vol 3 Part A §2.1, Table 2.2).
    public func sendFixed(channel: L2CAPChannelIdentifier, payload: [UInt8]) throws(L2CAPLinkError) -> [L2CAPLinkAction] {
        guard channel == .attributeProtocol || channel == .securityManager else {
            throw L2CAPLinkError(.invalidParameters, "\(channel) is not a fixed channel the owner may send on")
        }
        guard payload.count <= L2CAPBasicFrame.maximumPayloadLength else {
            throw L2CAPLinkError(.invalidParameters, "payload of \(payload.count) bytes exceeds 65535")
        }
        return [.send(L2CAPCreditBasedChannel.basicFrame(channel, payload))]
    }

    // MARK: Servers

    /// Accepts LE Credit Based Connection Requests on `server.psm` (Vol 3 Part A §4.22).
    public mutating func registerServer(_ server: L2CAPChannelServer) throws(L2CAPLinkError) {
        try Self.checkPSM(server.psm)
        try Self.checkLocalParameters(mtu: server.mtu, mps: server.mps)
        guard servers[server.psm] == nil else {
            throw L2CAPLinkError(.psmInUse, "a server is already registered on PSM \(server.psm)")
        }
        servers[server.psm] = server
    }

    /// Convenience form of ``registerServer(_:)``.
    public mutating func registerServer(
        psm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16,
        creditPolicy: L2CAPChannelCreditPolicy = .automatic(), accept: L2CAPChannelAcceptPolicy = .acceptAll
    ) throws(L2CAPLinkError) {
        try registerServer(
            L2CAPChannelServer(
                psm: psm, mtu: mtu, mps: mps, initialCredits: initialCredits, creditPolicy: creditPolicy,
                acceptPolicy: accept))
    }

    /// Stops accepting on `psm` (open channels stay open).
    public mutating func unregisterServer(psm: UInt16) {
        servers[psm] = nil
    }

    // MARK: Channels

    /// Sends an LE Credit Based Connection Request (§4.22) and returns the local CID naming the channel; the
    /// outcome arrives as ``L2CAPLinkAction/channelOpened(_:)`` or ``L2CAPLinkAction/channelConnectFailed(_:_:)``.
    public mutating func connect(
        psm: UInt16, mtu: UInt16, mps: UInt16, initialCredits: UInt16,
        creditPolicy: L2CAPChannelCreditPolicy = .automatic(), now: StackInstant
    ) throws(L2CAPLinkError) -> (channel: L2CAPChannelIdentifier, actions: [L2CAPLinkAction]) {
        try Self.checkPSM(psm)
        try Self.checkLocalParameters(mtu: mtu, mps: mps)
        guard let cid = freeLocalCID() else {
            throw L2CAPLinkError(.noChannelAvailable, "all LE dynamic CIDs 0x0040...0x007F are in use")
        }
        guard let identifier = nextIdentifier() else {
            throw L2CAPLinkError(.noIdentifierAvailable, "255 signaling requests are awaiting responses")
        }
        channels[cid] = L2CAPCreditBasedChannel(
            state: .connecting(identifier: identifier), localCID: cid, psm: psm, localMTU: mtu, localMPS: mps,
            initialCredits: initialCredits, creditPolicy: creditPolicy, isInitiator: true)
        pending[identifier] = PendingRequest(kind: .connect(cid), deadline: now + configuration.signalingTimeout)
        let request = L2CAPLECreditBasedConnectionRequest(
            lePSM: psm, sourceCID: cid, mtu: mtu, mps: mps, initialCredits: initialCredits)
        return (cid, [signaling(.leCreditBasedConnectionRequest(identifier: identifier, request))])
    }

    /// Segments `sdu` into K-frames of at most the peer's MPS (§3.4.2) and sends as many as there are credits;
    /// the rest wait in the channel's queue for Flow Control Credit Indications.
    public mutating func send(sdu: [UInt8], on channel: L2CAPChannelIdentifier) throws(L2CAPLinkError)
        -> [L2CAPLinkAction]
    {
        guard let (isOpen, remoteMTU, remoteMPS) = channels[channel].map({ ($0.isOpen, $0.remoteMTU, $0.remoteMPS) })
        else {
            throw L2CAPLinkError(.unknownChannel, "no channel \(channel)")
        }
        guard isOpen else { throw L2CAPLinkError(.channelNotOpen, "channel \(channel) is not open") }
        let payloads: [[UInt8]]
        do {
            payloads = try L2CAPSDUSegmenter.segment(sdu, mtu: remoteMTU, mps: remoteMPS)
        } catch {
            throw L2CAPLinkError(.sduTooLarge, error.description)
        }
        // Taken out of the table while it changes, so its queue is not copied (copy-on-write).
        guard var state = channels.removeValue(forKey: channel) else { return [] }
        state.enqueue(payloads)
        let frames = state.takeSendable()
        channels[channel] = state
        return frames.map { .send($0) }
    }

    /// Grants the peer `credits` more K-frames on the channel (Flow Control Credit Indication, §4.24).
    public mutating func giveCredits(_ credits: UInt16, on channel: L2CAPChannelIdentifier) throws(L2CAPLinkError)
        -> [L2CAPLinkAction]
    {
        guard var state = channels[channel] else {
            throw L2CAPLinkError(.unknownChannel, "no channel \(channel)")
        }
        guard state.isOpen else { throw L2CAPLinkError(.channelNotOpen, "channel \(channel) is not open") }
        guard credits > 0 else { throw L2CAPLinkError(.invalidParameters, "credits must be 1...65535") }
        guard state.peerCredits + Int(credits) <= L2CAPCreditBasedChannel.maximumCredits else {
            throw L2CAPLinkError(
                .creditOverflow, "the peer holds \(state.peerCredits) credits; \(credits) more exceed 65535")
        }
        let actions = grantCredits(Int(credits), to: &state)
        channels[channel] = state
        return actions
    }

    /// Sends a Disconnection Request for an open channel (§4.6); ``L2CAPLinkAction/channelClosed(_:_:)`` follows
    /// with the response (or the signaling timeout). Queued K-frames are dropped.
    public mutating func disconnect(channel: L2CAPChannelIdentifier, now: StackInstant) throws(L2CAPLinkError)
        -> [L2CAPLinkAction]
    {
        guard var state = channels[channel] else {
            throw L2CAPLinkError(.unknownChannel, "no channel \(channel)")
        }
        guard state.isOpen else { throw L2CAPLinkError(.channelNotOpen, "channel \(channel) is not open") }
        guard let identifier = nextIdentifier() else {
            throw L2CAPLinkError(.noIdentifierAvailable, "255 signaling requests are awaiting responses")
        }
        state.discardData()
        state.state = .disconnecting(identifier: identifier, notify: true)
        channels[channel] = state
        pending[identifier] = PendingRequest(kind: .disconnect(channel), deadline: now + configuration.signalingTimeout)
        return [
            signaling(
                .disconnectionRequest(
                    identifier: identifier,
                    L2CAPDisconnection(destinationCID: state.remoteCID, sourceCID: state.localCID)))
        ]
    }

    // MARK: Connection parameters

    /// Peripheral only: asks the Central for new connection parameters (§4.20); the answer arrives as
    /// ``L2CAPLinkAction/connectionParameterUpdateResponse(accepted:)``.
    public mutating func requestConnectionParameterUpdate(
        _ parameters: L2CAPConnectionParameterUpdateRequest, now: StackInstant
    ) throws(L2CAPLinkError) -> [L2CAPLinkAction] {
        guard configuration.role == .peripheral else {
            throw L2CAPLinkError(.wrongRole, "only the Peripheral sends a Connection Parameter Update Request")
        }
        do { try parameters.validate() } catch { throw L2CAPLinkError(.invalidParameters, error.reason) }
        guard let identifier = nextIdentifier() else {
            throw L2CAPLinkError(.noIdentifierAvailable, "255 signaling requests are awaiting responses")
        }
        pending[identifier] = PendingRequest(
            kind: .connectionParameterUpdate, deadline: now + configuration.signalingTimeout)
        return [signaling(.connectionParameterUpdateRequest(identifier: identifier, parameters))]
    }

    /// Central only: answers the request reported by
    /// ``L2CAPLinkAction/connectionParameterUpdateRequested(identifier:_:)`` once the owner tried the LE
    /// Connection Update (§4.21).
    public mutating func respondToConnectionParameterUpdate(identifier: UInt8, accepted: Bool)
        throws(L2CAPLinkError) -> [L2CAPLinkAction]
    {
        guard configuration.role == .central else {
            throw L2CAPLinkError(.wrongRole, "only the Central answers a Connection Parameter Update Request")
        }
        guard receivedParameterUpdates.remove(identifier) != nil else {
            throw L2CAPLinkError(.unknownIdentifier, "no unanswered Connection Parameter Update Request \(identifier)")
        }
        return [
            signaling(
                .connectionParameterUpdateResponse(identifier: identifier, result: accepted ? .accepted : .rejected))
        ]
    }

    // MARK: Time and link loss

    /// Fails every request whose signaling timeout (RTX) has passed, in deadline order.
    public mutating func handleTimeout(now: StackInstant) -> [L2CAPLinkAction] {
        let expired = pending.filter { $0.value.deadline <= now }
            .sorted { ($0.value.deadline, $0.key) < ($1.value.deadline, $1.key) }
        guard !expired.isEmpty else { return [] }
        var actions: [L2CAPLinkAction] = []
        for (identifier, request) in expired {
            pending[identifier] = nil
            switch request.kind {
            case .connect(let cid):
                channels[cid] = nil
                actions.append(.channelConnectFailed(cid, .signalingTimeout))
            case .connectEnhanced(let cids):
                for cid in cids {
                    channels[cid] = nil
                    actions.append(.channelConnectFailed(cid, .signalingTimeout))
                }
            case .reconfigure(let cids):
                actions += reconfigureFailed(cids, .signalingTimeout)
            case .disconnect(let cid):
                if let state = channels.removeValue(forKey: cid), case .disconnecting(_, true) = state.state {
                    actions.append(.channelClosed(cid, .signalingTimeout))
                }
            case .connectionParameterUpdate:
                actions.append(.connectionParameterUpdateResponse(accepted: false))
            }
        }
        if configuration.disconnectLinkOnSignalingTimeout {
            actions.append(.disconnectLink(.signalingTimeout))
        }
        return actions
    }

    /// The ACL link is gone: every channel closes, every request fails, nothing is left (Vol 3 Part A §6.1:
    /// channels do not outlive their logical link).
    public mutating func linkDisconnected() -> [L2CAPLinkAction] {
        var actions: [L2CAPLinkAction] = []
        for cid in channels.keys.sorted() {
            guard let state = channels[cid] else { continue }
            switch state.state {
            case .connecting: actions.append(.channelConnectFailed(cid, .linkClosed))
            case .open, .disconnecting(_, true): actions.append(.channelClosed(cid, .linkClosed))
            case .disconnecting(_, false): break
            }
        }
        for request in pending.values.sorted(by: { $0.deadline < $1.deadline }) {
            if case .reconfigure(let cids) = request.kind {
                actions.append(.channelReconfigureFailed(cids.filter { channels[$0] != nil }, .linkClosed))
            }
        }
        if pending.values.contains(where: { $0.kind == .connectionParameterUpdate }) {
            actions.append(.connectionParameterUpdateResponse(accepted: false))
        }
        channels = [:]
        pending = [:]
        receivedParameterUpdates = []
        return actions
    }

    // MARK: Helpers

    static func checkPSM(_ psm: UInt16) throws(L2CAPLinkError) {
        guard (0x0001...0x00FF).contains(psm) else {
            throw L2CAPLinkError(.invalidParameters, "LE_PSM \(psm) outside 0x0001...0x00FF")
        }
    }

    static func checkLocalParameters(mtu: UInt16, mps: UInt16) throws(L2CAPLinkError) {
        guard mtu >= L2CAPLECreditBasedConnectionRequest.minimumMTU else {
            throw L2CAPLinkError(.invalidParameters, "MTU \(mtu) below 23")
        }
        guard L2CAPLECreditBasedConnectionRequest.mpsRange.contains(mps) else {
            throw L2CAPLinkError(.invalidParameters, "MPS \(mps) outside 23...65533")
        }
    }

    /// The lowest free LE dynamic CID.
    func freeLocalCID() -> L2CAPChannelIdentifier? {
        for raw in L2CAPChannelIdentifier.leDynamicRange where channels[L2CAPChannelIdentifier(raw)] == nil {
            return L2CAPChannelIdentifier(raw)
        }
        return nil
    }

    /// The next signaling identifier after the last one, cycling 1...255, skipping those awaiting a response.
    mutating func nextIdentifier() -> UInt8? {
        var candidate = lastIdentifier
        for _ in 0..<255 {
            candidate = candidate == 255 ? 1 : candidate + 1
            if pending[candidate] == nil {
                lastIdentifier = candidate
                return candidate
            }
        }
        return nil
    }

    /// A C-frame carrying `command` on the LE signaling channel.
    func signaling(_ command: L2CAPSignalingCommand) -> L2CAPLinkAction {
        .send(L2CAPCreditBasedChannel.basicFrame(.leSignaling, command.encode()))
    }

    /// Sends a Flow Control Credit Indication for `credits` on `state` (whose CID field is our local CID, the
    /// Source CID of the sender, §4.24) and counts them.
    mutating func grantCredits(_ credits: Int, to state: inout L2CAPCreditBasedChannel) -> [L2CAPLinkAction] {
        guard credits > 0, let identifier = nextIdentifier() else { return [] }
        state.peerCredits += credits
        let indication = L2CAPFlowControlCreditIndication(cid: state.localCID, credits: UInt16(clamping: credits))
        return [signaling(.flowControlCreditIndication(identifier: identifier, indication))]
    }
}
