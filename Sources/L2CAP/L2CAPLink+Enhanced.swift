public import BluetoothCore


/// Enhanced Credit Based Flow Control mode (Core 5.4 Vol 3 Part A §3.4, §4.25 to §4.28): the L2CAP Credit Based
/// Connection Request/Response (up to 5 channels in one request) and the Credit Based Reconfigure
/// Request/Response, as initiator and as acceptor.
///
/// The channels are the same ``L2CAPCreditBasedChannel`` values as LE Credit Based Flow Control ones, with
/// mode ``L2CAPChannelMode/enhancedCreditBased``: segmentation, reassembly, credits, credit return, violations and
/// disconnection are shared; only opening and reconfiguring differ. The minimum MTU and MPS are 64 (§4.25).
extension L2CAPLink {
    /// The most channels one L2CAP Credit Based Connection Request opens (§4.25).
    public static let maximumChannelsPerRequest = 5

    // MARK: Initiator

    /// Sends an L2CAP Credit Based Connection Request (§4.25) for `count` (1...5) channels to `spsm` and returns
    /// their local CIDs in request order. Each outcome arrives as ``L2CAPLinkAction/channelOpened(_:)`` or
    /// ``L2CAPLinkAction/channelConnectFailed(_:_:)`` (the peer may accept some and refuse others).
    public mutating func connectEnhanced(
        spsm: UInt16, count: Int, mtu: UInt16, mps: UInt16, initialCredits: UInt16,
        creditPolicy: L2CAPChannelCreditPolicy = .automatic(), now: StackInstant
    ) throws(L2CAPLinkError) -> (channels: [L2CAPChannelIdentifier], actions: [L2CAPLinkAction]) {
        try Self.checkPSM(spsm)
        try Self.checkEnhancedParameters(mtu: mtu, mps: mps)
        guard (1...Self.maximumChannelsPerRequest).contains(count) else {
            throw L2CAPLinkError(.invalidParameters, "\(count) channels: one request opens 1 to 5")
        }
        var cids: [L2CAPChannelIdentifier] = []
        for raw in L2CAPChannelIdentifier.leDynamicRange where cids.count < count {
            if channels[L2CAPChannelIdentifier(raw)] == nil { cids.append(L2CAPChannelIdentifier(raw)) }
        }
        guard cids.count == count else {
            throw L2CAPLinkError(.noChannelAvailable, "fewer than \(count) LE dynamic CIDs 0x0040...0x007F are free")
        }
        guard let identifier = nextIdentifier() else {
            throw L2CAPLinkError(.noIdentifierAvailable, "255 signaling requests are awaiting responses")
        }
        for cid in cids {
            channels[cid] = L2CAPCreditBasedChannel(
                state: .connecting(identifier: identifier), localCID: cid, psm: spsm, localMTU: mtu, localMPS: mps,
                initialCredits: initialCredits, creditPolicy: creditPolicy, isInitiator: true,
                mode: .enhancedCreditBased)
        }
        pending[identifier] = PendingRequest(kind: .connectEnhanced(cids), deadline: now + configuration.signalingTimeout)
        let request = L2CAPCreditBasedConnectionRequest(
            spsm: spsm, mtu: mtu, mps: mps, initialCredits: initialCredits, sourceCIDs: cids)
        return (cids, [signaling(.creditBasedConnectionRequest(identifier: identifier, request))])
    }

    /// Sends a Credit Based Reconfigure Request (§4.27) raising our MTU (and setting our MPS) on open enhanced
    /// channels. The MTU may not decrease; the MPS may decrease only when one channel is named (§4.27).
    /// The outcome arrives as ``L2CAPLinkAction/channelReconfigured(_:)`` per channel or
    /// ``L2CAPLinkAction/channelReconfigureFailed(_:_:)``. Until then larger SDUs and K-frames are already
    /// accepted on those channels (the peer may use the new values as soon as it accepts).
    public mutating func reconfigure(
        channels cids: [L2CAPChannelIdentifier], mtu: UInt16, mps: UInt16, now: StackInstant
    ) throws(L2CAPLinkError) -> [L2CAPLinkAction] {
        try Self.checkEnhancedParameters(mtu: mtu, mps: mps)
        guard (1...Self.maximumChannelsPerRequest).contains(cids.count), Set(cids).count == cids.count else {
            throw L2CAPLinkError(.invalidParameters, "a reconfiguration names 1 to 5 distinct channels")
        }
        var remotes: [L2CAPChannelIdentifier] = []
        for cid in cids {
            guard let state = channels[cid] else { throw L2CAPLinkError(.unknownChannel, "no channel \(cid)") }
            guard state.isOpen else { throw L2CAPLinkError(.channelNotOpen, "channel \(cid) is not open") }
            guard state.mode == .enhancedCreditBased else {
                throw L2CAPLinkError(.invalidParameters, "channel \(cid) is not in enhanced credit based mode")
            }
            guard state.reconfiguring == nil else {
                throw L2CAPLinkError(.invalidParameters, "channel \(cid) is already being reconfigured")
            }
            guard mtu >= state.localMTU else {
                throw L2CAPLinkError(.invalidParameters, "MTU \(mtu) below the channel's \(state.localMTU): it may not decrease")
            }
            guard mps >= state.localMPS || cids.count == 1 else {
                throw L2CAPLinkError(.invalidParameters, "the MPS may decrease on one channel at a time")
            }
            remotes.append(state.localCID)
        }
        guard let identifier = nextIdentifier() else {
            throw L2CAPLinkError(.noIdentifierAvailable, "255 signaling requests are awaiting responses")
        }
        for cid in cids {
            guard var state = channels.removeValue(forKey: cid) else { continue }
            state.reconfiguring = (mtu, mps)
            state.reassembler.mtu = max(state.localMTU, mtu)
            state.reassembler.mps = max(state.localMPS, mps)
            channels[cid] = state
        }
        pending[identifier] = PendingRequest(kind: .reconfigure(cids), deadline: now + configuration.signalingTimeout)
        // The Destination CIDs of the request are the sender's own endpoints (§4.27).
        let request = L2CAPCreditBasedReconfigureRequest(mtu: mtu, mps: mps, destinationCIDs: remotes)
        return [signaling(.creditBasedReconfigureRequest(identifier: identifier, request))]
    }

    static func checkEnhancedParameters(mtu: UInt16, mps: UInt16) throws(L2CAPLinkError) {
        guard mtu >= L2CAPCreditBasedConnectionRequest.minimumMTU else {
            throw L2CAPLinkError(.invalidParameters, "MTU \(mtu) below 64")
        }
        guard L2CAPCreditBasedConnectionRequest.mpsRange.contains(mps) else {
            throw L2CAPLinkError(.invalidParameters, "MPS \(mps) outside 64...65533")
        }
    }

    /// Our reconfiguration of `cids` failed: each channel's reassembler goes back to its current MTU/MPS.
    mutating func reconfigureFailed(_ cids: [L2CAPChannelIdentifier], _ failure: L2CAPChannelReconfigureFailure)
        -> [L2CAPLinkAction]
    {
        var still: [L2CAPChannelIdentifier] = []
        for cid in cids {
            guard var state = channels.removeValue(forKey: cid) else { continue }
            state.reconfiguring = nil
            state.reassembler.mtu = state.localMTU
            state.reassembler.mps = state.localMPS
            channels[cid] = state
            still.append(cid)
        }
        return [.channelReconfigureFailed(still, failure)]
    }

    // MARK: Acceptor

    /// §4.25/§4.26, checked in this order (as Linux's l2cap_ecred_conn_req): MTU ≥ 64 and MPS in 64...65533
    /// (all refused, 0x000B), an enhanced-mode server on the SPSM (0x0002), the server's accept policy (e.g.
    /// 0x0005/0x0008 on an unencrypted link), then per Source CID: in 0x0040...0x007F (0x0009), not already used
    /// by the peer on this link nor twice in the request (0x000A), a free local CID (0x0004). The response lists
    /// one Destination CID per Source CID, in order, 0x0000 for each refused one; its result is that of the last
    /// refusal, or success.
    mutating func receiveEnhancedConnectionRequest(identifier: UInt8, _ request: L2CAPCreditBasedConnectionRequest)
        -> [L2CAPLinkAction]
    {
        let count = request.sourceCIDs.count
        func refuseAll(_ result: L2CAPConnectionResult) -> [L2CAPLinkAction] {
            [
                signaling(
                    .creditBasedConnectionResponse(
                        identifier: identifier,
                        L2CAPCreditBasedConnectionResponse(
                            mtu: 0, mps: 0, initialCredits: 0, result: result,
                            destinationCIDs: Array(repeating: .null, count: count))))
            ]
        }
        guard (try? request.validate()) != nil else { return refuseAll(.allConnectionsRefusedUnacceptableParameters) }
        guard let server = servers[request.spsm], server.modes.contains(.enhancedCreditBased),
            server.mtu >= L2CAPCreditBasedConnectionRequest.minimumMTU,
            L2CAPCreditBasedConnectionRequest.mpsRange.contains(server.mps)
        else { return refuseAll(.spsmNotSupported) }
        let decision: L2CAPConnectionResult
        switch server.acceptPolicy {
        case .acceptAll: decision = .successful
        case .refuseAll(let result): decision = result
        case .decide(let decide):
            decision = decide(
                L2CAPLECreditBasedConnectionRequest(
                    lePSM: request.spsm, sourceCID: request.sourceCIDs.first ?? .null, mtu: request.mtu,
                    mps: request.mps, initialCredits: request.initialCredits))
        }
        guard decision == .successful else { return refuseAll(decision) }
        var result = L2CAPConnectionResult.successful
        var destinations: [L2CAPChannelIdentifier] = []
        var opened: [L2CAPLinkAction] = []
        for (index, source) in request.sourceCIDs.enumerated() {
            guard source.isLEDynamic else {
                result = .someConnectionsRefusedInvalidSourceCID
                destinations.append(.null)
                continue
            }
            guard !channels.values.contains(where: { $0.remoteCID == source }),
                !request.sourceCIDs[..<index].contains(source)
            else {
                result = .someConnectionsRefusedSourceCIDAlreadyAllocated
                destinations.append(.null)
                continue
            }
            guard let cid = freeLocalCID() else {
                result = .someConnectionsRefusedInsufficientResources
                destinations.append(.null)
                continue
            }
            var state = L2CAPCreditBasedChannel(
                state: .open, localCID: cid, psm: request.spsm, localMTU: server.mtu, localMPS: server.mps,
                initialCredits: server.initialCredits, creditPolicy: server.creditPolicy, isInitiator: false,
                mode: .enhancedCreditBased)
            state.remoteCID = source
            state.remoteMTU = request.mtu
            state.remoteMPS = request.mps
            state.sendCredits = Int(request.initialCredits)
            channels[cid] = state
            destinations.append(cid)
            opened.append(.channelOpened(state.info))
        }
        let response = L2CAPCreditBasedConnectionResponse(
            mtu: server.mtu, mps: server.mps, initialCredits: server.initialCredits, result: result,
            destinationCIDs: destinations)
        return [signaling(.creditBasedConnectionResponse(identifier: identifier, response))] + opened
    }

    /// §4.26 on the initiator: Destination CIDs pair with our Source CIDs in request order; 0x0000 (or a missing
    /// entry) is a refused channel, failed with the response's result. Pending results wait for the final
    /// response. An accepted channel whose Destination CID is outside 0x0040...0x007F or already used, or a
    /// response accepting channels with MTU/MPS below 64, fails (the usable ones are disconnected properly).
    mutating func receiveEnhancedConnectionResponse(
        identifier: UInt8, _ response: L2CAPCreditBasedConnectionResponse, now: StackInstant
    ) -> [L2CAPLinkAction] {
        guard case .connectEnhanced(let cids)? = pending[identifier]?.kind else { return [] }
        switch response.result {
        case .allConnectionsPendingNoFurtherInformation, .allConnectionsPendingAuthenticationPending,
            .allConnectionsPendingAuthorizationPending:
            pending[identifier]?.deadline = now + configuration.signalingTimeout
            return []
        default:
            break
        }
        pending[identifier] = nil
        let refusal: L2CAPConnectionResult = response.result == .successful ? .someConnectionsRefusedInsufficientResources : response.result
        var parametersProblem: String?
        do { try response.validate() } catch { parametersProblem = error.reason }
        var actions: [L2CAPLinkAction] = []
        var used = Set(channels.values.map(\.remoteCID))
        for (index, cid) in cids.enumerated() {
            guard let state = channels[cid], case .connecting = state.state else { continue }
            let destination = index < response.destinationCIDs.count ? response.destinationCIDs[index] : .null
            guard destination != .null else {
                channels[cid] = nil
                actions.append(.channelConnectFailed(cid, .refused(refusal)))
                continue
            }
            var problem = parametersProblem
            if !destination.isLEDynamic {
                problem = "destination CID \(destination) outside 0x0040...0x007F"
            } else if used.contains(destination) {
                problem = "destination CID \(destination) already in use on this link"
            }
            if let problem {
                actions.append(.channelConnectFailed(cid, .invalidResponse(problem)))
                guard destination.isLEDynamic, !used.contains(destination), let disconnectIdentifier = nextIdentifier()
                else {
                    channels[cid] = nil
                    continue
                }
                used.insert(destination)
                actions.insert(disconnectRefused(cid, state, destination: destination, identifier: disconnectIdentifier, now: now), at: 0)
                continue
            }
            used.insert(destination)
            actions.append(opened(cid, state, destination: destination, mtu: response.mtu, mps: response.mps,
                                  credits: response.initialCredits))
        }
        return actions
    }

    /// §4.27/§4.28 on the receiver: MTU ≥ 64 and MPS ≥ 64 (0x0004), every CID one of the peer's open enhanced
    /// channels (0x0003), the MTU not below the channel's current one (0x0001), an MPS decrease only when one
    /// channel is named (0x0002). On success every channel takes the new values; otherwise nothing changes.
    mutating func receiveReconfigureRequest(identifier: UInt8, _ request: L2CAPCreditBasedReconfigureRequest)
        -> [L2CAPLinkAction]
    {
        func answer(_ result: L2CAPReconfigureResult) -> [L2CAPLinkAction] {
            [signaling(.creditBasedReconfigureResponse(identifier: identifier, result: result))]
        }
        guard (try? request.validate()) != nil else { return answer(.unacceptableParameters) }
        var found: [L2CAPChannelIdentifier] = []
        for remote in request.destinationCIDs {
            guard let cid = channels.first(where: {
                $0.value.isOpen && $0.value.mode == .enhancedCreditBased && $0.value.remoteCID == remote
            })?.key, !found.contains(cid) else { return answer(.invalidDestinationCID) }
            found.append(cid)
        }
        for cid in found {
            guard let state = channels[cid] else { return answer(.invalidDestinationCID) }
            if request.mtu < state.remoteMTU { return answer(.mtuReductionNotAllowed) }
            if request.mps < state.remoteMPS, found.count > 1 { return answer(.mpsReductionNotAllowed) }
        }
        var actions = answer(.successful)
        for cid in found {
            guard var state = channels.removeValue(forKey: cid) else { continue }
            state.remoteMTU = request.mtu
            state.remoteMPS = request.mps
            channels[cid] = state
            actions.append(.channelReconfigured(state.info))
        }
        return actions
    }

    mutating func receiveReconfigureResponse(identifier: UInt8, _ result: L2CAPReconfigureResult) -> [L2CAPLinkAction] {
        guard case .reconfigure(let cids)? = pending[identifier]?.kind else { return [] }
        pending[identifier] = nil
        guard result == .successful else { return reconfigureFailed(cids, .refused(result)) }
        var actions: [L2CAPLinkAction] = []
        for cid in cids {
            guard var state = channels.removeValue(forKey: cid) else { continue }
            if let (mtu, mps) = state.reconfiguring {
                state.localMTU = mtu
                state.localMPS = mps
                state.reassembler.mtu = mtu
                state.reassembler.mps = mps
                state.reconfiguring = nil
            }
            channels[cid] = state
            if state.isOpen { actions.append(.channelReconfigured(state.info)) }
        }
        return actions
    }
}
