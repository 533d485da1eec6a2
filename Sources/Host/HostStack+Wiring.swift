import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import HCI
import L2CAP
import BluetoothEngine

/// The wiring of L2CAP, ATT and GATT on each connection (Core 5.4 Vol 3 Part A, Part F, Part G): complete L2CAP
/// PDUs from ACL go to the connection's ``L2CAPLink``; its ATT payloads (fixed channel PDUs and EATT channel SDUs)
/// to the ``ATTBearer`` of the session's bearer table they belong to; every bearer's requests and commands to the
/// shared ``GATTServer`` and their answers back; its results, notifications and indications to its own
/// ``GATTClient`` through the bridge; every frame the machines emit goes out through ACL. One `performBearer` and
/// one `performClient` serve every bearer, named by its ``ATTBearerKey``. All of it runs on the host's event loop;
/// each action is carried out in order on the ``ConnectionSession`` it came from, which is asked before each one
/// whether it is still open and has the bearer (a completion may have ended them). The connection is looked up by
/// handle once, where work enters (a received PDU, a value sent, a caller's request): the variants taking a
/// handle are for callers that hold nothing else.
extension HostStack {
    // MARK: Connection lifecycle

    /// Creates the connection's session (unless an L2CAP handler takes raw PDUs) right after LE Connection
    /// Complete.
    func openSession(for connection: Connection) {
        guard l2capHandler == nil else { return }
        let session = ConnectionSession(handle: connection.handle, role: connection.role,
                                        preferredMTU: configuration.preferredATTMTU, deadlines: sessionDeadlines)
        if configuration.disconnectsOnSignalingTimeout {
            session.link = L2CAPLink(configuration: L2CAPLinkConfiguration(
                role: connection.role == .central ? .central : .peripheral, disconnectLinkOnSignalingTimeout: true))
        }
        for server in channelServers.values {
            try? session.link.registerServer(serverOnLink(server, connection.handle))
        }
        if configuration.enhancedATTBearerCount > 0 {
            try? session.link.registerServer(enhancedATTServer(connection.handle))
        }
        connections[connection.handle]?.session = session
        gattServer.connect(GATTConnectionID(connection.handle), security: GATTLinkSecurity(encrypted: connection.isEncrypted))
        securityLinkOpened(connection)
    }

    /// As central, the automatic Exchange MTU Request (after the connection was reported).
    func exchangeMTUIfCentral(_ connection: Connection) {
        guard connection.role == .central, configuration.exchangesMTUOnConnect else { return }
        let handle = connection.handle
        let now = eventLoop.now
        guard let (id, actions) = withBearer(handle, .fixed, { $0.bearer.exchangeMTU(now: now) }) else { return }
        connections[handle]?.session?.mtuExchangeRequest = id
        performBearer(actions, handle, .fixed)
        armTimer()
    }

    /// Disconnection Complete (or shutdown): the machines end, every pending operation fails, the server forgets
    /// the connection. The record is already out of the table, so nothing is sent.
    func closeSession(_ session: ConnectionSession?, handle: UInt16, reason: HCIStatus, error: HostError) {
        gattServer.disconnect(GATTConnectionID(handle))
        sessionDeadlines.remove(handle)
        guard let session else { return }
        let linkActions = session.link.linkDisconnected()
        // The Enhanced ATT bearers end first, the fixed one after the link's other channels.
        var enhancedChannels: Set<L2CAPChannelIdentifier> = []
        for var entry in session.bearers {
            guard case .enhanced(let cid) = entry.key else { continue }
            enhancedChannels.insert(cid)
            closeBearer(&entry, handle, reason: "\(error)", failure: .disconnected(reason: reason.rawValue))
            emit(.enhancedATTBearerClosed(handle: handle, channel: cid))
        }
        for cid in enhancedChannels { session.bearers.remove(.enhanced(cid)) }
        for open in session.enhancedOpens { open.completion?(.failure(error)) }
        session.enhancedOpens = []
        for completion in session.reconfigures.values { completion(.failure(error)) }
        session.reconfigures = [:]
        for action in linkActions {
            switch action {
            case .channelConnectFailed(let cid, _):
                session.channelOpens.removeValue(forKey: cid)?(.failure(error))
            case .channelClosed(let cid, let closeReason):
                if enhancedChannels.contains(cid) { continue }
                for completion in session.channelSends.removeValue(forKey: cid) ?? [] { completion(.failure(error)) }
                for completion in session.channelCloses.removeValue(forKey: cid) ?? [] { completion(.failure(error)) }
                emit(.l2capChannelClosed(handle: handle, channel: cid, closeReason))
            default:
                break
            }
        }
        if var fixed = session.bearers[.fixed] {
            closeBearer(&fixed, handle, reason: "\(error)", failure: .disconnected(reason: reason.rawValue))
        }
        // Anything left (defensive: the machines reported everything above), taken out of the session before it is
        // failed: an action still being carried out for the closed session (`performLink` asks `isOpen` between
        // actions, not inside one) finds nothing left to complete a second time.
        let opens = session.channelOpens, closes = session.channelCloses, sends = session.channelSends
        let updates = session.parameterUpdates, mtuExchange = session.mtuExchangeCompletion
        session.channelOpens = [:]
        session.channelCloses = [:]
        session.channelSends = [:]
        session.parameterUpdates = []
        session.mtuExchangeCompletion = nil
        for completion in opens.values { completion(.failure(error)) }
        for completions in closes.values { for completion in completions { completion(.failure(error)) } }
        for completions in sends.values { for completion in completions { completion(.failure(error)) } }
        for completion in updates { completion(.failure(error)) }
        mtuExchange?(.failure(error))
        securityLinkClosed(session.securityLink, handle: handle, error: error)
    }

    /// A bearer ends (its connection or its channel closed): the indications it was sending fail, then the
    /// procedures of its client, the one running and those queued (with `failure`), and anything left.
    func closeBearer(_ entry: inout SessionBearer, _ handle: UInt16, reason: String, failure: GATTClientBearerFailure) {
        for action in entry.bearer.close(reason: reason) {
            if case .indicationFailed(let attributeHandle, let bearerError) = action {
                emit(.gattIndicationFailed(handle: handle, attributeHandle: attributeHandle, bearerError))
            }
        }
        for action in entry.client.bearerFailed(failure) {
            if case .complete(let id, let result) = action { entry.completions.removeValue(forKey: id)?(result) }
        }
        // Anything left (defensive: the machines reported everything above).
        for completion in entry.completions.values { completion(.failure(.bearerFailed(failure))) }
        entry.completions = [:]
    }

    /// A machine asked to drop the link for a protocol reason (ATT transaction timeout or violation, L2CAP RTX).
    /// HCI Disconnect allows only a few reasons (Vol 4 Part E §7.1.6); Remote User Terminated Connection is the
    /// one that fits a host's decision. Our side then reports Connection Terminated By Local Host (0x16), which is
    /// what the connection's operations fail with.
    func dropLink(_ handle: UInt16, because why: String) {
        guard connections[handle] != nil, !(connections[handle]?.droppingLink ?? true) else { return }
        connections[handle]?.droppingLink = true
        emit(.controllerError(HostError(.protocolError, "dropping connection \(Dissection.hex16(handle)): \(why)")))
        command(.disconnect(handle: handle, reason: .remoteUserTerminatedConnection)) { [self] result in
            if case .failure(let error) = result { emit(.controllerError(error)) }
        }
    }

    // MARK: Input

    /// A complete L2CAP PDU from ACL for a connection with a session.
    func receiveL2CAP(_ pdu: [UInt8], session: ConnectionSession) {
        performLink(session.link.receive(frame: pdu, now: eventLoop.now), session)
        armTimer()
    }

    // MARK: Actions

    /// `performLink` on the session of connection `handle`, if it has a session.
    func performLink(_ actions: [L2CAPLinkAction], _ handle: UInt16) {
        guard let session = connections[handle]?.session else { return }
        performLink(actions, session)
    }

    /// The actions of the session's L2CAP link, in order, while the session is open.
    func performLink(_ actions: [L2CAPLinkAction], _ session: ConnectionSession) {
        let handle = session.handle
        for action in actions {
            guard session.isOpen else { return }
            switch action {
            case .send(let frame):
                enqueueL2CAP(frame, openConnection: handle, completion: nil)
            case .deliverFixed(let channel, let payload):
                if channel == .attributeProtocol {
                    receiveATT(payload, session, .fixed)
                } else if channel == .securityManager {
                    let pdu = Array(payload)
                    emit(.securityManagerPDU(handle: handle, pdu))
                    securityReceive(pdu, handle: handle)
                }
            case .channelOpened(let info):
                if isEnhancedATTChannel(info, session) {
                    enhancedBearerOpened(info, handle)
                    continue
                }
                emit(.l2capChannelOpened(handle: handle, info))
                session.channelOpens.removeValue(forKey: info.localCID)?(.success(info))
            case .channelConnectFailed(let cid, let failure):
                if isPendingEnhancedATT(cid, session) {
                    enhancedRequestSettled(cid, handle, failure: failure)
                    continue
                }
                let completion = session.channelOpens.removeValue(forKey: cid)
                var error = HostError(.commandFailed, "L2CAP channel connect failed: \(failure)")
                if case .refused(let result) = failure { error.l2capRefusal = result }
                completion?(.failure(error))
            case .sdu(let cid, let sdu):
                if receiveATT(sdu[...], session, .enhanced(cid)) { continue }
                emit(.l2capSDU(handle: handle, channel: cid, sdu: sdu))
            case .channelClosed(let cid, let reason):
                if session.bearers.contains(.enhanced(cid)) {
                    let completions = session.channelCloses.removeValue(forKey: cid) ?? []
                    enhancedBearerClosed(cid, handle, reason: "\(reason)")
                    for completion in completions { completion(.success(())) }
                    continue
                }
                let unsent = session.channelSends.removeValue(forKey: cid) ?? []
                let sendError = HostError(.commandFailed, "the L2CAP channel closed (\(reason)) before the SDU was sent")
                for completion in unsent { completion(.failure(sendError)) }
                let completions = session.channelCloses.removeValue(forKey: cid) ?? []
                emit(.l2capChannelClosed(handle: handle, channel: cid, reason))
                for completion in completions { completion(.success(())) }
            case .creditsAvailable(let cid):
                if session.bearers.contains(.enhanced(cid)) {
                    // An EATT bearer's queue drained: a connection waiting for send room may have it now.
                    reportSendRoom()
                    continue
                }
                for completion in session.channelSends.removeValue(forKey: cid) ?? [] {
                    completion(.success(()))
                }
                emit(.l2capCreditsAvailable(handle: handle, channel: cid))
            case .channelReconfigured(let info):
                session.reconfigures.removeValue(forKey: info.localCID)?(.success(()))
                let mtu = Int(min(info.localMTU, info.remoteMTU))
                guard let bearerActions = withBearer(session, .enhanced(info.localCID), { $0.bearer.raiseEnhancedMTU(mtu) })
                else { continue }
                performBearer(bearerActions, session, .enhanced(info.localCID))
            case .channelReconfigureFailed(let cids, let failure):
                guard let first = cids.first else { continue }
                session.reconfigures.removeValue(forKey: first)?(
                    .failure(HostError(.commandFailed, "L2CAP reconfiguration failed: \(failure)")))
            case .connectionParameterUpdateRequested(let identifier, let request):
                answerL2CAPParameterUpdate(handle: handle, identifier: identifier, request)
            case .connectionParameterUpdateResponse(let accepted):
                guard let completion = session.parameterUpdates.popFirst() else { continue }
                completion(.success(accepted))
            case .disconnectLink(let reason):
                dropLink(handle, because: "L2CAP \(reason)")
            }
        }
    }

    // MARK: ATT bearers

    /// `withBearer` on the session of connection `handle`; nil when it has no session.
    func withBearer<R, E: Error>(_ handle: UInt16, _ key: ATTBearerKey,
                                 _ body: (inout SessionBearer) throws(E) -> R) throws(E) -> R? {
        guard let session = connections[handle]?.session else { return nil }
        return try withBearer(session, key, body)
    }

    /// Runs `body` on the session's bearer `key` in place (the session is a class, the table an array: nothing is
    /// copied); nil when the session closed or the bearer is gone.
    func withBearer<R, E: Error>(_ session: ConnectionSession, _ key: ATTBearerKey,
                                 _ body: (inout SessionBearer) throws(E) -> R) throws(E) -> R? {
        guard session.isOpen else { return nil }
        return try session.bearers.modify(key, body)
    }

    /// Whether the session is open and still has the bearer `key` (the fixed one lives as long as the session).
    func hasBearer(_ session: ConnectionSession, _ key: ATTBearerKey) -> Bool {
        session.isOpen && (key == .fixed || session.bearers.contains(key))
    }

    /// ATT PDU bytes from the bearer's channel (a fixed-channel payload or an EATT channel SDU); false when the
    /// connection has no such bearer.
    @discardableResult
    func receiveATT(_ bytes: ArraySlice<UInt8>, _ session: ConnectionSession, _ key: ATTBearerKey) -> Bool {
        guard let actions = withBearer(session, key, { $0.bearer.receive(bytes, now: eventLoop.now) }) else { return false }
        performBearer(actions, session, key)
        return true
    }

    /// `performBearer` on the session of connection `handle`, if it has a session.
    func performBearer(_ actions: [ATTBearerAction], _ handle: UInt16, _ key: ATTBearerKey) {
        guard let session = connections[handle]?.session else { return }
        performBearer(actions, session, key)
    }

    /// The actions of the session's bearer `key`, in order, while the bearer exists.
    func performBearer(_ actions: [ATTBearerAction], _ session: ConnectionSession, _ key: ATTBearerKey) {
        let handle = session.handle
        let connection = GATTConnectionID(handle)
        for action in actions {
            guard hasBearer(session, key) else { return }
            switch action {
            case .send(let bytes):
                carry(bytes, session, key)
            case .response(let id, let result):
                if key == .fixed, finishMTUExchange(id, result, session) { continue }
                if securityHoldsResponse(id, result, handle: handle, bearer: key) { continue }
                guard let clientActions = withBearer(session, key, { entry -> [GATTClientAction]? in
                    guard entry.requests.remove(id) != nil else { return nil }
                    return entry.client.receive(bearerResult: result)
                }) ?? nil else { continue }
                performClient(clientActions, session, key)
            case .request(let pdu):
                if session.ignoresATTRequests { continue }
                let reply = gattServer.handleRequest(pdu, from: connection, on: key.gattBearer)
                guard respond(reply.response, session, key) else { continue }
                securityServerEvents(reply.events, handle: handle)
                for event in reply.events { emit(.gattServer(event)) }
            case .command(let pdu):
                for event in gattServer.handleCommand(pdu, from: connection) { emit(.gattServer(event)) }
            case .notification, .indication:
                guard let clientActions = withBearer(session, key, { $0.client.handle(bearerAction: action) }) ?? nil
                else { continue }
                performClient(clientActions, session, key)
            case .mtuChanged(let mtu):
                withBearer(session, key) { $0.client.mtu = mtu }
                gattServer.setMTU(mtu, for: connection, bearer: key.gattBearer)
                // The connection's ATT_MTU is the fixed bearer's; an EATT bearer's is reported when it opens.
                if key == .fixed { emit(.attMTUChanged(handle: handle, mtu: mtu)) }
            case .indicationConfirmed(let attributeHandle):
                emit(.gattIndicationConfirmed(handle: handle, attributeHandle: attributeHandle))
            case .indicationFailed(let attributeHandle, let error):
                emit(.gattIndicationFailed(handle: handle, attributeHandle: attributeHandle, error))
            case .disconnectLink(let reason):
                bearerBroken(session, key, reason: reason.description)
            }
        }
    }

    /// `performClient` on the session of connection `handle`, if it has a session.
    func performClient(_ actions: [GATTClientAction], _ handle: UInt16, _ key: ATTBearerKey) {
        guard let session = connections[handle]?.session else { return }
        performClient(actions, session, key)
    }

    /// The actions of the GATT client of the session's bearer `key`, in order, while the bearer exists.
    func performClient(_ actions: [GATTClientAction], _ session: ConnectionSession, _ key: ATTBearerKey) {
        let handle = session.handle
        for action in actions {
            guard hasBearer(session, key) else { return }
            switch action {
            case .sendRequest(let pdu):
                let now = eventLoop.now
                guard let bearerActions = withBearer(session, key, { entry -> [ATTBearerAction] in
                    let (id, actions) = entry.bearer.enqueue(request: pdu, now: now)
                    entry.requests.insert(id)
                    return actions
                }) else { continue }
                performBearer(bearerActions, session, key)
            case .sendCommand(let pdu):
                do {
                    guard let bearerActions = try withBearer(session, key, { entry throws(ATTBearerError) in try entry.bearer.send(pdu) })
                    else { continue }
                    performBearer(bearerActions, session, key)
                } catch {
                    stats.refusedATTCommands += 1
                }
            case .complete(let id, let result):
                let completion = withBearer(session, key) { $0.completions.removeValue(forKey: id) } ?? nil
                completion?(result)
            case .notification(let attributeHandle, let value):
                emit(.gattNotification(handle: handle, attributeHandle: attributeHandle, value: value))
            case .indication(let attributeHandle, let value):
                emit(.gattIndication(handle: handle, attributeHandle: attributeHandle, value: value))
                guard let confirm = withBearer(session, key, { $0.bearer.confirmIndication() }) else { continue }
                performBearer(confirm, session, key)
            }
        }
    }

    /// `respond` on the session of connection `handle`; false when it has no session.
    func respond(_ response: ATTPDU, _ handle: UInt16, _ key: ATTBearerKey) -> Bool {
        guard let session = connections[handle]?.session else { return false }
        return respond(response, session, key)
    }

    /// Answers the request the bearer `key` is serving with `response` (from the GATT server); false when the
    /// bearer is gone or refused it.
    func respond(_ response: ATTPDU, _ session: ConnectionSession, _ key: ATTBearerKey) -> Bool {
        let now = eventLoop.now
        guard let answer = withBearer(session, key, { try? $0.bearer.respond(response, now: now) }) ?? nil else { return false }
        performBearer(answer, session, key)
        return true
    }

    /// How a bearer's bytes travel: whole PDUs on the ATT fixed channel, or SDUs of its EATT channel.
    private func carry(_ bytes: [UInt8], _ session: ConnectionSession, _ key: ATTBearerKey) {
        guard session.isOpen else { return }
        let linkActions: [L2CAPLinkAction]?
        switch key {
        case .fixed:
            // In place: calling the link's non-mutating method on the stored link copied the link first.
            linkActions = try? inPlace(&session.link) { link throws(L2CAPLinkError) in
                try link.sendFixed(channel: .attributeProtocol, payload: bytes)
            }
        case .enhanced(let cid):
            linkActions = try? session.link.send(sdu: bytes, on: cid)
        }
        if let linkActions { performLink(linkActions, session) }
    }

    /// A bearer asked to end (ATT transaction timeout or protocol violation): the fixed bearer drops the link;
    /// on an Enhanced ATT bearer it closes the channel, not the link (Vol 3 Part F §3.3.3).
    private func bearerBroken(_ session: ConnectionSession, _ key: ATTBearerKey, reason: String) {
        let handle = session.handle
        switch key {
        case .fixed:
            dropLink(handle, because: reason)
        case .enhanced(let cid):
            emit(.controllerError(HostError(.protocolError, "closing EATT bearer \(cid) of \(Dissection.hex16(handle)): \(reason)")))
            guard session.isOpen, let linkActions = try? session.link.disconnect(channel: cid, now: eventLoop.now)
            else { return }
            performLink(linkActions, session)
        }
    }

    /// The answer to our Exchange MTU Request (fixed bearer only): its completion gets the new ATT_MTU. False
    /// when `id` is another request.
    private func finishMTUExchange(_ id: ATTBearerRequestID, _ result: Result<ATTPDU, ATTBearerError>,
                                   _ session: ConnectionSession) -> Bool {
        guard session.isOpen, session.mtuExchangeRequest == id else { return false }
        session.mtuExchangeRequest = nil
        let completion = session.mtuExchangeCompletion
        session.mtuExchangeCompletion = nil
        let mtu = session.bearers[.fixed]?.bearer.mtu ?? ATTMTU.leDefault
        completion?(result.map { _ in mtu }.mapError { HostError(.protocolError, "Exchange MTU failed: \($0)") })
        return true
    }

    /// Sends what the GATT server produced for the applications' values on the bearer it chose (notifications
    /// go to the first bearer the peer opened, else the fixed one; indications queue behind the one awaiting
    /// confirmation).
    func performServerOutbound(_ outbound: [GATTServerOutbound]) {
        for item in outbound {
            guard let session = connections[item.connection.rawValue]?.session else { continue }
            let key = ATTBearerKey(item.bearer)
            let actions = withBearer(session, key) { entry -> [ATTBearerAction]? in
                switch item.pdu {
                case .handleValueIndication(let attributeHandle, let value):
                    return try? entry.bearer.sendIndication(handle: attributeHandle, value: value, now: eventLoop.now)
                default:
                    return try? entry.bearer.send(item.pdu)
                }
            } ?? nil
            if let actions { performBearer(actions, session, key) }
        }
        armTimer()
    }

    // MARK: Connection parameters over L2CAP (Vol 3 Part A §4.20, §4.21)

    /// Central: the peripheral asked for new parameters. When the configuration accepts them, LE Connection
    /// Update is issued first and the response says whether the controller took it; otherwise rejected.
    func answerL2CAPParameterUpdate(handle: UInt16, identifier: UInt8, _ request: L2CAPConnectionParameterUpdateRequest) {
        guard configuration.acceptsConnectionParameterRequests else {
            respondToParameterUpdate(handle: handle, identifier: identifier, accepted: false)
            return
        }
        let parameters = LEConnectionParameters(
            intervalMin: request.intervalMin, intervalMax: request.intervalMax, maxLatency: request.peripheralLatency,
            supervisionTimeout: request.timeoutMultiplier)
        command(.leConnectionUpdate(handle: handle, parameters: parameters)) { [self] result in
            let accepted: Bool
            if case .success = result { accepted = true } else { accepted = false }
            respondToParameterUpdate(handle: handle, identifier: identifier, accepted: accepted)
        }
    }

    private func respondToParameterUpdate(handle: UInt16, identifier: UInt8, accepted: Bool) {
        guard let actions = try? connections[handle]?.session?.link.respondToConnectionParameterUpdate(
            identifier: identifier, accepted: accepted) else { return }
        performLink(actions, handle)
    }

    // MARK: Flow control readiness

    /// After ACL packets went out: connections found full earlier that have room again are told so.
    func reportSendRoom() {
        // Walks the keys and reads one flag: copying each connection record (session included) after every ACL
        // send was a quarter of the benchmark's time.
        for handle in connections.keys where connections[handle]?.session?.waitingForSendRoom == true {
            if sendRoom(handle) {
                connections[handle]?.session?.waitingForSendRoom = false
                emit(.readyToSend(handle: handle))
            }
        }
    }

    // MARK: Timers

    /// The earliest deadline of every connection's link, bearer and Security Manager (``SessionDeadlines``: only
    /// the sessions that changed are asked again).
    var sessionsNextDeadline: StackInstant? {
        sessionDeadlines.earliest()
    }

    /// The timer fired: every link and bearer whose deadline passed handles its timeout.
    func sessionsTimedOut(now: StackInstant) {
        for handle in connections.keys.sorted() {
            if let deadline = connections[handle]?.session?.link.nextDeadline, deadline <= now,
               let actions = connections[handle]?.session?.link.handleTimeout(now: now) {
                performLink(actions, handle)
            }
            for key in connections[handle]?.session?.bearers.keys ?? [] {
                guard let deadline = connections[handle]?.session?.bearers[key]?.bearer.nextDeadline, deadline <= now,
                      let actions = withBearer(handle, key, { $0.bearer.handleTimeout(now: now) }) else { continue }
                performBearer(actions, handle, key)
            }
            if let deadline = connections[handle]?.session?.securityLink?.smp.nextDeadline, deadline <= now {
                let actions = withSecurityLink(handle) { $0.smp.handleTimeout(now: now) } ?? []
                performSMP(actions, handle)
            }
        }
    }
}
