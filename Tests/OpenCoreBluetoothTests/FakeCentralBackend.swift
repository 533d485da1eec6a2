import BluetoothCore
import BluetoothRuntime
import Dispatch
@testable import OpenCoreBluetooth

/// A characteristic of a fake remote peripheral's GATT tree.
struct FakeCharacteristic {
    var uuid: BluetoothUUID
    var properties: CBCharacteristicProperties
    var value: [UInt8] = []
    var descriptors: [(BluetoothUUID, [UInt8])] = []
}

/// A service of a fake remote peripheral.
struct FakeService {
    var uuid: BluetoothUUID
    var characteristics: [FakeCharacteristic]
}

/// A remote peripheral on the fake air: advertisement, GATT tree with handles (service declaration, then per
/// characteristic its declaration, value and descriptors; a CCCD is added for notify/indicate), and what the
/// central did to it.
final class FakeRemotePeripheral: @unchecked Sendable {
    struct Attribute {
        var handle: UInt16
        var uuid: BluetoothUUID
        var value: [UInt8]
    }

    let peer: CBBackendPeer
    var advertisement: CBBackendAdvertisement
    var mtu: Int
    var rssi: Int
    var services: [CBBackendService] = []
    var characteristics: [BluetoothUUID: [CBBackendCharacteristic]] = [:]  // by service uuid
    var descriptors: [UInt16: [CBBackendDescriptor]] = [:]  // by value handle
    var values: [UInt16: [UInt8]] = [:]
    var writes: [(handle: UInt16, value: [UInt8], withResponse: Bool)] = []
    var writeError: UInt8?
    var subscribed: Set<UInt16> = []

    init(address: UInt64, name: String?, services: [FakeService], advertised: [BluetoothUUID]? = nil, mtu: Int = 23, rssi: Int = -50) {
        peer = CBBackendPeer(address: BluetoothAddress(address, type: .random))
        advertisement = CBBackendAdvertisement(peer: peer, rssi: rssi, localName: name,
                                               serviceUUIDs: advertised ?? services.map(\.uuid))
        self.mtu = mtu
        self.rssi = rssi
        var handle: UInt16 = 1
        for service in services {
            let start = handle
            handle += 1
            var list: [CBBackendCharacteristic] = []
            for characteristic in service.characteristics {
                let declaration = handle
                let valueHandle = handle + 1
                handle += 2
                values[valueHandle] = characteristic.value
                var descriptorList: [CBBackendDescriptor] = []
                var all = characteristic.descriptors
                if !characteristic.properties.isDisjoint(with: [.notify, .indicate]) {
                    all.insert((BluetoothUUID(0x2902), [0, 0]), at: 0)
                }
                for (uuid, value) in all {
                    descriptorList.append(CBBackendDescriptor(uuid: uuid, handle: handle))
                    values[handle] = value
                    handle += 1
                }
                descriptors[valueHandle] = descriptorList
                list.append(CBBackendCharacteristic(uuid: characteristic.uuid, properties: UInt8(truncatingIfNeeded: characteristic.properties.rawValue),
                                                    declarationHandle: declaration, valueHandle: valueHandle, endHandle: handle - 1))
            }
            characteristics[service.uuid] = list
            self.services.append(CBBackendService(uuid: service.uuid, startHandle: start, endHandle: handle - 1))
        }
    }

    func valueHandle(of uuid: BluetoothUUID) -> UInt16? {
        characteristics.values.joined().first { $0.uuid == uuid }?.valueHandle
    }
}

/// A deterministic in-memory central backend: everything happens on a `ManualEventLoop` that the test runs.
final class FakeCentralBackend: CBCentralBackend, @unchecked Sendable {
    struct State {
        var sink: (@Sendable (CBCentralBackendEvent) -> Void)?
        var remotes: [CBBackendPeer: FakeRemotePeripheral] = [:]
        var scanning = false
        var scanCount = 0
        var connected: Set<CBBackendPeer> = []
        var pendingConnects: Set<CBBackendPeer> = []
        var cancels: [CBBackendPeer] = []
        var writeQueue: [CBBackendPeer: Int] = [:]
        var writeQueueFull: Set<CBBackendPeer> = []
        var isShutDown = false
        var commands: [String] = []
    }

    let loop: ManualEventLoop
    let initialState: CBManagerState
    let writeQueueCapacity: Int
    let state = LockedValue(State())

    init(loop: ManualEventLoop, initialState: CBManagerState = .poweredOn, writeQueueCapacity: Int = 3) {
        self.loop = loop
        self.initialState = initialState
        self.writeQueueCapacity = writeQueueCapacity
    }

    func add(_ remote: FakeRemotePeripheral) {
        state.withLock { $0.remotes[remote.peer] = remote }
    }

    private func emit(_ event: CBCentralBackendEvent) {
        let sink = state.withLock { $0.isShutDown ? nil : $0.sink }
        sink?(event)
    }

    private func onLoop(_ job: @escaping @Sendable () -> Void) { loop.execute(job) }

    private func remote(_ peer: CBBackendPeer) -> FakeRemotePeripheral? { state.withLock { $0.remotes[peer] } }

    private func log(_ command: String) { state.withLock { $0.commands.append(command) } }

    var commands: [String] { state.withLock { $0.commands } }

    // MARK: Test controls

    func setPower(_ newState: CBManagerState) { onLoop { self.emit(.stateChanged(newState)) } }

    /// Every remote advertises once (while scanning).
    func advertiseAll() {
        onLoop {
            let (scanning, remotes) = self.state.withLock { ($0.scanning, $0.remotes.values.sorted { $0.peer.address < $1.peer.address }) }
            guard scanning else { return }
            for remote in remotes { self.emit(.advertisement(remote.advertisement)) }
        }
    }

    func notify(_ remote: FakeRemotePeripheral, handle: UInt16, value: [UInt8]) {
        onLoop { self.emit(.valueUpdated(remote.peer, handle: handle, value: value)) }
    }

    /// The peripheral sends its queued Write Commands; reports room if the queue had been full.
    func drainWriteQueue(_ peer: CBBackendPeer) {
        onLoop {
            let wasFull = self.state.withLock { state -> Bool in
                state.writeQueue[peer] = 0
                return state.writeQueueFull.remove(peer) != nil
            }
            if wasFull { self.emit(.readyToSendWriteWithoutResponse(peer)) }
        }
    }

    func dropLink(_ peer: CBBackendPeer) {
        onLoop {
            guard self.state.withLock({ $0.connected.remove(peer) != nil }) else { return }
            self.emit(.disconnected(peer, .core(.connectionTimeout, "supervision timeout")))
        }
    }

    // MARK: CBCentralBackend

    func start(_ events: @escaping @Sendable (CBCentralBackendEvent) -> Void) {
        state.withLock { $0.sink = events }
        let initial = initialState
        onLoop { self.emit(.stateChanged(initial)) }
    }

    func shutdown() { state.withLock { $0.isShutDown = true } }

    func startScan(_ parameters: CBBackendScanParameters) {
        log("startScan")
        state.withLock { $0.scanning = true; $0.scanCount += 1 }
        advertiseAll()
    }

    func stopScan() {
        log("stopScan")
        state.withLock { $0.scanning = false }
    }

    func connect(_ peer: CBBackendPeer) {
        log("connect \(peer)")
        onLoop {
            guard let remote = self.remote(peer) else {
                self.state.withLock { _ = $0.pendingConnects.insert(peer) }
                return
            }
            self.state.withLock { _ = $0.connected.insert(peer) }
            self.emit(.connected(peer, mtu: remote.mtu))
        }
    }

    func cancelConnection(_ peer: CBBackendPeer) {
        log("cancel \(peer)")
        state.withLock { $0.cancels.append(peer) }
        onLoop {
            let wasConnected = self.state.withLock { state -> Bool in
                state.pendingConnects.remove(peer)
                return state.connected.remove(peer) != nil
            }
            if wasConnected { self.emit(.disconnected(peer, nil)) }
        }
    }

    func knownPeers() -> [CBBackendPeer] { state.withLock { Array($0.remotes.keys) } }

    private func gatt<T: Sendable>(_ peer: CBBackendPeer, _ completion: @escaping @Sendable (Result<T, CBBackendError>) -> Void,
                                   _ body: @escaping @Sendable (FakeRemotePeripheral) -> Result<T, CBBackendError>) {
        onLoop {
            guard self.state.withLock({ $0.connected.contains(peer) }), let remote = self.remote(peer) else {
                completion(.failure(.core(.notConnected, "not connected")))
                return
            }
            completion(body(remote))
        }
    }

    func discoverServices(_ peer: CBBackendPeer, uuids: [BluetoothUUID]?,
                          completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
        log("discoverServices")
        gatt(peer, completion) { remote in
            .success(remote.services.filter { uuids?.contains($0.uuid) ?? true })
        }
    }

    func discoverIncludedServices(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                  completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
        gatt(peer, completion) { _ in .success([]) }
    }

    func discoverCharacteristics(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                 completion: @escaping @Sendable (Result<[CBBackendCharacteristic], CBBackendError>) -> Void) {
        log("discoverCharacteristics")
        gatt(peer, completion) { remote in
            .success((remote.characteristics[service.uuid] ?? []).filter { uuids?.contains($0.uuid) ?? true })
        }
    }

    func discoverDescriptors(_ peer: CBBackendPeer, for characteristic: CBBackendCharacteristic,
                             completion: @escaping @Sendable (Result<[CBBackendDescriptor], CBBackendError>) -> Void) {
        gatt(peer, completion) { remote in .success(remote.descriptors[characteristic.valueHandle] ?? []) }
    }

    func read(_ peer: CBBackendPeer, handle: UInt16, completion: @escaping @Sendable (Result<[UInt8], CBBackendError>) -> Void) {
        log("read \(handle)")
        gatt(peer, completion) { remote in
            remote.values[handle].map { .success($0) } ?? .failure(.att(0x01))
        }
    }

    func write(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8], completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        log("write \(handle)")
        gatt(peer, completion) { remote in
            if let error = remote.writeError { return .failure(.att(error)) }
            remote.writes.append((handle, value, true))
            remote.values[handle] = value
            return .success(())
        }
    }

    func writeWithoutResponse(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8]) -> Bool {
        let capacity = writeQueueCapacity
        let (accepted, room) = state.withLock { state -> (Bool, Bool) in
            let used = state.writeQueue[peer, default: 0]
            guard used < capacity else {
                state.writeQueueFull.insert(peer)
                return (false, false)
            }
            state.writeQueue[peer] = used + 1
            if used + 1 >= capacity { state.writeQueueFull.insert(peer) }
            return (true, used + 1 < capacity)
        }
        if accepted, let remote = remote(peer) {
            onLoop { remote.writes.append((handle, value, false)) }
        }
        return room
    }

    func setNotifications(_ peer: CBBackendPeer, characteristic: CBBackendCharacteristic, cccdHandle: UInt16?, enabled: Bool,
                          completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        log("setNotifications \(characteristic.valueHandle) \(enabled)")
        gatt(peer, completion) { remote in
            if enabled { remote.subscribed.insert(characteristic.valueHandle) } else { remote.subscribed.remove(characteristic.valueHandle) }
            return .success(())
        }
    }

    func readRSSI(_ peer: CBBackendPeer, completion: @escaping @Sendable (Result<Int, CBBackendError>) -> Void) {
        gatt(peer, completion) { remote in .success(remote.rssi) }
    }

    func openL2CAPChannel(_ peer: CBBackendPeer, psm: CBL2CAPPSM,
                          completion: @escaping @Sendable (Result<any CBL2CAPChannelBackend, CBBackendError>) -> Void) {
        gatt(peer, completion) { _ in .success(FakeChannel(psm: psm, peer: peer, loop: self.loop)) }
    }
}

/// An L2CAP channel whose other end is the test: it records what the app sent and can inject received SDUs.
final class FakeChannel: CBL2CAPChannelBackend, @unchecked Sendable {
    let psm: CBL2CAPPSM
    let peer: CBBackendPeer
    let loop: ManualEventLoop
    private let state = LockedValue<(sink: (@Sendable (CBL2CAPChannelBackendEvent) -> Void)?, sent: [UInt8], credits: Int, closed: Bool)>((nil, [], 8, false))

    init(psm: CBL2CAPPSM, peer: CBBackendPeer, loop: ManualEventLoop) {
        self.psm = psm
        self.peer = peer
        self.loop = loop
    }

    var sent: [UInt8] { state.withLock { $0.sent } }
    var isClosed: Bool { state.withLock { $0.closed } }

    func start(_ events: @escaping @Sendable (CBL2CAPChannelBackendEvent) -> Void) { state.withLock { $0.sink = events } }

    func send(_ bytes: [UInt8]) -> Int {
        state.withLock { state in
            let count = min(bytes.count, state.credits)
            state.sent += bytes.prefix(count)
            state.credits -= count
            return count
        }
    }

    func close() { state.withLock { $0.closed = true } }

    func inject(_ bytes: [UInt8]) {
        let sink = state.withLock { $0.sink }
        loop.execute { sink?(.received(bytes)) }
    }

    func grantCredits(_ count: Int) {
        let sink = state.withLock { state -> (@Sendable (CBL2CAPChannelBackendEvent) -> Void)? in
            state.credits += count
            return state.sink
        }
        loop.execute { sink?(.canSend) }
    }
}
