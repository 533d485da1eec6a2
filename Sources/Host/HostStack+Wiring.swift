import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import HCI
import L2CAP
import BluetoothEngine

/// The wiring of L2CAP, ATT and GATT on each connection (Core 5.4 Vol 3 Part A, Part F, Part G): complete L2CAP
/// PDUs from ACL go to the connection's ``L2CAPLink``; its ATT payloads to the ``ATTBearer``; the bearer's requests
/// and commands to the shared ``GATTServer`` and their answers back; the bearer's results, notifications and
/// indications to the ``GATTClient`` through its bridge; every frame the machines emit goes out through ACL. All of
/// it runs on the host's event loop; each action is carried out in order, and the connection is looked up again
/// before each one (a completion may have ended it).
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
        guard let (id, actions) = connections[handle]?.session?.bearer.exchangeMTU(now: eventLoop.now) else { return }
        connections[handle]?.session?.mtuExchangeRequest = id
        performBearer(actions, handle)
        armTimer()
    }

    /// Disconnection Complete (or shutdown): the machines end, every pending operation fails, the server forgets
    /// the connection. The record is already out of the table, so nothing is sent.
    func closeSession(_ session: ConnectionSession?, handle: UInt16, reason: HCIStatus, error: HostError) {
        gattServer.disconnect(GATTConnectionID(handle))
        sessionDeadlines.remove(handle)
        guard let session else { return }
        let linkActions = session.link.linkDisconnected()
        let bearerActions = session.bearer.close(reason: "\(error)")
        let clientActions = session.client.bearerFailed(.disconnected(reason: reason.rawValue))
        for (cid, var record) in session.enhanced.sorted(by: { $0.key < $1.key }) {
            for action in record.bearer.close(reason: "\(error)") {
                if case .indicationFailed(let attributeHandle, let bearerError) = action {
                    emit(.gattIndicationFailed(handle: handle, attributeHandle: attributeHandle, bearerError))
                }
            }
            for action in record.client.bearerFailed(.disconnected(reason: reason.rawValue)) {
                if case .complete(let id, let result) = action { record.completions.removeValue(forKey: id)?(result) }
            }
            for completion in record.completions.values { completion(.failure(.bearerFailed(.disconnected(reason: reason.rawValue)))) }
            emit(.enhancedATTBearerClosed(handle: handle, channel: cid))
        }
        let enhancedChannels = Set(session.enhanced.keys)
        session.enhanced = [:]
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
                for completion in session.channelCloses.removeValue(forKey: cid) ?? [] { completion(.failure(error)) }
                emit(.l2capChannelClosed(handle: handle, channel: cid, closeReason))
            default:
                break
            }
        }
        for action in bearerActions {
            if case .indicationFailed(let attributeHandle, let bearerError) = action {
                emit(.gattIndicationFailed(handle: handle, attributeHandle: attributeHandle, bearerError))
            }
        }
        for action in clientActions {
            if case .complete(let id, let result) = action { session.gattCompletions.removeValue(forKey: id)?(result) }
        }
        // Anything left (defensive: the machines reported everything above).
        for completion in session.gattCompletions.values { completion(.failure(.bearerFailed(.disconnected(reason: reason.rawValue)))) }
        for completion in session.channelOpens.values { completion(.failure(error)) }
        for completions in session.channelCloses.values { for completion in completions { completion(.failure(error)) } }
        for completion in session.parameterUpdates { completion(.failure(error)) }
        session.mtuExchangeCompletion?(.failure(error))
        securityLinkClosed(session.securityLink, handle: handle, error: error)
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
    func receiveL2CAP(_ pdu: [UInt8], handle: UInt16) {
        guard let actions = connections[handle]?.session?.link.receive(frame: pdu, now: eventLoop.now) else { return }
        performLink(actions, handle)
        armTimer()
    }

    // MARK: Actions

    func performLink(_ actions: [L2CAPLinkAction], _ handle: UInt16) {
        for action in actions {
            guard connections[handle]?.session != nil else { return }
            switch action {
            case .send(let frame):
                enqueueL2CAP(handle: handle, pdu: frame, completion: nil)
            case .deliverFixed(let channel, let payload):
                if channel == .attributeProtocol {
                    guard let bearerActions = connections[handle]?.session?.bearer.receive(payload, now: eventLoop.now) else { return }
                    performBearer(bearerActions, handle)
                } else if channel == .securityManager {
                    emit(.securityManagerPDU(handle: handle, payload))
                    securityReceive(payload, handle: handle)
                }
            case .channelOpened(let info):
                if let session = connections[handle]?.session, isEnhancedATTChannel(info, session) {
                    enhancedBearerOpened(info, handle)
                    continue
                }
                emit(.l2capChannelOpened(handle: handle, info))
                connections[handle]?.session?.channelOpens.removeValue(forKey: info.localCID)?(.success(info))
            case .channelConnectFailed(let cid, let failure):
                if let session = connections[handle]?.session, isPendingEnhancedATT(cid, session) {
                    enhancedRequestSettled(cid, handle, failure: failure)
                    continue
                }
                let completion = connections[handle]?.session?.channelOpens.removeValue(forKey: cid)
                var error = HostError(.commandFailed, "L2CAP channel connect failed: \(failure)")
                if case .refused(let result) = failure { error.l2capRefusal = result }
                completion?(.failure(error))
            case .sdu(let cid, let sdu):
                if connections[handle]?.session?.enhanced[cid] != nil {
                    let now = eventLoop.now
                    guard let bearerActions = withEnhanced(handle, cid, { $0.bearer.receive(sdu, now: now) }) else { continue }
                    performEnhancedBearer(bearerActions, handle, cid)
                    continue
                }
                emit(.l2capSDU(handle: handle, channel: cid, sdu: sdu))
            case .channelClosed(let cid, let reason):
                if connections[handle]?.session?.enhanced[cid] != nil {
                    let completions = connections[handle]?.session?.channelCloses.removeValue(forKey: cid) ?? []
                    enhancedBearerClosed(cid, handle, reason: "\(reason)")
                    for completion in completions { completion(.success(())) }
                    continue
                }
                let completions = connections[handle]?.session?.channelCloses.removeValue(forKey: cid) ?? []
                emit(.l2capChannelClosed(handle: handle, channel: cid, reason))
                for completion in completions { completion(.success(())) }
            case .creditsAvailable(let cid):
                if connections[handle]?.session?.enhanced[cid] != nil {
                    // An EATT bearer's queue drained: a connection waiting for send room may have it now.
                    reportSendRoom()
                    continue
                }
                emit(.l2capCreditsAvailable(handle: handle, channel: cid))
            case .channelReconfigured(let info):
                connections[handle]?.session?.reconfigures.removeValue(forKey: info.localCID)?(.success(()))
                guard connections[handle]?.session?.enhanced[info.localCID] != nil else { continue }
                let mtu = Int(min(info.localMTU, info.remoteMTU))
                guard let bearerActions = withEnhanced(handle, info.localCID, { $0.bearer.raiseEnhancedMTU(mtu) }) else { continue }
                performEnhancedBearer(bearerActions, handle, info.localCID)
            case .channelReconfigureFailed(let cids, let failure):
                guard let first = cids.first else { continue }
                connections[handle]?.session?.reconfigures.removeValue(forKey: first)?(
                    .failure(HostError(.commandFailed, "L2CAP reconfiguration failed: \(failure)")))
            case .connectionParameterUpdateRequested(let identifier, let request):
                answerL2CAPParameterUpdate(handle: handle, identifier: identifier, request)
            case .connectionParameterUpdateResponse(let accepted):
                guard let completion = connections[handle]?.session?.parameterUpdates.popFirst() else { continue }
                completion(.success(accepted))
            case .disconnectLink(let reason):
                dropLink(handle, because: "L2CAP \(reason)")
            }
        }
    }

    func performBearer(_ actions: [ATTBearerAction], _ handle: UInt16) {
        let connection = GATTConnectionID(handle)
        for action in actions {
            guard connections[handle]?.session != nil else { return }
            switch action {
            case .send(let bytes):
                guard let linkActions = try? connections[handle]?.session?.link.sendFixed(channel: .attributeProtocol, payload: bytes)
                else { continue }
                performLink(linkActions, handle)
            case .response(let id, let result):
                if connections[handle]?.session?.mtuExchangeRequest == id {
                    connections[handle]?.session?.mtuExchangeRequest = nil
                    let completion = connections[handle]?.session?.mtuExchangeCompletion
                    connections[handle]?.session?.mtuExchangeCompletion = nil
                    let mtu = connections[handle]?.session?.bearer.mtu ?? ATTMTU.leDefault
                    completion?(result.map { _ in mtu }.mapError { HostError(.protocolError, "Exchange MTU failed: \($0)") })
                    continue
                }
                if securityHoldsResponse(id, result, handle: handle) { continue }
                guard connections[handle]?.session?.clientRequests.remove(id) != nil,
                      let clientActions = connections[handle]?.session?.client.receive(bearerResult: result) else { continue }
                performClient(clientActions, handle)
            case .request(let pdu):
                if connections[handle]?.session?.ignoresATTRequests == true { continue }
                let reply = gattServer.handleRequest(pdu, from: connection)
                guard let answer = try? connections[handle]?.session?.bearer.respond(reply.response, now: eventLoop.now) else { continue }
                performBearer(answer, handle)
                securityServerEvents(reply.events, handle: handle)
                for event in reply.events { emit(.gattServer(event)) }
            case .command(let pdu):
                for event in gattServer.handleCommand(pdu, from: connection) { emit(.gattServer(event)) }
            case .notification, .indication:
                guard let clientActions = connections[handle]?.session?.client.handle(bearerAction: action) else { continue }
                performClient(clientActions, handle)
            case .mtuChanged(let mtu):
                connections[handle]?.session?.client.mtu = mtu
                gattServer.setMTU(mtu, for: connection)
                emit(.attMTUChanged(handle: handle, mtu: mtu))
            case .indicationConfirmed(let attributeHandle):
                emit(.gattIndicationConfirmed(handle: handle, attributeHandle: attributeHandle))
            case .indicationFailed(let attributeHandle, let error):
                emit(.gattIndicationFailed(handle: handle, attributeHandle: attributeHandle, error))
            case .disconnectLink(let reason):
                dropLink(handle, because: reason.description)
            }
        }
    }

    func performClient(_ actions: [GATTClientAction], _ handle: UInt16) {
        for action in actions {
            guard connections[handle]?.session != nil else { return }
            switch action {
            case .sendRequest(let pdu):
                guard let (id, bearerActions) = connections[handle]?.session?.bearer.enqueue(request: pdu, now: eventLoop.now)
                else { continue }
                connections[handle]?.session?.clientRequests.insert(id)
                performBearer(bearerActions, handle)
            case .sendCommand(let pdu):
                do {
                    guard let bearerActions = try connections[handle]?.session?.bearer.send(pdu) else { continue }
                    performBearer(bearerActions, handle)
                } catch {
                    stats.refusedATTCommands += 1
                }
            case .complete(let id, let result):
                connections[handle]?.session?.gattCompletions.removeValue(forKey: id)?(result)
            case .notification(let attributeHandle, let value):
                emit(.gattNotification(handle: handle, attributeHandle: attributeHandle, value: value))
            case .indication(let attributeHandle, let value):
                emit(.gattIndication(handle: handle, attributeHandle: attributeHandle, value: value))
                guard let confirm = connections[handle]?.session?.bearer.confirmIndication() else { continue }
                performBearer(confirm, handle)
            }
        }
    }

    /// Sends what the GATT server produced for the applications' values (notifications through the bearer,
    /// indications queued behind the one awaiting confirmation).
    func performServerOutbound(_ outbound: [GATTServerOutbound]) {
        for item in outbound {
            let handle = item.connection.rawValue
            guard connections[handle]?.session != nil else { continue }
            if item.bearer.isEnhanced {
                let cid = L2CAPChannelIdentifier(item.bearer.rawValue)
                let now = eventLoop.now
                let actions = withEnhanced(handle, cid) { record -> [ATTBearerAction]? in
                    switch item.pdu {
                    case .handleValueIndication(let attributeHandle, let value):
                        return try? record.bearer.sendIndication(handle: attributeHandle, value: value, now: now)
                    default:
                        return try? record.bearer.send(item.pdu)
                    }
                } ?? nil
                if let actions { performEnhancedBearer(actions, handle, cid) }
                continue
            }
            let actions: [ATTBearerAction]?
            switch item.pdu {
            case .handleValueIndication(let attributeHandle, let value):
                actions = try? connections[handle]?.session?.bearer.sendIndication(handle: attributeHandle, value: value, now: eventLoop.now)
            default:
                actions = try? connections[handle]?.session?.bearer.send(item.pdu)
            }
            if let actions { performBearer(actions, handle) }
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
        sessionDeadlines.earliest { [connections] session in connections[session.handle]?.session === session }
    }

    /// The timer fired: every link and bearer whose deadline passed handles its timeout.
    func sessionsTimedOut(now: StackInstant) {
        for handle in connections.keys.sorted() {
            if let deadline = connections[handle]?.session?.link.nextDeadline, deadline <= now,
               let actions = connections[handle]?.session?.link.handleTimeout(now: now) {
                performLink(actions, handle)
            }
            if let deadline = connections[handle]?.session?.bearer.nextDeadline, deadline <= now,
               let actions = connections[handle]?.session?.bearer.handleTimeout(now: now) {
                performBearer(actions, handle)
            }
            for cid in connections[handle]?.session?.enhanced.keys.sorted() ?? [] {
                guard let deadline = connections[handle]?.session?.enhanced[cid]?.bearer.nextDeadline, deadline <= now,
                      let actions = withEnhanced(handle, cid, { $0.bearer.handleTimeout(now: now) }) else { continue }
                performEnhancedBearer(actions, handle, cid)
            }
            if let deadline = connections[handle]?.session?.securityLink?.smp.nextDeadline, deadline <= now {
                let actions = withSecurityLink(handle) { $0.smp.handleTimeout(now: now) } ?? []
                performSMP(actions, handle)
            }
        }
    }
}
