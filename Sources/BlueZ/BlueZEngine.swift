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
/// LEAdvertisingManager1, Agent1; our GATT application and advertisement exported on the bus) and the kernel's
/// L2CAP sockets, its answers turned into the host's events, so that both APIs work unchanged on it (Core 5.4 Vol 3
/// Part C GAP roles, Part G GATT, Part H pairing, Part A §4.22 channels).
///
/// Who owns the state: this engine, confined to its own ``DispatchEventLoop`` (``eventLoop``): bluetoothd's signals,
/// its calls on our exported objects and every D-Bus completion hop onto it; one D-Bus connection carries both
/// roles. Links get connection handles of their own (from 0x0040), one per peer and role; attribute handles are
/// the peer's (bluetoothd names its objects after them) and, for the local server, the handles a ``GATTDatabase`` of
/// the engine numbers the published services with (bluetoothd numbers its own).
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
        /// The last Write Command filled bluetoothd's window (``commandWindow``); `readyToSend` follows.
        var writesFull = false
        /// Write Commands handed to bluetoothd whose WriteValue has not returned yet (central role).
        var commandsInFlight = 0
        /// The device's object (central role) and the attribute objects found so far, by handle.
        var path: String?
        var attributePaths: [UInt16: String] = [:]
        /// We asked for its end (Device1.Disconnect).
        var closedByUs = false
        /// Removed from bluetoothd to be paired again: its object's end is not the link's end.
        var replacing = false
        /// The peer's attributes found so far (central role): services by start handle, characteristics by value
        /// handle, and the characteristic each CCCD belongs to.
        var services: [UInt16: BlueZRemoteService] = [:]
        var characteristics: [UInt16: GATTDiscoveredCharacteristic] = [:]
        /// The value handle each Client Characteristic Configuration belongs to.
        var clientConfigurations: [UInt16: UInt16] = [:]
        var disconnectWaiters: [@Sendable (Result<HCIStatus, HostError>) -> Void] = []
    }

    struct PendingConnect {
        /// Tells this connect from a later one to the same peer (a Connect call answered after a cancel).
        var id: UInt64
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
    /// "bluetoothd (hci1)".
    package let description: String
    /// `hciN`, or nil for the first adapter bluetoothd has.
    let adapterName: String?
    /// The bus bluetoothd is on.
    let busAddress: String
    /// The pairing agent `OCB_BLUEZ_AGENT` asks for (``BlueZPairingAgent``), registered while the engine runs, and
    /// where its prompts are said (logged at notice by default).
    let pairingAgent: BlueZPairingAgent?
    let prompt: @Sendable (String) -> Void
    /// The root of our objects on the bus (the GATT application, the advertisement, agents; unique per engine).
    let root: String
    private static let engines = LockedValue(0)
    /// The first line said outside a call (bluetoothd unreachable, discovery refused, bluetoothd gone).
    let reported = LockedValue<String?>(nil)
    /// bluetoothd's objects and the adapter, once connected (read from any thread: the tree has its own lock).
    let sessionBox = LockedValue<BlueZAdapterSession?>(nil)
    var session: BlueZAdapterSession? { sessionBox.load() }

    /// bluetoothd's properties of the adapter (org.bluez.Adapter1: Address, Name, Alias, Class, Powered, Roles...),
    /// as last heard, as text (strings as they are, booleans yes/no, numbers in decimal, arrays joined by ", ");
    /// nil before the adapter is found.
    public var adapterProperties: [String: String]? {
        guard let session, let properties = session.tree.properties(session.adapterPath, BlueZAdapterSession.adapterInterface) else {
            return nil
        }
        return properties.mapValues(Self.text)
    }

    private static func text(_ value: DBusValue) -> String {
        switch value {
        case .string(let text), .objectPath(let text), .signature(let text): text
        case .boolean(let flag): flag ? "yes" : "no"
        case .byte(let number): "\(number)"
        case .int16(let number): "\(number)"
        case .uint16(let number): "\(number)"
        case .int32(let number): "\(number)"
        case .uint32(let number): "\(number)"
        case .int64(let number): "\(number)"
        case .uint64(let number): "\(number)"
        case .double(let number): "\(number)"
        case .variant(let inner): text(inner)
        case .array(_, let elements): elements.map(text).joined(separator: ", ")
        default: value.description
        }
    }
    /// Set at shutdown, for the work off the loop (the session's start, pairing's agent).
    let closing = LockedValue(false)
    /// Our agent for the pairings we ask for, with the capability of the last one.
    let promptAgent = LockedValue<BlueZAgent?>(nil)
    /// How long bluetoothd may take to say whether its adapter is there and powered.
    static let startLimit: Duration = .seconds(15)

    // MARK: Loop-confined state

    private var handler: @Sendable (HostEvent) -> Void = { _ in }
    private let eventHandlers = StackEventHandlers()
    package private(set) var controllerInfo = ControllerInfo()
    var phase = Phase.idle
    private var startWaiters: [@Sendable (Result<ControllerInfo, HostError>) -> Void] = []
    private var startTimer: ScheduledJob?
    var links: [UInt16: Link] = [:]
    private var nextHandle: UInt16 = 0x0040
    /// Connects under way, by peer: bluetoothd takes any number (Device1.Connect per device; the kernel keeps
    /// them in its pending LE connections and connects each when heard).
    var pendingConnects: [BluetoothAddress: PendingConnect] = [:]
    var lastConnectID: UInt64 = 0
    var scanning = false
    /// With duplicates filtered: what each device advertised when last reported (bluetoothd tells every RSSI
    /// change; a device is reported again when its advertising data changed, as a controller's duplicate filter does).
    var heard: [BluetoothAddress: AdvertisingData]?
    var adapterPowered = false
    /// The `OCB_BLUEZ_AGENT` agent, when registered.
    var environmentAgent: BlueZAgent?
    /// Characteristic objects being notified: the link and the value handle.
    var notifying: [String: (link: UInt16, attribute: UInt16)] = [:]
    /// Who waits for a device's services to be resolved (true: resolved; false: the link ended or 30 s passed).
    var serviceWaiters: [String: [Int: (Bool) -> Void]] = [:]
    var nextWaiter = 0
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
    /// names another (tests), with the `OCB_BLUEZ_AGENT` agent unless another is given.
    package init(adapter: String?, busAddress: String? = nil,
                 pairingAgent: BlueZPairingAgent? = BlueZPairingAgent.fromEnvironment(),
                 prompt: @escaping @Sendable (String) -> Void = { Log.bluez.notice("\($0)") }) {
        loop = DispatchEventLoop(label: "BlueZ.engine")
        adapterName = adapter
        self.busAddress = busAddress ?? DBusConnection.systemBusAddress
        self.pairingAgent = pairingAgent
        self.prompt = prompt
        description = "bluetoothd (\(adapter ?? "its first adapter"))"
        root = "/org/opencorebluetooth/engine\(Self.engines.withLock { count -> Int in count += 1; return count })"
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

    /// Connects to bluetoothd and waits for the adapter's first state: powered on, or a failure that says why (at
    /// most ``startLimit``); then exports our objects on that connection.
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
            openSession()
            startTimer = loop.schedule(after: Self.startLimit) { [weak self] in
                guard let self else { return }
                finishStart(.failure(HostError(.notReady, "\(description) did not answer within \(Self.startLimit)")))
            }
        }
    }

    /// The adapter's state: the first one decides the start; powered off later drops every link.
    func stateChanged(_ state: BlueZAdapterState) {
        adapterPowered = state == .poweredOn
        if case .starting = phase {
            guard state == .poweredOn else { return finishStart(.failure(startFailure(state))) }
            if let address = BlueZL2CAPSocket.adapterAddress(session?.tree, session?.adapterPath) {
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

    /// Exports the application's root and the advertisement on the session's connection.
    private func exportObjects() {
        guard let connection = session?.tree.connection else { return }
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
            closeSession()
            let connects = pendingConnects.values
            pendingConnects = [:]
            for pending in connects {
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
        notifying = notifying.filter { $0.value.link != handle }
        if let path = link.path, let waiters = serviceWaiters.removeValue(forKey: path) {
            for id in waiters.keys.sorted() { waiters[id]?(false) }
        }
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

    /// bluetoothd's privacy is its own (Privacy= in main.conf): the adapter's address.
    package func currentPrivateAddress(completion: @escaping @Sendable (BluetoothAddress) -> Void) {
        onLoop { [self] in completion(controllerInfo.ownAddress) }
    }

    /// bluetoothd exchanges the ATT_MTU itself as it connects and says the result with the link.
    package var exchangesMTUOnConnect: Bool { false }
    /// bluetoothd reads the GAP Device Name of the devices it connects to (Device1.Name).
    package var reportsPeerNames: Bool { true }

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
