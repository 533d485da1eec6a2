import ATT
import AdvertisingData
public import BluetoothCore
import BluetoothRuntime
package import GATT
import Host
import L2CAP
public import StackLauncher
import BluetoothEngine
import ServiceEngine

/// The GAP peripheral and GATT server of a `CBPeripheralManager` on its own `HostStack` (see ``HostBackend``).
///
/// - Services (Core 5.4 Vol 3 Part G §3): each `CBMutableService` becomes a `GATTServiceDefinition` after the GAP
///   and GATT services; the database is rebuilt in publication order on every change (handles of earlier
///   services stay; a removal indicates Service Changed for the whole range, §7.1). Cached values are stored
///   values the server answers itself; other values are deferred (`GATTDeferral`): Read, Read Blob, Write and
///   Execute Write become request events the app answers with `respond(to:withResult:)`; Write Commands become
///   write events without response. CCCD writes become subscriptions.
/// - Advertising (Vol 3 Part C §11): name and service UUIDs laid out as CoreBluetooth does
///   (`PeripheralAdvertisement`: UUIDs in the advertising data, the name in the scan response), connectable,
///   resumed after each connection while the app advertises.
/// - `updateValue`: at most 4 updates handed to the loop at once; the host's send-queue readiness blocks further
///   updates (false) until `.readyToSend`, then `.readyToUpdateSubscribers`.
public final class EnginePeripheralBackend: CBPeripheralBackend, Sendable {
    /// The GAP Device Name of every peripheral manager's device (Core 5.4 Vol 3 Part C §12.1): what a central
    /// reads once connected and shows as the peripheral's name from then on, as an iPhone's name is shown rather
    /// than the app's advertised local name.
    static let deviceName = "OpenCoreBluetooth"

    static let updateQueueLimit = 4
    /// Ids of write-command events (never answered) start here, above the GATT server's request ids.
    static let commandIDBase: UInt64 = 1 << 62

    struct LocalCharacteristic {
        var serviceID: Int
        var valueHandle: UInt16
        var deferred: Bool
    }

    struct Subscription: Hashable {
        var connection: UInt16
        var characteristicID: Int
    }

    struct State {
        var sink: (@Sendable (CBPeripheralBackendEvent) -> Void)?
        var services: [CBBackendLocalService] = []
        var serviceHandles: [Int: GATTServiceHandles] = [:]
        var characteristics: [Int: LocalCharacteristic] = [:]
        var characteristicByValue: [UInt16: Int] = [:]
        var centrals: [UInt16: BluetoothAddress] = [:]
        /// Centrals whose link ended, by their last connection handle: a write they made while the program was
        /// gone reaches the app after their disconnection (the service queued both). Bounded.
        var endedCentrals: [UInt16: BluetoothAddress] = [:]
        var subscriptions: Set<Subscription> = []
        var pending: [UInt64: UInt16] = [:]
        var nextCommandID = EnginePeripheralBackend.commandIDBase
        var queuedUpdates = 0
        var blocked: Set<UInt16> = []
        var owesReady = false
        var advertisement: PeripheralAdvertisement?
        var publishedPSMs: Set<UInt16> = []
        var closed = false
        /// The stack is the service's, kept under a restore identifier; what a stack taken back still holds,
        /// until the restored services make its database again.
        var kept = false
        /// Whether `.restoredCentrals` was told (once per kept stack).
        var centralsReported = false
        var adopting: KeptServer?
        /// Whether the app's first `.poweredOn` after the stack was taken back is over (``restoredStateSettled()``):
        /// the kept server is judged against what the app published by then, not against each step of it.
        var settled = false
        /// Requests the service answered while the program was gone, held until the restored services are
        /// published again (they name characteristics of them).
        var heldRequests: [GATTPendingRequest] = []
    }

    /// What the Bluetooth service kept of a peripheral manager's server while its program was gone: the database
    /// it had published, the centrals connected and their subscriptions.
    struct KeptServer {
        var database: ServiceGATTDatabase
        var links: [ServiceLink]
        var subscriptions: [ServiceSubscription]

        /// The centrals, with their subscriptions placed in the app's services: the kept database is built again
        /// (same steps, same handles) to find which characteristic each subscribed value handle is.
        var centrals: [CBBackendKeptCentral] {
            var positions: [UInt16: CBBackendCharacteristicPosition] = [:]
            if let built = try? database.database(forwardingWrites: { _ in }) {
                let appServices = database.steps.filter { if case .service = $0 { true } else { false } }.count
                let services = Array(zip(built.services, built.definitions).suffix(appServices))
                for (serviceIndex, (handles, definition)) in services.enumerated() {
                    for (index, characteristic) in zip(handles.characteristics, definition.characteristics).enumerated() {
                        positions[characteristic.0.value] = CBBackendCharacteristicPosition(
                            service: serviceIndex, serviceUUID: definition.uuid, characteristic: index, characteristicUUID: characteristic.1.uuid)
                    }
                }
            }
            return links.map { link in
                let subscribed = subscriptions.filter { $0.connection == link.connection.handle }.compactMap { positions[$0.valueHandle] }
                return CBBackendKeptCentral(peer: CBBackendPeer(address: link.connection.peer), mtu: link.attMTU,
                                            subscriptions: subscribed.sorted { ($0.service, $0.characteristic) < ($1.service, $1.characteristic) })
            }
        }
    }

    private let opener: EngineBackendStack
    private let state = LockedValue(State())

    /// The system's pairing dialogs (nil: none, Just Works as NoInputNoOutput).
    private let pairingAgent: OCBPairingAgent?

    init(transport: HostBackend.Transport, preferredATTMTU: Int? = nil, pairingAgent: OCBPairingAgent? = nil,
         system: OCBSystemBluetooth? = nil) {
        opener = EngineBackendStack(transport: transport, label: "OpenCoreBluetooth.peripheral", preferredATTMTU: preferredATTMTU,
                                    pairsAsAPhone: pairingAgent != nil, system: system)
        self.pairingAgent = pairingAgent
    }

    /// A backend on the stack `launch` opens (tests: bluetoothd on a bus of their own).
    package init(launching launch: @escaping @Sendable (StackLaunchOptions) async throws(StackLaunchError) -> any OpenedStack) {
        pairingAgent = nil
        opener = EngineBackendStack(transport: .specification("test"), label: "OpenCoreBluetooth.peripheral", preferredATTMTU: nil, launch: launch)
    }

    /// The stack this backend runs on, once open (tests, diagnostics).
    public var launchedStack: LaunchedStack? { opener.stack as? LaunchedStack }

    /// Requests handed to the app and not answered yet (leak checks).
    public var pendingRequestCount: Int { state.load().pending.count }

    // MARK: Lifecycle

    /// Opens the stack, then reports `.poweredOn`, `.unsupported` if it cannot be opened; when it is lost later,
    /// `.poweredOff`, or on the shared air `.resetting` until it is open again (`.poweredOn`, with an empty
    /// database: the app adds its services again, as on iOS) or cannot be (`.poweredOff`).
    /// The Bluetooth service keeps the stack under `peripheral.IDENTIFIER` when the transport is an air hub or
    /// `service[:TRANSPORT]` (``EngineBackendStack/keep(as:)``).
    public func keepStack(restoreIdentifier: String) -> Bool {
        let kept = opener.keep(as: "peripheral." + restoreIdentifier)
        state.withLock { $0.kept = kept }
        return kept
    }

    public func start(_ events: @escaping @Sendable (CBPeripheralBackendEvent) -> Void) {
        state.withLock { $0.sink = events }
        opener.run(events: { [weak self] event, stack in self?.handle(event, stack) },
                   prepare: { [weak self] stack, done in
                       self?.takeKeptServer(of: stack)
                       self?.rebuild(stack, changed: false) { _ in done() }
                   },
                   forget: { [weak self] newState in
                       self?.state.withLock { state in
                           let kept = state
                           state = State()
                           state.sink = kept.sink
                           // At .poweredOff the services stay (published again on the next stack); below it the
                           // local database is cleared, as Apple documents.
                           if newState == .poweredOff { state.services = kept.services }
                       }
                   },
                   state: { [weak self] in self?.emit(.stateChanged($0)) })
    }

    /// Stops delivering events and closes the stack.
    public func shutdown() {
        state.withLock { state in
            state.closed = true
            state.sink = nil
        }
        opener.close()
    }

    private func emit(_ event: CBPeripheralBackendEvent) {
        state.load().sink?(event)
    }


    // MARK: Services

    /// Adds the service to the GATT database, which is rebuilt; fails with `CBError.outOfSpace` if the database refuses
    /// it.
    public func addService(_ service: CBBackendLocalService, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        guard opener.stack != nil else { return completion(.failure(.core(.unknown, "the Bluetooth stack is not running"))) }
        opener.onStack { [self] stack in
            state.withLock { $0.services.append(service) }
            rebuild(stack, changed: false) { [self] result in
                if case .failure = result { state.withLock { $0.services.removeAll { $0.id == service.id } } }
                completion(result)
            }
        }
    }

    /// Removes the service and rebuilds the GATT database.
    public func removeService(id: Int) {
        opener.onStack { [self] stack in
            state.withLock { $0.services.removeAll { $0.id == id } }
            rebuild(stack, changed: true) { _ in }
        }
    }

    /// Removes every service and rebuilds the GATT database, if there was any.
    public func removeAllServices() {
        opener.onStack { [self] stack in
            let had = state.withLock { state -> Bool in
                defer { state.services = [] }
                return !state.services.isEmpty
            }
            if had { rebuild(stack, changed: true) { _ in } }
        }
    }

    /// A kept stack taken back: its server stays as the program left it while the restored manager publishes its
    /// services again (``rebuild(_:changed:completion:)`` installs nothing while they make a beginning of it).
    private func takeKeptServer(of stack: any OpenedStack) {
        let welcome = (stack as? ServiceStack)?.serviceEngine.welcome
        let taken = welcome?.reattached == true ? welcome : nil
        let report = state.withLock { state -> [CBBackendKeptCentral]? in
            guard state.kept, !state.centralsReported else { return nil }
            state.centralsReported = true
            guard let taken, let database = taken.database else { return [] }
            let kept = KeptServer(database: database, links: taken.links.filter { $0.connection.role == .peripheral },
                                  subscriptions: taken.subscriptions)
            state.adopting = kept
            state.settled = false
            return kept.centrals
        }
        if let report { emit(.restoredCentrals(report)) }
    }

    /// The app's first `.poweredOn` is over: a kept server taken back is judged against the services published now.
    public func restoredStateSettled() {
        opener.onStack { [self] stack in
            let adopting = state.withLock { state -> Bool in
                state.settled = true
                return state.adopting != nil
            }
            if adopting { rebuild(stack, changed: false) { _ in } }
        }
    }

    /// The restored services made the kept database again (`complete`), or another one: the centrals still
    /// connected are the manager's, and with the same database their subscriptions too (`.subscribed`, as when they
    /// subscribed).
    private func adopted(_ kept: KeptServer, complete: Bool) {
        let (peers, subscribed) = state.withLock { state -> ([(BluetoothAddress, Int)], [(BluetoothAddress, Int)]) in
            var peers: [(BluetoothAddress, Int)] = []
            for link in kept.links {
                state.centrals[link.connection.handle] = link.connection.peer
                peers.append((link.connection.peer, link.attMTU))
            }
            var subscribed: [(BluetoothAddress, Int)] = []
            if complete {
                for subscription in kept.subscriptions {
                    guard let central = state.centrals[subscription.connection],
                          let id = state.characteristicByValue[subscription.valueHandle] else { continue }
                    if state.subscriptions.insert(Subscription(connection: subscription.connection, characteristicID: id)).inserted {
                        subscribed.append((central, id))
                    }
                }
            }
            return (peers, subscribed)
        }
        for (peer, mtu) in peers { emit(.centralConnected(CBBackendPeer(address: peer), mtu: mtu)) }
        for (peer, id) in subscribed { emit(.subscribed(CBBackendPeer(address: peer), characteristicID: id)) }
        let held = state.withLock { state in defer { state.heldRequests = [] }; return state.heldRequests }
        if let stack = opener.stack { for request in held { deferred(request, stack) } }
    }

    /// Builds the database from the GAP and GATT services and the published services, in order, and installs it
    /// with the deferral of every dynamic value. On the loop.
    private func rebuild(_ stack: any OpenedStack, changed: Bool, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        let services = state.load().services
        var database = GATTDatabase()
        var handlesByID: [Int: GATTServiceHandles] = [:]
        var characteristics: [Int: LocalCharacteristic] = [:]
        do throws(GATTDatabaseError) {
            _ = try database.addGAPService(deviceName: Self.deviceName)
            _ = try database.addGATTService(serverSupportedFeatures: .enhancedATT)
            for service in services {
                let handles = try database.add(definition(of: service, includes: service.includedServiceIDs.compactMap { handlesByID[$0] }))
                handlesByID[service.id] = handles
                for (local, assigned) in zip(service.characteristics, handles.characteristics) {
                    characteristics[local.id] = LocalCharacteristic(serviceID: service.id, valueHandle: assigned.value,
                                                                    deferred: local.staticValue == nil)
                }
            }
        } catch {
            return completion(.failure(.core(.outOfSpace, error.reason)))
        }
        state.withLock { state in
            state.serviceHandles = handlesByID
            state.characteristics = characteristics
            state.characteristicByValue = Dictionary(characteristics.map { ($0.value.valueHandle, $0.key) }, uniquingKeysWith: { first, _ in first })
        }
        let deferred = Set(characteristics.values.filter(\.deferred).map(\.valueHandle))
        stack.engine.setGATTDeferral(GATTDeferral(handles: deferred) { [weak self] request in self?.deferred(request, stack) })
        // A kept server taken back: nothing is installed until the app's first `.poweredOn` is over (it may
        // remove the restored services and publish equal ones, as seed 001 does), nor while the services make a
        // beginning of it.
        if let kept = state.load().adopting {
            guard state.load().settled else { return completion(.success(())) }
            let wire = ServiceGATTDatabase(database)
            if kept.database.steps.starts(with: wire.steps) {
                if kept.database == wire {
                    state.withLock { $0.adopting = nil }
                    // The service finds it the same and installs nothing (CCCDs stay); the program's engine learns
                    // its dynamic values' handlers, which Write Commands reach.
                    stack.engine.replaceGATTDatabase(database, changedRange: nil) { _ in }
                    adopted(kept, complete: true)
                }
                return completion(.success(()))
            }
            state.withLock { $0.adopting = nil }
            adopted(kept, complete: false)
        }
        // Connected clients that enabled Service Changed indications hear of any change (Vol 3 Part G §7.1).
        let tell = changed || !state.load().centrals.isEmpty
        stack.engine.replaceGATTDatabase(database, changedRange: tell ? ATTHandleRange(start: 0x0001, end: 0xFFFF) : nil) { result in
            completion(result.mapError { .core(.unknown, $0.reason) })
        }
    }

    /// The GATT definition of a façade service (properties octet, permissions, cached or deferred value, static
    /// descriptors; the database adds the CCCD and Extended Properties).
    private func definition(of service: CBBackendLocalService, includes: [GATTServiceHandles]) -> GATTServiceDefinition {
        let characteristics = service.characteristics.map { local -> GATTCharacteristicDefinition in
            let properties = GATTCharacteristicProperties(rawValue: UInt8(truncatingIfNeeded: local.properties))
            let permissions = CBAttributePermissions(rawValue: local.permissions).gattPermissions
            let subscription = CBCharacteristicProperties(rawValue: local.properties).subscriptionSecurity
            let id = local.id
            let value: GATTValue
            if let stored = local.staticValue {
                value = .stored(stored)
            } else {
                value = .dynamic(
                    read: { _ in .failure(GATTAttributeError(.readNotPermitted)) },
                    write: { [weak self] request in
                        if request.kind == .command || request.kind == .signedCommand { self?.writeCommand(request, characteristicID: id) }
                        return nil
                    })
            }
            return GATTCharacteristicDefinition(
                uuid: local.uuid, properties: properties, permissions: permissions, value: value,
                descriptors: local.descriptors.map { GATTDescriptorDefinition(uuid: $0.uuid, permissions: .readOnly, value: .stored($0.value)) },
                subscriptionSecurity: subscription)
        }
        return GATTServiceDefinition(uuid: service.uuid, isPrimary: service.isPrimary, includes: includes, characteristics: characteristics)
    }

    // MARK: Requests

    /// A deferred request from the GATT server (on the loop, inside the server: answer only by hopping).
    private func deferred(_ request: GATTPendingRequest, _ stack: any OpenedStack) {
        // While a kept server is taken back, the requests it answered meanwhile wait for the restored services.
        let held = state.withLock { state -> Bool in
            guard state.adopting != nil else { return false }
            state.heldRequests.append(request)
            return true
        }
        if held { return }
        let connection = request.connection.rawValue
        let resolved = state.withLock { state -> (BluetoothAddress, [UInt16: Int])? in
            guard let central = state.centrals[connection] ?? state.endedCentrals[connection] else { return nil }
            state.pending[request.id] = connection
            return (central, state.characteristicByValue)
        }
        guard let (central, byValue) = resolved else {
            stack.engine.eventLoop.execute {
                stack.engine.respondToGATTRequest(connectionHandle: connection, id: request.id, result: .failure(GATTAttributeError(.unlikelyError)))
            }
            return
        }
        let peer = CBBackendPeer(address: central)
        switch request.kind {
        case .read(let handle, let offset):
            guard let id = byValue[handle] else { return refuse(request, stack) }
            emit(.readRequest(id: request.id, central: peer, characteristicID: id, offset: offset))
        case .write(let handle, let value):
            guard let id = byValue[handle] else { return refuse(request, stack) }
            emit(.writeRequests(id: request.id, central: peer, writes: [CBBackendWrite(characteristicID: id, offset: 0, value: value)],
                                responseRequired: true))
        case .executeWrite(let writes):
            var mapped: [CBBackendWrite] = []
            for write in writes {
                guard let id = byValue[write.handle] else { return refuse(request, stack) }
                mapped.append(CBBackendWrite(characteristicID: id, offset: write.offset, value: write.value))
            }
            emit(.writeRequests(id: request.id, central: peer, writes: mapped, responseRequired: true))
        }
    }

    private func refuse(_ request: GATTPendingRequest, _ stack: any OpenedStack) {
        state.withLock { _ = $0.pending.removeValue(forKey: request.id) }
        stack.engine.eventLoop.execute {
            stack.engine.respondToGATTRequest(connectionHandle: request.connection.rawValue, id: request.id, result: .failure(GATTAttributeError(.attributeNotFound)))
        }
    }

    /// A Write Command on a deferred value: a write event nobody answers.
    private func writeCommand(_ request: GATTWriteRequest, characteristicID: Int) {
        let resolved = state.withLock { state -> (UInt64, BluetoothAddress)? in
            let handle = request.connection.rawValue
            guard let central = state.centrals[handle] ?? state.endedCentrals[handle] else { return nil }
            state.nextCommandID &+= 1
            return (state.nextCommandID, central)
        }
        guard let (id, central) = resolved else { return }
        emit(.writeRequests(id: id, central: CBBackendPeer(address: central),
                            writes: [CBBackendWrite(characteristicID: characteristicID, offset: request.offset, value: request.value)],
                            responseRequired: false))
    }

    public func respond(to requestID: UInt64, result: UInt8, value: [UInt8]?) {
        guard let connection = state.withLock({ $0.pending.removeValue(forKey: requestID) }), let stack = opener.stack else { return }
        let answer: Result<[UInt8], GATTAttributeError> = result == 0 ? .success(value ?? []) : .failure(GATTAttributeError(ATTErrorCode(rawValue: result)))
        stack.engine.respondToGATTRequest(connectionHandle: connection, id: requestID, result: answer)
    }

    // MARK: Advertising

    public func startAdvertising(localName: String?, serviceUUIDs: [BluetoothUUID], overflowServiceUUIDs: [BluetoothUUID],
                                 completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        guard opener.stack != nil else { return completion(.failure(.core(.unknown, "the Bluetooth stack is not running"))) }
        let advertisement = PeripheralAdvertisement(localName: localName, serviceUUIDs: serviceUUIDs,
                                                    overflowServiceUUIDs: overflowServiceUUIDs)
        opener.onStack { [self] stack in
            let wasAdvertising = state.withLock { state -> Bool in
                defer { state.advertisement = advertisement }
                return state.advertisement != nil
            }
            let start: @Sendable () -> Void = {
                stack.engine.startAdvertising(advertisingData: advertisement.advertisingData, scanResponse: advertisement.scanResponse) { result in
                    completion(result.mapError { .core(.unknown, $0.reason) })
                }
            }
            if wasAdvertising {
                stack.engine.stopAdvertising { _ in start() }
            } else {
                start()
            }
        }
    }

    /// Stops advertising if it runs.
    public func stopAdvertising() {
        opener.onStack { [self] stack in
            let was = state.withLock { state -> Bool in
                defer { state.advertisement = nil }
                return state.advertisement != nil
            }
            if was { stack.engine.stopAdvertising() }
        }
    }

    // MARK: Updates

    public func updateValue(_ value: [UInt8], characteristicID: Int, centrals: [CBBackendPeer]) -> Bool {
        let accepted = state.withLock { state -> Bool in
            guard state.blocked.isEmpty, state.queuedUpdates < Self.updateQueueLimit else {
                state.owesReady = true
                return false
            }
            state.queuedUpdates += 1
            return true
        }
        guard accepted else { return false }
        guard let stack = opener.stack else {
            state.withLock { $0.queuedUpdates -= 1 }
            return true
        }
        stack.engine.eventLoop.execute { [self] in
            let (valueHandle, targets) = state.withLock { state -> (UInt16?, Set<UInt16>?) in
                let handle = state.characteristics[characteristicID]?.valueHandle
                guard !centrals.isEmpty else { return (handle, nil) }
                let wanted = Set(centrals.map(\.address))
                return (handle, Set(state.centrals.filter { wanted.contains($0.value) }.keys))
            }
            guard let valueHandle else {
                state.withLock { $0.queuedUpdates -= 1 }
                return maybeReady()
            }
            stack.engine.updateValue(value, handle: valueHandle, to: targets) { [self] result in
                let sent = (try? result.get()) ?? []
                let full = sent.filter { !stack.engine.isReadyToSend(connectionHandle: $0) }
                state.withLock { state in
                    state.queuedUpdates -= 1
                    state.blocked.formUnion(full)
                }
                maybeReady()
            }
        }
        return true
    }

    private func maybeReady() {
        let due = state.withLock { state -> Bool in
            guard state.owesReady, state.blocked.isEmpty, state.queuedUpdates == 0 else { return false }
            state.owesReady = false
            return true
        }
        if due { emit(.readyToUpdateSubscribers) }
    }

    /// Asks the central for parameters of that latency (L2CAP Connection Parameter Update Request, Core 5.4
    /// Vol 3 Part A §4.20): low 15–30 ms, medium 30–50 ms with 2 skipped events, high 100–200 ms with 4.
    public func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBBackendPeer) {
        let request = switch latency {
        case .low: L2CAPConnectionParameterUpdateRequest(intervalMin: 12, intervalMax: 24, peripheralLatency: 0, timeoutMultiplier: 200)
        case .medium: L2CAPConnectionParameterUpdateRequest(intervalMin: 24, intervalMax: 40, peripheralLatency: 2, timeoutMultiplier: 400)
        case .high: L2CAPConnectionParameterUpdateRequest(intervalMin: 80, intervalMax: 160, peripheralLatency: 4, timeoutMultiplier: 600)
        }
        opener.onStack { [self] stack in
            let connection = state.load().centrals.first { $0.value == central.address }?.key
            guard let connection else { return }
            stack.engine.requestConnectionParameterUpdate(connectionHandle: connection, request)
        }
    }

    /// Registers a channel server on the lowest free dynamic LE_PSM (0x0080...0x00FF, Core 5.4 Vol 3 Part A
    /// §4.22): SDUs up to 2048 octets, 16 initial credits returned automatically. `encryptionRequired`: a central
    /// whose link is not encrypted is refused (Insufficient Authentication, or Insufficient Encryption when
    /// bonded, §4.23); a central on this stack then pairs or encrypts and asks again, as iOS does.
    public func publishL2CAPChannel(encryptionRequired: Bool, completion: @escaping @Sendable (Result<CBL2CAPPSM, CBBackendError>) -> Void) {
        guard let stack = opener.stack else { return completion(.failure(.core(.unknown, "the Bluetooth stack is not running"))) }
        stack.engine.eventLoop.execute { [self] in
            let psm = state.withLock { state -> UInt16? in
                guard let free = (UInt16(0x0080)...0x00FF).first(where: { !state.publishedPSMs.contains($0) }) else { return nil }
                state.publishedPSMs.insert(free)
                return free
            }
            guard let psm else { return completion(.failure(.core(.outOfSpace, "every dynamic LE_PSM is published"))) }
            stack.engine.registerL2CAPServer(L2CAPChannelServer(psm: psm, mtu: 2048, mps: 247, initialCredits: 16),
                                           requiresEncryption: encryptionRequired) { [self] result in
                switch result {
                case .success: completion(.success(psm))
                case .failure(let error):
                    state.withLock { _ = $0.publishedPSMs.remove(psm) }
                    completion(.failure(.core(.unknown, "cannot publish PSM \(psm): \(error)")))
                }
            }
        }
    }

    /// Unregisters the PSM's server and closes the channels open on it; fails with `CBError.invalidParameters` for a
    /// PSM not published.
    public func unpublishL2CAPChannel(_ psm: CBL2CAPPSM, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        guard let stack = opener.stack else { return completion(.failure(.core(.unknown, "the Bluetooth stack is not running"))) }
        stack.engine.eventLoop.execute { [self] in
            guard state.withLock({ $0.publishedPSMs.remove(psm) != nil }) else {
                return completion(.failure(.core(.invalidParameters, "PSM \(psm) is not published")))
            }
            stack.engine.unregisterL2CAPServer(psm: psm)
            // Apple's header: unpublishing closes the channels open on the PSM.
            for channel in opener.channels.open(onPSM: psm) { channel.close() }
            completion(.success(()))
        }
    }

    // MARK: Host events

    private func handle(_ event: HostEvent, _ stack: any OpenedStack) {
        if opener.channels.handle(event) { return }
        switch event {
        case .l2capChannelOpened(let handle, let info) where !info.isInitiator:
            let central = state.withLock { state in state.publishedPSMs.contains(info.psm) ? state.centrals[handle] : nil }
            guard let central else { return }
            let channel = EngineL2CAPChannel(stack: stack, connection: handle, info: info, peer: CBBackendPeer(address: central))
            opener.channels.add(channel)
            emit(.l2capChannelOpened(channel))
        case .connected(let connection) where connection.role == .peripheral:
            let advertisement = state.withLock { state -> PeripheralAdvertisement? in
                state.centrals[connection.handle] = connection.peer
                return state.advertisement
            }
            emit(.centralConnected(CBBackendPeer(address: connection.peer), mtu: ATTMTU.leDefault))
            // The controller stopped advertising for the connection; CoreBluetooth keeps advertising.
            if let advertisement {
                stack.engine.startAdvertising(advertisingData: advertisement.advertisingData, scanResponse: advertisement.scanResponse) { _ in }
            }
        case .disconnected(let handle, _):
            let gone = state.withLock { state -> (BluetoothAddress, [Int])? in
                guard let central = state.centrals.removeValue(forKey: handle) else { return nil }
                if state.endedCentrals.count >= 64 { state.endedCentrals = [:] }
                state.endedCentrals[handle] = central
                let ended = state.subscriptions.filter { $0.connection == handle }
                state.subscriptions.subtract(ended)
                state.pending = state.pending.filter { $0.value != handle }
                state.blocked.remove(handle)
                return (central, ended.map(\.characteristicID).sorted())
            }
            guard let (central, ended) = gone else { return }
            let peer = CBBackendPeer(address: central)
            for id in ended { emit(.unsubscribed(peer, characteristicID: id)) }
            emit(.centralDisconnected(peer))
            maybeReady()
        case .attMTUChanged(let handle, let mtu):
            guard let central = state.load().centrals[handle] else { return }
            emit(.mtuChanged(CBBackendPeer(address: central), mtu: mtu))
        case .gattServer(.subscriptionChanged(let connection, let valueHandle, let configuration)):
            let change = state.withLock { state -> (BluetoothAddress, Int, Bool)? in
                guard let central = state.centrals[connection.rawValue], let id = state.characteristicByValue[valueHandle] else { return nil }
                let key = Subscription(connection: connection.rawValue, characteristicID: id)
                if configuration.isEmpty {
                    guard state.subscriptions.remove(key) != nil else { return nil }
                    return (central, id, false)
                }
                guard state.subscriptions.insert(key).inserted else { return nil }
                return (central, id, true)
            }
            guard let (central, id, subscribed) = change else { return }
            let peer = CBBackendPeer(address: central)
            emit(subscribed ? .subscribed(peer, characteristicID: id) : .unsubscribed(peer, characteristicID: id))
        case .readyToSend(let handle):
            state.withLock { _ = $0.blocked.remove(handle) }
            maybeReady()
        case .pairingInteraction(let handle, let interaction):
            // iOS shows the system's pairing dialog: the agent answers it (without one, `.accepting`).
            (pairingAgent ?? .accepting).ask(interaction, peer: state.load().centrals[handle] ?? .zero) { stack.engine.answerPairing(connectionHandle: handle, $0) }
        default:
            break
        }
    }
}

extension CBAttributePermissions {
    /// The value's GATT permissions (Core 5.4 Vol 3 Part F §3.2.5): readable 0x01, writeable 0x02,
    /// readEncryptionRequired 0x04, writeEncryptionRequired 0x08 (for our managers and the test kit's peripherals).
    package var gattPermissions: GATTPermissions {
        GATTPermissions(readable: rawValue & 0x05 != 0, writable: rawValue & 0x0A != 0,
                        read: rawValue & 0x04 != 0 ? .encrypted : .none, write: rawValue & 0x08 != 0 ? .encrypted : .none)
    }
}

extension CBCharacteristicProperties {
    /// What subscribing needs: encryption for notifyEncryptionRequired 0x100 or indicateEncryptionRequired 0x200.
    package var subscriptionSecurity: GATTSecurityRequirement { rawValue & 0x300 != 0 ? .encrypted : .none }
}
