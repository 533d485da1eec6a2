public import AdvertisingData
public import ATT
public import BluetoothCore
public import BluetoothCrypto
public import BluetoothEngine
public import BluetoothRuntime
public import GATT
public import HCI
public import L2CAP
import Dispatch
import FoundationEssentials
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The third engine on the seam (BluetoothEngine's `StackEngine`): every operation travels over a UNIX socket to
/// the per-user Bluetooth service (`blue service`), where our host runs it on a stack the service keeps for this
/// program, and every event of that stack comes back, in order. With a restore identifier the stack outlives the
/// program: a program that starts again with the same identifier gets it back with its links
/// (``ServiceWelcome/reattached``, ``ServiceWelcome/links``).
///
/// Threads: a reader thread of the connection decodes each message and hands it to ``eventLoop``, where results,
/// events, deferred GATT requests and forwarded writes are delivered in the order the service sent them. Calls may
/// come from any thread; each completion runs once on the loop, a failure for every call still waiting when the
/// connection ends (``HostError/Code/transportFailed``).
public final class ServiceEngine: StackEngine, Sendable {
    private struct State {
        var nextID: UInt64 = 1
        var pending: [UInt64: @Sendable (ServiceOutcome) -> Void] = [:]
        var attMTUs: [UInt16: Int] = [:]
        var notReady: Set<UInt16> = []
        var deferral: GATTDeferral?
        var dynamicValues: [UInt16: ServiceGATTDatabase.DynamicValue] = [:]
        /// The program's own copy of its database (``publish(deviceName:_:completion:)`` adds to it).
        var database = GATTDatabase()
        /// Write Commands to dynamic values that came before the program gave its database (a stack taken back
        /// sends what it queued at once), for the handlers of the database it gives; nil once it has (bounded).
        var writesBeforeDatabase: [GATTWriteRequest]? = []
        var end: String?
        var lossHandlers: [@Sendable (String) -> Void] = []
        var primary: (@Sendable (HostEvent) -> Void)?
        /// What arrived before anyone listened (a stack taken back sends its queue right after the welcome): held,
        /// in order, until the first event handler is set. nil once released.
        var held: [ServiceMessage]? = []
        /// The service's links (every program's), and who wants to hear when they change.
        var systemLinks: [ServiceSystemLink] = []
        var systemObservers: [@Sendable ([ServiceSystemLink]) -> Void] = []
    }

    public var eventLoop: any EventLoop { loop }
    /// What the service said when the program joined: the controller, and the links of a stack taken back.
    public let welcome: ServiceWelcome
    /// The service's socket (for messages that name it).
    public let socketPath: String
    private let loop: DispatchEventLoop
    private let connection: ServiceConnection<ServiceMessage, ServiceRequest>
    private let handlers = StackEventHandlers()
    private let state = LockedValue(State())

    private init(welcome: ServiceWelcome, socketPath: String, loop: DispatchEventLoop,
                 connection: ServiceConnection<ServiceMessage, ServiceRequest>) {
        self.welcome = welcome
        self.socketPath = socketPath
        self.loop = loop
        self.connection = connection
        state.withLock { state in
            for link in welcome.links { state.attMTUs[link.connection.handle] = link.attMTU }
            state.systemLinks = welcome.systemLinks
        }
    }

    /// Connects to the service at `socketPath` (a socket of this user, served by a process of this user or root:
    /// the air hub's rules), says hello and waits for the stack, at most `timeout`.
    public static func open(socketPath: String, hello: ServiceHello, timeout: Duration = .seconds(30))
        async throws(HostError) -> ServiceEngine {
        let fd = try connectSocket(socketPath)
        let loop = DispatchEventLoop(label: "OpenCoreBluetooth.service-client")
        let connection = ServiceConnection<ServiceMessage, ServiceRequest>(fd: fd, label: "OpenCoreBluetooth.service-client")
        let engine = LockedValue<ServiceEngine?>(nil)
        let result: Result<ServiceWelcome, HostError> = await firstCompletion { settle in
            connection.start(onMessage: { message in
                if let engine = engine.load() {
                    engine.loop.execute { engine.handle(message) }
                    return
                }
                switch message {
                case .welcome(let welcome):
                    // The engine exists before the next message is read (this runs on the reader thread).
                    engine.store(ServiceEngine(welcome: welcome, socketPath: socketPath, loop: loop, connection: connection))
                    settle(.success(welcome))
                case .refused(let reason): settle(.failure(HostError(.notReady, "the Bluetooth service refused: \(reason)")))
                default: settle(.failure(HostError(.protocolError, "the Bluetooth service spoke before its welcome")))
                }
            }, onEnd: { end in
                if let engine = engine.load() {
                    engine.loop.execute { engine.ended("the Bluetooth service at \(socketPath) ended the connection (\(end))") }
                } else {
                    settle(.failure(HostError(.transportFailed, "the Bluetooth service at \(socketPath) ended the connection (\(end))")))
                }
            })
            connection.send(.hello(hello))
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                settle(.failure(HostError(.timedOut, "the Bluetooth service at \(socketPath) did not open a stack within \(timeout)")))
            }
        }
        switch result {
        case .failure(let error):
            connection.close()
            throw error
        case .success:
            guard let opened = engine.load() else { throw HostError(.protocolError, "no engine after the welcome") }
            if hello.identifier != nil { ExitGoodbyes.register(opened) }
            return opened
        }
    }

    private static func connectSocket(_ path: String) throws(HostError) -> Int32 {
        switch SocketOwnership.connect(toServerAt: path) {
        case .success(let fd):
            return fd
        case .failure(.badPath(let reason)):
            throw HostError(.transportFailed, "the Bluetooth service at \(path): \(reason)")
        case .failure(.untrusted(let error)):
            throw HostError(.transportFailed, error.reason)
        case .failure(.cannotConnect(let code)):
            throw HostError(.transportFailed, "the Bluetooth service at \(path): connect failed: \(POSIX.errorText(code))")
        }
    }

    // MARK: Messages from the service (on the loop)

    private func handle(_ message: ServiceMessage) {
        if case .result = message {} else {
            let holding = state.withLock { state -> Bool in
                guard state.held != nil else { return false }
                state.held?.append(message)
                return true
            }
            if holding { return }
        }
        switch message {
        case .welcome, .refused:
            break
        case .result(let id, let outcome):
            let completion = state.withLock { $0.pending.removeValue(forKey: id) }
            completion?(outcome)
        case .event(let event):
            track(event)
            state.load().primary?(event)
            handlers.deliver(event)
        case .deferredRequest(let request):
            deferred(request)
        case .dynamicWrite(let request):
            let handler = state.withLock { state -> (@Sendable (GATTWriteRequest) -> ATTErrorCode?)? in
                if let handler = state.dynamicValues[request.handle]?.write { return handler }
                if let count = state.writesBeforeDatabase?.count, count < Self.writesHeldBeforeDatabase {
                    state.writesBeforeDatabase?.append(request)
                }
                return nil
            }
            _ = handler?(request)
        case .answeredRequest(let request):
            state.load().deferral?.handler(request)
        case .lost(let reason):
            ended(reason)
        case .systemLinks(let links):
            let observers = state.withLock { state in
                state.systemLinks = links
                return state.systemObservers
            }
            for observer in observers { observer(links) }
        }
    }

    /// A deferred request: the program's own deferral's, or one of a dynamic value, answered here by its handlers
    /// (the link's security is not told: the server checked permissions before deferring).
    private func deferred(_ request: GATTPendingRequest) {
        let state = state.load()
        let handles: [UInt16] = switch request.kind {
        case .read(let handle, _), .write(let handle, _): [handle]
        case .executeWrite(let writes): writes.map(\.handle)
        }
        if let deferral = state.deferral, handles.allSatisfy(deferral.handles.contains) { return deferral.handler(request) }
        let connection = request.connection
        let answer: Result<[UInt8], GATTAttributeError>
        switch request.kind {
        case .read(let handle, let offset):
            let read = state.dynamicValues[handle]?.read
            answer = read?(GATTReadRequest(connection: connection, handle: handle, offset: offset, security: .open))
                ?? .failure(GATTAttributeError(.readNotPermitted))
        case .write(let handle, let value):
            answer = Self.write(state.dynamicValues[handle]?.write, GATTWriteRequest(
                connection: connection, handle: handle, offset: 0, value: value, kind: .request, security: .open))
        case .executeWrite(let writes):
            var result: Result<[UInt8], GATTAttributeError> = .success([])
            for kind in [GATTWriteRequest.Kind.preparedValidation, .prepared] {
                for write in writes {
                    result = Self.write(state.dynamicValues[write.handle]?.write, GATTWriteRequest(
                        connection: connection, handle: write.handle, offset: write.offset, value: write.value, kind: kind, security: .open))
                    if case .failure = result { break }
                }
                if case .failure = result { break }
            }
            answer = result
        }
        respondToGATTRequest(connectionHandle: connection.rawValue, id: request.id, result: answer)
    }

    private static func write(_ handler: (@Sendable (GATTWriteRequest) -> ATTErrorCode?)?, _ request: GATTWriteRequest)
        -> Result<[UInt8], GATTAttributeError> {
        guard let handler else { return .failure(GATTAttributeError(.writeNotPermitted)) }
        if let code = handler(request) { return .failure(GATTAttributeError(code)) }
        return .success([])
    }

    /// The most Write Commands held for a database not given yet (as many as the service queues).
    static let writesHeldBeforeDatabase = 4096

    /// The program gave its database: the Write Commands that came before it go to its handlers when it is the
    /// database the service kept (their handles name the same values), on the loop after this call (so after
    /// what the caller does next on the loop: a peripheral manager taking back its centrals); else they are
    /// dropped, their values gone with the old database.
    private func releaseWritesBeforeDatabase(_ state: inout State) {
        guard let held = state.writesBeforeDatabase else { return }
        state.writesBeforeDatabase = nil
        guard !held.isEmpty, welcome.database == ServiceGATTDatabase(state.database) else { return }
        let handlers = state.dynamicValues
        loop.execute {
            for request in held { _ = handlers[request.handle]?.write?(request) }
        }
    }

    private func track(_ event: HostEvent) {
        state.withLock { state in
            switch event {
            case .connected(let connection): state.attMTUs[connection.handle] = ATTMTU.leDefault
            case .attMTUChanged(let handle, let mtu): state.attMTUs[handle] = mtu
            case .disconnected(let handle, _):
                state.attMTUs[handle] = nil
                state.notReady.remove(handle)
            case .readyToSend(let handle): state.notReady.remove(handle)
            default: break
            }
        }
    }

    /// The connection ended: every waiting call fails, the loss is told once.
    private func ended(_ reason: String) {
        let (pending, observers) = state.withLock { state -> ([@Sendable (ServiceOutcome) -> Void], [@Sendable (String) -> Void]) in
            guard state.end == nil else { return ([], []) }
            state.end = reason
            defer {
                state.pending = [:]
                state.lossHandlers = []
            }
            return (Array(state.pending.values), state.lossHandlers)
        }
        for completion in pending { completion(.failed(HostError(.transportFailed, reason))) }
        for observer in observers { observer(reason) }
        connection.close()
    }

    /// The goodbye of a program that ends normally (`exit`, the end of `main`): its own choice, so the service
    /// releases what it kept, as for a user who quits an app. Not after ``shutdown()`` or ``abandon()``.
    /// The connection counts as ended first, so the service closing it after the goodbye is not told as a loss
    /// (no "lost the controller" while the program exits).
    fileprivate func sayGoodbyeAtExit() {
        let leaving = state.withLock { state -> Bool in
            guard state.end == nil else { return false }
            state.end = "the program exited"
            return true
        }
        guard leaving else { return }
        connection.sendAndWait(.goodbye)
    }

    /// Ends the connection without a goodbye, as a program that dies does (SIGKILL, a crash): a stack with a
    /// restore identifier stays with the service. For tests of what the service keeps.
    package func abandon() {
        ExitGoodbyes.unregister(self)
        connection.close()
    }

    /// Every link of every stack the service runs (all programs'), with the services known of each peer.
    public var systemLinks: [ServiceSystemLink] { state.load().systemLinks }

    /// Calls `observer` on the loop with the service's links each time they change.
    public func observeSystemLinks(_ observer: @escaping @Sendable ([ServiceSystemLink]) -> Void) {
        state.withLock { $0.systemObservers.append(observer) }
    }

    /// Calls `handler` once, on the loop, when the connection to the service ends (at once when it has).
    public func onEnd(_ handler: @escaping @Sendable (String) -> Void) {
        let ended = state.withLock { state -> String? in
            if let end = state.end { return end }
            state.lossHandlers.append(handler)
            return nil
        }
        if let ended { loop.execute { handler(ended) } }
    }

    // MARK: Calls

    private func call(_ operation: ServiceOperation, _ completion: (@Sendable (ServiceOutcome) -> Void)?) {
        guard operation.expectsAnswer else {
            connection.send(.call(id: 0, operation))
            return
        }
        let id = state.withLock { state -> UInt64? in
            guard state.end == nil else { return nil }
            defer { state.nextID += 1 }
            state.pending[state.nextID] = completion ?? { _ in }
            return state.nextID
        }
        guard let id else {
            let reason = state.load().end ?? "closed"
            loop.execute { completion?(.failed(HostError(.transportFailed, reason))) }
            return
        }
        if !connection.send(.call(id: id, operation)) {
            let waiting = state.withLock { $0.pending.removeValue(forKey: id) }
            loop.execute { waiting?(.failed(HostError(.transportFailed, "the connection to the Bluetooth service is closed"))) }
        }
    }

    private func unexpected(_ outcome: ServiceOutcome) -> HostError {
        if case .failed(let error) = outcome { return error }
        return HostError(.protocolError, "the Bluetooth service answered \(outcome)")
    }

    private func void(_ completion: (@Sendable (Result<Void, HostError>) -> Void)?) -> @Sendable (ServiceOutcome) -> Void {
        { [self] outcome in
            if case .done = outcome { completion?(.success(())) } else { completion?(.failure(unexpected(outcome))) }
        }
    }

    // MARK: StackEngine

    public var controllerInfo: ControllerInfo { welcome.controller }
    public var exchangesMTUOnConnect: Bool { welcome.exchangesMTUOnConnect }
    public var reportsPeerNames: Bool { welcome.reportsPeerNames }
    public func knownPeers() -> [BluetoothAddress] { welcome.knownPeers }

    public func setEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) {
        state.withLock { $0.primary = handler }
        releaseHeld()
    }

    @discardableResult
    public func addEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) -> StackEventSubscription {
        defer { releaseHeld() }
        return handlers.add(handler)
    }

    /// Hands what was held to the handlers, on the loop, before anything that arrives later.
    private func releaseHeld() {
        loop.execute { [self] in
            guard let held = state.withLock({ state -> [ServiceMessage]? in
                defer { state.held = nil }
                return state.held
            }) else { return }
            for message in held { handle(message) }
        }
    }

    /// Already started: the service opened the stack before its welcome.
    public func start(completion: @escaping @Sendable (Result<ControllerInfo, HostError>) -> Void) {
        let info = welcome.controller
        loop.execute { completion(.success(info)) }
    }

    /// Leaves by the program's own choice: the service releases the stack (links, advertising, database), as iOS
    /// does for an app the user quits.
    public func shutdown() {
        ExitGoodbyes.unregister(self)
        connection.send(.goodbye)
        connection.finish()
    }

    public func currentPrivateAddress(completion: @escaping @Sendable (BluetoothAddress) -> Void) {
        let fallback = welcome.controller.ownAddress
        call(.currentPrivateAddress) { outcome in
            if case .address(let address) = outcome { completion(address) } else { completion(fallback) }
        }
    }

    public func startScanning(_ options: ScanOptions, completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        call(.startScanning(options), void(completion))
    }

    public func stopScanning(completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        call(.stopScanning, void(completion))
    }

    public func connect(to peer: BluetoothAddress, options: ConnectOptions,
                        completion: @escaping @Sendable (Result<Connection, HostError>) -> Void) {
        call(.connect(peer, options)) { [self] outcome in
            if case .connection(let connection) = outcome { completion(.success(connection)) } else { completion(.failure(unexpected(outcome))) }
        }
    }

    public func cancelConnect(to peer: BluetoothAddress, completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        call(.cancelConnect(peer), void(completion))
    }

    public func disconnect(connectionHandle handle: UInt16, reason: HCIStatus,
                           completion: (@Sendable (Result<HCIStatus, HostError>) -> Void)?) {
        call(.disconnect(handle: handle, reason: reason)) { [self] outcome in
            if case .status(let status) = outcome { completion?(.success(status)) } else { completion?(.failure(unexpected(outcome))) }
        }
    }

    public func startAdvertising(_ content: AdvertisingContent, options: AdvertisingOptions,
                                 completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        call(.startAdvertisingContent(content, options), void(completion))
    }

    public func startAdvertising(advertisingData: AdvertisingData, scanResponse: AdvertisingData, options: AdvertisingOptions,
                                 completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        call(.startAdvertising(advertisingData: advertisingData, scanResponse: scanResponse, options), void(completion))
    }

    public func stopAdvertising(completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        call(.stopAdvertising, void(completion))
    }

    public func linkInfo(connectionHandle handle: UInt16, completion: @escaping @Sendable (LinkInfo?) -> Void) {
        call(.linkInfo(handle: handle)) { outcome in
            if case .linkInfo(let info) = outcome { completion(info) } else { completion(nil) }
        }
    }

    public func updateConnectionParameters(connectionHandle handle: UInt16, _ parameters: LEConnectionParameters,
                                           completion: (@Sendable (Result<Connection, HostError>) -> Void)?) {
        call(.updateConnectionParameters(handle: handle, parameters)) { [self] outcome in
            if case .connection(let connection) = outcome { completion?(.success(connection)) } else { completion?(.failure(unexpected(outcome))) }
        }
    }

    public func requestDataLength(connectionHandle handle: UInt16, txOctets: UInt16, txTime: UInt16,
                                  completion: @escaping @Sendable (Result<Bool, HostError>) -> Void) {
        call(.requestDataLength(handle: handle, txOctets: txOctets, txTime: txTime)) { [self] outcome in
            if case .accepted(let accepted) = outcome { completion(.success(accepted)) } else { completion(.failure(unexpected(outcome))) }
        }
    }

    public func setPHY(connectionHandle handle: UInt16, txPHYs: UInt8, rxPHYs: UInt8,
                       completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        call(.setPHY(handle: handle, txPHYs: txPHYs, rxPHYs: rxPHYs), void(completion))
    }

    public func exchangeMTU(connectionHandle handle: UInt16, completion: (@Sendable (Result<Int, HostError>) -> Void)?) {
        call(.exchangeMTU(handle: handle)) { [self] outcome in
            if case .mtu(let mtu) = outcome {
                state.withLock { $0.attMTUs[handle] = mtu }
                completion?(.success(mtu))
            } else {
                completion?(.failure(unexpected(outcome)))
            }
        }
    }

    public func readRSSI(connectionHandle handle: UInt16, completion: @escaping @Sendable (Result<Int8, HostError>) -> Void) {
        call(.readRSSI(handle: handle)) { [self] outcome in
            if case .rssi(let rssi) = outcome { completion(.success(rssi)) } else { completion(.failure(unexpected(outcome))) }
        }
    }

    public func requestConnectionParameterUpdate(connectionHandle handle: UInt16, _ request: L2CAPConnectionParameterUpdateRequest,
                                                 completion: (@Sendable (Result<Bool, HostError>) -> Void)?) {
        call(.requestConnectionParameterUpdate(handle: handle, request)) { [self] outcome in
            if case .accepted(let accepted) = outcome { completion?(.success(accepted)) } else { completion?(.failure(unexpected(outcome))) }
        }
    }

    // GATT client

    public func attMTU(connectionHandle handle: UInt16) -> Int? { state.load().attMTUs[handle] }

    public func isReadyToSend(connectionHandle handle: UInt16) -> Bool {
        let state = state.load()
        return state.attMTUs[handle] != nil && !state.notReady.contains(handle)
    }

    public func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure,
                     completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        gatt(connectionHandle: handle, procedure, lane: nil, completion: completion)
    }

    public func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure, lane: GATTClientLane?,
                     completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        call(.gatt(handle: handle, procedure, lane: lane)) { [self] outcome in
            switch outcome {
            case .gatt(let result): completion(.success(result))
            case .gattFailed(let error):
                if case .requestRefused = error, case .writeWithoutResponse = procedure {
                    state.withLock { _ = $0.notReady.insert(handle) }
                }
                completion(.failure(error))
            case .failed(let error): completion(.failure(.requestRefused(error.description)))
            default: completion(.failure(.invalidResponse("the Bluetooth service answered \(outcome)")))
            }
        }
    }

    // GATT server

    public func publish(deviceName: String, _ definitions: [GATTServiceDefinition],
                        completion: @escaping @Sendable (Result<[GATTServiceHandles], HostError>) -> Void) {
        let built = state.withLock { state -> Result<(GATTDatabase, [GATTServiceHandles]), HostError> in
            var database = state.database
            do throws(GATTDatabaseError) {
                if database.services.isEmpty {
                    try database.addGAPService(deviceName: deviceName)
                    try database.addGATTService(serverSupportedFeatures: .enhancedATT)
                }
                var handles: [GATTServiceHandles] = []
                for definition in definitions { handles.append(try database.add(definition)) }
                state.database = database
                state.dynamicValues = ServiceGATTDatabase.dynamicValues(of: database)
                releaseWritesBeforeDatabase(&state)
                return .success((database, handles))
            } catch {
                return .failure(HostError(.invalidDatabase, error.description))
            }
        }
        switch built {
        case .failure(let error): loop.execute { completion(.failure(error)) }
        case .success(let (database, handles)):
            call(.replaceGATTDatabase(ServiceGATTDatabase(database), changedRange: nil)) { [self] outcome in
                if case .done = outcome { completion(.success(handles)) } else { completion(.failure(unexpected(outcome))) }
            }
        }
    }

    public func replaceGATTDatabase(_ database: GATTDatabase, changedRange: ATTHandleRange?,
                                    completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        state.withLock { state in
            state.database = database
            state.dynamicValues = ServiceGATTDatabase.dynamicValues(of: database)
            releaseWritesBeforeDatabase(&state)
        }
        call(.replaceGATTDatabase(ServiceGATTDatabase(database), changedRange: changedRange), void(completion))
    }

    public func setGATTDeferral(_ deferral: GATTDeferral?) {
        state.withLock { $0.deferral = deferral }
        call(.setGATTDeferral(handles: deferral?.handles), nil)
    }

    public func respondToGATTRequest(connectionHandle handle: UInt16, id: UInt64, result: Result<[UInt8], GATTAttributeError>) {
        call(.respondToGATTRequest(handle: handle, id: id, ServiceGATTAnswer(result)), nil)
    }

    public func updateValue(_ value: [UInt8], handle: UInt16, to targets: Set<UInt16>?, requireReady: Bool,
                            completion: (@Sendable (Result<[UInt16], HostError>) -> Void)?) {
        call(.updateValue(value, attribute: handle, targets: targets, requireReady: requireReady)) { [self] outcome in
            if case .targets(let sent) = outcome { completion?(.success(sent)) } else { completion?(.failure(unexpected(outcome))) }
        }
    }

    // L2CAP

    public func registerL2CAPServer(_ server: L2CAPChannelServer, requiresEncryption: Bool,
                                    completion: (@Sendable (Result<Void, L2CAPLinkError>) -> Void)?) {
        guard let wire = ServiceL2CAPServer(server) else {
            loop.execute {
                completion?(.failure(L2CAPLinkError(.invalidParameters,
                                                    "a server that decides per request cannot run in the Bluetooth service")))
            }
            return
        }
        call(.registerL2CAPServer(wire, requiresEncryption: requiresEncryption)) { outcome in
            switch outcome {
            case .done: completion?(.success(()))
            case .l2capFailed(let error): completion?(.failure(error))
            default: completion?(.failure(L2CAPLinkError(.invalidParameters, "the Bluetooth service answered \(outcome)")))
            }
        }
    }

    public func unregisterL2CAPServer(psm: UInt16) {
        call(.unregisterL2CAPServer(psm: psm), nil)
    }

    public func openChannel(connectionHandle handle: UInt16, psm: UInt16, mtu: UInt16,
                            completion: @escaping @Sendable (Result<L2CAPChannelInfo, HostError>) -> Void) {
        call(.openChannel(handle: handle, psm: psm, mtu: mtu)) { [self] outcome in
            if case .l2capChannel(let info) = outcome { completion(.success(info)) } else { completion(.failure(unexpected(outcome))) }
        }
    }

    public func sendL2CAPSDU(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier, _ sdu: [UInt8],
                             completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        call(.sendL2CAPSDU(handle: handle, channel: channel, sdu), void(completion))
    }

    public func closeL2CAPChannel(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier,
                                  completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        call(.closeL2CAPChannel(handle: handle, channel: channel), void(completion))
    }

    // Security

    public func pair(connectionHandle handle: UInt16, options: PairingOptions,
                     completion: @escaping @Sendable (Result<PairingOutcome, HostError>) -> Void) {
        call(.pair(handle: handle, options)) { [self] outcome in
            if case .pairing(let result) = outcome { completion(.success(result)) } else { completion(.failure(unexpected(outcome))) }
        }
    }

    public func requestSecurity(connectionHandle handle: UInt16, mitm: Bool?,
                                completion: (@Sendable (Result<PairingOutcome, HostError>) -> Void)?) {
        call(.requestSecurity(handle: handle, mitm: mitm)) { [self] outcome in
            if case .pairing(let result) = outcome { completion?(.success(result)) } else { completion?(.failure(unexpected(outcome))) }
        }
    }

    public func answerPairing(connectionHandle handle: UInt16, _ answer: PairingAnswer) {
        call(.answerPairing(handle: handle, answer), nil)
    }

    public func localOutOfBandData(completion: @escaping @Sendable (Result<LocalOutOfBandData, HostError>) -> Void) {
        call(.localOutOfBandData) { [self] outcome in
            if case .outOfBand(let data) = outcome { completion(.success(data)) } else { completion(.failure(unexpected(outcome))) }
        }
    }

    public func setPeerOutOfBandData(for address: BluetoothAddress, random: Block128, confirm: Block128) {
        call(.setPeerOutOfBandData(address, random: random, confirm: confirm), nil)
    }

    public func setLegacyOutOfBandKey(for address: BluetoothAddress, temporaryKey: Block128) {
        call(.setLegacyOutOfBandKey(address, temporaryKey: temporaryKey), nil)
    }

    public func removeOutOfBandData(for address: BluetoothAddress) {
        call(.removeOutOfBandData(address), nil)
    }
}

/// The engines kept under a restore identifier, told goodbye when the process exits normally (an `atexit`
/// handler, installed with the first): a program that ends by its own choice releases its kept stack; one that is
/// killed or crashes says nothing, and the service keeps it.
private enum ExitGoodbyes {
    private static let engines = LockedValue<[ObjectIdentifier: WeakEngine]>([:])
    private static let installed = LockedValue(false)

    private struct WeakEngine: @unchecked Sendable {
        weak var engine: ServiceEngine?
    }

    static func register(_ engine: ServiceEngine) {
        engines.withLock { $0[ObjectIdentifier(engine)] = WeakEngine(engine: engine) }
        let first = installed.withLock { installed in
            defer { installed = true }
            return !installed
        }
        if first { atexit { ExitGoodbyes.sayGoodbyes() } }
    }

    static func unregister(_ engine: ServiceEngine) {
        engines.withLock { $0[ObjectIdentifier(engine)] = nil }
    }

    private static func sayGoodbyes() {
        let all = engines.withLock { engines in defer { engines = [:] }; return engines.values.compactMap(\.engine) }
        for engine in all { engine.sayGoodbyeAtExit() }
    }
}
