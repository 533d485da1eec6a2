import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
public import L2CAP
public import BluetoothEngine

/// Enhanced ATT (Core 5.4 Vol 3 Part F §3.2.11, Part G §5.4, §7.2, §7.4): ATT bearers on L2CAP channels in
/// Enhanced Credit Based Flow Control mode, SPSM 0x0027, next to the unenhanced bearer on CID 0x0004.
///
/// - Server side: every connection's link accepts EATT channels (``HostConfiguration/enhancedATTBearerCount``
///   above 0), only on an encrypted link: otherwise *Insufficient Encryption* (0x0008) when the peer is bonded,
///   else *Insufficient Authentication* (0x0005), as for encrypted channel servers.
/// - Client side, automatic as iOS does: once the link is encrypted, the client reads the peer's Server Supported
///   Features (0x2B3A); when bit 0 (EATT) is set it writes its Client Supported Features (0x2B29: EATT and
///   Multiple Handle Value Notifications, kept with what the server had) and opens the bearers in one L2CAP
///   Credit Based Connection Request.
/// - Each bearer is an entry of the session's bearer table (``ATTBearerKey/enhanced(_:)``) beside the fixed one:
///   an ``ATTBearer`` with ATT_MTU = min(local, remote L2CAP MTU) and its own ``GATTClient``, driven by the same
///   `performBearer` / `performClient` as the fixed bearer (`HostStack+Wiring.swift`). Procedures
///   (``HostStack/gatt(connectionHandle:_:completion:)``) go to the least busy bearer we opened, so several run in
///   parallel, one request outstanding per bearer; those of one ``GATTClientLane`` stay on one bearer while any of
///   them runs, so they complete in call order (OpenCoreBluetooth: one lane per manager); writes without response
///   stay on the unenhanced bearer (send-queue readiness and order). The server answers on the bearer a request
///   came on and notifies/indicates on the first bearer the peer opened (its client's), else on the unenhanced one.
/// - A bearer's ATT transaction timeout closes its channel, not the link; a closed bearer fails the procedure it
///   was running and hands those queued behind to the connection's other bearers. An Insufficient Authentication
///   answer on a bearer is held, the link secured, and the request retried on the same bearer (as on the
///   unenhanced one).
extension HostStack {
    /// The SPSM of the Enhanced ATT bearer (Assigned Numbers, L2CAP SPSM 0x0027).
    public static let enhancedATTPSM: UInt16 = 0x0027

    /// The MPS of our EATT channels: an LE ACL payload of 251 octets less the 4-octet L2CAP header.
    public static let enhancedATTMPS: UInt16 = 247
    /// The credits we give the peer on each EATT channel (topped up automatically).
    static let enhancedATTCredits: UInt16 = 16

    // MARK: Public API

    /// The connection's Enhanced ATT bearers: local CID → ATT_MTU (read on the loop).
    public func enhancedATTBearers(connectionHandle handle: UInt16) -> [L2CAPChannelIdentifier: Int] {
        guard let session = connections[handle]?.session else { return [:] }
        var bearers: [L2CAPChannelIdentifier: Int] = [:]
        for entry in session.bearers where entry.bearer.isOpen {
            if case .enhanced(let cid) = entry.key { bearers[cid] = entry.bearer.mtu }
        }
        return bearers
    }

    /// Opens `count` (1...5) Enhanced ATT bearers now, whatever the peer's Server Supported Features say (the
    /// automatic path waits for encryption and reads them first). Completes with the bearers that opened, or
    /// fails when none did (``HostError/l2capRefusal`` holds the peer's result, e.g. insufficient encryption).
    public func openEnhancedATTBearers(connectionHandle handle: UInt16, count: Int,
                                       completion: (@Sendable (Result<[L2CAPChannelIdentifier], HostError>) -> Void)? = nil) {
        onLoop { [self] in
            guard let session = connections[handle]?.session else {
                completion?(.failure(unknownConnection(handle)))
                return
            }
            do {
                let (cids, actions) = try session.link.connectEnhanced(
                    spsm: Self.enhancedATTPSM, count: count, mtu: configuration.enhancedATTMTU, mps: Self.enhancedATTMPS,
                    initialCredits: Self.enhancedATTCredits, now: eventLoop.now)
                session.enhancedOpens.append(ConnectionSession.EnhancedOpen(requested: cids, waiting: Set(cids), completion: completion))
                session.enhancedPending.formUnion(cids)
                performLink(actions, handle)
                armTimer()
            } catch {
                completion?(.failure(HostError(.invalidParameters, "\(error)")))
            }
        }
    }

    /// Raises the MTU (and sets the MPS) of Enhanced ATT bearers we hold, with an L2CAP Credit Based Reconfigure
    /// Request (Vol 3 Part A §4.27); their ATT_MTU follows once the peer accepted. Completes with the result.
    public func reconfigureEnhancedATT(connectionHandle handle: UInt16, channels: [L2CAPChannelIdentifier],
                                       mtu: UInt16, mps: UInt16 = HostStack.enhancedATTMPS,
                                       completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            guard let session = connections[handle]?.session else {
                completion?(.failure(unknownConnection(handle)))
                return
            }
            guard channels.allSatisfy({ session.bearers.contains(.enhanced($0)) }) else {
                completion?(.failure(HostError(.invalidParameters, "not Enhanced ATT bearers: \(channels)")))
                return
            }
            do {
                let actions = try session.link.reconfigure(channels: channels, mtu: mtu, mps: mps, now: eventLoop.now)
                if let first = channels.first, let completion { session.reconfigures[first] = completion }
                performLink(actions, handle)
                armTimer()
            } catch {
                completion?(.failure(HostError(.invalidParameters, "\(error)")))
            }
        }
    }

    /// Sends one Multiple Handle Value Notification (Vol 3 Part F §3.4.7.4, Part G §4.10.2) of these values to
    /// the connection: as many as fit its notification bearer's ATT_MTU, skipping characteristics it did not
    /// subscribe to. Fails when the client did not set bit 2 of Client Supported Features or fewer than two
    /// values fit.
    public func notifyMultiple(_ values: [(handle: UInt16, value: [UInt8])], connectionHandle handle: UInt16,
                               completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        let values = values.map { HandleValue(handle: $0.handle, value: $0.value) }
        onLoop { [self] in
            guard connections[handle]?.session != nil else {
                completion?(.failure(unknownConnection(handle)))
                return
            }
            guard let outbound = gattServer.multipleNotification(values.map { ($0.handle, $0.value) }, to: GATTConnectionID(handle)) else {
                completion?(.failure(HostError(.invalidParameters, "the client does not take Multiple Handle Value Notifications of these values")))
                return
            }
            performServerOutbound([outbound])
            completion?(.success(()))
        }
    }

    // MARK: Server side

    /// The EATT server registered on every new connection's link.
    func enhancedATTServer(_ handle: UInt16) -> L2CAPChannelServer {
        L2CAPChannelServer(
            psm: Self.enhancedATTPSM, mtu: configuration.enhancedATTMTU, mps: Self.enhancedATTMPS,
            initialCredits: Self.enhancedATTCredits,
            acceptPolicy: .decide { [unowned self] _ in encryptedLinkResult(handle) },
            modes: [.enhancedCreditBased])
    }

    /// Successful on an encrypted link; otherwise Insufficient Encryption (0x0008) for a bonded peer (it can
    /// encrypt and ask again), else Insufficient Authentication (0x0005: pair first). On the loop.
    func encryptedLinkResult(_ handle: UInt16) -> L2CAPConnectionResult {
        guard let connection = connections[handle]?.connection, connection.isEncrypted else {
            let bonded = connections[handle]?.session?.securityLink?.identity.flatMap { securityState.bonds[$0] } != nil
            return bonded ? .allConnectionsRefusedInsufficientEncryption : .allConnectionsRefusedInsufficientAuthentication
        }
        return .successful
    }

    // MARK: Client side: automatic opening

    /// Encryption Change (enabled): reads the peer's Server Supported Features once per connection and opens
    /// the bearers when it supports EATT.
    func enhancedATTLinkEncrypted(_ handle: UInt16) {
        guard configuration.enhancedATTBearerCount > 0, configuration.opensEnhancedATTAutomatically,
              let session = connections[handle]?.session, session.enhancedProgress == .idle else { return }
        session.enhancedProgress = .discovering
        let everything = ATTHandleRange(start: 0x0001, end: 0xFFFF)
        startGATT(handle, .readUsingCharacteristicUUID(uuid: GATTUUID.serverSupportedFeatures, range: everything)) { [self] result in
            guard case .success(.handleValues(let values)) = result, let first = values.first?.value.first,
                  GATTServerSupportedFeatures(rawValue: first).contains(.enhancedATT) else {
                connections[handle]?.session?.enhancedProgress = .settled
                return
            }
            startGATT(handle, .readUsingCharacteristicUUID(uuid: GATTUUID.clientSupportedFeatures, range: everything)) { [self] result in
                guard case .success(.handleValues(let values)) = result, let features = values.first else {
                    // A server offering EATT must have Client Supported Features (Part G §7.4); try anyway.
                    openEnhancedBearersAutomatically(handle)
                    return
                }
                let ours: GATTClientSupportedFeatures = [.enhancedATT, .multipleHandleValueNotifications]
                let value = [(features.value.first ?? 0) | ours.rawValue]
                startGATT(handle, .writeCharacteristicValue(handle: features.handle, value: value)) { [self] _ in
                    openEnhancedBearersAutomatically(handle)
                }
            }
        }
    }

    private func openEnhancedBearersAutomatically(_ handle: UInt16) {
        guard let session = connections[handle]?.session else { return }
        let count = min(max(configuration.enhancedATTBearerCount, 1), L2CAPLink.maximumChannelsPerRequest)
        session.enhancedProgress = .settled
        guard let (cids, actions) = try? session.link.connectEnhanced(
            spsm: Self.enhancedATTPSM, count: count, mtu: configuration.enhancedATTMTU, mps: Self.enhancedATTMPS,
            initialCredits: Self.enhancedATTCredits, now: eventLoop.now)
        else { return }
        session.enhancedPending.formUnion(cids)
        performLink(actions, handle)
        armTimer()
    }

    // MARK: Link actions for EATT channels

    /// Whether `info` is an EATT channel: ours (requested by us) or accepted by our EATT server.
    func isEnhancedATTChannel(_ info: L2CAPChannelInfo, _ session: ConnectionSession) -> Bool {
        guard info.psm == Self.enhancedATTPSM, info.mode == .enhancedCreditBased else { return false }
        if info.isInitiator { return session.enhancedPending.contains(info.localCID) }
        return configuration.enhancedATTBearerCount > 0
    }

    /// Whether the local CID names one of our EATT requests still waiting.
    func isPendingEnhancedATT(_ cid: L2CAPChannelIdentifier, _ session: ConnectionSession) -> Bool {
        session.enhancedPending.contains(cid)
    }

    func enhancedBearerOpened(_ info: L2CAPChannelInfo, _ handle: UInt16) {
        guard let session = connections[handle]?.session else { return }
        let mtu = Int(min(info.localMTU, info.remoteMTU))
        session.bearers.insert(SessionBearer(
            key: .enhanced(info.localCID), isInitiator: info.isInitiator, bearer: ATTBearer(enhancedMTU: mtu),
            client: GATTClient(mtu: mtu, signer: session.bearers[.fixed]?.client.signer)))
        gattServer.openBearer(GATTBearerID(info.localCID.rawValue), mtu: mtu, for: GATTConnectionID(handle),
                              notifications: !info.isInitiator)
        if info.isInitiator { enhancedRequestSettled(info.localCID, handle) }
        emit(.enhancedATTBearerOpened(handle: handle, channel: info.localCID, mtu: mtu))
    }

    /// One of our EATT channels opened or failed: the automatic progress and `openEnhancedATTBearers`
    /// completions advance.
    func enhancedRequestSettled(_ cid: L2CAPChannelIdentifier, _ handle: UInt16, failure: L2CAPChannelConnectFailure? = nil) {
        guard let session = connections[handle]?.session else { return }
        session.enhancedPending.remove(cid)
        for index in session.enhancedOpens.indices.reversed() {
            guard session.enhancedOpens[index].waiting.remove(cid) != nil else { continue }
            if let failure { session.enhancedOpens[index].failure = failure }
            guard session.enhancedOpens[index].waiting.isEmpty else { continue }
            let open = session.enhancedOpens.remove(at: index)
            let opened = open.requested.filter { session.bearers.contains(.enhanced($0)) }
            if opened.isEmpty {
                var error = HostError(.commandFailed, "no Enhanced ATT bearer opened: \(open.failure.map { "\($0)" } ?? "refused")")
                if case .refused(let result)? = open.failure { error.l2capRefusal = result }
                open.completion?(.failure(error))
            } else {
                open.completion?(.success(opened))
            }
        }
    }

    /// An EATT channel closed (either side, violation): its bearer ends, the procedure it was running and its
    /// indications fail, the procedures queued behind go to the connection's other bearers, the server forgets it.
    func enhancedBearerClosed(_ cid: L2CAPChannelIdentifier, _ handle: UInt16, reason: String) {
        guard let session = connections[handle]?.session, var entry = session.bearers.remove(.enhanced(cid)) else { return }
        gattServer.closeBearer(entry.key.gattBearer, for: GATTConnectionID(handle))
        let moved = entry.client.takeQueuedProcedures().compactMap { queued in
            entry.completions.removeValue(forKey: queued.id).map { (queued.procedure, $0) }
        }
        closeBearer(&entry, handle, reason: reason, failure: .other("Enhanced ATT bearer closed: \(reason)"))
        emit(.enhancedATTBearerClosed(handle: handle, channel: cid))
        for (procedure, completion) in moved { startGATT(handle, procedure, completion: completion) }
    }

    // MARK: Procedures over several bearers

    /// Where a new procedure runs. Writes without response always on the fixed bearer (send-queue readiness and
    /// order); a procedure of a `lane` with procedures running goes where they run (to the fixed bearer when
    /// theirs closed); otherwise the least busy of the fixed bearer and the Enhanced ATT bearers we opened (an
    /// Enhanced one on a tie).
    func bearerForProcedure(_ procedure: GATTProcedure, lane: GATTClientLane?, _ session: ConnectionSession) -> ATTBearerKey {
        switch procedure {
        case .writeWithoutResponse, .signedWriteWithoutResponse: return .fixed
        default: break
        }
        if let lane, let (bearer, _) = session.lanes[lane] {
            // A closed bearer handed its procedures to the others: the lane goes on from the fixed one.
            return session.bearers[bearer]?.bearer.isOpen == true ? bearer : .fixed
        }
        var best = ATTBearerKey.fixed
        var load = Int.max
        for entry in session.bearers where entry.key == .fixed || (entry.isInitiator && entry.bearer.isOpen) {
            let pending = entry.client.pendingProcedureCount
            if pending < load || (pending == load && best == .fixed) {
                best = entry.key
                load = pending
            }
        }
        return best
    }

    /// Runs a GATT procedure on the connection's best bearer, or its lane's (on the loop).
    func startGATT(_ handle: UInt16, _ procedure: GATTProcedure, lane: GATTClientLane? = nil,
                   completion: @escaping ConnectionSession.GATTCompletion) {
        guard let session = connections[handle]?.session else {
            completion(.failure(.bearerFailed(.disconnected(reason: nil))))
            return
        }
        let chosen = bearerForProcedure(procedure, lane: lane, session)
        var completion = completion
        let ordered: Bool = switch procedure {
        case .writeWithoutResponse, .signedWriteWithoutResponse: false
        default: true
        }
        if let lane, ordered {
            session.lanes[lane] = (chosen, (session.lanes[lane]?.running ?? 0) + 1)
            completion = { [weak session, inner = completion] result in
                if let session, let entry = session.lanes[lane] {
                    session.lanes[lane] = entry.running > 1 ? (entry.bearer, entry.running - 1) : nil
                }
                inner(result)
            }
        }
        guard let actions = withBearer(handle, chosen, { entry -> [GATTClientAction] in
            let (id, actions) = entry.client.enqueue(procedure)
            entry.completions[id] = completion
            return actions
        }) else { return }
        performClient(actions, handle, chosen)
        armTimer()
    }
}

/// A handle and a value, Sendable across the hop onto the loop.
private struct HandleValue: Sendable {
    var handle: UInt16
    var value: [UInt8]
}
