public import Dispatch
public import Foundation
import AdvertisingData
import BluetoothCore
import BluetoothRuntime

/// The central role (CoreBluetooth `CBCentralManager`; GAP central, Core 5.4 Vol 3 Part C §9; GATT client,
/// Vol 3 Part G §4) over a ``CBCentralBackend``.
///
/// Semantics (corebluetooth-api.md §2): the first `centralManagerDidUpdateState` is asynchronous; commands before
/// `.poweredOn` log "API MISUSE" and do nothing; callbacks of the manager and of its peripherals run in order on
/// its queue; discovered peripherals are held weakly (keep a strong reference, as on Apple platforms) and a
/// released peripheral cancels its connection; a scan reports each device once per scan unless
/// `CBCentralManagerScanOptionAllowDuplicatesKey` is true; `retrievePeripherals(withIdentifiers:)` returns the
/// devices seen in this run or known to the backend, identifiers being stable across runs (``CBPeerIdentifier``);
/// `retrieveConnectedPeripherals(withServices:)` and `registerForConnectionEvents(options:)` look at the links of
/// every manager of this process (of its backend provider), as iOS looks at the system's (``SystemConnections``;
/// links of other processes are not visible).
///
/// Known peers persist across runs (``KnownPeersStore``): peers discovered or connected are kept in
/// `$XDG_DATA_HOME/opencorebluetooth/known-peers.json` (else `~/.local/share/opencorebluetooth/known-peers.json`);
/// `OCB_KNOWN_PEERS=/path/file.json` names another file and `OCB_KNOWN_PEERS=off` keeps them in memory. A later
/// run's `retrievePeripherals(withIdentifiers:)` returns them (disconnected, with their last known name), and
/// `connect` reaches one by its stored address without scanning.
///
/// State restoration (corebluetooth-api.md §2.11): created with `CBCentralManagerOptionRestoreIdentifierKey`, the
/// manager keeps the peripherals it is connected or connecting to and the scan it runs (`StateRestorationStore`)
/// while it lives; a manager created later (another process) with the same identifier calls
/// `centralManager(_:willRestoreState:)` first, on its queue, with those peripherals (`.connecting`: the links did
/// not outlive the process), the scan's services and options, then, once powered on and before
/// `centralManagerDidUpdateState`, connects to the restored peripherals the app still holds (`didConnect` follows)
/// and scans again. Leaving `.poweredOn` forgets the state, as iOS does not restore after Bluetooth was toggled.
open class CBCentralManager: CBManager, ApplicationStateObserver, @unchecked Sendable {
    /// Features for `supports(_:)`.
    public struct Feature: OptionSet, Sendable, Hashable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// Scanning for and connecting to devices that use LE extended advertising (Bluetooth 5).
        public static let extendedScanAndConnect = Feature(rawValue: 1 << 0)
    }

    /// The object that receives the manager's events, on its queue; held weakly.
    open weak var delegate: (any CBCentralManagerDelegate)?

    let backend: (any CBCentralBackend)?
    /// The peers known across runs (read when the manager is created).
    let knownPeers: KnownPeersStore

    private struct WeakPeripheral {
        weak var value: CBPeripheral?
    }

    private struct Registry {
        var peripherals: [CBBackendPeer: WeakPeripheral] = [:]
        var seen: [UUID: CBBackendPeer] = [:]
        var isScanning = false
    }

    private let registry = LockedValue(Registry())

    // Scan session, on the queue only.
    private var scanParameters = CBBackendScanParameters(serviceUUIDs: nil, allowDuplicates: false, solicitedServiceUUIDs: [])
    private var reportedThisScan: Set<CBBackendPeer> = []

    // State restoration: where it is kept (nil without a restore identifier), the scan to keep (any thread), and
    // what a restored manager resumes at the first `.poweredOn` (on the queue only).
    let restoration: StateRestorationStore?
    private let restorableScan = LockedValue<CBBackendScanParameters?>(nil)
    /// Whether the app gave `CBCentralManagerScanOptionAllowDuplicatesKey` (a restored scan's options hold only
    /// what the app gave).
    private let restorableDuplicatesGiven = LockedValue(false)
    private var restoredDuplicatesGiven = true
    private var restoredConnections: [CBBackendPeer] = []
    private var restoredScan: CBBackendScanParameters?
    /// The snapshot a manager on a kept stack restores once the backend says which links it still holds
    /// (`.restoredLinks`); nil otherwise. On the queue.
    private var awaitingLinks: CentralRestorationSnapshot?
    /// Whether the manager's stack is one the system keeps (the Bluetooth service).
    private let onKeptStack: Bool

    /// Whether the device supports `features`, as its controller and host say: `.extendedScanAndConnect` when the
    /// host scans and connects with the extended commands (a Bluetooth 5 controller with LE Extended Advertising:
    /// ours, RootCanal, a 5.x dongle); before any manager's stack opened, false.
    @discardableResult
    open class func supports(_ features: Feature) -> Bool {
        var unsupported = features
        if HostBackend.supportsExtendedScanAndConnect(controller: HostBackend.lastController.load()) {
            unsupported.remove(.extendedScanAndConnect)
        }
        return unsupported.isEmpty
    }

    /// No delegate, main queue.
    public convenience init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    /// A manager with `delegate`, calling it on `queue` (nil: the main queue).
    public convenience init(delegate: (any CBCentralManagerDelegate)?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// Options: `CBCentralManagerOptionRestoreIdentifierKey` (a String) keeps and restores the manager's state (see
    /// the type's documentation); `CBCentralManagerOptionShowPowerAlertKey` is accepted and has no effect (no
    /// system alert on Linux).
    public init(delegate: (any CBCentralManagerDelegate)?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        self.delegate = delegate
        let provider = CBBackendRegistry.current
        backend = provider?.makeCentral()
        postedLinks = PostedLinks(system: provider?.connections ?? SystemConnections())
        let application = provider?.application ?? .process
        let inFiles = provider?.storesStateInFiles ?? true
        knownPeers = KnownPeersStore(location: inFiles ? KnownPeersStore.currentLocation() : .memory)
        restoration = inFiles ? StateRestorationStore.forOptions(options, key: CBCentralManagerOptionRestoreIdentifierKey, role: .central) : nil
        let made = backend
        onKeptStack = restoration.map { made?.keepStack(restoreIdentifier: $0.identifier) ?? false } ?? false
        super.init(queue: queue, application: application, backgroundMode: .bluetoothCentral, sharedTime: provider?.sharedTime)
        application.observe(self)
        let snapshot = restoration?.load(CentralRestorationSnapshot.self)
        restoration?.removeAtNormalExit()
        if onKeptStack { awaitingLinks = snapshot ?? CentralRestorationSnapshot(peripherals: [], scan: nil) }
        startBackend(restoring: onKeptStack ? nil : snapshot, with: { self.restore($0, live: [:]) },
                     start: backend.map { backend in backend.start }, handle: { [weak self] in self?.handle($0) },
                     discardableWhileHeld: { if case .advertisement = $0 { true } else { false } },
                     didUpdateState: { self.delegate?.centralManagerDidUpdateState(self) })
    }

    deinit {
        backend?.shutdown()
        knownPeers.flush()
        postedLinks.allEnded()
        system.setServiceLinks([:], from: ObjectIdentifier(self))
    }

    /// This manager's links, as "the system" knows them (``SystemConnections``).
    let postedLinks: PostedLinks
    var system: SystemConnections { postedLinks.system }
    /// What `registerForConnectionEvents(options:)` asked for (nil: not registered).
    private let connectionEventMatching = LockedValue<ConnectionEventMatching?>(nil)

    /// True from `scanForPeripherals` until `stopScan` or leaving `.poweredOn`.
    public internal(set) var isScanning: Bool {
        get { registry.withLock { $0.isScanning } }
        set { registry.withLock { $0.isScanning = newValue } }
    }

    // MARK: Commands

    /// Scans for peripherals advertising one of `serviceUUIDs` (nil or empty: all), reporting them with
    /// `centralManager(_:didDiscover:advertisementData:rssi:)`. A new call replaces the services and options.
    open func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String: Any]? = nil) {
        guard requirePoweredOn(), let backend else { return }
        let duplicatesOption = (options?[CBCentralManagerScanOptionAllowDuplicatesKey] as? Bool)
            ?? (options?[CBCentralManagerScanOptionAllowDuplicatesKey] as? NSNumber)?.boolValue
        let allowDuplicates = duplicatesOption ?? false
        restorableDuplicatesGiven.store(duplicatesOption != nil)
        let solicited = (options?[CBCentralManagerScanOptionSolicitedServiceUUIDsKey] as? [CBUUID]) ?? []
        let parameters = CBBackendScanParameters(
            serviceUUIDs: serviceUUIDs.flatMap { $0.isEmpty ? nil : $0.map(\.bluetoothUUID) },
            allowDuplicates: allowDuplicates, solicitedServiceUUIDs: solicited.map(\.bluetoothUUID),
            lowDutyCycle: application.isRestricted)
        isScanning = true
        restorableScan.store(parameters)
        saveRestorableState()
        queue.async {
            // A new scan (or new parameters) starts a new coalescing session.
            self.scanParameters = parameters
            self.reportedThisScan = []
        }
        backend.startScan(parameters)
    }

    /// Stops scanning.
    open func stopScan() {
        guard requirePoweredOn(), let backend else { return }
        isScanning = false
        restorableScan.store(nil)
        saveRestorableState()
        backend.stopScan()
    }

    /// Connects (never times out). `CBConnectPeripheralOptionEnableAutoReconnect` reconnects after a link loss
    /// (reported with `isReconnecting: true`); `CBConnectPeripheralOptionStartDelayKey` delays the attempt; the
    /// notification options have no meaning on Linux and are ignored.
    open func connect(_ peripheral: CBPeripheral, options: [String: Any]? = nil) {
        guard requirePoweredOn(), let backend else { return }
        guard peripheral.state == .disconnected else { return }
        peripheral.autoReconnect = (options?[CBConnectPeripheralOptionEnableAutoReconnect] as? Bool) ?? false
        peripheral.state = .connecting
        register(peripheral)
        saveRestorableState()
        let peer = peripheral.peer
        if let delay = (options?[CBConnectPeripheralOptionStartDelayKey] as? NSNumber)?.doubleValue, delay > 0 {
            queue.asyncAfter(deadline: .now() + delay) { [weak peripheral] in
                guard let peripheral, peripheral.state == .connecting else { return }
                backend.connect(peer)
            }
        } else {
            backend.connect(peer)
        }
    }

    /// Cancels a pending connection (reported at once with `didDisconnectPeripheral(error: nil)`) or disconnects
    /// (reported when the link is gone).
    open func cancelPeripheralConnection(_ peripheral: CBPeripheral) {
        guard requirePoweredOn(), let backend else { return }
        switch peripheral.state {
        case .connecting:
            peripheral.state = .disconnected
            backend.cancelConnection(peripheral.peer)
            gate.deliver {
                self.delegate?.centralManager(self, didDisconnectPeripheral: peripheral, timestamp: Self.now(),
                                              isReconnecting: false, error: nil)
            }
        case .connected:
            peripheral.state = .disconnecting
            backend.cancelConnection(peripheral.peer)
        case .disconnected, .disconnecting:
            break
        }
        saveRestorableState()
    }

    /// The peripherals with these identifiers that the manager knows (seen in this run, known to the backend or
    /// stored from an earlier run), disconnected unless already connected; unknown identifiers are left out.
    @discardableResult
    open func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [CBPeripheral] {
        guard state == .poweredOn, let backend else { return [] }
        let known = backend.knownPeers()
        return identifiers.compactMap { identifier in
            if let peer = registry.withLock({ $0.seen[identifier] })
                ?? known.first(where: { CBPeerIdentifier.identifier(for: $0.address) == identifier }) {
                return peripheral(for: peer)
            }
            // Known from an earlier run: a new peripheral at its stored address, with its last known name.
            guard let entry = knownPeers.entry(for: identifier) else { return nil }
            let peripheral = peripheral(for: CBBackendPeer(address: entry.address))
            if peripheral.name == nil { peripheral.advertisedName = entry.name }
            return peripheral
        }
    }

    /// The peripherals connected to this process's stacks (iOS: to the system) that offer one of the services:
    /// advertised (including the overflow area and service data) or discovered, by this manager or another of the
    /// process, so a peer connected before its services were discovered is found too. One connected by another
    /// manager of the process comes back `.disconnected` for this one (as an iOS app sees a peer another app
    /// connected): `connect(_:)` gives it a link of its own. Links of other processes are not visible.
    @discardableResult
    open func retrieveConnectedPeripherals(withServices serviceUUIDs: [CBUUID]) -> [CBPeripheral] {
        guard state == .poweredOn else { return [] }
        let wanted = Set(serviceUUIDs.map(\.bluetoothUUID))
        let own = registry.withLock { $0.peripherals.values.compactMap(\.value) }.filter { $0.state == .connected }
        var found: [CBPeripheral] = own.filter { peripheral in
            (peripheral.services ?? []).contains { wanted.contains($0.uuid.bluetoothUUID) }
                || !system.services(of: peripheral.peer).isDisjoint(with: wanted)
        }
        let foundPeers = Set(found.map(\.peer))
        for (peer, services) in system.connectedPeers()
        where !foundPeers.contains(peer) && !services.isDisjoint(with: wanted) {
            found.append(peripheral(for: peer))
        }
        return found.sorted { $0.identifier.uuidString < $1.identifier.uuidString }
    }

    /// From now on, `centralManager(_:connectionEventDidOccur:for:)` reports each peer that connects to or
    /// disconnects from this process's stacks (iOS: the system) and matches the options: one of
    /// `CBConnectionEventMatchingOption.serviceUUIDs` (advertised or discovered services) or of `.peripheralUUIDs`;
    /// no options: every peer. A new call replaces the options. Links made by this manager are reported too (after
    /// `didConnect`, before `didDisconnect`... in the order they happen).
    open func registerForConnectionEvents(options: [CBConnectionEventMatchingOption: Any]? = nil) {
        guard requirePoweredOn() else { return }
        connectionEventMatching.store(ConnectionEventMatching(options: options))
        system.observe(self)
    }

    /// A link of the process started or ended (any thread): reported on the queue when it matches.
    func connectionEvent(_ event: CBConnectionEvent, peer: CBBackendPeer, services: Set<BluetoothUUID>) {
        guard let matching = connectionEventMatching.load(),
              matching.matches(identifier: CBPeerIdentifier.identifier(for: peer.address), services: services) else { return }
        gate.deliver {
            guard self.state == .poweredOn else { return }
            self.delegate?.centralManager(self, connectionEventDidOccur: event, for: self.peripheral(for: peer))
        }
    }

    // MARK: Application state

    /// iOS's background rules (``OCBApplication``): the events wait or flow, and a running scan goes on at the
    /// state's duty cycle.
    func applicationStateChanged(_ application: OCBApplication) {
        followApplicationState()
        queue.async {
            guard self.isScanning, let backend = self.backend else { return }
            var parameters = self.scanParameters
            parameters.lowDutyCycle = application.isRestricted
            guard parameters != self.scanParameters else { return }
            self.scanParameters = parameters
            self.restorableScan.store(parameters)
            backend.startScan(parameters)
        }
    }

    // MARK: Registry

    /// The live peripheral for a peer, or a new one registered weakly.
    func peripheral(for peer: CBBackendPeer) -> CBPeripheral {
        registry.withLock { registry in
            if let existing = registry.peripherals[peer]?.value { return existing }
            let created = CBPeripheral(peer: peer, manager: self)
            registry.peripherals[peer] = WeakPeripheral(value: created)
            registry.seen[created.identifier] = peer
            registry.peripherals = registry.peripherals.filter { $0.value.value != nil }
            return created
        }
    }

    private func register(_ peripheral: CBPeripheral) {
        registry.withLock {
            $0.peripherals[peripheral.peer] = WeakPeripheral(value: peripheral)
            $0.seen[peripheral.identifier] = peripheral.peer
        }
    }

    func existingPeripheral(_ peer: CBBackendPeer) -> CBPeripheral? {
        registry.withLock { $0.peripherals[peer]?.value }
    }

    /// How many peripherals the manager can still reach (tests: weak retention).
    var livePeripheralCount: Int { registry.withLock { $0.peripherals.values.filter { $0.value != nil }.count } }

    static func now() -> CFAbsoluteTime { Date().timeIntervalSinceReferenceDate }

    // MARK: Events (on the queue)

    private func handle(_ event: CBCentralBackendEvent) {
        switch event {
        case .stateChanged(let newState):
            let old = state
            guard newState != old else { return }
            state = newState
            if old == .poweredOn {
                isScanning = false
                restorableScan.store(nil)
                let all = registry.withLock { $0.peripherals.values.compactMap(\.value) }
                for peripheral in all where peripheral.state != .disconnected {
                    // No didDisconnect when Bluetooth goes away (iOS >= 10): the state changes silently.
                    peripheral.linkEnded()
                }
                postedLinks.allEnded()
                system.setServiceLinks([:], from: ObjectIdentifier(self))
                connectionEventMatching.store(nil)
                saveRestorableState()
            }
            if newState == .poweredOn { resumeRestoredState() }
            delegate?.centralManagerDidUpdateState(self)
        case .advertisement(let advertisement):
            discovered(advertisement)
        case .connected(let peer, let mtu):
            guard let peripheral = existingPeripheral(peer), peripheral.state == .connecting else {
                // Released or cancelled meanwhile: nobody wants this link.
                backend?.cancelConnection(peer)
                return
            }
            peripheral.linkStarted(mtu: mtu)
            knownPeers.connected(peer.address, name: peripheral.name)
            postedLinks.started(peer)
            saveRestorableState()
            delegate?.centralManager(self, didConnect: peripheral)
        case .connectionFailed(let peer, let error):
            guard let peripheral = existingPeripheral(peer), peripheral.state == .connecting else { return }
            peripheral.linkEnded()
            saveRestorableState()
            delegate?.centralManager(self, didFailToConnect: peripheral, error: error.cbError)
        case .disconnected(let peer, let error):
            postedLinks.ended(peer)
            // A connecting peripheral did not have the link that ended: it was that of a peripheral the app let
            // go (cancelled when released), and the backend connects again for this one.
            guard let peripheral = existingPeripheral(peer), peripheral.state != .disconnected, peripheral.state != .connecting else { return }
            peripheral.linkEnded()
            let reconnect = error != nil && peripheral.autoReconnect && state == .poweredOn
            if reconnect {
                peripheral.state = .connecting
                backend?.connect(peer)
            }
            saveRestorableState()
            delegate?.centralManager(self, didDisconnectPeripheral: peripheral, timestamp: Self.now(),
                                     isReconnecting: reconnect, error: error?.cbError)
        case .mtuChanged(let peer, let mtu):
            existingPeripheral(peer)?.mtu = mtu
        case .valueUpdated(let peer, let handle, let value):
            existingPeripheral(peer)?.valueUpdated(handle: handle, value: value)
        case .readyToSendWriteWithoutResponse(let peer):
            existingPeripheral(peer)?.readyToSendWriteWithoutResponse()
        case .nameUpdated(let peer, let name):
            existingPeripheral(peer)?.nameUpdated(name)
            knownPeers.renamed(peer.address, name: name)
        case .servicesChanged(let peer, let start, let end):
            existingPeripheral(peer)?.servicesChanged(start: start, end: end)
            saveRestorableState()
        case .systemLinks(let links):
            system.setServiceLinks(links, from: ObjectIdentifier(self))
        case .restoredLinks(let live):
            guard let snapshot = awaitingLinks else { return }
            awaitingLinks = nil
            if !snapshot.isEmpty || !live.isEmpty { restore(snapshot, live: live) }
        }
    }

    // MARK: State restoration

    /// Writes what a relaunched app would get back: the live peripherals connected or connecting (with what was
    /// discovered of the connected ones and their notification states), and the scan. Also after discovery and
    /// notification changes (``peripheralGATTChanged()``).
    private func saveRestorableState() {
        guard let restoration else { return }
        let peripherals = registry.withLock { $0.peripherals.values.compactMap(\.value) }
            .filter { $0.state == .connecting || $0.state == .connected }
            .sorted { $0.identifier.uuidString < $1.identifier.uuidString }
        restoration.save(CentralRestorationSnapshot(
            peripherals: peripherals.map { peripheral in
                (peripheral.peer, peripheral.name,
                 peripheral.state == .connected ? peripheral._services.map(RestoredRemoteService.records(of:)) : nil)
            },
            scan: restorableScan.load(), duplicatesGiven: restorableDuplicatesGiven.load()))
    }

    /// A peripheral's discovered services or notification states changed (on the queue).
    func peripheralGATTChanged() {
        saveRestorableState()
    }

    /// On the queue, before the first state update: the restored peripherals and scan, handed to the delegate.
    /// A peripheral whose link the system kept (`live`, a kept stack's) is `.connected`, with its services,
    /// characteristics, descriptors and notification states as they were; the others are `.connecting` and, with
    /// the scan, resume at the first `.poweredOn`.
    private func restore(_ snapshot: CentralRestorationSnapshot, live: [CBBackendPeer: Int]) {
        let peers = (try? snapshot.restoredPeers()) ?? []
        let scan = try? snapshot.restoredScan()
        var peripherals = peers.map { entry -> CBPeripheral in
            let peripheral = peripheral(for: entry.peer)
            if peripheral.name == nil { peripheral.advertisedName = entry.name }
            if let mtu = live[entry.peer] {
                adoptLink(peripheral, mtu: mtu)
                peripheral._services = (try? (entry.services ?? []).enumerated().map { (index, record) throws(StateRestorationError) in
                    try record.restored(for: peripheral, index: index)
                }).flatMap { $0.isEmpty ? nil : $0 }
            } else {
                peripheral.state = .connecting
            }
            return peripheral
        }
        for (peer, mtu) in live where !peers.contains(where: { $0.peer == peer }) {
            let peripheral = peripheral(for: peer)
            adoptLink(peripheral, mtu: mtu)
            peripherals.append(peripheral)
        }
        restoredConnections = peers.map(\.peer).filter { live[$0] == nil }
        restoredScan = scan
        var state: [String: Any] = [:]
        if !peripherals.isEmpty { state[CBCentralManagerRestoredStatePeripheralsKey] = peripherals }
        if let scan {
            if let services = scan.serviceUUIDs {
                state[CBCentralManagerRestoredStateScanServicesKey] = services.map(CBUUID.init(bluetoothUUID:))
            }
            var options: [String: Any] = [:]
            if snapshot.scan?.allowDuplicates != nil {
                options[CBCentralManagerScanOptionAllowDuplicatesKey] = NSNumber(value: scan.allowDuplicates)
            }
            restoredDuplicatesGiven = snapshot.scan?.allowDuplicates != nil
            if !scan.solicitedServiceUUIDs.isEmpty {
                options[CBCentralManagerScanOptionSolicitedServiceUUIDsKey] = scan.solicitedServiceUUIDs.map(CBUUID.init(bluetoothUUID:))
            }
            state[CBCentralManagerRestoredStateScanOptionsKey] = options
        }
        delegate?.centralManager(self, willRestoreState: state)
    }

    /// A link the system kept for this manager is the peripheral's (no `didConnect`: it connected in an earlier
    /// launch).
    private func adoptLink(_ peripheral: CBPeripheral, mtu: Int) {
        peripheral.linkStarted(mtu: mtu)
        knownPeers.connected(peripheral.peer.address, name: peripheral.name)
        postedLinks.started(peripheral.peer)
    }

    /// At the first `.poweredOn` after a restoration: connects to the restored peripherals still held and still
    /// connecting, and scans again with the restored parameters.
    private func resumeRestoredState() {
        guard let backend else { return }
        let peers = restoredConnections
        restoredConnections = []
        for peer in peers where existingPeripheral(peer)?.state == .connecting {
            backend.connect(peer)
        }
        if let scan = restoredScan {
            restoredScan = nil
            scanParameters = scan
            reportedThisScan = []
            isScanning = true
            restorableScan.store(scan)
            restorableDuplicatesGiven.store(restoredDuplicatesGiven)
            backend.startScan(scan)
        }
        saveRestorableState()
    }

    private func discovered(_ received: CBBackendAdvertisement) {
        var advertisement = received
        // The overflow area of an app in the background (ServiceOverflowArea): it offers the UUIDs scanned for
        // whose bits it sets, and is not the app's manufacturer data.
        if let bytes = advertisement.manufacturerData, let area = ServiceOverflowArea(manufacturerData: bytes) {
            advertisement.manufacturerData = nil
            advertisement.overflowServiceUUIDs += (scanParameters.serviceUUIDs ?? []).filter(area.mayContain)
        }
        system.learn(
            services: advertisement.serviceUUIDs + advertisement.overflowServiceUUIDs + advertisement.serviceData.keys,
            of: advertisement.peer)
        guard isScanning else { return }
        // In the background (OCBApplication): a scan for no service finds nothing, and duplicates are coalesced.
        let restricted = application.isRestricted
        if restricted, scanParameters.serviceUUIDs == nil { return }
        if let wanted = scanParameters.serviceUUIDs {
            let offered = Set(advertisement.serviceUUIDs + advertisement.overflowServiceUUIDs)
            let solicited = Set(advertisement.solicitedServiceUUIDs)
            let match = wanted.contains { offered.contains($0) }
                || scanParameters.solicitedServiceUUIDs.contains { solicited.contains($0) }
            guard match else { return }
        }
        if !scanParameters.allowDuplicates || restricted {
            guard reportedThisScan.insert(advertisement.peer).inserted else { return }
        }
        let peripheral = peripheral(for: advertisement.peer)
        if peripheral.gapName == nil, let name = advertisement.localName {
            peripheral.advertisedName = name
        }
        knownPeers.discovered(advertisement.peer.address, name: peripheral.name)
        delegate?.centralManager(self, didDiscover: peripheral, advertisementData: Self.dictionary(advertisement),
                                 rssi: NSNumber(value: advertisement.rssi))
    }

    /// The advertisement dictionary with Apple's keys and value types (corebluetooth-api.md §1.2).
    static func dictionary(_ advertisement: CBBackendAdvertisement) -> [String: Any] {
        var dictionary: [String: Any] = [
            CBAdvertisementDataIsConnectable: NSNumber(value: advertisement.isConnectable),
            "kCBAdvDataTimestamp": NSNumber(value: now()),
        ]
        if let name = advertisement.localName { dictionary[CBAdvertisementDataLocalNameKey] = name }
        if !advertisement.serviceUUIDs.isEmpty {
            dictionary[CBAdvertisementDataServiceUUIDsKey] = advertisement.serviceUUIDs.map(CBUUID.init(bluetoothUUID:))
        }
        if !advertisement.overflowServiceUUIDs.isEmpty {
            dictionary[CBAdvertisementDataOverflowServiceUUIDsKey] = advertisement.overflowServiceUUIDs.map(CBUUID.init(bluetoothUUID:))
        }
        if !advertisement.solicitedServiceUUIDs.isEmpty {
            dictionary[CBAdvertisementDataSolicitedServiceUUIDsKey] = advertisement.solicitedServiceUUIDs.map(CBUUID.init(bluetoothUUID:))
        }
        if !advertisement.serviceData.isEmpty {
            var serviceData: [CBUUID: Data] = [:]
            for (uuid, bytes) in advertisement.serviceData { serviceData[CBUUID(bluetoothUUID: uuid)] = Data(bytes) }
            dictionary[CBAdvertisementDataServiceDataKey] = serviceData
        }
        if let manufacturer = advertisement.manufacturerData {
            dictionary[CBAdvertisementDataManufacturerDataKey] = Data(manufacturer)
        }
        if let power = advertisement.txPowerLevel {
            dictionary[CBAdvertisementDataTxPowerLevelKey] = NSNumber(value: power)
        }
        return dictionary
    }
}
