import ATT
import AdvertisingData
public import BluetoothCore
import BluetoothRuntime
import DequeModule
import GATT
import HCI
import Host
public import StackLauncher
import BluetoothEngine
import ServiceEngine

/// The GAP central and GATT client of a `CBCentralManager` on its own `HostStack` (see ``HostBackend``): scanning
/// (Core 5.4 Vol 3 Part C §9.2; advertising data merged with the scan response by the host), connecting (any
/// number pending at once, each connected when its peer is heard: the host initiates through the controller's
/// Filter Accept List; never timing out, as CoreBluetooth), the Exchange MTU the host
/// sends on connect (reported with `.connected`, Vol 3 Part F §3.4.2), the peer's GAP Device Name read once
/// connected (Vol 3 Part C §12.1, as iOS reads it), discovery, long reads and writes, CCCD
/// writes and notifications (Vol 3 Part G §4), RSSI (Vol 4 Part E §7.5.4).
///
/// State lives in a lock and is changed on the stack's loop; commands hop onto the loop. Write Command flow
/// control: writes queued but not yet handed to the bearer are counted under the lock (at most 8 before
/// `writeWithoutResponse` answers false), and the host's send-queue readiness (`isReadyToSend`, `.readyToSend`)
/// decides when `.readyToSendWriteWithoutResponse` follows.
public final class EngineCentralBackend: CBCentralBackend, Sendable {
    /// Writes without response accepted but not yet sent before `writeWithoutResponse` answers false.
    static let writeQueueLimit = 8
    /// How many reports of a scannable device are held while its scan response has not arrived.
    static let reportsHeldForScanResponse = 3
    /// How long `.connected` waits for the MTU exchange the host starts on connect.
    static let mtuWait: Duration = .seconds(2)

    struct Link {
        var handle: UInt16?
        var reported = false
        var cancelled = false
        /// Connected again after a cancel not yet ended (the app cancelled, then connected).
        var connectAgain = false
        var mtuTimer: ScheduledJob?
        var queuedWrites = 0
        var notReady = false
        var owesReady = false
        /// The peer's Service Changed value handle, once subscribed to its indications.
        var serviceChanged: UInt16?
        /// The handle of the peer's GAP Device Name, once read.
        var deviceNameHandle: UInt16?
        /// Why securing the link failed, as CoreBluetooth reports it: the peer removed its pairing information
        /// (``HostEvent/bondLost(handle:identity:)``, ``HostSecurityFailure/bondLost(identity:)``) or SMP timed
        /// out (encryption timed out). Cleared when a later pairing succeeds.
        var securityFailure: CBError.Code?
    }

    struct State {
        var sink: (@Sendable (CBCentralBackendEvent) -> Void)?
        var links: [BluetoothAddress: Link] = [:]
        var scanning: CBBackendScanParameters?
        /// Scannable devices heard without their scan response yet, and how many of their reports were held.
        var heldReports: [BluetoothAddress: Int] = [:]
        /// Devices heard or connected since the backend started, oldest first (at most 256).
        var seen: Deque<BluetoothAddress> = []
        var closed = false
        /// The stack is the service's, kept under a restore identifier; whether its links were reported yet.
        var kept = false
        var linksReported = false
    }

    private let opener: EngineBackendStack
    private let state = LockedValue(State())

    /// The system's pairing dialogs (nil: none, Just Works as NoInputNoOutput).
    private let pairingAgent: OCBPairingAgent?

    init(transport: HostBackend.Transport, preferredATTMTU: Int? = nil, pairingAgent: OCBPairingAgent? = nil,
         system: OCBSystemBluetooth? = nil) {
        opener = EngineBackendStack(transport: transport, label: "OpenCoreBluetooth.central", preferredATTMTU: preferredATTMTU,
                                    pairsAsAPhone: pairingAgent != nil, system: system)
        self.pairingAgent = pairingAgent
    }

    /// A backend on the stack `launch` opens (tests: bluetoothd on a bus of their own).
    package init(launching launch: @escaping @Sendable (StackLaunchOptions) async throws(StackLaunchError) -> any OpenedStack) {
        pairingAgent = nil
        opener = EngineBackendStack(transport: .specification("test"), label: "OpenCoreBluetooth.central", preferredATTMTU: nil, launch: launch)
    }

    /// The stack this backend runs on, once open (tests, diagnostics).
    public var launchedStack: LaunchedStack? { opener.stack as? LaunchedStack }

    // MARK: Lifecycle

    /// Opens the stack, then reports `.poweredOn`, `.unsupported` if it cannot be opened; when it is lost later,
    /// `.poweredOff`, or on the shared air `.resetting` until it is open again (`.poweredOn`) or cannot be
    /// (`.poweredOff`), as iOS shows a restart of its Bluetooth service.
    /// The Bluetooth service keeps the stack under `central.IDENTIFIER` when the transport is an air hub or
    /// `service[:TRANSPORT]` (``EngineBackendStack/keep(as:)``).
    public func keepStack(restoreIdentifier: String) -> Bool {
        let kept = opener.keep(as: "central." + restoreIdentifier)
        state.withLock { $0.kept = kept }
        return kept
    }

    public func start(_ events: @escaping @Sendable (CBCentralBackendEvent) -> Void) {
        state.withLock { $0.sink = events }
        opener.run(events: { [weak self] event, _ in self?.handle(event) },
                   prepare: { [weak self] stack, done in
                       self?.adoptKeptLinks(of: stack)
                       self?.followSystemLinks(of: stack)
                       done()
                   },
                   forget: { [weak self] _ in self?.forgetStack() },
                   state: { [weak self] in self?.emit(.stateChanged($0)) })
    }

    /// A kept stack taken back holds links the program made before it died: they are this backend's again, and
    /// the manager hears of them (``CBCentralBackendEvent/restoredLinks(_:)``) before the stack's first state and
    /// before anything the service queued for the program. Once: a stack opened again after a reset starts bare.
    /// A stack of the Bluetooth service: the manager hears of the service's links (every program's) now and each
    /// time they change.
    private func followSystemLinks(of stack: any OpenedStack) {
        guard let engine = (stack as? ServiceStack)?.serviceEngine else { return }
        let report: @Sendable ([ServiceSystemLink]) -> Void = { [weak self] links in
            var peers: [CBBackendPeer: Set<BluetoothUUID>] = [:]
            for link in links { peers[CBBackendPeer(address: link.peer)] = Set(link.services) }
            self?.emit(.systemLinks(peers))
        }
        engine.observeSystemLinks(report)
        report(engine.systemLinks)
    }

    private func adoptKeptLinks(of stack: any OpenedStack) {
        let links = (stack as? ServiceStack).map { $0.serviceEngine.welcome.reattached ? $0.serviceEngine.welcome.links : [] } ?? []
        let report = state.withLock { state -> [CBBackendPeer: Int]? in
            guard state.kept, !state.linksReported else { return nil }
            state.linksReported = true
            var restored: [CBBackendPeer: Int] = [:]
            for link in links where link.connection.role == .central {
                let peer = link.connection.peer
                state.links[peer] = Link(handle: link.connection.handle, reported: true)
                restored[CBBackendPeer(address: peer)] = link.attMTU
            }
            return restored
        }
        if let report { emit(.restoredLinks(report)) }
    }

    /// The stack is gone: its links, scan and timers with it (the manager invalidates its peripherals).
    private func forgetStack() {
        let timers = state.withLock { state -> [ScheduledJob] in
            defer {
                state.links = [:]
                state.scanning = nil
                state.heldReports = [:]
            }
            return state.links.values.compactMap(\.mtuTimer)
        }
        for timer in timers { timer.cancel() }
    }

    public func shutdown() {
        let timers = state.withLock { state -> [ScheduledJob] in
            state.closed = true
            state.sink = nil
            return state.links.values.compactMap(\.mtuTimer)
        }
        for timer in timers { timer.cancel() }
        opener.close()
    }

    private func emit(_ event: CBCentralBackendEvent) {
        state.load().sink?(event)
    }


    private func peer(handle: UInt16) -> BluetoothAddress? {
        state.withLock { state in state.links.first { $0.value.handle == handle }?.key }
    }

    // MARK: Scanning

    /// Starts active scanning, restarting the scan to apply new parameters; a low duty cycle scans 60 ms of
    /// every 1.28 s.
    public func startScan(_ parameters: CBBackendScanParameters) {
        opener.onStack { [self] stack in
            let previous = state.withLock { state -> CBBackendScanParameters? in
                defer {
                    state.scanning = parameters
                    state.heldReports = [:]
                }
                return state.scanning
            }
            // An app in the background: 60 ms of every 1.28 s (foreground: 30 of every 60 ms).
            let options = parameters.lowDutyCycle
                ? ScanOptions(active: true, interval: 0x0800, window: 0x0060, filterDuplicates: !parameters.allowDuplicates)
                : ScanOptions(active: true, filterDuplicates: !parameters.allowDuplicates)
            if previous != nil {
                stack.engine.stopScanning { _ in stack.engine.startScanning(options) { _ in } }
            } else {
                stack.engine.startScanning(options) { _ in }
            }
        }
    }

    /// Stops scanning if a scan runs.
    public func stopScan() {
        opener.onStack { [self] stack in
            guard state.withLock({ state -> Bool in defer { state.scanning = nil }; return state.scanning != nil }) else { return }
            stack.engine.stopScanning()
        }
    }

    /// A scan report as the façade's advertisement (Core Supplement Part A: name, UUID lists, service data,
    /// manufacturer data, TX power).
    static func advertisement(_ report: ScanReport) -> CBBackendAdvertisement {
        let data = report.advertisingData
        return CBBackendAdvertisement(
            peer: CBBackendPeer(address: report.address), rssi: Int(report.rssi), isConnectable: report.isConnectable,
            localName: data.localName, serviceUUIDs: data.serviceUUIDs, solicitedServiceUUIDs: data.solicitedServiceUUIDs,
            serviceData: data.serviceData, manufacturerData: data.manufacturerDataBytes,
            txPowerLevel: data.txPowerLevel.map { Int($0) })
    }

    // MARK: Connections

    public func connect(_ peer: CBBackendPeer) {
        opener.onStack { [self] stack in
            let asked = state.withLock { state -> Bool in
                guard var link = state.links[peer.address] else {
                    state.links[peer.address] = Link()
                    return true
                }
                // Connected or connecting already; cancelled but not yet ended (a pending connection, or a link
                // whose CBPeripheral was released): connected again once it has.
                if link.cancelled { link.connectAgain = true }
                state.links[peer.address] = link
                return false
            }
            if asked { startConnect(peer.address, stack) }
        }
    }

    /// Asks the engine for the connection (any number pending at once).
    private func startConnect(_ address: BluetoothAddress, _ stack: any OpenedStack) {
        stack.engine.connect(to: address) { [self] result in
            enum Outcome { case connected(UInt16), disconnect(UInt16), failed(String), again, none }
            let outcome = state.withLock { state -> Outcome in
                guard var link = state.links[address] else {
                    if case .success(let connection) = result { return .disconnect(connection.handle) }
                    return .none
                }
                let wanted = !link.cancelled || link.connectAgain
                switch result {
                case .success(let connection) where wanted:
                    Self.remember(address, in: &state)
                    link = Link()
                    link.handle = connection.handle
                    state.links[address] = link
                    return .connected(connection.handle)
                case .success(let connection):
                    state.links[address] = nil
                    return .disconnect(connection.handle)
                case .failure where link.cancelled && link.connectAgain:
                    state.links[address] = Link()
                    return .again
                case .failure(let error):
                    state.links[address] = nil
                    return link.cancelled ? .none : .failed(error.reason)
                }
            }
            switch outcome {
            case .connected(let handle): awaitMTU(address, handle, stack)
            case .disconnect(let handle): stack.engine.disconnect(connectionHandle: handle)
            case .failed(let reason): emit(.connectionFailed(CBBackendPeer(address: address), .core(.connectionFailed, reason)))
            case .again: startConnect(address, stack)
            case .none: break
            }
        }
    }

    /// Reports `.connected` once the MTU exchange the host started is over (or did not happen in time).
    private func awaitMTU(_ address: BluetoothAddress, _ handle: UInt16, _ stack: any OpenedStack) {
        let mtu = stack.engine.attMTU(connectionHandle: handle) ?? ATTMTU.leDefault
        if mtu > ATTMTU.leDefault || !stack.engine.exchangesMTUOnConnect {
            return reportConnected(address, mtu: mtu)
        }
        let timer = stack.engine.eventLoop.schedule(after: Self.mtuWait) { [weak self] in
            self?.reportConnected(address, mtu: stack.engine.attMTU(connectionHandle: handle) ?? ATTMTU.leDefault)
        }
        state.withLock { $0.links[address]?.mtuTimer = timer }
    }

    private func reportConnected(_ address: BluetoothAddress, mtu: Int) {
        let report = state.withLock { state -> Bool in
            guard var link = state.links[address], !link.reported, !link.cancelled else { return false }
            link.reported = true
            link.mtuTimer?.cancel()
            link.mtuTimer = nil
            state.links[address] = link
            return true
        }
        guard report else { return }
        emit(.connected(CBBackendPeer(address: address), mtu: mtu))
        if let stack = opener.stack, let handle = state.load().links[address]?.handle {
            if !stack.engine.reportsPeerNames { readDeviceName(address, handle, stack) }
            subscribeToServiceChanged(address, handle, stack)
        }
    }

    /// Reads the peer's GAP Device Name as iOS does once connected (Read Using Characteristic UUID 0x2A00, Core 5.4
    /// Vol 3 Part G §4.8.2: one request; Read Blob for the rest of a name that fills the response), for
    /// `.nameUpdated`. Read again when the peer's Service Changed covers it.
    private func readDeviceName(_ address: BluetoothAddress, _ handle: UInt16, _ stack: any OpenedStack) {
        let host = stack.engine
        let everything = ATTHandleRange(start: 0x0001, end: 0xFFFF)
        host.gatt(connectionHandle: handle, .readUsingCharacteristicUUID(uuid: GATTUUID.deviceName, range: everything)) { [self] result in
            guard case .success(.handleValues(let values)) = result, let first = values.first else { return }
            state.withLock { state in
                if state.links[address]?.handle == handle { state.links[address]?.deviceNameHandle = first.handle }
            }
            let mtu = host.attMTU(connectionHandle: handle) ?? ATTMTU.leDefault
            // Read By Type Response: 2 octets of header and 2 of handle before the value (Vol 3 Part F §3.4.4.2).
            guard first.value.count >= mtu - 4 else { return deviceNameRead(address, handle, first.value) }
            host.gatt(connectionHandle: handle, .readLongCharacteristicValue(handle: first.handle)) { [self] result in
                guard case .success(.value(let value)) = result else { return }
                deviceNameRead(address, handle, value)
            }
        }
    }

    private func deviceNameRead(_ address: BluetoothAddress, _ handle: UInt16, _ value: [UInt8]) {
        // A name is UTF-8 of at most 248 octets (Vol 3 Part C §12.1); what a peer sends beyond is not a name.
        guard state.load().links[address]?.handle == handle, !value.isEmpty else { return }
        let name = String(decoding: value.prefix(248), as: UTF8.self)
        emit(.nameUpdated(CBBackendPeer(address: address), name))
    }

    /// Finds the peer's Service Changed characteristic and enables its indications, as CoreBluetooth does
    /// (Core 5.4 Vol 3 Part G §7.1), so that `.servicesChanged` reaches the app (`didModifyServices`).
    private func subscribeToServiceChanged(_ address: BluetoothAddress, _ handle: UInt16, _ stack: any OpenedStack) {
        let host = stack.engine
        host.gatt(connectionHandle: handle, .discoverPrimaryServices(uuid: GATTUUID.genericAttributeService)) { [self] result in
            guard case .success(.services(let services)) = result, let service = services.first else { return }
            host.gatt(connectionHandle: handle, .discoverCharacteristics(range: service.range, uuid: GATTUUID.serviceChanged)) { [self] result in
                guard case .success(.characteristics(let list)) = result, let characteristic = list.first,
                      characteristic.properties.contains(.indicate), characteristic.descriptorRange.isValid else { return }
                host.gatt(connectionHandle: handle, .discoverAllDescriptors(range: characteristic.descriptorRange)) { [self] result in
                    guard case .success(.descriptors(let descriptors)) = result,
                          let cccd = descriptors.first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) else { return }
                    host.gatt(connectionHandle: handle, .subscribe(cccdHandle: cccd.handle, configuration: .indications)) { [self] result in
                        guard case .success = result else { return }
                        state.withLock { state in
                            if state.links[address]?.handle == handle { state.links[address]?.serviceChanged = characteristic.valueHandle }
                        }
                    }
                }
            }
        }
    }

    public func cancelConnection(_ peer: CBBackendPeer) {
        opener.onStack { [self] stack in
            enum Action { case none, disconnect(UInt16), cancelPending }
            let action = state.withLock { state -> Action in
                guard var link = state.links[peer.address] else { return .none }
                let cancelling = link.cancelled && link.handle == nil
                link.cancelled = true
                link.connectAgain = false
                link.mtuTimer?.cancel()
                link.mtuTimer = nil
                state.links[peer.address] = link
                if let handle = link.handle { return .disconnect(handle) }
                return cancelling ? .none : .cancelPending
            }
            switch action {
            case .none: break
            case .disconnect(let handle): stack.engine.disconnect(connectionHandle: handle)
            case .cancelPending: stack.engine.cancelConnect(to: peer.address)
            }
        }
    }

    /// The devices this backend heard advertising or connected to since it started (no persistence across runs
    /// yet; identifiers are stable across runs anyway, being derived from the address).
    /// Connected peers whose Service Changed indications this backend enabled (tests).
    var peersWatchingServiceChanged: Int { state.load().links.values.filter { $0.serviceChanged != nil }.count }

    public func knownPeers() -> [CBBackendPeer] {
        var known = opener.stack?.engine.knownPeers() ?? []
        for address in state.load().seen where !known.contains(address) { known.append(address) }
        return known.map { CBBackendPeer(address: $0) }
    }

    private static func remember(_ address: BluetoothAddress, in state: inout State) {
        guard !state.seen.contains(address) else { return }
        if state.seen.count >= 256 { state.seen.removeFirst() }
        state.seen.append(address)
    }

    // MARK: Host events

    private func handle(_ event: HostEvent) {
        if opener.channels.handle(event) { return }
        switch event {
        case .advertisingReport(let report):
            // Like CoreBluetooth's active scan, a scannable device is reported with its scan response (where
            // the name usually is), unless the response stays missing for a few reports.
            let scannable = report.eventType == .advInd || report.eventType == .advScanInd
            let deliver = state.withLock { state -> Bool in
                guard state.scanning != nil else { return false }
                Self.remember(report.address, in: &state)
                guard scannable, report.rawScanResponse == nil else { return true }
                if state.heldReports.count >= 1024 { state.heldReports = [:] }
                let held = state.heldReports[report.address, default: 0]
                guard held < Self.reportsHeldForScanResponse else { return true }
                state.heldReports[report.address] = held + 1
                return false
            }
            if deliver { emit(.advertisement(Self.advertisement(report))) }
        case .disconnected(let handle, let reason):
            let gone = state.withLock { state -> (BluetoothAddress, Link)? in
                guard let entry = state.links.first(where: { $0.value.handle == handle }) else { return nil }
                state.links[entry.key] = nil
                return (entry.key, entry.value)
            }
            guard let (address, link) = gone else { return }
            link.mtuTimer?.cancel()
            let peer = CBBackendPeer(address: address)
            if link.cancelled && link.connectAgain, let stack = opener.stack {
                // The manager asked for the peer again while its cancelled link was ending: the end is reported
                // (for the system's links), then a new connection starts.
                emit(.disconnected(peer, nil))
                state.withLock { $0.links[address] = Link() }
                return startConnect(address, stack)
            }
            if link.reported {
                let code: CBError.Code = link.securityFailure ?? (reason == .connectionTimeout ? .connectionTimeout : .peripheralDisconnected)
                let error: CBBackendError? = link.cancelled ? nil : .core(code, "\(reason)")
                emit(.disconnected(peer, error))
            } else if !link.cancelled {
                emit(.connectionFailed(peer, .core(.connectionFailed, "the link dropped while connecting: \(reason)")))
            }
        case .attMTUChanged(let handle, let mtu):
            guard let address = peer(handle: handle) else { return }
            if state.load().links[address]?.reported == true {
                emit(.mtuChanged(CBBackendPeer(address: address), mtu: mtu))
            } else {
                reportConnected(address, mtu: mtu)
            }
        case .gattNotification(let handle, let attributeHandle, let value),
             .gattIndication(let handle, let attributeHandle, let value):
            guard let address = peer(handle: handle), let link = state.load().links[address], link.reported else { return }
            if case .gattIndication = event, attributeHandle == link.serviceChanged {
                // Service Changed: the affected range, two handles (Vol 3 Part G §7.1).
                guard value.count == 4 else { return }
                let start = UInt16(value[0]) | UInt16(value[1]) << 8, end = UInt16(value[2]) | UInt16(value[3]) << 8
                emit(.servicesChanged(CBBackendPeer(address: address), startHandle: start, endHandle: end))
                if let stack = opener.stack, !stack.engine.reportsPeerNames,
                   link.deviceNameHandle.map({ (start...end).contains($0) }) ?? true {
                    readDeviceName(address, handle, stack)
                }
                return
            }
            emit(.valueUpdated(CBBackendPeer(address: address), handle: attributeHandle, value: value))
        case .peerNameUpdated(let address, let name):
            emit(.nameUpdated(CBBackendPeer(address: address), name))
        case .readyToSend(let handle):
            guard let address = peer(handle: handle) else { return }
            state.withLock { $0.links[address]?.notReady = false }
            maybeReady(address)
        case .bondLost(let handle, _):
            guard let address = peer(handle: handle) else { return }
            state.withLock { $0.links[address]?.securityFailure = .peerRemovedPairingInformation }
        case .pairingFailed(let handle, _, let error):
            guard let address = peer(handle: handle), let code = Self.securityFailureCode(error) else { return }
            state.withLock { $0.links[address]?.securityFailure = code }
        case .pairingCompleted(let handle, _):
            guard let address = peer(handle: handle) else { return }
            state.withLock { $0.links[address]?.securityFailure = nil }
        case .pairingInteraction(let handle, let interaction):
            // iOS shows the system's pairing dialog: the agent answers it (without one, `.accepting`).
            guard let stack = opener.stack else { return }
            (pairingAgent ?? .accepting).ask(interaction, peer: peer(handle: handle) ?? .zero) { stack.engine.answerPairing(connectionHandle: handle, $0) }
        default:
            break
        }
    }

    // MARK: GATT client

    /// ATT errors that mean "secure the link first" (Vol 3 Part F §3.4.1.1): Insufficient Authentication,
    /// Authorization, Encryption Key Size, Encryption.
    static let securityATTErrors: Set<UInt8> = [0x05, 0x08, 0x0C, 0x0F]

    /// The CoreBluetooth code of a failure to secure the link, when CoreBluetooth has one: the peer lost its bond
    /// → ``CBError/peerRemovedPairingInformation``; the SMP timeout → ``CBError/encryptionTimedOut``. Other
    /// failures (Pairing Failed, an encryption failure) have none: the request that needed security reports its
    /// ATT error, as on iOS when the user cancels pairing.
    static func securityFailureCode(_ error: HostError) -> CBError.Code? {
        switch error.security {
        case .bondLost?: .peerRemovedPairingInformation
        case .smpTimeout?: .encryptionTimedOut
        case .pairingFailed?, .encryptionFailed?: nil
        case nil: error.code == .timedOut ? .encryptionTimedOut : nil
        }
    }

    /// `error` as CoreBluetooth reports it; a security ATT error after the link's securing failed becomes that
    /// failure (``CBError/peerRemovedPairingInformation``, ``CBError/encryptionTimedOut``).
    static func backendError(_ error: GATTClientError, securityFailure: CBError.Code?) -> CBBackendError {
        if case .attError(let code, _) = error, let securityFailure, securityATTErrors.contains(code.rawValue) {
            return .core(securityFailure, "securing the link failed: \(error)")
        }
        return backendError(error)
    }

    /// `error` as CoreBluetooth reports it. A request that needed security whose securing failed
    /// (``GATTClientError/securityFailed(_:handle:_:)``): a lost bond → ``CBError/peerRemovedPairingInformation``,
    /// the SMP timeout → ``CBError/encryptionTimedOut``, anything else (pairing failed or rejected, encryption
    /// failed) → the server's `CBATTError` (Insufficient Authentication / Encryption / Encryption Key Size).
    static func backendError(_ error: GATTClientError) -> CBBackendError {
        switch error {
        case .securityFailed(_, _, .bondLost): .core(.peerRemovedPairingInformation, "securing the link failed: \(error)")
        case .securityFailed(_, _, .timedOut): .core(.encryptionTimedOut, "securing the link failed: \(error)")
        case .securityFailed(let code, _, _): .att(code.rawValue)
        case .attError(let code, _): .att(code.rawValue)
        case .bearerFailed(.disconnected): .core(.notConnected, error.description)
        case .bearerFailed(.transactionTimeout): .core(.connectionTimeout, error.description)
        default: .core(.unknown, error.description)
        }
    }

    /// The manager's GATT lane: with Enhanced ATT bearers its operations still run and complete in the order the
    /// app asked for them, as CoreBluetooth keeps each app's operations on one bearer (``GATTClientLane``). Each
    /// manager has a stack of its own, so one lane value serves every manager.
    static let managerLane = GATTClientLane(0xCB)

    /// Runs a procedure on the peer's connection, in the manager's lane.
    private func gatt(_ peer: CBBackendPeer, _ procedure: GATTProcedure,
                      _ completion: @escaping @Sendable (Result<GATTProcedureResult, CBBackendError>) -> Void) {
        guard let stack = opener.stack else {
            return completion(.failure(.core(.notConnected, "the Bluetooth stack is not running")))
        }
        stack.engine.eventLoop.execute { [self] in gattOnLoop(stack, peer, procedure, completion) }
    }

    /// ``gatt(_:_:_:)`` already on the stack's loop. Every procedure reaches the host after the same single hop
    /// onto the loop, so they start in the order the app called (a second hop for one of them would let a later
    /// call overtake it).
    private func gattOnLoop(_ stack: any OpenedStack, _ peer: CBBackendPeer, _ procedure: GATTProcedure,
                            _ completion: @escaping @Sendable (Result<GATTProcedureResult, CBBackendError>) -> Void) {
        guard let handle = state.load().links[peer.address]?.handle else {
            return completion(.failure(.core(.notConnected, "\(peer) is not connected")))
        }
        stack.engine.gatt(connectionHandle: handle, procedure, lane: Self.managerLane) { [self] result in
            let failure = state.load().links[peer.address]?.securityFailure
            completion(result.mapError { Self.backendError($0, securityFailure: failure) })
        }
    }

    private static func unexpected<T>(_ result: GATTProcedureResult) -> Result<T, CBBackendError> {
        .failure(.core(.unknown, "unexpected GATT result \(result)"))
    }

    /// Discover All Primary Services (Core 5.4 Vol 3 Part G §4.4.1), filtered by `uuids`.
    public func discoverServices(_ peer: CBBackendPeer, uuids: [BluetoothUUID]?,
                                 completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
        gatt(peer, .discoverAllPrimaryServices) { result in
            completion(result.flatMap { result in
                guard case .services(let services) = result else { return Self.unexpected(result) }
                return .success(services.filter { uuids?.contains($0.uuid) ?? true }.map {
                    CBBackendService(uuid: $0.uuid, isPrimary: true, startHandle: $0.startHandle, endHandle: $0.endHandle)
                })
            })
        }
    }

    /// Find Included Services in the service's handle range (Core 5.4 Vol 3 Part G §4.5.1), filtered by `uuids`.
    public func discoverIncludedServices(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                         completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
        gatt(peer, .findIncludedServices(range: ATTHandleRange(start: service.startHandle, end: service.endHandle))) { result in
            completion(result.flatMap { result in
                guard case .includedServices(let included) = result else { return Self.unexpected(result) }
                return .success(included.map(\.service).filter { uuids?.contains($0.uuid) ?? true }.map {
                    CBBackendService(uuid: $0.uuid, isPrimary: false, startHandle: $0.startHandle, endHandle: $0.endHandle)
                })
            })
        }
    }

    /// Discover All Characteristics of a Service (Core 5.4 Vol 3 Part G §4.6.1), filtered by `uuids`.
    public func discoverCharacteristics(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                        completion: @escaping @Sendable (Result<[CBBackendCharacteristic], CBBackendError>) -> Void) {
        gatt(peer, .discoverAllCharacteristics(range: ATTHandleRange(start: service.startHandle, end: service.endHandle))) { result in
            completion(result.flatMap { result in
                guard case .characteristics(let list) = result else { return Self.unexpected(result) }
                return .success(list.filter { uuids?.contains($0.uuid) ?? true }.map {
                    CBBackendCharacteristic(uuid: $0.uuid, properties: $0.properties.rawValue, declarationHandle: $0.declarationHandle,
                                            valueHandle: $0.valueHandle, endHandle: $0.endHandle)
                })
            })
        }
    }

    /// Discover All Characteristic Descriptors after the value handle (Core 5.4 Vol 3 Part G §4.7.1).
    public func discoverDescriptors(_ peer: CBBackendPeer, for characteristic: CBBackendCharacteristic,
                                    completion: @escaping @Sendable (Result<[CBBackendDescriptor], CBBackendError>) -> Void) {
        guard characteristic.valueHandle < characteristic.endHandle else { return completion(.success([])) }
        gatt(peer, .discoverAllDescriptors(range: ATTHandleRange(start: characteristic.valueHandle &+ 1, end: characteristic.endHandle))) { result in
            completion(result.flatMap { result in
                guard case .descriptors(let list) = result else { return Self.unexpected(result) }
                return .success(list.map { CBBackendDescriptor(uuid: $0.uuid, handle: $0.handle) })
            })
        }
    }

    public func read(_ peer: CBBackendPeer, handle: UInt16, completion: @escaping @Sendable (Result<[UInt8], CBBackendError>) -> Void) {
        gatt(peer, .readLongCharacteristicValue(handle: handle)) { result in
            completion(result.flatMap { result in
                guard case .value(let value) = result else { return Self.unexpected(result) }
                return .success(value)
            })
        }
    }

    public func write(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8],
                      completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        guard let stack = opener.stack else {
            return completion(.failure(.core(.notConnected, "the Bluetooth stack is not running")))
        }
        stack.engine.eventLoop.execute { [self] in
            let linkHandle = state.load().links[peer.address]?.handle
            let mtu = linkHandle.flatMap { stack.engine.attMTU(connectionHandle: $0) } ?? ATTMTU.leDefault
            let procedure: GATTProcedure = value.count <= mtu - 3
                ? .writeCharacteristicValue(handle: handle, value: value)
                : .writeLongCharacteristicValue(handle: handle, value: value)
            gattOnLoop(stack, peer, procedure) { result in completion(result.map { _ in () }) }
        }
    }

    public func writeWithoutResponse(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8]) -> Bool {
        let room = state.withLock { state -> Bool in
            guard var link = state.links[peer.address], link.handle != nil else { return true }
            link.queuedWrites += 1
            let room = !link.notReady && link.queuedWrites < Self.writeQueueLimit
            if !room { link.owesReady = true }
            state.links[peer.address] = link
            return room
        }
        opener.onStack { [self] stack in
            guard let connection = state.load().links[peer.address]?.handle else { return }
            stack.engine.gatt(connectionHandle: connection, .writeWithoutResponse(handle: handle, value: value)) { [self] _ in
                let ready = stack.engine.isReadyToSend(connectionHandle: connection)
                state.withLock { state in
                    state.links[peer.address]?.queuedWrites -= 1
                    if !ready { state.links[peer.address]?.notReady = true }
                }
                maybeReady(peer.address)
            }
        }
        return room
    }

    /// Reports room for Write Commands when `writeWithoutResponse` answered false and there is room again.
    private func maybeReady(_ address: BluetoothAddress) {
        let due = state.withLock { state -> Bool in
            guard var link = state.links[address], link.owesReady, !link.notReady,
                  link.queuedWrites < Self.writeQueueLimit / 2 else { return false }
            link.owesReady = false
            state.links[address] = link
            return true
        }
        if due { emit(.readyToSendWriteWithoutResponse(CBBackendPeer(address: address))) }
    }

    public func setNotifications(_ peer: CBBackendPeer, characteristic: CBBackendCharacteristic, cccdHandle: UInt16?, enabled: Bool,
                                 completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        let configuration: GATTProcedure.ClientConfiguration = characteristic.properties & 0x10 != 0 ? .notifications : .indications
        let write: @Sendable (UInt16) -> Void = { [self] cccd in
            gatt(peer, enabled ? .subscribe(cccdHandle: cccd, configuration: configuration) : .unsubscribe(cccdHandle: cccd)) { result in
                completion(result.map { _ in () })
            }
        }
        if let cccdHandle { return write(cccdHandle) }
        discoverDescriptors(peer, for: characteristic) { result in
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let descriptors):
                guard let cccd = descriptors.first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) else {
                    return completion(.failure(.att(ATTErrorCode.attributeNotFound.rawValue)))
                }
                write(cccd.handle)
            }
        }
    }

    /// HCI Read RSSI on the connection (Core 5.4 Vol 4 Part E §7.5.4).
    public func readRSSI(_ peer: CBBackendPeer, completion: @escaping @Sendable (Result<Int, CBBackendError>) -> Void) {
        guard let stack = opener.stack else { return completion(.failure(.core(.notConnected, "the Bluetooth stack is not running"))) }
        stack.engine.eventLoop.execute { [self] in
            guard let handle = state.load().links[peer.address]?.handle else {
                return completion(.failure(.core(.notConnected, "\(peer) is not connected")))
            }
            stack.engine.readRSSI(connectionHandle: handle) { result in
                completion(result.map { Int($0) }.mapError { .core(.operationNotSupported, $0.reason) })
            }
        }
    }

    /// Opens a channel (LE Credit Based Connection Request, Core 5.4 Vol 3 Part A §4.22). Refused for
    /// insufficient authentication, encryption or key size (§4.23: the peer published its PSM with encryption),
    /// the link is secured (pairing, or encryption with the bond) and the request sent once more, as iOS does.
    public func openL2CAPChannel(_ peer: CBBackendPeer, psm: CBL2CAPPSM,
                                 completion: @escaping @Sendable (Result<any CBL2CAPChannelBackend, CBBackendError>) -> Void) {
        openL2CAPChannel(peer, psm: psm, securing: true, completion: completion)
    }

    private func openL2CAPChannel(_ peer: CBBackendPeer, psm: CBL2CAPPSM, securing: Bool,
                                  completion: @escaping @Sendable (Result<any CBL2CAPChannelBackend, CBBackendError>) -> Void) {
        guard let stack = opener.stack else { return completion(.failure(.core(.notConnected, "the Bluetooth stack is not running"))) }
        stack.engine.eventLoop.execute { [self] in
            guard let handle = state.load().links[peer.address]?.handle else {
                return completion(.failure(.core(.notConnected, "\(peer) is not connected")))
            }
            stack.engine.openChannel(connectionHandle: handle, psm: psm, mtu: 2048) { [self] result in
                switch result {
                case .success(let info):
                    let channel = EngineL2CAPChannel(stack: stack, connection: handle, info: info, peer: peer)
                    opener.channels.add(channel)
                    completion(.success(channel))
                case .failure(let error) where securing && Self.securityRefusals.contains(error.l2capRefusal ?? .successful):
                    stack.engine.pair(connectionHandle: handle) { [self] secured in
                        switch secured {
                        case .success: openL2CAPChannel(peer, psm: psm, securing: false, completion: completion)
                        case .failure(let failure):
                            completion(.failure(.core(.unknown, "cannot open an L2CAP channel on PSM \(psm): it needs an "
                                                      + "encrypted link, and securing it failed: \(failure.reason)")))
                        }
                    }
                case .failure(let error):
                    completion(.failure(.core(.unknown, "cannot open an L2CAP channel on PSM \(psm): \(error.reason)")))
                }
            }
        }
    }

    /// The refusals that securing the link answers (Core 5.4 Vol 3 Part A §4.23).
    static let securityRefusals: Set<L2CAPConnectionResult> = [
        .allConnectionsRefusedInsufficientAuthentication, .allConnectionsRefusedInsufficientEncryption,
        .allConnectionsRefusedEncryptionKeySizeTooShort,
    ]
}
