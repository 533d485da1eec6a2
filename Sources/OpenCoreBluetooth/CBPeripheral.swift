public import Foundation
import BluetoothCore
import BluetoothRuntime

/// A remote peripheral seen by a ``CBCentralManager`` (CoreBluetooth `CBPeripheral`; GATT client procedures,
/// Core 5.4 Vol 3 Part G §4).
///
/// Commands need a connected peripheral (else "API MISUSE" and nothing happens); each completes with exactly one
/// delegate callback on the manager's queue. The manager holds peripherals weakly: releasing a connected or
/// connecting peripheral cancels its connection. After a disconnection, discovered services are dropped and
/// callbacks of commands still in flight are not delivered.
public class CBPeripheral: CBPeer, @unchecked Sendable {
    /// The object that receives the peripheral's events, on the manager's queue; held weakly.
    public weak var delegate: (any CBPeripheralDelegate)?
    weak var manager: CBCentralManager?
    let backend: (any CBCentralBackend)?
    let queue: DispatchQueue
    /// The manager's: completions wait while the app receives no events.
    let gate: DeliveryGate

    private struct Link {
        var state: CBPeripheralState = .disconnected
        var mtu = 23
        var canSendWriteWithoutResponse = false
        /// Bumped on each link start and end; completions of an older link are dropped.
        var generation: UInt64 = 0
        var autoReconnect = false
    }

    private let link = LockedValue(Link())
    var gapName: String?
    var advertisedName: String?
    var _services: [CBService]?
    var _rssi: NSNumber?

    init(peer: CBBackendPeer, manager: CBCentralManager) {
        self.manager = manager
        self.backend = manager.backend
        self.queue = manager.queue
        self.gate = manager.gate
        super.init(peer: peer)
    }

    deinit {
        let state = link.withLock { $0.state }
        if state == .connecting || state == .connected {
            manager?.misuse("Cancelling connection for unused peripheral <CBPeripheral: \(identifier.uuidString), state = \(state == .connected ? "connected" : "connecting")>, Did you forget to keep a reference to it?")
            backend?.cancelConnection(peer)
        }
    }

    /// The GAP Device Name if read, else the advertised local name.
    public var name: String? { gapName ?? advertisedName }
    /// The connection state, as this manager sees it.
    public internal(set) var state: CBPeripheralState {
        get { link.withLock { $0.state } }
        set { link.withLock { $0.state = newValue } }
    }
    /// nil until `discoverServices` succeeds.
    public var services: [CBService]? { _services }
    /// Deprecated: nil until `readRSSI()` answers.
    @available(iOS, deprecated: 8.0, message: "Use peripheral(_:didReadRSSI:error:)")
    @available(macOS, deprecated: 10.13, message: "Use peripheral(_:didReadRSSI:error:)")
    public var rssi: NSNumber? { _rssi }
    /// Whether a write without response would be queued now; when false, wait for
    /// `peripheralIsReady(toSendWriteWithoutResponse:)`. False while not connected.
    public var canSendWriteWithoutResponse: Bool { link.withLock { $0.canSendWriteWithoutResponse } }
    /// Whether the peripheral may use the Apple Notification Center Service; always false on Linux.
    public var ancsAuthorized: Bool { false }

    var mtu: Int {
        get { link.withLock { $0.mtu } }
        set { link.withLock { $0.mtu = newValue } }
    }

    var autoReconnect: Bool {
        get { link.withLock { $0.autoReconnect } }
        set { link.withLock { $0.autoReconnect = newValue } }
    }

    /// Write with response: 512 (the stack does long writes); without response: ATT_MTU - 3.
    @discardableResult
    public func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int {
        switch type {
        case .withResponse: 512
        case .withoutResponse: max(20, mtu - 3)
        }
    }

    public override var description: String {
        let stateName = switch state {
        case .disconnected: "disconnected"
        case .connecting: "connecting"
        case .connected: "connected"
        case .disconnecting: "disconnecting"
        }
        return "<CBPeripheral: \(CBManager.address(of: self)), identifier = \(identifier.uuidString), name = \(name ?? "(null)"), mtu = \(mtu), state = \(stateName)>"
    }

    // MARK: Link (on the queue)

    func linkStarted(mtu: Int) {
        link.withLock {
            $0.state = .connected
            $0.mtu = max(23, mtu)
            $0.canSendWriteWithoutResponse = true
            $0.generation &+= 1
        }
    }

    func linkEnded() {
        link.withLock {
            $0.state = .disconnected
            $0.canSendWriteWithoutResponse = false
            $0.mtu = 23
            $0.generation &+= 1
        }
        _services = nil
    }

    /// The guard of every GATT command: a powered-on manager and a connected peripheral. Returns the backend and
    /// the link generation to check completions against.
    private func commandContext() -> (any CBCentralBackend, UInt64)? {
        guard let manager, manager.requirePoweredOn(), let backend else { return nil }
        let (state, generation) = link.withLock { ($0.state, $0.generation) }
        guard state == .connected else {
            manager.misuse("<CBPeripheral: \(identifier.uuidString)> can only accept commands while in the connected state")
            return nil
        }
        return (backend, generation)
    }

    /// Runs `body` on the queue if the peripheral still exists and the link is the one the command ran on.
    private func complete(_ generation: UInt64, _ body: @escaping @Sendable (CBPeripheral) -> Void) {
        gate.deliver { [weak self] in
            guard let self, self.link.withLock({ $0.generation }) == generation else { return }
            body(self)
        }
    }

    // MARK: Discovery

    /// Discovers the peripheral's primary services (nil or empty: all); `peripheral(_:didDiscoverServices:)` follows
    /// and `services` holds them, in handle order.
    public func discoverServices(_ serviceUUIDs: [CBUUID]?) {
        guard let (backend, generation) = commandContext() else { return }
        let filter = serviceUUIDs.flatMap { $0.isEmpty ? nil : $0.map(\.bluetoothUUID) }
        backend.discoverServices(peer, uuids: filter) { [weak self] result in
            self?.complete(generation) { peripheral in
                switch result {
                case .success(let found):
                    peripheral.manager?.system.learn(services: found.map(\.uuid), of: peripheral.peer)
                    peripheral._services = peripheral.merge(found, into: peripheral._services ?? [], replacing: filter == nil)
                    peripheral.manager?.peripheralGATTChanged()
                    peripheral.delegate?.peripheral(peripheral, didDiscoverServices: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didDiscoverServices: error.cbError)
                }
            }
        }
    }

    private func merge(_ found: [CBBackendService], into existing: [CBService], replacing: Bool) -> [CBService] {
        var result = replacing ? [] : existing
        for remote in found {
            if let same = existing.first(where: { $0.remote == remote }) {
                if !result.contains(where: { $0 === same }) { result.append(same) }
                continue
            }
            let service = CBService(uuid: CBUUID(bluetoothUUID: remote.uuid), isPrimary: remote.isPrimary)
            service.remote = remote
            service.peripheral = self
            result.append(service)
        }
        return result.sorted { ($0.remote?.startHandle ?? 0) < ($1.remote?.startHandle ?? 0) }
    }

    /// Discovers the services `service` includes (nil or empty: all);
    /// `peripheral(_:didDiscoverIncludedServicesFor:error:)` follows.
    public func discoverIncludedServices(_ includedServiceUUIDs: [CBUUID]?, for service: CBService) {
        guard let (backend, generation) = commandContext(), let remote = service.remote else { return }
        let filter = includedServiceUUIDs.flatMap { $0.isEmpty ? nil : $0.map(\.bluetoothUUID) }
        backend.discoverIncludedServices(peer, in: remote, uuids: filter) { [weak self, serviceRef = WeakRef(service)] result in
            self?.complete(generation) { peripheral in
                guard let service = serviceRef.value else { return }
                switch result {
                case .success(let found):
                    service._includedServices = peripheral.merge(found, into: service._includedServices ?? [], replacing: filter == nil)
                    peripheral.delegate?.peripheral(peripheral, didDiscoverIncludedServicesFor: service, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didDiscoverIncludedServicesFor: service, error: error.cbError)
                }
            }
        }
    }

    /// Discovers the characteristics of `service` (nil or empty: all);
    /// `peripheral(_:didDiscoverCharacteristicsFor:error:)` follows.
    public func discoverCharacteristics(_ characteristicUUIDs: [CBUUID]?, for service: CBService) {
        guard let (backend, generation) = commandContext(), let remote = service.remote else { return }
        let filter = characteristicUUIDs.flatMap { $0.isEmpty ? nil : $0.map(\.bluetoothUUID) }
        backend.discoverCharacteristics(peer, in: remote, uuids: filter) { [weak self, serviceRef = WeakRef(service)] result in
            self?.complete(generation) { peripheral in
                guard let service = serviceRef.value else { return }
                switch result {
                case .success(let found):
                    var list = filter == nil ? [] : (service._characteristics ?? [])
                    for item in found {
                        if let same = service._characteristics?.first(where: { $0.remote == item }) {
                            if !list.contains(where: { $0 === same }) { list.append(same) }
                            continue
                        }
                        let characteristic = CBCharacteristic(
                            uuid: CBUUID(bluetoothUUID: item.uuid),
                            properties: CBCharacteristicProperties(rawValue: UInt(item.properties)), value: nil)
                        characteristic.remote = item
                        characteristic.service = service
                        list.append(characteristic)
                    }
                    service._characteristics = list.sorted { ($0.remote?.valueHandle ?? 0) < ($1.remote?.valueHandle ?? 0) }
                    peripheral.manager?.peripheralGATTChanged()
                    peripheral.delegate?.peripheral(peripheral, didDiscoverCharacteristicsFor: service, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didDiscoverCharacteristicsFor: service, error: error.cbError)
                }
            }
        }
    }

    /// Discovers the descriptors of `characteristic`; `peripheral(_:didDiscoverDescriptorsFor:error:)` follows.
    public func discoverDescriptors(for characteristic: CBCharacteristic) {
        guard let (backend, generation) = commandContext(), let remote = characteristic.remote else { return }
        backend.discoverDescriptors(peer, for: remote) { [weak self, characteristicRef = WeakRef(characteristic)] result in
            self?.complete(generation) { peripheral in
                guard let characteristic = characteristicRef.value else { return }
                switch result {
                case .success(let found):
                    characteristic._descriptors = found.map { item in
                        if let same = characteristic._descriptors?.first(where: { $0.remote == item }) { return same }
                        let descriptor = CBDescriptor(uuid: CBUUID(bluetoothUUID: item.uuid), value: nil)
                        descriptor.remote = item
                        descriptor.characteristic = characteristic
                        return descriptor
                    }
                    peripheral.manager?.peripheralGATTChanged()
                    peripheral.delegate?.peripheral(peripheral, didDiscoverDescriptorsFor: characteristic, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didDiscoverDescriptorsFor: characteristic, error: error.cbError)
                }
            }
        }
    }

    // MARK: Reads and writes

    /// Reads the whole value (long reads are done by the stack); the result arrives in
    /// `peripheral(_:didUpdateValueFor:error:)`, as notifications do.
    public func readValue(for characteristic: CBCharacteristic) {
        guard let (backend, generation) = commandContext(), let remote = characteristic.remote else { return }
        backend.read(peer, handle: remote.valueHandle) { [weak self, characteristicRef = WeakRef(characteristic)] result in
            self?.complete(generation) { peripheral in
                guard let characteristic = characteristicRef.value else { return }
                switch result {
                case .success(let bytes):
                    characteristic._value = Data(bytes)
                    peripheral.delegate?.peripheral(peripheral, didUpdateValueFor: characteristic, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didUpdateValueFor: characteristic, error: error.cbError)
                }
            }
        }
    }

    /// Reads the descriptor's value; `peripheral(_:didUpdateValueFor:error:)` (the descriptor variant) follows.
    public func readValue(for descriptor: CBDescriptor) {
        guard let (backend, generation) = commandContext(), let remote = descriptor.remote else { return }
        backend.read(peer, handle: remote.handle) { [weak self, descriptorRef = WeakRef(descriptor)] result in
            self?.complete(generation) { peripheral in
                guard let descriptor = descriptorRef.value else { return }
                switch result {
                case .success(let bytes):
                    descriptor._value = CBDescriptor.decode(bytes, uuid: descriptor.uuid)
                    peripheral.delegate?.peripheral(peripheral, didUpdateValueFor: descriptor, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didUpdateValueFor: descriptor, error: error.cbError)
                }
            }
        }
    }

    /// `.withResponse`: `didWriteValueFor` follows. `.withoutResponse`: no callback; the value is cut to
    /// `maximumWriteValueLength(for: .withoutResponse)`; when the stack's queue fills up,
    /// `canSendWriteWithoutResponse` turns false until `peripheralIsReady(toSendWriteWithoutResponse:)`.
    public func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType) {
        guard let (backend, generation) = commandContext(), let remote = characteristic.remote else { return }
        switch type {
        case .withResponse:
            backend.write(peer, handle: remote.valueHandle, value: [UInt8](data)) { [weak self, characteristicRef = WeakRef(characteristic)] result in
                self?.complete(generation) { peripheral in
                    guard let characteristic = characteristicRef.value else { return }
                    let error: (any Error)? = if case .failure(let failure) = result { failure.cbError } else { nil }
                    peripheral.delegate?.peripheral(peripheral, didWriteValueFor: characteristic, error: error)
                }
            }
        case .withoutResponse:
            let bytes = [UInt8](data.prefix(maximumWriteValueLength(for: .withoutResponse)))
            let room = backend.writeWithoutResponse(peer, handle: remote.valueHandle, value: bytes)
            link.withLock { $0.canSendWriteWithoutResponse = room }
        }
    }

    /// Writes a descriptor. The CCCD cannot be written this way (use `setNotifyValue(_:for:)`), as on Apple
    /// platforms, where it raises an exception; here it is logged as API misuse and ignored.
    public func writeValue(_ data: Data, for descriptor: CBDescriptor) {
        if descriptor.uuid.bluetoothUUID == BluetoothUUID(0x2902) {
            manager?.misuse("Client Characteristic Configuration descriptors must be configured using setNotifyValue:forCharacteristic:")
            return
        }
        guard let (backend, generation) = commandContext(), let remote = descriptor.remote else { return }
        backend.write(peer, handle: remote.handle, value: [UInt8](data)) { [weak self, descriptorRef = WeakRef(descriptor)] result in
            self?.complete(generation) { peripheral in
                guard let descriptor = descriptorRef.value else { return }
                let error: (any Error)? = if case .failure(let failure) = result { failure.cbError } else { nil }
                peripheral.delegate?.peripheral(peripheral, didWriteValueFor: descriptor, error: error)
            }
        }
    }

    /// Turns notifications (or indications, for a characteristic that cannot notify) on or off. Asking for the
    /// current state answers at once with no error (as iOS 17 does).
    public func setNotifyValue(_ enabled: Bool, for characteristic: CBCharacteristic) {
        guard let (backend, generation) = commandContext(), let remote = characteristic.remote else { return }
        if characteristic._isNotifying == enabled {
            complete(generation) { [characteristicRef = WeakRef(characteristic)] peripheral in
                guard let characteristic = characteristicRef.value else { return }
                peripheral.delegate?.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: nil)
            }
            return
        }
        guard !characteristic.properties.isDisjoint(with: [.notify, .indicate]) else {
            complete(generation) { [characteristicRef = WeakRef(characteristic)] peripheral in
                guard let characteristic = characteristicRef.value else { return }
                peripheral.delegate?.peripheral(peripheral, didUpdateNotificationStateFor: characteristic,
                                                error: CBATTError(.requestNotSupported))
            }
            return
        }
        let cccd = characteristic._descriptors?.first { $0.uuid.bluetoothUUID == BluetoothUUID(0x2902) }?.remote?.handle
        backend.setNotifications(peer, characteristic: remote, cccdHandle: cccd, enabled: enabled) { [weak self, characteristicRef = WeakRef(characteristic)] result in
            self?.complete(generation) { peripheral in
                guard let characteristic = characteristicRef.value else { return }
                switch result {
                case .success:
                    characteristic._isNotifying = enabled
                    peripheral.manager?.peripheralGATTChanged()
                    peripheral.delegate?.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: error.cbError)
                }
            }
        }
    }

    /// Reads the RSSI of the connection; `peripheral(_:didReadRSSI:error:)` follows (127 on failure).
    public func readRSSI() {
        guard let (backend, generation) = commandContext() else { return }
        backend.readRSSI(peer) { [weak self] result in
            self?.complete(generation) { peripheral in
                switch result {
                case .success(let rssi):
                    let number = NSNumber(value: rssi)
                    peripheral._rssi = number
                    peripheral.delegate?.peripheral(peripheral, didReadRSSI: number, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didReadRSSI: NSNumber(value: 127), error: error.cbError)
                }
            }
        }
    }

    /// Opens an LE credit-based channel to `PSM`; `peripheral(_:didOpen:error:)` follows. Keep a strong reference
    /// to the channel: a released channel is closed.
    public func openL2CAPChannel(_ PSM: CBL2CAPPSM) {
        guard let (backend, generation) = commandContext() else { return }
        let queue = self.queue
        backend.openL2CAPChannel(peer, psm: PSM) { [weak self] result in
            self?.complete(generation) { peripheral in
                switch result {
                case .success(let channelBackend):
                    let channel = CBL2CAPChannel(backend: channelBackend, peer: peripheral, queue: queue)
                    peripheral.delegate?.peripheral(peripheral, didOpen: channel, error: nil)
                case .failure(let error):
                    peripheral.delegate?.peripheral(peripheral, didOpen: nil, error: error.cbError)
                }
            }
        }
    }

    // MARK: Events (on the queue)

    func valueUpdated(handle: UInt16, value: [UInt8]) {
        guard state == .connected else { return }
        for service in _services ?? [] {
            for characteristic in service._characteristics ?? [] where characteristic.remote?.valueHandle == handle {
                characteristic._value = Data(value)
                delegate?.peripheral(self, didUpdateValueFor: characteristic, error: nil)
                return
            }
        }
    }

    func readyToSendWriteWithoutResponse() {
        guard state == .connected else { return }
        link.withLock { $0.canSendWriteWithoutResponse = true }
        delegate?.peripheralIsReady(toSendWriteWithoutResponse: self)
    }

    /// The GAP Device Name, read after connecting or changed by the peer: `name` is it from now on, and the
    /// delegate hears when that changes what `name` was (the advertised name until then).
    func nameUpdated(_ name: String) {
        let before = self.name
        gapName = name
        if before != name { delegate?.peripheralDidUpdateName(self) }
    }

    func servicesChanged(start: UInt16, end: UInt16) {
        guard let services = _services else { return }
        let invalidated = services.filter { service in
            guard let remote = service.remote else { return false }
            return remote.startHandle <= end && remote.endHandle >= start
        }
        guard !invalidated.isEmpty else { return }
        _services = services.filter { service in !invalidated.contains { $0 === service } }
        delegate?.peripheral(self, didModifyServices: invalidated)
    }
}

/// A weak reference that crosses `@Sendable` closures (the façade's objects are only touched on the queue).
struct WeakRef<Object: AnyObject>: @unchecked Sendable {
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}
