import ATT
import BluetoothCore
public import BluetoothRuntime
import DequeModule
import GATT
public import HCI
public import HCITransport
import L2CAP
public import BluetoothEngine

/// The host stack over one controller: the HCI command pipe with credits and timeouts (Core 5.4 Vol 4 Part E
/// §4.4), controller initialisation (§7.3, §7.4, §7.8), the connection table, ACL flow control and
/// fragmentation / reassembly (§4.1.1, §5.4.2), and GAP (Vol 3 Part C §9: advertising, scanning, connecting,
/// connection parameter updates, disconnection; in `HostStack+GAP.swift`).
///
/// Concurrency: every piece of state is confined to ``eventLoop``. Public methods may be called from any thread;
/// they hop onto the loop (and run at once when already on it). Completions, the event handler and the L2CAP
/// handler are called on the loop. Transport callbacks hop onto the loop in arrival order, so an LE Connection
/// Complete is always processed (and the connection created) before ACL data that followed it.
///
/// Each connection carries L2CAP, ATT and GATT (Vol 3 Parts A, F, G; `HostStack+Wiring.swift`): the GATT API
/// (`HostStack+GATT.swift`: ``setGATTDatabase(_:changedRange:completion:)``, ``updateValue(_:handle:to:requireReady:completion:)``,
/// ``gatt(connectionHandle:_:completion:)``, ``attMTU(connectionHandle:)``, ``isReadyToSend(connectionHandle:)``) and
/// the L2CAP API (`HostStack+L2CAP.swift`: credit-based channels, Connection Parameter Update). Properties documented
/// "read on the loop" must be read from a job on ``eventLoop`` (or a completion / event handler).
///
/// Driving it: ``setEventHandler(_:)`` (and, for raw L2CAP only, ``setL2CAPHandler(_:)``), then
/// ``start(completion:)``; then GAP, GATT and L2CAP calls, ``sendL2CAP(connectionHandle:pdu:completion:)`` and raw
/// ``send(_:completion:)``; ``shutdown()`` at the end.
public final class HostStack: @unchecked Sendable {
    public let eventLoop: any EventLoop
    public let configuration: HostConfiguration
    let transport: any HCITransport
    /// The logger of each layer (`HostStack+Logging.swift`).
    let loggers: HostLoggers

    enum Lifecycle { case idle, starting, ready, closed }

    /// One row of the connection table. A class, not a struct: every ACL packet and every action of the
    /// connection's machines reads or changes `connections[handle]?.session?...`, and through a struct each of
    /// those reads copied the whole record (its L2CAP link, ATT bearer, GATT client and completion tables), which
    /// was most of the notification benchmark's time. The table owns its records; nothing else keeps one.
    final class ConnectionRecord {
        #if !DEBUG
        @exclusivity(unchecked)
        #endif
        var connection: Connection
        var pendingUpdates: Deque<(Result<Connection, HostError>) -> Void> = []
        var pendingDisconnects: [(Result<HCIStatus, HostError>) -> Void] = []
        #if !DEBUG
        @exclusivity(unchecked)
        #endif
        /// L2CAP, ATT and GATT of the connection (nil when an L2CAP handler takes the raw PDUs).
        var session: ConnectionSession?
        #if !DEBUG
        @exclusivity(unchecked)
        #endif
        /// A machine asked for the link to be dropped and the Disconnect was sent.
        var droppingLink = false
        /// The PHYs and maximum payload octets as the controller last reported them (§7.7.65.12, §7.7.65.7).
        var phys: (tx: LEPhy, rx: LEPhy) = (.le1M, .le1M)
        var payloadOctets: (tx: UInt16, rx: UInt16) = (27, 27)
        /// The resolvable private addresses the controller used on the air, ours and the peer's (LE Enhanced
        /// Connection Complete, §7.7.65.10), when it did our privacy: SMP's addresses are these (Vol 3 Part H §2.2.8).
        var localAirAddress: BluetoothAddress?
        var peerAirAddress: BluetoothAddress?

        init(connection: Connection) {
            self.connection = connection
        }
    }

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var lifecycle: Lifecycle = .idle
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var pipe: CommandPipe
    var info = ControllerInfo()
    /// Initialisation read a usable LE (or shared) ACL buffer size.
    var leBuffersRead = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var outbound = ACLOutbound(totalBuffers: 1)
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var fragmenter: ACLFragmenter?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var reassembler: ACLReassembler
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var connections: [UInt16: ConnectionRecord] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The connects asked for and not completed, oldest first (HostStack+Connecting.swift).
    var connectRequests: [ConnectRequest] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The controller's one initiation (LE Create Connection), to one peer or to those on the Filter Accept List.
    var pendingConnect: PendingConnect?
    /// The Filter Accept List as the host wrote it (Core 5.4 Vol 4 Part E §7.8.15–§7.8.17).
    var acceptList: [BluetoothAddress] = []
    /// How many the controller's Filter Accept List holds (§7.8.14): nil until asked, 0 when it cannot be used
    /// (pending connects then go to the controller one at a time).
    var acceptListSize: Int?
    var readingAcceptListSize = false
    /// Filter Accept List commands failed in a row for a passing reason (in use, no answer in time); at
    /// ``HostStack/acceptListAttempts`` the list is given up (``acceptListSize`` 0).
    var acceptListFailures = 0
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Connections whose Disconnect was accepted, and when their Disconnection Complete is overdue.
    var disconnectDeadlines: [UInt16: StackInstant] = [:]
    var nextOperationID: UInt64 = 0
    /// A cancelled connect's Connection Complete (Unknown Connection Identifier) is still to come; swallow it.
    var expectsCancelledConnectionComplete = false
    var scanMerger: ScanReportMerger
    var isScanning = false
    var isAdvertising = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Opcodes the controller answered with Unknown Command: later uses fail at once instead of asking again.
    var unknownOpcodes: Set<HCIOpcode> = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var timer: ScheduledJob?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Writes and the timer's re-arming held while a batch of received frames is handled (``sendFrame(_:)``).
    var receiveBatch = ReceiveBatch()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var timerDeadline: StackInstant?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var eventHandler: ((HostEvent) -> Void)?
    /// The handlers added with ``addEventHandler(_:)``, called after ``eventHandler``.
    let eventHandlers = StackEventHandlers()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var l2capHandler: ((Connection, [UInt8]) -> Void)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var stats = HostStatistics()
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The GATT server every connection shares (its database, per-connection CCCDs, MTU and security).
    var gattServer = GATTServer(database: GATTDatabase())
    /// Credit-based channel servers, registered on every link.
    var channelServers: [UInt16: L2CAPChannelServer] = [:]
    /// The PSMs of ``channelServers`` that accept only on encrypted links.
    var encryptedChannelServers: Set<UInt16> = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Bonds, our identity and the RPA timer (`HostStack+Security.swift`).
    var securityState = SecurityState()
    /// The sessions' earliest deadline, kept up to date as they change.
    let sessionDeadlines = SessionDeadlines()

    public init(transport: any HCITransport, eventLoop: any EventLoop, configuration: HostConfiguration = HostConfiguration()) {
        self.transport = transport
        self.eventLoop = eventLoop
        self.configuration = configuration
        loggers = HostLoggers(configuration.makeLogger)
        pipe = CommandPipe(timeout: configuration.commandTimeout)
        // Every connection may be in the middle of a PDU at once (a central with a hundred links receiving long
        // notifications: `blue bench connections` lost data past 64 links with the reassembler's default bound).
        // ACL for a handle not in the table is dropped before reassembly, so the pending PDUs are bounded by the
        // connections the controller made; the bound here is every valid handle (0x0000...0x0EFF, Vol 4 Part E §5.4.2).
        reassembler = ACLReassembler(maximumPDULength: configuration.maximumReassembledPDULength, maximumPendingHandles: 0x0F00)
        scanMerger = ScanReportMerger(capacity: configuration.maximumScanCacheEntries)
    }

    // MARK: Owner hooks

    /// Sets the handler of ``HostEvent``s (called on the loop, in order), replacing the one set before; the
    /// handlers of ``addEventHandler(_:)`` are called after it.
    public func setEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) {
        onLoop { [self] in eventHandler = handler }
    }

    /// Adds a handler of every ``HostEvent`` from the next one on (called on the loop, in the order handlers were
    /// added); callable from any thread.
    @discardableResult
    public func addEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) -> StackEventSubscription {
        eventHandlers.add(handler)
    }

    /// Removes every handler added with ``addEventHandler(_:)`` (the owner is done with the stack).
    public func removeEventHandlers() {
        eventHandlers.removeAll()
    }

    /// Sets the handler of complete L2CAP PDUs received (basic header included), per connection, called on the
    /// loop. Raw mode: with a handler set, connections made afterwards get no L2CAP / ATT / GATT of their own.
    public func setL2CAPHandler(_ handler: @escaping @Sendable (Connection, [UInt8]) -> Void) {
        onLoop { [self] in l2capHandler = handler }
    }

    /// Runs `body` on the loop: now when already there, else enqueued.
    func onLoop(_ body: @escaping @Sendable () -> Void) {
        if eventLoop.inEventLoop { body() } else { eventLoop.execute(body) }
    }

    func emit(_ event: HostEvent) {
        logEvent(event)
        eventHandler?(event)
        eventHandlers.deliver(event)
    }

    // MARK: Lifecycle

    /// Starts the transport and initialises the controller (see `HostStack+Initialisation.swift`). The completion
    /// gets what was learned about the controller, or why it could not be used.
    public func start(completion: @escaping @Sendable (Result<ControllerInfo, HostError>) -> Void) {
        onLoop { [self] in
            guard lifecycle == .idle else {
                completion(.failure(HostError(.notReady, "the host stack was already started")))
                return
            }
            lifecycle = .starting
            let loop = eventLoop
            // Captured as a `weak let`: a `[weak self]` capture is a mutable box, and each read of it in the
            // per-batch closures was checked for exclusive access at run time.
            weak let host = self
            do {
                // One job on the loop per read of the transport, not per frame, run by the reader's thread itself
                // when the loop allows it (issue 31: a thread wake-up less per batch).
                try transport.start(
                    onFrames: { frames in loop.executeHandingOver { host?.receive(frames) } },
                    onClose: { error in loop.execute { host?.transportClosed(error) } })
            } catch {
                lifecycle = .closed
                completion(.failure(HostError(.transportFailed, "\(transport.name): \(error)")))
                return
            }
            initialise(completion: completion)
        }
    }

    /// Closes the transport and fails everything pending with ``HostError/Code/notReady``.
    public func shutdown() {
        onLoop { [self] in
            guard lifecycle != .closed else { return }
            tearDown(HostError(.notReady, "the host stack was shut down"))
            flushWrites()
            transport.close()
        }
    }

    func transportClosed(_ error: HCITransportError?) {
        guard lifecycle != .closed else { return }
        let failure = HostError(.transportFailed, "\(transport.name) closed: \(error.map { "\($0)" } ?? "by this side")")
        emit(.controllerError(failure))
        tearDown(failure)
    }

    /// Ends everything: state is cleared first, then completions are called.
    func tearDown(_ error: HostError) {
        lifecycle = .closed
        timer?.cancel()
        timer = nil
        timerDeadline = nil
        let commands = pipe.removeAll()
        let sends = outbound.removeAll()
        let records = connections.values
        connections = [:]
        for record in records { record.session?.isOpen = false }
        reassembler.reset()
        let requests = connectRequests
        connectRequests = []
        pendingConnect = nil
        disconnectDeadlines = [:]
        scanMerger.reset()
        isScanning = false
        isAdvertising = false
        for completion in commands { completion(.failure(error)) }
        for completion in sends { completion(.failure(error)) }
        for record in records {
            for completion in record.pendingUpdates { completion(.failure(error)) }
            for completion in record.pendingDisconnects { completion(.failure(error)) }
        }
        for request in requests { finish(request, .failure(error)) }
        for record in records {
            closeSession(record.session, handle: record.connection.handle, reason: .connectionTerminatedByLocalHost, error: error)
        }
    }

    // MARK: Commands

    /// Sends any HCI command through the pipe (credits, timeout) and completes with its return parameters
    /// (`.status(.success)` for a command answered by Command Status). An error status fails the command.
    public func send(_ command: HCICommand,
                     completion: @escaping @Sendable (Result<HCIReturnParameters, HostError>) -> Void) {
        onLoop { [self] in self.command(command, completion) }
    }

    /// Queues a command (on the loop).
    func command(_ command: HCICommand, timeout: Duration? = nil, _ completion: @escaping CommandPipe.Completion) {
        guard lifecycle == .starting || lifecycle == .ready else {
            completion(.failure(HostError(.notReady, "\(command.name): the host stack is not running")))
            return
        }
        if unknownOpcodes.contains(command.opcode) {
            completion(.failure(.command(command.opcode, failedWith: .unknownCommand)))
            return
        }
        pipe.enqueue(command, timeout: timeout, completion: completion)
        pumpCommands()
    }

    /// Sends what the credits allow (this also starts or ends a credit starvation) and re-arms the timer. Runs
    /// after every command, answer and timer firing.
    func pumpCommands() {
        let now = eventLoop.now
        while let command = pipe.takeSendable(now: now) {
            logSent(command)
            sendFrame(H4Frame(type: .command, packet: command.encode()))
        }
        armTimer()
    }

    /// Sends a frame to the controller: at once, or while a batch of received frames is being handled, at the end of
    /// the batch together with everything else it caused (``receive(_:)-([H4Frame])``: one write per batch).
    func sendFrame(_ frame: H4Frame) {
        if receiveBatch.isCollecting {
            receiveBatch.frames.append(frame)
            return
        }
        write([frame])
    }

    /// Sends what the batch collected, in order.
    func flushWrites() {
        guard !receiveBatch.frames.isEmpty else { return }
        let frames = receiveBatch.frames
        receiveBatch.frames.removeAll(keepingCapacity: true)
        write(frames)
    }

    private func write(_ frames: [H4Frame]) {
        do {
            try transport.send(frames: frames)
        } catch {
            // The transport reports its end through onClose as well; make sure the stack stops either way.
            eventLoop.execute { [weak self] in self?.transportClosed(error) }
        }
    }

    // MARK: Timer (one, for the earliest deadline)

    func armTimer() {
        guard lifecycle != .closed else { return }
        // In a batch of received frames, once at its end (``receive(_:)-([H4Frame])``), not after every action.
        if receiveBatch.isCollecting {
            receiveBatch.timerDue = true
            return
        }
        loadSecurityIfNeeded()
        // Runs after every batch of packets and every owner's call: the earliest of several without building an array.
        func earlier(_ first: StackInstant?, _ second: StackInstant?) -> StackInstant? {
            guard let first else { return second }
            guard let second else { return first }
            return min(first, second)
        }
        let deadline = earlier(
            earlier(earlier(pipe.nextDeadline, pendingConnect?.deadline), earlier(sessionsNextDeadline, securityNextDeadline)),
            earlier(earlier(disconnectNextDeadline, pendingConnect?.retryAt), connectRequestsNextDeadline))
        if let timer, !timer.isCancelled, deadline == timerDeadline { return }
        timer?.cancel()
        timer = nil
        timerDeadline = deadline
        guard let deadline else { return }
        timer = eventLoop.schedule(at: deadline) { [weak self] in self?.timerFired() }
    }

    func timerFired() {
        timer = nil
        timerDeadline = nil
        guard lifecycle != .closed else { return }
        let now = eventLoop.now
        // Commands in flight with no answer, or waiting through a credit starvation: each timed-out command and
        // each starvation is reported once, then every failed command completes.
        let expiry = pipe.expire(now: now)
        for error in expiry.reports { emit(.controllerError(error)) }
        for (completion, error) in expiry.failed { completion(.failure(error)) }
        if let pending = pendingConnect, let deadline = pending.deadline, deadline <= now {
            connectTimedOut()
        }
        if let pending = pendingConnect, let retryAt = pending.retryAt, retryAt <= now {
            retryConnect(pending)
        }
        connectRequestsTimedOut(now: now)
        sessionsTimedOut(now: now)
        disconnectsTimedOut(now: now)
        securityTimerFired(now: now)
        pumpCommands()
    }

    // MARK: Input

    /// The frames one read of the transport brought: handled in order; what they make the host send (credits
    /// refilled, notifications a readiness event lets out, answers) leaves in one write after the last.
    func receive(_ frames: [H4Frame]) {
        let outermost = !receiveBatch.isCollecting
        receiveBatch.isCollecting = true
        for frame in frames { receive(frame) }
        guard outermost else { return }
        receiveBatch.isCollecting = false
        if receiveBatch.timerDue {
            receiveBatch.timerDue = false
            armTimer()
        }
        flushWrites()
    }

    func receive(_ frame: H4Frame) {
        guard lifecycle == .starting || lifecycle == .ready else { return }
        switch frame.type {
        case .event:
            let event: HCIEvent
            do {
                event = try HCIEvent(decoding: frame.packet)
            } catch {
                undecodableEvent(frame.packet, error)
                return
            }
            logReceived(event)
            handle(event)
        case .aclData:
            logACL(frame, sent: false)
            receiveACL(frame)
        default:
            stats.ignoredFrames += 1
        }
    }

    /// An event that does not decode. A Command Complete still gives its credits and fails its command.
    func undecodableEvent(_ packet: [UInt8], _ error: DecodeError) {
        stats.undecodableEvents += 1
        let failure = HostError(.protocolError, "undecodable event \(Hex.encode(Array(packet.prefix(8))))...: \(error)")
        emit(.controllerError(failure))
        if packet.count >= 5, packet[0] == HCIEventCode.commandComplete.rawValue {
            let opcode = HCIOpcode(UInt16(packet[3]) | UInt16(packet[4]) << 8)
            if let (completion, commandError) = pipe.receiveMalformed(opcode: opcode, credits: packet[2], reason: "\(error)") {
                completion(.failure(commandError))
            }
            stats.unmatchedCommandResponses = pipe.unmatchedResponses
            pumpCommands()
        }
    }

    func handle(_ event: HCIEvent) {
        switch event {
        case .commandComplete, .commandStatus:
            if let (completion, result) = pipe.receive(event) {
                if case .failure(let error) = result, error.status == .unknownCommand, let opcode = error.opcode {
                    unknownOpcodes.insert(opcode)
                }
                completion(result)
            }
            stats.unmatchedCommandResponses = pipe.unmatchedResponses
            pumpCommands()
        case .disconnectionComplete(let status, let handle, let reason):
            if status == .success {
                closeConnection(handle, reason: reason)
            } else if let record = connections[handle] {
                let waiting = record.pendingDisconnects
                record.pendingDisconnects = []
                let error = HostError(.commandFailed, "Disconnection Complete failed: \(status)", status: status)
                for completion in waiting { completion(.failure(error)) }
            }
        case .numberOfCompletedPackets(let entries):
            for entry in entries { outbound.completed(handle: entry.handle, count: Int(entry.count)) }
            stats.unexpectedCompletedPackets = outbound.unexpectedCompletions
            pumpACL()
        case .encryptionChange(let status, let handle, let enabled),
             .encryptionChangeV2(let status, let handle, let enabled, _):
            if status == .success, connections[handle] != nil {
                connections[handle]?.connection.isEncrypted = enabled != 0
                var security = connections[handle]?.session?.security ?? .open
                security.encrypted = enabled != 0
                if enabled == 0 { security.keySize = 0 } else if security.keySize == 0 { security.keySize = 16 }
                connections[handle]?.session?.security = security
                gattServer.setSecurity(security, for: GATTConnectionID(handle))
            }
            emit(.encryptionChanged(handle: handle, status: status, enabled: enabled != 0))
            securityEncryptionChanged(handle: handle, status: status, enabled: enabled != 0)
            if status == .success, enabled != 0 { enhancedATTLinkEncrypted(handle) }
        case .encryptionKeyRefreshComplete(let status, let handle):
            emit(.encryptionKeyRefreshed(handle: handle, status: status))
            if status == .success { securityEncryptionChanged(handle: handle, status: status, enabled: true) }
        case .hardwareError(let code):
            emit(.controllerError(HostError(.protocolError, "controller hardware error \(Dissection.hex8(code))")))
        case .dataBufferOverflow(let linkType):
            emit(.controllerError(HostError(.protocolError, "controller data buffer overflow (link type \(linkType))")))
        case .leMeta(let meta):
            handle(meta)
        case .readRemoteVersionInformationComplete, .vendor, .unknown:
            stats.ignoredEvents += 1
        }
    }

    func handle(_ meta: HCILEMetaEvent) {
        switch meta {
        case .connectionComplete(let complete):
            connectionComplete(complete)
        case .enhancedConnectionComplete(let enhanced), .enhancedConnectionCompleteV2(let enhanced, _, _):
            connectionComplete(enhanced.connection, localRPA: enhanced.localResolvablePrivateAddress,
                               peerRPA: enhanced.peerResolvablePrivateAddress)
        case .advertisingReport(let reports):
            guard isScanning else { return }
            for report in reports { emit(.advertisingReport(scanMerger.merge(report))) }
        case .connectionUpdateComplete(let status, let handle, let interval, let latency, let timeout):
            connectionUpdateComplete(status: status, handle: handle,
                                     parameters: ConnectionParameters(interval: interval, latency: latency, supervisionTimeout: timeout))
        case .readRemoteFeaturesComplete(let status, let handle, let features):
            emit(.remoteFeatures(handle: handle, status: status, features: features))
        case .longTermKeyRequest(let handle, let random, let ediv):
            emit(.longTermKeyRequest(handle: handle, randomNumber: random, encryptedDiversifier: ediv))
            securityLongTermKeyRequested(handle: handle, rand: random, ediv: ediv)
        case .remoteConnectionParameterRequest(let handle, let intervalMin, let intervalMax, let latency, let timeout):
            answerParameterRequest(handle: handle, LEConnectionParameters(
                intervalMin: intervalMin, intervalMax: intervalMax, maxLatency: latency, supervisionTimeout: timeout))
        case .dataLengthChange(let handle, let txOctets, _, let rxOctets, _):
            connections[handle]?.payloadOctets = (txOctets, rxOctets)
            emit(.dataLengthChanged(handle: handle, maxTxOctets: txOctets, maxRxOctets: rxOctets))
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            if status == .success { connections[handle]?.phys = (tx, rx) }
            emit(.phyUpdated(handle: handle, status: status, tx: tx, rx: rx))
        case .extendedAdvertisingReport(let reports):
            // Also what Bumble's controller sends under the legacy scanning commands.
            guard isScanning else { return }
            for report in reports {
                if let merged = scanMerger.mergePiece(report) { emit(.advertisingReport(merged)) }
            }
        case .extended(.advertisingSetTerminated(let terminated)):
            // The set stopped: a connection was made from it (its Connection Complete came first), or its
            // duration or event count ran out (§7.7.65.18).
            if terminated.advertisingHandle == Self.advertisingHandle {
                isAdvertising = false
                withGAPLane(.advertising) { $0.controllerEnabled = false }
            }
        case .extended(.scanTimeout), .extended(.scanRequestReceived):
            stats.ignoredEvents += 1
        case .readLocalP256PublicKeyComplete, .generateDHKeyComplete, .directedAdvertisingReport, .unknown:
            stats.ignoredEvents += 1
        }
    }

    // MARK: Connections

    /// LE (Enhanced) Connection Complete: the connection exists from here on, before any other work.
    func connectionComplete(_ complete: LEConnectionComplete, localRPA: BluetoothAddress? = nil, peerRPA: BluetoothAddress? = nil) {
        let role: ConnectionRole = complete.role == .central ? .central : .peripheral
        guard complete.status == .success else {
            if complete.status == .advertisingTimeout {
                // Directed advertising ended without a connection (§7.7.65.1): not about a pending connect.
                isAdvertising = false
                return
            }
            if expectsCancelledConnectionComplete, complete.status == .unknownConnectionIdentifier {
                expectsCancelledConnectionComplete = false
                return
            }
            if let pending = pendingConnect, !pending.programming {
                if complete.status == .connectionFailedToBeEstablished, pending.cancelReason == nil,
                   !pending.cancelRefused, pending.retries < Self.connectRetryLimit {
                    scheduleConnectRetry()
                    return
                }
                pendingConnect = nil
                armTimer()
                let error = pending.cancelReason ?? HostError(
                    .commandFailed, "connecting to \(pending) failed: \(complete.status)", status: complete.status)
                initiationEnded(pending, .failure(error))
            }
            return
        }
        if connections[complete.handle] != nil {
            emit(.controllerError(HostError(
                .protocolError, "connection complete for handle \(Dissection.hex16(complete.handle)), which is in use")))
            closeConnection(complete.handle, reason: .unspecifiedError)
        }
        let connection = Connection(
            handle: complete.handle, role: role, peer: complete.peerAddress, peerAddressType: complete.peerAddressType,
            parameters: ConnectionParameters(interval: complete.connectionInterval, latency: complete.peripheralLatency,
                                             supervisionTimeout: complete.supervisionTimeout))
        let record = ConnectionRecord(connection: connection)
        record.localAirAddress = localRPA.flatMap { $0.value == 0 ? nil : BluetoothAddress($0.value, type: .random) }
        record.peerAirAddress = peerRPA.flatMap { $0.value == 0 ? nil : BluetoothAddress($0.value, type: .random) }
        connections[complete.handle] = record
        openSession(for: connection)
        readPHYsOfExtendedConnection(complete.handle)
        var completed: PendingConnect?
        if role == .central {
            completed = pendingConnect
            pendingConnect = nil
            if completed?.cancelReason != nil { expectsCancelledConnectionComplete = false }
            armTimer()
        } else {
            isAdvertising = false
        }
        emit(.connected(connection))
        if let completed { initiationEnded(completed, .success(connection), peerAirAddress: record.peerAirAddress) }
        exchangeMTUIfCentral(connection)
    }

    /// Disconnection Complete: the connection and everything of it goes (queued sends, reassembly, operations).
    func closeConnection(_ handle: UInt16, reason: HCIStatus) {
        disconnectDeadlines[handle] = nil
        guard let record = connections.removeValue(forKey: handle) else {
            stats.unknownHandleEvents += 1
            return
        }
        record.session?.isOpen = false
        reassembler.dropState(for: handle)
        let failedSends = outbound.removeConnection(handle)
        let error = HostError(.disconnected, "\(record.connection) ended: \(reason)", status: reason)
        for completion in failedSends { completion(.failure(error)) }
        for completion in record.pendingUpdates { completion(.failure(error)) }
        for completion in record.pendingDisconnects { completion(.success(reason)) }
        closeSession(record.session, handle: handle, reason: reason, error: error)
        emit(.disconnected(handle: handle, reason: reason))
        armTimer()
        pumpACL()
    }

    /// The connections open now (read on the loop).
    public var openConnections: [Connection] {
        connections.values.map(\.connection).sorted { $0.handle < $1.handle }
    }

    /// What the host learned about the controller (read on the loop; complete after `start` succeeded).
    public var controllerInfo: ControllerInfo { info }
}
