public import Dispatch
public import Foundation
import BluetoothCore
import BluetoothRuntime

/// The peripheral role (CoreBluetooth `CBPeripheralManager`; GAP peripheral, Core 5.4 Vol 3 Part C §9; GATT
/// server, Vol 3 Part G §3-§4) over a ``CBPeripheralBackend``.
///
/// Semantics (corebluetooth-api.md §2.8-§2.10): cached characteristics (created with a value) are served by the
/// stack without a callback and must be read-only; dynamic ones reach `didReceiveRead` (one call per Read or Read
/// Blob, `offset` growing through a long read) and `didReceiveWrite` (one call per request batch: a Write
/// Request, the prepared writes of an Execute Write, or Write Commands); each batch takes exactly one
/// `respond(to:withResult:)` (a second one is API misuse and ignored). `updateValue` returns false when the
/// stack's queue is full, and `peripheralManagerIsReady(toUpdateSubscribers:)` follows once it has room.
/// Only `CBAdvertisementDataLocalNameKey` and `CBAdvertisementDataServiceUUIDsKey` are advertised.
///
/// State restoration (corebluetooth-api.md §2.11): created with `CBPeripheralManagerOptionRestoreIdentifierKey`,
/// the manager keeps its published services (characteristics with properties, permissions and static values,
/// descriptors) and its advertising data (`StateRestorationStore`) while it lives; a manager created later
/// (another process) with the same identifier calls `peripheralManager(_:willRestoreState:)` first, on its queue,
/// with new `CBMutableService` objects for them and the advertisement dictionary, then, once powered on and before
/// `peripheralManagerDidUpdateState`, publishes them again and advertises again without further callbacks (a
/// failure is reported through `didAdd` / `didStartAdvertising`). With a stack of its own, subscriptions do not
/// survive (their links ended with the process); on the Bluetooth service's kept stack they do: the restored
/// characteristics carry the centrals still subscribed (`subscribedCentrals`), and the database the app has
/// published when its first `peripheralManagerDidUpdateState` returns is compared with the kept one (the same
/// installs nothing). Leaving `.poweredOn` forgets the advertising (and, below `.poweredOff`, the services).
open class CBPeripheralManager: CBManager, ApplicationStateObserver, @unchecked Sendable {
    /// The object that receives the manager's events, on its queue; held weakly.
    open weak var delegate: (any CBPeripheralManagerDelegate)?

    let backend: (any CBPeripheralBackend)?

    private struct Batch {
        var central: CBBackendPeer
        var requests: [ObjectIdentifier]
        var isRead: Bool
        var responseRequired: Bool
    }

    private struct Shared {
        var isAdvertising = false
        var nextID = 1
        var published: [Int: CBMutableService] = [:]
        var characteristics: [Int: CBMutableCharacteristic] = [:]
        var batches: [UInt64: Batch] = [:]
        var waitingForReady = false
        // What state restoration keeps: the services the backend accepted, and what is advertised.
        var definitions: [Int: CBBackendLocalService] = [:]
        var advertised: (localName: String?, serviceUUIDs: [BluetoothUUID])?
    }

    private let shared = LockedValue(Shared())
    // Centrals known on the queue.
    private var centrals: [CBBackendPeer: CBCentral] = [:]
    /// Where the state is kept (nil without a restore identifier).
    let restoration: StateRestorationStore?
    /// What a restored manager publishes and advertises again at the first `.poweredOn` (on the queue only).
    private var restoredServices: [CBMutableService] = []
    private var restoredAdvertisement: [String: Any]?
    /// On a kept stack, the snapshot waits for the centrals the system kept (`.restoredCentrals`) so that
    /// `willRestoreState` has them; `awaitingCentrals` is true until they came (on the queue only).
    private var awaitingCentrals = false
    private var snapshotAwaitingCentrals: PeripheralRestorationSnapshot?

    /// The app's authorization to use Bluetooth in the peripheral role; always `.authorized` on Linux.
    @available(iOS, deprecated: 13.0, message: "Use CBManager.authorization")
    @available(macOS, deprecated: 10.15, message: "Use CBManager.authorization")
    public class func authorizationStatus() -> CBPeripheralManagerAuthorizationStatus { .authorized }

    /// A manager with no delegate, on the main queue.
    public convenience init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    /// A manager with `delegate`, calling it on `queue` (nil: the main queue).
    public convenience init(delegate: (any CBPeripheralManagerDelegate)?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// Options: `CBPeripheralManagerOptionRestoreIdentifierKey` (a String) keeps and restores the manager's state
    /// (see the type's documentation); `CBPeripheralManagerOptionShowPowerAlertKey` is accepted and has no effect.
    public init(delegate: (any CBPeripheralManagerDelegate)?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        self.delegate = delegate
        let provider = CBBackendRegistry.current
        backend = provider?.makePeripheral()
        postedLinks = PostedLinks(system: provider?.connections ?? SystemConnections())
        let application = provider?.application ?? .process
        restoration = (provider?.storesStateInFiles ?? true)
            ? StateRestorationStore.forOptions(options, key: CBPeripheralManagerOptionRestoreIdentifierKey, role: .peripheral) : nil
        super.init(queue: queue, application: application, backgroundMode: .bluetoothPeripheral, sharedTime: provider?.sharedTime)
        application.observe(self)
        let snapshot = restoration?.load(PeripheralRestorationSnapshot.self)
        var kept = false
        if let restoration {
            kept = backend?.keepStack(restoreIdentifier: restoration.identifier) ?? false
            restoration.removeAtNormalExit()
        }
        awaitingCentrals = kept
        snapshotAwaitingCentrals = kept ? snapshot : nil
        startBackend(restoring: kept ? nil : snapshot, with: { self.restore($0, keptCentrals: []) },
                     start: backend.map { backend in backend.start }, handle: { [weak self] in self?.handle($0) },
                     didUpdateState: { self.delegate?.peripheralManagerDidUpdateState(self) })
    }

    deinit {
        backend?.shutdown()
        postedLinks.allEnded()
    }

    /// This manager's links from centrals, as "the system" knows them (``SystemConnections``).
    let postedLinks: PostedLinks

    /// True from `startAdvertising(_:)` until `stopAdvertising()`, a failure to start, or leaving `.poweredOn`.
    public internal(set) var isAdvertising: Bool {
        get { shared.withLock { $0.isAdvertising } }
        set { shared.withLock { $0.isAdvertising = newValue } }
    }

    /// Request batches not answered yet (tests).
    var pendingBatchCount: Int { shared.withLock { $0.batches.count } }

    // MARK: Database

    /// Publishes a service; `peripheralManager(_:didAdd:error:)` follows. Included services must be published
    /// first. A characteristic with a cached value must be read-only (Apple raises an exception; here the service
    /// is refused with `CBError.invalidParameters` and the misuse logged).
    open func add(_ service: CBMutableService) {
        guard requirePoweredOn(), let backend else { return }
        publish(service, on: backend, reportingSuccess: true)
    }

    /// `add` without the state check; a restored service (`reportingSuccess` false) hears only of a failure.
    private func publish(_ service: CBMutableService, on backend: any CBPeripheralBackend, reportingSuccess: Bool) {
        let characteristics = (service.characteristics ?? []).compactMap { $0 as? CBMutableCharacteristic }
        if let bad = characteristics.first(where: { $0.value != nil && !$0.properties.isSubset(of: [.read]) }) {
            misuse("Characteristics with cached values must be read-only: \(bad.uuid)")
            refuse(service, reason: "Characteristics with cached values must be read-only")
            return
        }
        for characteristic in characteristics {
            for descriptor in characteristic.descriptors ?? [] {
                let short = descriptor.uuid.bluetoothUUID.uuid16
                guard short == 0x2901 || short == 0x2904, CBDescriptor.encode(descriptor.value) != nil else {
                    misuse("Only the Characteristic User Description and Characteristic Presentation Format descriptors with a value can be added: \(descriptor.uuid)")
                    refuse(service, reason: "Unsupported descriptor \(descriptor.uuid)")
                    return
                }
            }
        }
        let included = (service.includedServices ?? []).compactMap { ($0 as? CBMutableService)?.localID }
        let definition: CBBackendLocalService = shared.withLock { shared in
            let serviceID = shared.nextID
            shared.nextID += 1
            service.localID = serviceID
            var list: [CBBackendLocalCharacteristic] = []
            for characteristic in characteristics {
                let id = shared.nextID
                shared.nextID += 1
                characteristic.localID = id
                characteristic.service = service
                shared.characteristics[id] = characteristic
                for descriptor in characteristic.descriptors ?? [] { descriptor.characteristic = characteristic }
                var properties = characteristic.properties
                var permissions = characteristic.permissions
                if characteristic.value != nil {
                    properties.insert(.read)
                    permissions.insert(.readable)
                }
                list.append(CBBackendLocalCharacteristic(
                    id: id, uuid: characteristic.uuid.bluetoothUUID, properties: properties.rawValue,
                    permissions: permissions.rawValue, staticValue: characteristic.value.map { [UInt8]($0) },
                    descriptors: (characteristic.descriptors ?? []).compactMap { descriptor in
                        CBDescriptor.encode(descriptor.value).map {
                            CBBackendLocalDescriptor(uuid: descriptor.uuid.bluetoothUUID, value: $0)
                        }
                    }))
            }
            shared.published[serviceID] = service
            return CBBackendLocalService(id: serviceID, uuid: service.uuid.bluetoothUUID, isPrimary: service.isPrimary,
                                         includedServiceIDs: included, characteristics: list)
        }
        backend.addService(definition) { [weak self] result in
            guard let self else { return }
            self.gate.deliver {
                switch result {
                case .success:
                    self.shared.withLock { shared in
                        if service.localID == definition.id { shared.definitions[definition.id] = definition }
                    }
                    self.saveRestorableState()
                    if reportingSuccess { self.delegate?.peripheralManager(self, didAdd: service, error: nil) }
                case .failure(let error):
                    self.forget(service)
                    self.delegate?.peripheralManager(self, didAdd: service, error: error.cbError)
                }
            }
        }
    }

    private func refuse(_ service: CBMutableService, reason: String) {
        gate.deliver {
            self.delegate?.peripheralManager(self, didAdd: service, error: CBError(.invalidParameters, reason: reason))
        }
    }

    private func forget(_ service: CBMutableService) {
        shared.withLock { shared in
            guard let id = service.localID else { return }
            shared.published[id] = nil
            shared.definitions[id] = nil
            for characteristic in service.characteristics ?? [] {
                if let mutable = characteristic as? CBMutableCharacteristic, let cid = mutable.localID {
                    shared.characteristics[cid] = nil
                    mutable.localID = nil
                }
            }
            service.localID = nil
        }
    }

    /// Removes a published service from the local database; no callback follows.
    open func remove(_ service: CBMutableService) {
        guard requirePoweredOn(), let backend, let id = service.localID else { return }
        forget(service)
        saveRestorableState()
        backend.removeService(id: id)
    }

    /// Removes every service this manager published.
    open func removeAllServices() {
        guard requirePoweredOn(), let backend else { return }
        let all = shared.withLock { Array($0.published.values) }
        all.forEach(forget)
        saveRestorableState()
        backend.removeAllServices()
    }

    // MARK: Advertising

    /// Advertises `CBAdvertisementDataLocalNameKey` and `CBAdvertisementDataServiceUUIDsKey` (`[CBUUID]`, also
    /// `[CBUUID?]`); other keys are ignored, as on Apple platforms. While advertising, a second call reports
    /// `CBError.alreadyAdvertising`.
    open func startAdvertising(_ advertisementData: [String: Any]?) {
        guard requirePoweredOn(), let backend else { return }
        advertise(advertisementData, on: backend, reportingSuccess: true)
    }

    /// `startAdvertising` without the state check; restored advertising (`reportingSuccess` false) hears only of
    /// a failure.
    private func advertise(_ advertisementData: [String: Any]?, on backend: any CBPeripheralBackend, reportingSuccess: Bool) {
        if isAdvertising {
            gate.deliver {
                self.delegate?.peripheralManagerDidStartAdvertising(self, error: CBError(.alreadyAdvertising))
            }
            return
        }
        let name = advertisementData?[CBAdvertisementDataLocalNameKey] as? String
        let raw = advertisementData?[CBAdvertisementDataServiceUUIDsKey]
        let uuids: [CBUUID] = (raw as? [CBUUID]) ?? (raw as? [CBUUID?])?.compactMap { $0 }
            ?? (raw as? [Any])?.compactMap { $0 as? CBUUID } ?? []
        isAdvertising = true
        let serviceUUIDs = uuids.map(\.bluetoothUUID)
        let form = Self.advertisedForm(name: name, serviceUUIDs: serviceUUIDs, application: application)
        let started: @Sendable (Result<Void, CBBackendError>) -> Void = { [weak self] result in
            guard let self else { return }
            self.gate.deliver {
                switch result {
                case .success:
                    if self.isAdvertising {
                        self.shared.withLock { $0.advertised = (name, serviceUUIDs) }
                        self.saveRestorableState()
                    }
                    if reportingSuccess { self.delegate?.peripheralManagerDidStartAdvertising(self, error: nil) }
                case .failure(let error):
                    self.isAdvertising = false
                    self.delegate?.peripheralManagerDidStartAdvertising(self, error: error.cbError)
                }
            }
        }
        guard let form else {
            // Nothing on the air until the app returns to the foreground (``applicationStateChanged(_:)``).
            shared.withLock { $0.advertised = (name, serviceUUIDs) }
            return started(.success(()))
        }
        backend.startAdvertising(localName: form.name, serviceUUIDs: form.serviceUUIDs, overflowServiceUUIDs: form.overflow,
                                 completion: started)
    }

    /// Stops advertising.
    open func stopAdvertising() {
        guard requirePoweredOn(), let backend else { return }
        isAdvertising = false
        shared.withLock { $0.advertised = nil }
        saveRestorableState()
        backend.stopAdvertising()
    }

    /// Asks `central` for connection parameters that suit `latency`; the central decides.
    open func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBCentral) {
        guard requirePoweredOn(), let backend else { return }
        backend.setDesiredConnectionLatency(latency, for: central.peer)
    }

    // MARK: Requests and updates

    /// Answers a request batch, exactly once: for `didReceiveRead`, the request (its `value` holds the bytes from
    /// `offset`); for `didReceiveWrite`, the first request of the array (any request of the batch is accepted).
    open func respond(to request: CBATTRequest, withResult result: CBATTError.Code) {
        guard requirePoweredOn(), let backend else { return }
        let batch: Batch? = shared.withLock { shared in
            guard let batch = shared.batches[request.batchID],
                  batch.requests.contains(ObjectIdentifier(request)) else { return nil }
            shared.batches[request.batchID] = nil
            return batch
        }
        guard let batch else {
            misuse("\(objectLabel) respondToRequest:withResult: called for a request that was already answered or is unknown: \(request)")
            return
        }
        if batch.isRead {
            let value = result == .success ? [UInt8](request.value ?? Data()) : nil
            backend.respond(to: request.batchID, result: UInt8(result.rawValue), value: value)
        } else if batch.responseRequired {
            backend.respond(to: request.batchID, result: UInt8(result.rawValue), value: nil)
        }
    }

    /// Notifies (or indicates) `value` to `centrals` (nil: every subscribed central; unsubscribed ones are
    /// skipped), truncated to each central's `maximumUpdateValueLength`. Returns false when the stack's queue is
    /// full: nothing was sent, and `peripheralManagerIsReady(toUpdateSubscribers:)` follows once it has room.
    @discardableResult
    open func updateValue(_ value: Data, for characteristic: CBMutableCharacteristic, onSubscribedCentrals centrals: [CBCentral]?) -> Bool {
        guard requirePoweredOn(), let backend, let id = characteristic.localID else { return false }
        let subscribed = characteristic._subscribedCentrals
        let targets = centrals.map { wanted in subscribed.filter { s in wanted.contains { $0 === s || $0.peer == s.peer } } }
            ?? subscribed
        guard !targets.isEmpty else { return true }
        let sent = backend.updateValue([UInt8](value), characteristicID: id, centrals: targets.map(\.peer))
        if !sent { shared.withLock { $0.waitingForReady = true } }
        return sent
    }

    // MARK: L2CAP

    /// Publishes an LE credit-based channel on a PSM the stack chooses; `didPublishL2CAPChannel` tells which.
    open func publishL2CAPChannel(withEncryption encryptionRequired: Bool) {
        guard requirePoweredOn(), let backend else { return }
        backend.publishL2CAPChannel(encryptionRequired: encryptionRequired) { [weak self] result in
            guard let self else { return }
            self.gate.deliver {
                switch result {
                case .success(let psm): self.delegate?.peripheralManager(self, didPublishL2CAPChannel: psm, error: nil)
                case .failure(let error): self.delegate?.peripheralManager(self, didPublishL2CAPChannel: 0, error: error.cbError)
                }
            }
        }
    }

    /// Stops accepting channels on `PSM` and closes those open on it; `didUnpublishL2CAPChannel` follows.
    open func unpublishL2CAPChannel(_ PSM: CBL2CAPPSM) {
        guard requirePoweredOn(), let backend else { return }
        backend.unpublishL2CAPChannel(PSM) { [weak self] result in
            guard let self else { return }
            self.gate.deliver {
                let error: (any Error)? = if case .failure(let failure) = result { failure.cbError } else { nil }
                self.delegate?.peripheralManager(self, didUnpublishL2CAPChannel: PSM, error: error)
            }
        }
    }

    // MARK: State restoration

    /// Writes what a relaunched app would get back: the accepted services in publication order, the advertising.
    private func saveRestorableState() {
        guard let restoration else { return }
        let (definitions, advertised) = shared.withLock { shared in
            (shared.definitions.values.sorted { $0.id < $1.id }, shared.advertised)
        }
        restoration.save(PeripheralRestorationSnapshot(services: definitions, advertisement: advertised))
    }

    /// On the queue, before the first state update: the restored services and advertisement data, handed to the
    /// delegate; both are published and advertised again at the first `.poweredOn`.
    private func restore(_ snapshot: PeripheralRestorationSnapshot, keptCentrals: [CBBackendKeptCentral]) {
        restoredServices = (try? snapshot.restoredServices()) ?? []
        restoredAdvertisement = try? snapshot.restoredAdvertisement()
        // The centrals the system kept subscribed, on the restored characteristics (as iOS restores a
        // characteristic's `subscribedCentrals`); a position that is not the same service and characteristic is
        // left for `didSubscribeTo` once the app has published its services.
        for kept in keptCentrals {
            let subscriber = central(kept.peer)
            subscriber.mtu = kept.mtu
            for position in kept.subscriptions where restoredServices.indices.contains(position.service) {
                let service = restoredServices[position.service]
                guard service.uuid.bluetoothUUID == position.serviceUUID,
                      let characteristics = service.characteristics, characteristics.indices.contains(position.characteristic),
                      let characteristic = characteristics[position.characteristic] as? CBMutableCharacteristic,
                      characteristic.uuid.bluetoothUUID == position.characteristicUUID,
                      !characteristic._subscribedCentrals.contains(where: { $0 === subscriber }) else { continue }
                characteristic._subscribedCentrals.append(subscriber)
                characteristic._isNotifying = true
            }
        }
        var state: [String: Any] = [:]
        if !restoredServices.isEmpty { state[CBPeripheralManagerRestoredStateServicesKey] = restoredServices }
        if let restoredAdvertisement { state[CBPeripheralManagerRestoredStateAdvertisementDataKey] = restoredAdvertisement }
        delegate?.peripheralManager(self, willRestoreState: state)
    }

    /// At the first `.poweredOn` after a restoration: publishes the restored services (included ones first, as
    /// they were) and advertises again.
    private func resumeRestoredState() {
        guard let backend else { return }
        let services = restoredServices
        let advertisement = restoredAdvertisement
        restoredServices = []
        restoredAdvertisement = nil
        for service in services { publish(service, on: backend, reportingSuccess: false) }
        if let advertisement { advertise(advertisement, on: backend, reportingSuccess: false) }
    }

    // MARK: Application state

    /// What goes on the air for the app's advertising (Core Bluetooth Programming Guide, "Core Bluetooth Background
    /// Processing for iOS Apps"): all of it in the foreground; in the background or suspended, with the
    /// `bluetooth-peripheral` background mode, no local name and the service UUIDs in the overflow area; without
    /// the mode, nothing (nil): the app's advertising resumes when it returns to the foreground.
    static func advertisedForm(name: String?, serviceUUIDs: [BluetoothUUID], application: OCBApplication)
        -> (name: String?, serviceUUIDs: [BluetoothUUID], overflow: [BluetoothUUID])? {
        guard application.isRestricted else { return (name, serviceUUIDs, []) }
        guard application.backgroundModes.contains(.bluetoothPeripheral) else { return nil }
        return (nil, [], serviceUUIDs)
    }

    /// iOS's background rules: the events wait or flow, and running advertising takes the state's form (or stops
    /// until the app returns, without the background mode).
    func applicationStateChanged(_ application: OCBApplication) {
        followApplicationState()
        queue.async {
            guard self.isAdvertising, let backend = self.backend,
                  let advertised = self.shared.withLock({ $0.advertised }) else { return }
            guard let form = Self.advertisedForm(name: advertised.localName, serviceUUIDs: advertised.serviceUUIDs,
                                                 application: application) else {
                return backend.stopAdvertising()
            }
            backend.startAdvertising(localName: form.name, serviceUUIDs: form.serviceUUIDs,
                                     overflowServiceUUIDs: form.overflow) { _ in }
        }
    }

    // MARK: Events (on the queue)

    private func central(_ peer: CBBackendPeer) -> CBCentral {
        if let known = centrals[peer] { return known }
        let created = CBCentral(peer: peer)
        centrals[peer] = created
        return created
    }

    private func characteristic(_ id: Int) -> CBMutableCharacteristic? {
        shared.withLock { $0.characteristics[id] }
    }

    private func handle(_ event: CBPeripheralBackendEvent) {
        switch event {
        case .stateChanged(let newState):
            let old = state
            guard newState != old else { return }
            state = newState
            if old == .poweredOn {
                isAdvertising = false
                let all = shared.withLock { shared -> [CBMutableCharacteristic] in
                    shared.batches = [:]
                    shared.waitingForReady = false
                    return Array(shared.characteristics.values)
                }
                all.forEach { $0._subscribedCentrals = [] }
                centrals = [:]
                postedLinks.allEnded()
                if newState.rawValue < CBManagerState.poweredOff.rawValue {
                    // Below poweredOff the local database is cleared and must be re-added.
                    let services = shared.withLock { Array($0.published.values) }
                    services.forEach(forget)
                }
                shared.withLock { $0.advertised = nil }
                saveRestorableState()
            }
            if newState == .poweredOn { resumeRestoredState() }
            delegate?.peripheralManagerDidUpdateState(self)
            // What the app published in its `.poweredOn` (the restored services, or its own again) is what a
            // server the system kept is judged against.
            if newState == .poweredOn { backend?.restoredStateSettled() }
        case .centralConnected(let peer, let mtu):
            central(peer).mtu = mtu
            postedLinks.started(peer)
        case .mtuChanged(let peer, let mtu):
            central(peer).mtu = mtu
        case .centralDisconnected(let peer):
            postedLinks.ended(peer)
            guard let gone = centrals[peer] else { return }
            let all = shared.withLock { shared -> [CBMutableCharacteristic] in
                shared.batches = shared.batches.filter { _, batch in batch.central != peer }
                return shared.characteristics.values.sorted { ($0.localID ?? 0) < ($1.localID ?? 0) }
            }
            for characteristic in all where characteristic._subscribedCentrals.contains(where: { $0 === gone }) {
                characteristic._subscribedCentrals.removeAll { $0 === gone }
                characteristic._isNotifying = !characteristic._subscribedCentrals.isEmpty
                delegate?.peripheralManager(self, central: gone, didUnsubscribeFrom: characteristic)
            }
            centrals[peer] = nil
        case .readRequest(let id, let peer, let characteristicID, let offset):
            guard let characteristic = characteristic(characteristicID) else {
                backend?.respond(to: id, result: UInt8(CBATTError.Code.attributeNotFound.rawValue), value: nil)
                return
            }
            let request = CBATTRequest(central: central(peer), characteristic: characteristic, offset: offset, value: nil, batchID: id)
            shared.withLock { $0.batches[id] = Batch(central: peer, requests: [ObjectIdentifier(request)], isRead: true, responseRequired: true) }
            delegate?.peripheralManager(self, didReceiveRead: request)
        case .writeRequests(let id, let peer, let writes, let responseRequired):
            let from = central(peer)
            var requests: [CBATTRequest] = []
            for write in writes {
                guard let characteristic = characteristic(write.characteristicID) else {
                    if responseRequired {
                        backend?.respond(to: id, result: UInt8(CBATTError.Code.attributeNotFound.rawValue), value: nil)
                    }
                    return
                }
                requests.append(CBATTRequest(central: from, characteristic: characteristic, offset: write.offset,
                                             value: Data(write.value), batchID: id))
            }
            guard !requests.isEmpty else { return }
            shared.withLock {
                $0.batches[id] = Batch(central: peer, requests: requests.map(ObjectIdentifier.init), isRead: false, responseRequired: responseRequired)
            }
            delegate?.peripheralManager(self, didReceiveWrite: requests)
        case .subscribed(let peer, let characteristicID):
            guard let characteristic = characteristic(characteristicID) else { return }
            let subscriber = central(peer)
            guard !characteristic._subscribedCentrals.contains(where: { $0 === subscriber }) else { return }
            characteristic._subscribedCentrals.append(subscriber)
            characteristic._isNotifying = true
            delegate?.peripheralManager(self, central: subscriber, didSubscribeTo: characteristic)
        case .unsubscribed(let peer, let characteristicID):
            guard let characteristic = characteristic(characteristicID), let subscriber = centrals[peer],
                  characteristic._subscribedCentrals.contains(where: { $0 === subscriber }) else { return }
            characteristic._subscribedCentrals.removeAll { $0 === subscriber }
            characteristic._isNotifying = !characteristic._subscribedCentrals.isEmpty
            delegate?.peripheralManager(self, central: subscriber, didUnsubscribeFrom: characteristic)
        case .readyToUpdateSubscribers:
            let wanted = shared.withLock { shared -> Bool in
                defer { shared.waitingForReady = false }
                return shared.waitingForReady
            }
            if wanted { delegate?.peripheralManagerIsReady(toUpdateSubscribers: self) }
        case .l2capChannelOpened(let channelBackend):
            let channel = CBL2CAPChannel(backend: channelBackend, peer: central(channelBackend.peer), queue: queue)
            delegate?.peripheralManager(self, didOpen: channel, error: nil)
        case .restoredCentrals(let kept):
            guard awaitingCentrals else { return }
            awaitingCentrals = false
            let snapshot = snapshotAwaitingCentrals
            snapshotAwaitingCentrals = nil
            if let snapshot { restore(snapshot, keptCentrals: kept) }
        }
    }
}
