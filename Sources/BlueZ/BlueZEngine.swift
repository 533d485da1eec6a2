import AdvertisingData
import ATT
package import BluetoothCore
package import BluetoothRuntime
package import GATT
package import HCI
package import L2CAP
import SMP
package import BluetoothEngine
import DBus

/// bluetoothd as an engine (``StackEngine``): the operations the APIs ask of a stack, done through BlueZ's D-Bus
/// API (Adapter1, Device1, GattService1 / GattCharacteristic1 / GattDescriptor1, GattManager1,
/// LEAdvertisingManager1, Agent1; ``BlueZCentral`` for the central's calls, the GATT application and the
/// advertisement exported here) and the kernel's L2CAP sockets, its
/// answers turned into the host's events, so that the async API (`BluetoothStack(bluez:)`) works unchanged on it
/// (Core 5.4 Vol 3 Part C GAP roles, Part G GATT, Part H pairing, Part A §4.22 channels).
///
/// Who owns the state: this engine, confined to its own ``DispatchEventLoop`` (``eventLoop``): the central client's
/// events, bluetoothd's calls on our exported objects and every D-Bus completion hop onto it. One D-Bus connection
/// (the central client's) carries both roles. Links get connection handles of their own (from 0x0040), one per peer and
/// role; attribute handles are the peer's (bluetoothd names its objects after them) and, for the local server, the
/// handles a ``GATTDatabase`` of the engine numbers the published services with (bluetoothd numbers its own).
///
/// What bluetoothd decides differently from our host (README "BlueZ backend"): connection parameters and PHY are
/// not exposed (zeros); scanning is bluetoothd's discovery (advertisements rebuilt from Device1 properties); the own
/// address is the adapter's (Adapter1.Address); GATT procedures are those its API offers (discovery, reads and
/// writes of whole values, Write Commands, notifications); the local GAP name is the adapter's alias; advertising
/// carries a name and service UUIDs, connectable; `pair()` is Device1.Pair with our agent (bluetoothd chooses the
/// method and keeps the bond), pairings bluetoothd starts by itself are answered by its default agent (or ours with
/// `OCB_BLUEZ_AGENT`), and `requestSecurity()` is refused (bluetoothd has no call for a Security Request); L2CAP
/// channels are the kernel's L2CAP sockets on bluetoothd's links (CIDs here are the engine's own names for them;
/// the kernel does not tell the real ones).
package final class BlueZEngine: StackEngine, @unchecked Sendable {
    /// One link, in either role.
    struct Link {
        var connection: Connection
        var mtu: Int
        /// The last Write Command found the backend's window full; `readyToSend` follows.
        var writesFull = false
        /// The peer's attributes found so far (central role): services by start handle, characteristics by value
        /// handle, and the characteristic each CCCD belongs to.
        var services: [UInt16: BlueZRemoteService] = [:]
        var characteristics: [UInt16: GATTDiscoveredCharacteristic] = [:]
        /// The value handle each Client Characteristic Configuration belongs to.
        var clientConfigurations: [UInt16: UInt16] = [:]
        var disconnectWaiters: [@Sendable (Result<HCIStatus, HostError>) -> Void] = []
    }

    struct PendingConnect {
        var peer: BluetoothAddress
        var completion: @Sendable (Result<Connection, HostError>) -> Void
        var timer: ScheduledJob?
    }

    /// A characteristic of the local server.
    struct LocalValue {
        var properties: GATTCharacteristicProperties
        var maximumLength: Int
        var value: [UInt8]
        /// The definition's handlers of a value it computes (requests on a deferred value go to the deferral).
        var read: (@Sendable (GATTReadRequest) -> Result<[UInt8], GATTAttributeError>)?
        var write: (@Sendable (GATTWriteRequest) -> ATTErrorCode?)?
        /// The centrals subscribed (bluetoothd's StartNotify / AcquireNotify).
        var subscribers: Set<BluetoothAddress> = []
    }

    /// What the registered LEAdvertisement1 says.
    struct Advertisement: Equatable {
        var localName: String?
        var serviceUUIDs: [BluetoothUUID]
        var company: UInt16?
        var manufacturerData: [UInt8]?
    }

    /// A request handed to the deferral's handler: bluetoothd's call it answers.
    struct DeferredRequest {
        var callID: UInt64
        var connection: UInt16
    }

    let loop: DispatchEventLoop
    package var eventLoop: any EventLoop { loop }
    let central: BlueZCentral
    /// The root of our objects on the bus (the GATT application, the advertisement; unique per engine).
    let root: String
    private static let engines = LockedValue(0)
    /// "bluetoothd (hci1)".
    package let description: String
    /// The first line a backend reported outside a call (bluetoothd unreachable, discovery refused).
    private let reported = LockedValue<String?>(nil)
    /// How long bluetoothd may take to say whether its adapter is there and powered.
    static let startLimit: Duration = .seconds(15)

    // MARK: Loop-confined state

    private var handler: @Sendable (HostEvent) -> Void = { _ in }
    private let eventHandlers = StackEventHandlers()
    package private(set) var controllerInfo = ControllerInfo()
    var phase = Phase.idle
    private var startWaiters: [@Sendable (Result<ControllerInfo, HostError>) -> Void] = []
    /// bluetoothd's objects and the adapter, once the central client has its session.
    var session: (tree: BlueZObjectTree, adapterPath: String)?
    private var startTimer: ScheduledJob?
    var links: [UInt16: Link] = [:]
    private var nextHandle: UInt16 = 0x0040
    private var pendingConnect: PendingConnect?
    private var scanning = false
    /// With duplicates filtered: what each device advertised when last reported (bluetoothd tells every RSSI
    /// change; a device is reported again when its advertising data changed, as a controller's duplicate filter does).
    private var heard: [BluetoothAddress: AdvertisingData]?
    // Server
    var database = GATTDatabase()
    var localValues: [UInt16: LocalValue] = [:]
    var deferral: GATTDeferral?
    var deferredRequests: [UInt64: DeferredRequest] = [:]
    var nextRequestID: UInt64 = 0
    /// bluetoothd's notification socket of some characteristic is full; `readyToUpdateSubscribers` empties it.
    var updatesFull = false
    /// The advertisement registered (nil: not advertising).
    var advertising: Advertisement?
    var application = Application()
    // L2CAP
    var channels: [ChannelKey: OpenChannel] = [:]
    var l2capServers: [UInt16: L2CAPChannelServer] = [:]
    var listeners: [UInt16: BlueZL2CAPListener] = [:]
    var nextChannelID: UInt16 = 0x0040
    // Pairing: the agent's prompt awaiting the delegate's answer, and the method each pairing showed, per link.
    var pendingPrompts: [UInt16: @Sendable (BlueZAgent.Answer) -> Void] = [:]
    var pairingMethods: [UInt16: SMPPairingMethod] = [:]

    enum Phase { case idle, starting, started, failed(HostError), closed }

    /// An engine on bluetoothd's adapter `adapter` ("hci1"; nil: its first), on the system bus unless `busAddress`
    /// names another (tests).
    package init(adapter: String?, busAddress: String? = nil) {
        loop = DispatchEventLoop(label: "BlueZ.engine")
        let reported = reported
        let report: @Sendable (String) -> Void = { line in reported.withLock { $0 = $0 ?? line } }
        let bus = busAddress ?? DBusConnection.systemBusAddress
        central = BlueZCentral(adapter: adapter, busAddress: bus, report: report)
        root = "/org/opencorebluetooth/engine\(Self.engines.withLock { count -> Int in count += 1; return count })"
        description = "bluetoothd (\(adapter ?? "its first adapter"))"
    }

    func onLoop(_ job: @escaping @Sendable () -> Void) {
        if loop.inEventLoop { job() } else { loop.execute(job) }
    }

    func emit(_ event: HostEvent) {
        handler(event)
        eventHandlers.deliver(event)
    }

    // MARK: Life cycle

    package func setEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) {
        onLoop { [self] in self.handler = handler }
    }

    @discardableResult
    package func addEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) -> StackEventSubscription {
        eventHandlers.add(handler)
    }

    /// Starts the central client and waits for its first state: powered on, or a failure that says why (at most
    /// ``startLimit``); then exports our objects on its connection.
    package func start(completion: @escaping @Sendable (Result<ControllerInfo, HostError>) -> Void) {
        onLoop { [self] in
            switch phase {
            case .started: return completion(.success(controllerInfo))
            case .failed(let error): return completion(.failure(error))
            case .closed: return completion(.failure(HostError(.notReady, "the stack was shut down")))
            case .starting: return startWaiters.append(completion)
            case .idle: break
            }
            phase = .starting
            startWaiters.append(completion)
            central.start { [weak self] event in
                guard let engine = self else { return }
                engine.onLoop { engine.centralEvent(event) }
            }
            startTimer = loop.schedule(after: Self.startLimit) { [weak self] in
                guard let self else { return }
                finishStart(.failure(HostError(.notReady, "\(description) did not answer within \(Self.startLimit)")))
            }
        }
    }

    /// The adapter's state: the first one decides the start; powered off later drops every link.
    func stateChanged(_ state: BlueZAdapterState) {
        if case .starting = phase {
            guard state == .poweredOn else { return finishStart(.failure(startFailure(state))) }
            if let address = central.adapterAddress {
                controllerInfo.publicAddress = address
                controllerInfo.ownAddress = address
            }
            exportObjects()
            return finishStart(.success(controllerInfo))
        }
        guard case .started = phase, state != .poweredOn else { return }
        for handle in links.keys.sorted() { linkEnded(handle, reason: .connectionTerminatedByLocalHost) }
        emit(.controllerError(HostError(.notReady, "the adapter of \(description) is no longer powered on")))
    }

    /// Exports the application's root and the advertisement on the central client's connection, and follows the
    /// devices that connect to us.
    private func exportObjects() {
        guard session == nil, let session = central.session else { return }
        self.session = session
        let connection = session.tree.connection
        connection.export(path: root) { [weak self] call in
            guard let engine = self else { return nil }
            engine.onLoop { _ = try? connection.send(engine.rootCall(call)) }
            return nil
        }
        connection.export(path: advertisementPath) { [weak self] call in
            guard let engine = self else { return nil }
            engine.onLoop { _ = try? connection.send(engine.advertisementCall(call)) }
            return nil
        }
        session.tree.observe { [weak self] change in
            guard let engine = self else { return }
            engine.onLoop { engine.deviceChanged(change) }
        }
    }

    private func startFailure(_ state: BlueZAdapterState) -> HostError {
        switch state {
        case .poweredOff: HostError(.notReady, "the adapter of \(description) is powered off (`bluetoothctl power on`)")
        default: HostError(.notReady, reported.load() ?? "cannot use \(description)")
        }
    }

    private func finishStart(_ result: Result<ControllerInfo, HostError>) {
        guard case .starting = phase else { return }
        startTimer?.cancel()
        startTimer = nil
        switch result {
        case .success: phase = .started
        case .failure(let error): phase = .failed(error)
        }
        let waiters = startWaiters
        startWaiters = []
        for waiter in waiters { waiter(result) }
    }

    package func shutdown() { shutdown(then: {}) }

    /// ``shutdown()``, then `done` once the calls that end everything are on the bus (links' Disconnect, the
    /// agents' UnregisterAgent, the application's and advertisement's unregistration).
    package func shutdown(then done: @escaping @Sendable () -> Void) {
        onLoop { [self] in
            defer { done() }
            if case .closed = phase { return }
            finishStart(.failure(HostError(.notReady, "the stack was shut down")))
            phase = .closed
            closeApplication()
            if advertising != nil {
                callAdapter(Self.advertisingManager, "UnregisterAdvertisement", [.objectPath(advertisementPath)]) { _ in }
                advertising = nil
            }
            for listener in listeners.values { listener.close() }
            listeners = [:]
            central.shutdown()
            if let pending = pendingConnect {
                pendingConnect = nil
                pending.timer?.cancel()
                pending.completion(.failure(HostError(.cancelled, "the stack was shut down")))
            }
            for handle in links.keys.sorted() { linkEnded(handle, reason: .connectionTerminatedByLocalHost) }
            deferredRequests = [:]
        }
    }

    /// Refuses an operation before start or after shutdown: the error, or nil when the engine runs.
    func notRunning() -> HostError? {
        if case .started = phase { return nil }
        return HostError(.notReady, "\(description) is not started (call start())")
    }

    // MARK: Links

    /// The link to `peer` in `role`, made (and reported) when it is new.
    @discardableResult
    func link(_ peer: BluetoothAddress, role: ConnectionRole, mtu: Int = 23) -> UInt16 {
        if let handle = links.first(where: { $0.value.connection.peer == peer && $0.value.connection.role == role })?.key {
            return handle
        }
        while links[nextHandle] != nil { nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1 }
        let handle = nextHandle
        nextHandle = nextHandle >= 0x0EFF ? 0x0040 : nextHandle + 1
        let address = peer
        let connection = Connection(handle: handle, role: role, peer: address,
                                    peerAddressType: address.type == .random ? .random : .public,
                                    parameters: ConnectionParameters(interval: 0, latency: 0, supervisionTimeout: 0))
        links[handle] = Link(connection: connection, mtu: mtu)
        emit(.connected(connection))
        return handle
    }

    /// The device a connect is under way to (on the loop).
    var pendingConnectPeer: BluetoothAddress? { pendingConnect?.peer }

    func handle(of peer: BluetoothAddress, role: ConnectionRole) -> UInt16? {
        links.first { $0.value.connection.peer == peer && $0.value.connection.role == role }?.key
    }

    /// Forgets a link and says so: waiters for its end, subscriptions, then the event.
    func linkEnded(_ handle: UInt16, reason: HCIStatus) {
        guard let link = links.removeValue(forKey: handle) else { return }
        if link.connection.role == .peripheral {
            for key in localValues.keys { localValues[key]?.subscribers.remove(link.connection.peer) }
            for (id, request) in deferredRequests where request.connection == handle { deferredRequests[id] = nil }
        }
        pendingPrompts.removeValue(forKey: handle)?(.reject)
        pairingMethods[handle] = nil
        for (key, channel) in channels where key.connection == handle {
            channels[key] = nil
            channel.backend.close()
            for waiting in channel.waiting { waiting.completion?(.failure(HostError(.disconnected, "the link ended"))) }
        }
        for waiter in link.disconnectWaiters { waiter(.success(reason)) }
        emit(.disconnected(handle: handle, reason: reason))
    }

    package func attMTU(connectionHandle handle: UInt16) -> Int? { links[handle]?.mtu }

    package func isReadyToSend(connectionHandle handle: UInt16) -> Bool {
        guard let link = links[handle] else { return false }
        return link.connection.role == .central ? !link.writesFull : !updatesFull
    }

    // MARK: GAP central

    package func startScanning(_ options: ScanOptions, completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            guard options.active else { return completion(.failure(Self.refusal("passive scanning cannot be asked: bluetoothd decides how it scans"))) }
            // bluetoothd decides active or passive scanning and the timing. Its duplicate filter (DuplicateData
            // false) still signals each RSSI change, so the engine filters too (``heard``).
            scanning = true
            heard = options.filterDuplicates ? [:] : nil
            central.startScan(serviceUUIDs: nil, allowDuplicates: !options.filterDuplicates)
            completion(.success(()))
        }
    }

    package func stopScanning(completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            if scanning { central.stopScan() }
            scanning = false
            completion?(.success(()))
        }
    }

    package func connect(to peer: BluetoothAddress, options: ConnectOptions, completion: @escaping @Sendable (Result<Connection, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            guard pendingConnect == nil else { return completion(.failure(HostError(.busy, "a connect is already pending"))) }
            if let handle = handle(of: peer, role: .central), let link = links[handle] {
                return completion(.success(link.connection))
            }
            let timer = options.timeout.map { limit in
                loop.schedule(after: limit) { [weak self] in
                    self?.endConnect(HostError(.timedOut, "no connection to \(peer) within \(limit)"), cancel: true)
                }
            }
            pendingConnect = PendingConnect(peer: peer, completion: completion, timer: timer)
            central.connect(peer)
        }
    }

    package func cancelConnect(completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            guard pendingConnect != nil else {
                completion?(.failure(HostError(.invalidParameters, "no connect is pending")))
                return
            }
            endConnect(HostError(.cancelled, "the connect was cancelled"), cancel: true)
            completion?(.success(()))
        }
    }

    /// Fails the pending connect (cancelling bluetoothd's Connect when asked).
    private func endConnect(_ error: HostError, cancel: Bool) {
        guard let pending = pendingConnect else { return }
        pendingConnect = nil
        pending.timer?.cancel()
        if cancel { central.cancelConnection(pending.peer) }
        pending.completion(.failure(error))
    }

    package func disconnect(connectionHandle handle: UInt16, reason: HCIStatus, completion: (@Sendable (Result<HCIStatus, HostError>) -> Void)?) {
        onLoop { [self] in
            guard let link = links[handle] else {
                completion?(.failure(HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(handle))")))
                return
            }
            guard link.connection.role == .central else {
                completion?(.failure(HostError(.unsupported, "bluetoothd does not let its GATT server drop a central")))
                return
            }
            if let completion { links[handle]?.disconnectWaiters.append(completion) }
            central.cancelConnection(link.connection.peer)
        }
    }

    private func centralEvent(_ event: BlueZCentral.Event) {
        if case .closed = phase { return }
        switch event {
        case .stateChanged(let state):
            stateChanged(state)
        case .advertisement(let report):
            guard scanning else { return }
            if heard != nil {
                guard heard?[report.address] != report.advertisingData else { return }
                heard?[report.address] = report.advertisingData
            }
            emit(.advertisingReport(report))
        case .connected(let peer, let mtu):
            guard let pending = pendingConnect, pending.peer == peer else {
                // Connected after the connect was given up: not ours to keep.
                if handle(of: peer, role: .central) == nil { central.cancelConnection(peer) }
                return
            }
            pendingConnect = nil
            pending.timer?.cancel()
            let handle = link(peer, role: .central, mtu: mtu)
            if let connection = links[handle]?.connection { pending.completion(.success(connection)) }
        case .connectionFailed(let peer, let error):
            if pendingConnect?.peer == peer { endConnect(HostError(.commandFailed, "\(description): \(error)"), cancel: false) }
        case .disconnected(let peer, let error):
            if pendingConnect?.peer == peer {
                endConnect(HostError(.disconnected, "\(description): the connection ended while connecting"), cancel: false)
            }
            guard let handle = handle(of: peer, role: .central) else { return }
            linkEnded(handle, reason: Self.reason(error))
        case .mtuChanged(let peer, let mtu):
            guard let handle = handle(of: peer, role: .central) else { return }
            links[handle]?.mtu = mtu
            emit(.attMTUChanged(handle: handle, mtu: mtu))
        case .valueUpdated(let peer, let attribute, let value):
            guard let handle = handle(of: peer, role: .central) else { return }
            emit(.gattNotification(handle: handle, attributeHandle: attribute, value: value))
        case .readyToSendWriteWithoutResponse(let peer):
            guard let handle = handle(of: peer, role: .central), links[handle]?.writesFull == true else { return }
            links[handle]?.writesFull = false
            emit(.readyToSend(handle: handle))
        case .nameUpdated(let peer, let name):
            emit(.peerNameUpdated(peer: peer, name: name))
        }
    }

    /// The HCI reason a backend's disconnection stands for: none given = we closed it.
    static func reason(_ error: BlueZCallError?) -> HCIStatus {
        switch error {
        case nil: .connectionTerminatedByLocalHost
        case .timedOut?: .connectionTimeout
        default: .remoteUserTerminatedConnection
        }
    }
}

/// What bluetoothd offers no call for: refused here, in one place, with the reason.
extension BlueZEngine {
    static func refusal(_ what: String) -> HostError {
        HostError(.notOffered, "through bluetoothd \(what)")
    }


    /// bluetoothd tells the ATT_MTU of a link and nothing else of it.
    package func linkInfo(connectionHandle handle: UInt16, completion: @escaping @Sendable (LinkInfo?) -> Void) {
        onLoop { completion(nil) }
    }

    package func updateConnectionParameters(connectionHandle handle: UInt16, _ parameters: LEConnectionParameters,
                                            completion: (@Sendable (Result<Connection, HostError>) -> Void)?) {
        onLoop { completion?(.failure(Self.refusal("connection parameters are bluetoothd's to choose"))) }
    }

    package func requestDataLength(connectionHandle handle: UInt16, txOctets: UInt16, txTime: UInt16,
                                   completion: @escaping @Sendable (Result<Bool, HostError>) -> Void) {
        onLoop { completion(.failure(Self.refusal("the data length is the kernel's to choose"))) }
    }

    package func setPHY(connectionHandle handle: UInt16, txPHYs: UInt8, rxPHYs: UInt8,
                        completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { completion(.failure(Self.refusal("the PHY is the kernel's to choose"))) }
    }

    package func exchangeMTU(connectionHandle handle: UInt16, completion: (@Sendable (Result<Int, HostError>) -> Void)?) {
        onLoop { completion?(.failure(Self.refusal("bluetoothd exchanges the ATT_MTU itself when it connects"))) }
    }

    /// bluetoothd tells the RSSI it last heard from a device (Device1.RSSI), which it updates only while discovering.
    package func readRSSI(connectionHandle handle: UInt16, completion: @escaping @Sendable (Result<Int8, HostError>) -> Void) {
        onLoop { [self] in
            guard let link = links[handle] else {
                return completion(.failure(HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(handle))")))
            }
            central.readRSSI(link.connection.peer) { result in
                completion(result.map { Int8(clamping: $0) }.mapError { Self.refusal("\($0)") })
            }
        }
    }

    /// bluetoothd's privacy is its own (Privacy= in main.conf): the adapter's address.
    package func currentPrivateAddress(completion: @escaping @Sendable (BluetoothAddress) -> Void) {
        onLoop { [self] in completion(controllerInfo.ownAddress) }
    }

    /// bluetoothd remembers the devices it paired with across runs.
    package func knownPeers() -> [BluetoothAddress] { central.knownPeers() }

    /// bluetoothd exchanges the ATT_MTU itself as it connects and says the result with the link.
    package var exchangesMTUOnConnect: Bool { false }

    package func requestConnectionParameterUpdate(connectionHandle handle: UInt16, _ request: L2CAPConnectionParameterUpdateRequest,
                                          completion: (@Sendable (Result<Bool, HostError>) -> Void)?) {
        onLoop { completion?(.failure(Self.refusal("connection parameters are bluetoothd's to choose"))) }
    }


    /// bluetoothd keeps each client's requests in order itself: the lane is not needed.
    package func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure, lane: GATTClientLane?,
              completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        gatt(connectionHandle: handle, procedure, completion: completion)
    }
}
