public import ATT
import BluetoothCore
import L2CAP
public import GATT
public import BluetoothEngine

/// The GATT API of the host (Core 5.4 Vol 3 Part G): the local server's database and values, the client
/// procedures on each connection, ATT_MTU, and send-queue readiness. Callable from any thread; completions and
/// events run on the host's loop.
extension HostStack {
    // MARK: Server

    /// Replaces the local GATT database. Connections keep their MTU and security; the CCCD values they wrote are
    /// kept for characteristics whose CCCD handle still exists (a database that appends services keeps them all).
    /// Connected clients that enabled Service Changed indications get one for `changedRange` when given.
    public func setGATTDatabase(_ database: GATTDatabase, changedRange: ATTHandleRange? = nil,
                                completion: (@Sendable () -> Void)? = nil) {
        onLoop { [self] in
            replaceDatabase(database, changedRange: changedRange)
            completion?()
        }
    }

    /// Changes the local database in place (`body` runs on the loop with the current database) and completes
    /// with what `body` returned, e.g. the handles of an added service. On a thrown error nothing changes.
    public func modifyGATTDatabase<Value: Sendable>(
        _ body: @escaping @Sendable (inout GATTDatabase) throws(GATTDatabaseError) -> Value,
        completion: @escaping @Sendable (Result<Value, GATTDatabaseError>) -> Void
    ) {
        onLoop { [self] in
            var database = gattServer.database
            do throws(GATTDatabaseError) {
                let value = try body(&database)
                replaceDatabase(database, changedRange: nil)
                completion(.success(value))
            } catch {
                completion(.failure(error))
            }
        }
    }

    func replaceDatabase(_ database: GATTDatabase, changedRange: ATTHandleRange?) {
        let old = gattServer
        var server = GATTServer(database: database, maximumPreparedWrites: old.maximumPreparedWrites,
                                signatureVerifier: old.signatureVerifier)
        let cccds = database.services.flatMap(\.characteristics).compactMap { characteristic -> (UInt16, UInt16)? in
            characteristic.clientConfiguration.map { (characteristic.value, $0) }
        }
        for (handle, record) in connections {
            guard let session = record.session else { continue }
            let id = GATTConnectionID(handle)
            server.connect(id, security: session.security, mtu: old.mtu(for: id))
            for entry in session.bearers where entry.key != .fixed && entry.bearer.isOpen {
                server.openBearer(entry.key.gattBearer, mtu: entry.bearer.mtu, for: id, notifications: !entry.isInitiator)
            }
            for (valueHandle, descriptor) in cccds {
                let configuration = old.clientConfiguration(valueHandle: valueHandle, for: id)
                if !configuration.isEmpty { server.setClientConfiguration(configuration, descriptor: descriptor, for: id) }
            }
        }
        server.adoptDeferredRequests(from: old)
        gattServer = server
        if let changedRange { performServerOutbound(gattServer.serviceChanged(changedRange)) }
    }

    /// The local GATT server (read on the loop): values, CCCDs per connection, MTUs.
    public var localGATTServer: GATTServer { gattServer }

    /// Sets the stored value of the characteristic value `handle` and notifies or indicates it (cut to each
    /// connection's ATT_MTU − 3) to every subscribed connection, or only to those in `targets`. Completes with the
    /// connection handles it was sent to.
    ///
    /// With `requireReady` (CoreBluetooth's `updateValue` semantics), when a target connection's send queue is
    /// full nothing is sent or stored: the completion fails with ``HostError/Code/busy`` and
    /// ``HostEvent/readyToSend(handle:)`` follows when the queue has room.
    public func updateValue(_ value: [UInt8], handle: UInt16, to targets: Set<UInt16>? = nil, requireReady: Bool = false,
                            completion: (@Sendable (Result<[UInt16], HostError>) -> Void)? = nil) {
        // Called on the loop (the usual case, from an event handler): no job and no closure context per value.
        if eventLoop.inEventLoop {
            updateValueOnLoop(value, handle: handle, targets: targets, requireReady: requireReady, completion: completion)
        } else {
            eventLoop.execute { [self] in
                updateValueOnLoop(value, handle: handle, targets: targets, requireReady: requireReady, completion: completion)
            }
        }
    }

    /// ``updateValue(_:handle:to:requireReady:completion:)`` on the loop. The notifications are built once: planned
    /// first, checked against the send queues, then the value is stored and the same PDUs go out.
    func updateValueOnLoop(_ value: [UInt8], handle: UInt16, targets: Set<UInt16>?, requireReady: Bool,
                           completion: (@Sendable (Result<[UInt16], HostError>) -> Void)?) {
        guard lifecycle == .ready else {
            completion?(.failure(HostError(.notReady, "the host stack is not running")))
            return
        }
        // Through an inout access: a plain call of the server's non-mutating method copied the whole server (its
        // tables retained and released) once per value.
        var outbound = inPlace(&gattServer) { $0.notify(handle: handle, value: value) }
        if let targets { outbound = outbound.filter { targets.contains($0.connection.rawValue) } }
        if requireReady, outbound.contains(where: { !sendRoom($0.connection.rawValue) }) {
            let full = outbound.map(\.connection.rawValue).filter { !sendRoom($0) }
            for connection in full { connections[connection]?.session?.waitingForSendRoom = true }
            // The answer a sender paced by readiness gets once per connection event: built without Array's
            // description (its generic printing was 4% of a notifying process's CPU).
            let names = full.map { Dissection.hex16($0) }.joined(separator: ", ")
            completion?(.failure(HostError(.busy, "the send queue of [\(names)] is full")))
            return
        }
        gattServer.storeValue(value, handle: handle)
        performServerOutbound(outbound)
        completion?(.success(outbound.map(\.connection.rawValue)))
    }

    /// Makes the reads and writes of the values in `deferral.handles` requests the application answers later
    /// with ``respondToGATTRequest(connectionHandle:id:result:)`` (CoreBluetooth's `respond(to:withResult:)`);
    /// nil: the values' own handlers answer at once. The handler runs on the loop. See ``GATTDeferral``.
    public func setGATTDeferral(_ deferral: GATTDeferral?) {
        onLoop { [self] in gattServer.deferral = deferral }
    }

    /// Answers a deferred request (``GATTPendingRequest``): for a read, the value from the request's offset or an
    /// ATT error; for a write, success (any value) or an error. Ignored when the request is no longer pending (the
    /// connection ended, or it was answered).
    public func respondToGATTRequest(connectionHandle handle: UInt16, id: UInt64, result: Result<[UInt8], GATTAttributeError>) {
        onLoop { [self] in
            guard connections[handle]?.session != nil,
                  let bearer = gattServer.deferredRequest(id: id, on: GATTConnectionID(handle))?.bearer,
                  let reply = gattServer.respond(toDeferred: id, on: GATTConnectionID(handle), result: result)
            else { return }
            guard respond(reply.response, handle, ATTBearerKey(bearer)) else { return }
            for event in reply.events { emit(.gattServer(event)) }
            armTimer()
        }
    }

    /// Service Changed indications (Vol 3 Part G §7.1) for `range` to every connection that enabled them.
    public func indicateServiceChanged(_ range: ATTHandleRange) {
        onLoop { [self] in performServerOutbound(gattServer.serviceChanged(range)) }
    }

    /// Whether the connection's send queue is below ``HostConfiguration/sendQueueLimit`` (call on the loop).
    /// When it is not, ``HostEvent/readyToSend(handle:)`` follows once it is: CoreBluetooth's
    /// `canSendWriteWithoutResponse` and the `updateValue` result.
    public func isReadyToSend(connectionHandle handle: UInt16) -> Bool {
        guard connections[handle]?.session != nil else { return false }
        if sendRoom(handle) { return true }
        connections[handle]?.session?.waitingForSendRoom = true
        return false
    }

    /// ACL packets queued for the connection, plus K-frames of its EATT bearers waiting for the peer's L2CAP
    /// credits (notifications on an EATT bearer wait there first), below the limit.
    func sendRoom(_ handle: UInt16) -> Bool {
        var queued = outbound.queuedPacketCount(for: handle)
        if let session = connections[handle]?.session, session.bearers.count > 1 {
            for key in session.bearers.keys {
                if case .enhanced(let cid) = key { queued += session.link.queuedFrameCount(on: cid) ?? 0 }
            }
        }
        return queued < configuration.sendQueueLimit
    }

    // MARK: Client

    /// Runs a GATT client procedure on the connection (Vol 3 Part G §4). On the unenhanced bearer alone,
    /// procedures of one connection run one after the other, in call order; with Enhanced ATT bearers
    /// (`HostStack+EATT.swift`) each goes to the least busy bearer, so several run at once (one request
    /// outstanding per bearer) and may complete out of call order, except those given the same `lane`, which run
    /// one after another in call order (``GATTClientLane``). Fails with ``GATTClientError/bearerFailed(_:)``
    /// when the connection does not exist or ends first (reason: the HCI disconnection reason), or its bearer
    /// timed out or closed.
    public func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure, lane: GATTClientLane?,
                     completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        onLoop { [self] in startGATT(handle, procedure, lane: lane, completion: completion) }
    }

    /// Runs a GATT procedure on the least busy bearer of the connection (``gatt(connectionHandle:_:lane:completion:)``
    /// without a lane).
    public func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure,
                     completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        gatt(connectionHandle: handle, procedure, lane: nil, completion: completion)
    }

    /// The connection's ATT_MTU (23 until an exchange), nil for an unknown connection (read on the loop).
    public func attMTU(connectionHandle handle: UInt16) -> Int? {
        connections[handle]?.session?.bearers[.fixed]?.bearer.mtu
    }

    /// Sends our Exchange MTU Request now (when ``HostConfiguration/exchangesMTUOnConnect`` is off, or as
    /// peripheral). Completes with the ATT_MTU after the exchange; an exchange happens once per connection.
    public func exchangeMTU(connectionHandle handle: UInt16, completion: (@Sendable (Result<Int, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            let now = eventLoop.now
            guard let (id, actions) = withBearer(handle, .fixed, { $0.bearer.exchangeMTU(now: now) }) else {
                completion?(.failure(unknownConnection(handle)))
                return
            }
            connections[handle]?.session?.mtuExchangeRequest = id
            connections[handle]?.session?.mtuExchangeCompletion = completion
            performBearer(actions, handle, .fixed)
            armTimer()
        }
    }

    // MARK: Test hooks

    /// Drops every ATT request from the peer unanswered on this connection (to provoke its 30 s timeout).
    func ignoreATTRequests(connectionHandle handle: UInt16, _ ignore: Bool = true) {
        onLoop { [self] in connections[handle]?.session?.ignoresATTRequests = ignore }
    }
}
