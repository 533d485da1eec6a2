public import BluetoothCore


/// Received frames: fixed channels, the LE signaling channel (Core 5.4 Vol 3 Part A §4) and K-frames on
/// credit-based channels (§3.4.3).
extension L2CAPLink {
    /// Handles one complete, reassembled L2CAP frame received on the link. A frame whose length field disagrees
    /// with its size, or addressed to an unknown or closed channel, is discarded (§3.1, §3.4.3).
    public mutating func receive(frame bytes: [UInt8], now: StackInstant) -> [L2CAPLinkAction] {
        // The basic header read in place (the length must equal the payload present, §3.1): the fixed channels
        // (every ATT and SMP PDU) get their payload as a slice of the frame, the others a copy of it, as an
        // L2CAPBasicFrame decoded it.
        let headerLength = L2CAPBasicFrame.headerLength
        guard bytes.count >= headerLength, L2CAPBasicFrame.announcedPayloadLength(bytes[...]) == bytes.count - headerLength
        else { return [] }
        let channel = L2CAPChannelIdentifier(UInt16(bytes[2]) | UInt16(bytes[3]) << 8)
        let payload = bytes[headerLength...]
        switch channel {
        case .attributeProtocol, .securityManager:
            return [.deliverFixed(channel, payload)]
        case .leSignaling:
            return receiveSignaling(Array(payload), now: now)
        default:
            guard channel.isLEDynamic else { return [] }
            return receiveKFrame(Array(payload), on: channel, now: now)
        }
    }

    // MARK: K-frames

    mutating func receiveKFrame(_ payload: [UInt8], on cid: L2CAPChannelIdentifier, now: StackInstant)
        -> [L2CAPLinkAction]
    {
        // Taken out of the table while it changes, so its buffers are not copied (copy-on-write).
        guard channels[cid]?.isOpen == true, var state = channels.removeValue(forKey: cid) else { return [] }
        guard state.peerCredits > 0 else {
            return disconnectForViolation(&state, .kFrameWithoutCredits, now: now)
        }
        state.peerCredits -= 1
        var actions: [L2CAPLinkAction] = []
        do {
            if let sdu = try state.reassembler.receive(payload) { actions.append(.sdu(cid, sdu)) }
        } catch {
            return disconnectForViolation(&state, .reassembly(error), now: now)
        }
        actions += grantCredits(state.automaticCreditReturn, to: &state)
        channels[cid] = state
        return actions
    }

    /// Sends a Disconnection Request for a channel whose peer broke a rule and tells the owner it is closed
    /// (only the channel: §3.4.3 and §4.24 never drop the link).
    mutating func disconnectForViolation(
        _ state: inout L2CAPCreditBasedChannel, _ violation: L2CAPChannelViolation, now: StackInstant
    ) -> [L2CAPLinkAction] {
        let cid = state.localCID
        state.discardData()
        var actions: [L2CAPLinkAction] = []
        if let identifier = nextIdentifier() {
            state.state = .disconnecting(identifier: identifier, notify: false)
            channels[cid] = state
            pending[identifier] = PendingRequest(kind: .disconnect(cid), deadline: now + configuration.signalingTimeout)
            actions.append(
                signaling(
                    .disconnectionRequest(
                        identifier: identifier,
                        L2CAPDisconnection(destinationCID: state.remoteCID, sourceCID: cid))))
        } else {
            channels[cid] = nil
        }
        actions.append(.channelClosed(cid, .violation(violation)))
        return actions
    }

    // MARK: Signaling

    mutating func receiveSignaling(_ payload: [UInt8], now: StackInstant) -> [L2CAPLinkAction] {
        // Without an identifier there is nothing to answer; identifier 0x00 is illegal (§4) and never answered.
        guard payload.count >= 2 else { return [] }
        let identifier = payload[1]
        guard identifier != 0 else { return [] }
        guard payload.count <= Int(Self.signalingMTU) else {
            return [signaling(.commandReject(identifier: identifier, .signalingMTUExceeded(actualMTU: Self.signalingMTU)))]
        }
        guard let command = try? L2CAPSignalingCommand(decoding: payload) else {
            return [signaling(.rejectNotUnderstood(identifier: identifier))]
        }
        switch command {
        case .commandReject(let identifier, let reject):
            return receiveCommandReject(identifier: identifier, reject)
        case .disconnectionRequest(let identifier, let request):
            return receiveDisconnectionRequest(identifier: identifier, request)
        case .disconnectionResponse(let identifier, let response):
            return receiveDisconnectionResponse(identifier: identifier, response)
        case .connectionParameterUpdateRequest(let identifier, let request):
            return receiveConnectionParameterUpdateRequest(identifier: identifier, request)
        case .connectionParameterUpdateResponse(let identifier, let result):
            guard pending[identifier]?.kind == .connectionParameterUpdate else { return [] }
            pending[identifier] = nil
            return [.connectionParameterUpdateResponse(accepted: result == .accepted)]
        case .leCreditBasedConnectionRequest(let identifier, let request):
            return receiveConnectionRequest(identifier: identifier, request)
        case .leCreditBasedConnectionResponse(let identifier, let response):
            return receiveConnectionResponse(identifier: identifier, response, now: now)
        case .flowControlCreditIndication(_, let indication):
            return receiveCredits(indication, now: now)
        case .creditBasedConnectionRequest(let identifier, let request):
            return receiveEnhancedConnectionRequest(identifier: identifier, request)
        case .creditBasedConnectionResponse(let identifier, let response):
            return receiveEnhancedConnectionResponse(identifier: identifier, response, now: now)
        case .creditBasedReconfigureRequest(let identifier, let request):
            return receiveReconfigureRequest(identifier: identifier, request)
        case .creditBasedReconfigureResponse(let identifier, let result):
            return receiveReconfigureResponse(identifier: identifier, result)
        case .unknown:
            // Unknown codes are not understood.
            return [signaling(.rejectNotUnderstood(identifier: identifier))]
        }
    }

    /// A channel whose connection response we refused (it broke a rule) while the peer believes it open: closed
    /// properly with L2CAP Disconnection Request `identifier`, silently (the host already heard of the failure).
    mutating func disconnectRefused(_ cid: L2CAPChannelIdentifier, _ channel: L2CAPCreditBasedChannel,
                                    destination: L2CAPChannelIdentifier, identifier: UInt8, now: StackInstant) -> L2CAPLinkAction {
        var channel = channel
        channel.remoteCID = destination
        channel.state = .disconnecting(identifier: identifier, notify: false)
        channels[cid] = channel
        pending[identifier] = PendingRequest(kind: .disconnect(cid), deadline: now + configuration.signalingTimeout)
        return signaling(.disconnectionRequest(identifier: identifier, L2CAPDisconnection(destinationCID: destination, sourceCID: cid)))
    }

    mutating func receiveCommandReject(identifier: UInt8, _ reject: L2CAPCommandReject) -> [L2CAPLinkAction] {
        guard let request = pending.removeValue(forKey: identifier) else { return [] }
        switch request.kind {
        case .connect(let cid):
            channels[cid] = nil
            return [.channelConnectFailed(cid, .commandRejected(reject))]
        case .connectEnhanced(let cids):
            return cids.map { cid in
                channels[cid] = nil
                return .channelConnectFailed(cid, .commandRejected(reject))
            }
        case .reconfigure(let cids):
            return reconfigureFailed(cids, .commandRejected(reject))
        case .disconnect(let cid):
            guard let state = channels.removeValue(forKey: cid), case .disconnecting(_, true) = state.state else {
                return []
            }
            return [.channelClosed(cid, .commandRejected(reject))]
        case .connectionParameterUpdate:
            return [.connectionParameterUpdateResponse(accepted: false)]
        }
    }

    /// §4.6: an unknown Destination CID is answered with Command Reject *Invalid CID in request*; a known one
    /// whose Source CID does not match is discarded.
    mutating func receiveDisconnectionRequest(identifier: UInt8, _ request: L2CAPDisconnection) -> [L2CAPLinkAction] {
        let cid = request.destinationCID
        guard let state = channels[cid], state.remoteCID != .null else {
            return [
                signaling(
                    .commandReject(
                        identifier: identifier,
                        .invalidCIDInRequest(localCID: request.destinationCID, remoteCID: request.sourceCID)))
            ]
        }
        guard state.remoteCID == request.sourceCID else { return [] }
        channels[cid] = nil
        var actions = [signaling(.disconnectionResponse(identifier: identifier, request))]
        switch state.state {
        case .open:
            actions.append(.channelClosed(cid, .peerRequest))
        case .disconnecting(let ours, let notify):
            // Both sides disconnected at once: ours is answered by theirs.
            pending[ours] = nil
            if notify { actions.append(.channelClosed(cid, .localRequest)) }
        case .connecting:
            break
        }
        return actions
    }

    mutating func receiveDisconnectionResponse(identifier: UInt8, _ response: L2CAPDisconnection) -> [L2CAPLinkAction] {
        guard case .disconnect(let cid)? = pending[identifier]?.kind, let state = channels[cid],
            response.destinationCID == state.remoteCID, response.sourceCID == cid
        else { return [] }
        pending[identifier] = nil
        channels[cid] = nil
        guard case .disconnecting(_, true) = state.state else { return [] }
        return [.channelClosed(cid, .localRequest)]
    }

    /// §4.20: only the Central accepts the request (a Peripheral answers Command Reject *not understood*);
    /// parameters outside the ranges are answered *rejected*, valid ones go to the owner.
    mutating func receiveConnectionParameterUpdateRequest(
        identifier: UInt8, _ request: L2CAPConnectionParameterUpdateRequest
    ) -> [L2CAPLinkAction] {
        guard configuration.role == .central else {
            return [signaling(.rejectNotUnderstood(identifier: identifier))]
        }
        guard (try? request.validate()) != nil else {
            return [signaling(.connectionParameterUpdateResponse(identifier: identifier, result: .rejected))]
        }
        receivedParameterUpdates.insert(identifier)
        return [.connectionParameterUpdateRequested(identifier: identifier, request)]
    }

    /// §4.22/§4.23: the checks in order are SPSM registered (0x0002), Source CID in 0x0040...0x007F (0x0009),
    /// Source CID not already used by the peer on this link (0x000A), MTU ≥ 23 and MPS in 23...65533 (0x000B),
    /// the server's accept policy, a free local CID (0x0004).
    mutating func receiveConnectionRequest(identifier: UInt8, _ request: L2CAPLECreditBasedConnectionRequest)
        -> [L2CAPLinkAction]
    {
        func refuse(_ result: L2CAPConnectionResult) -> [L2CAPLinkAction] {
            [
                signaling(
                    .leCreditBasedConnectionResponse(
                        identifier: identifier,
                        L2CAPLECreditBasedConnectionResponse(
                            destinationCID: .null, mtu: 0, mps: 0, initialCredits: 0, result: result)))
            ]
        }
        guard let server = servers[request.lePSM], server.modes.contains(.leCreditBased) else {
            return refuse(.spsmNotSupported)
        }
        guard request.sourceCID.isLEDynamic else { return refuse(.someConnectionsRefusedInvalidSourceCID) }
        guard !channels.values.contains(where: { $0.remoteCID == request.sourceCID }) else {
            return refuse(.someConnectionsRefusedSourceCIDAlreadyAllocated)
        }
        guard (try? request.validate()) != nil else { return refuse(.allConnectionsRefusedUnacceptableParameters) }
        let decision: L2CAPConnectionResult
        switch server.acceptPolicy {
        case .acceptAll: decision = .successful
        case .refuseAll(let result): decision = result
        case .decide(let decide): decision = decide(request)
        }
        guard decision == .successful else { return refuse(decision) }
        guard let cid = freeLocalCID() else { return refuse(.someConnectionsRefusedInsufficientResources) }
        var state = L2CAPCreditBasedChannel(
            state: .open, localCID: cid, psm: request.lePSM, localMTU: server.mtu, localMPS: server.mps,
            initialCredits: server.initialCredits, creditPolicy: server.creditPolicy, isInitiator: false)
        state.remoteCID = request.sourceCID
        state.remoteMTU = request.mtu
        state.remoteMPS = request.mps
        state.sendCredits = Int(request.initialCredits)
        channels[cid] = state
        return [
            signaling(
                .leCreditBasedConnectionResponse(
                    identifier: identifier,
                    L2CAPLECreditBasedConnectionResponse(
                        destinationCID: cid, mtu: server.mtu, mps: server.mps, initialCredits: server.initialCredits,
                        result: .successful))),
            .channelOpened(state.info),
        ]
    }

    mutating func receiveConnectionResponse(
        identifier: UInt8, _ response: L2CAPLECreditBasedConnectionResponse, now: StackInstant
    ) -> [L2CAPLinkAction] {
        guard case .connect(let cid)? = pending[identifier]?.kind, let state = channels[cid] else { return [] }
        switch response.result {
        case .successful:
            break
        case .allConnectionsPendingNoFurtherInformation, .allConnectionsPendingAuthenticationPending,
            .allConnectionsPendingAuthorizationPending:
            // A final response follows with the same identifier; wait for it a full timeout again.
            pending[identifier]?.deadline = now + configuration.signalingTimeout
            return []
        default:
            pending[identifier] = nil
            channels[cid] = nil
            return [.channelConnectFailed(cid, .refused(response.result))]
        }
        pending[identifier] = nil
        let destination = response.destinationCID
        var problem: String?
        if !destination.isLEDynamic {
            problem = "destination CID \(destination) outside 0x0040...0x007F"
        } else if channels.values.contains(where: { $0.remoteCID == destination }) {
            problem = "destination CID \(destination) already in use on this link"
        } else {
            do { try response.validate() } catch { problem = error.reason }
        }
        if let problem {
            var actions: [L2CAPLinkAction] = [.channelConnectFailed(cid, .invalidResponse(problem))]
            guard destination.isLEDynamic, !channels.values.contains(where: { $0.remoteCID == destination }),
                let disconnectIdentifier = nextIdentifier()
            else {
                channels[cid] = nil
                return actions
            }
            actions.insert(disconnectRefused(cid, state, destination: destination, identifier: disconnectIdentifier, now: now), at: 0)
            return actions
        }
        return [opened(cid, state, destination: destination, mtu: response.mtu, mps: response.mps, credits: response.initialCredits)]
    }

    /// A channel we asked for, accepted by the peer as `destination` with its MTU, MPS and initial credits: open
    /// (both credit-based modes).
    mutating func opened(_ cid: L2CAPChannelIdentifier, _ channel: L2CAPCreditBasedChannel, destination: L2CAPChannelIdentifier,
                         mtu: UInt16, mps: UInt16, credits: UInt16) -> L2CAPLinkAction {
        var channel = channel
        channel.state = .open
        channel.remoteCID = destination
        channel.remoteMTU = mtu
        channel.remoteMPS = mps
        channel.sendCredits = Int(credits)
        channels[cid] = channel
        return .channelOpened(channel.info)
    }

    /// §4.24: the CID is the sender's Source CID (our remote CID). A count above 65535 disconnects the channel;
    /// credits for an unknown channel, or zero credits, are ignored.
    mutating func receiveCredits(_ indication: L2CAPFlowControlCreditIndication, now: StackInstant)
        -> [L2CAPLinkAction]
    {
        guard indication.credits > 0,
            let cid = channels.first(where: { $0.value.isOpen && $0.value.remoteCID == indication.cid })?.key,
            var state = channels.removeValue(forKey: cid)
        else { return [] }
        let total = state.sendCredits + Int(indication.credits)
        guard total <= L2CAPCreditBasedChannel.maximumCredits else {
            return disconnectForViolation(&state, .creditOverflow(total: total), now: now)
        }
        state.sendCredits = total
        var actions: [L2CAPLinkAction] = state.takeSendable().map { .send($0) }
        if state.queuedFrameCount == 0 { actions.append(.creditsAvailable(state.localCID)) }
        channels[state.localCID] = state
        return actions
    }
}
