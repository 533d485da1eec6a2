import BluetoothCore
import BluetoothRuntime
@testable import OpenCoreBluetooth

/// A deterministic in-memory peripheral backend with fake remote centrals: they read (long reads follow Read Blob
/// rules: next offset while the response filled MTU - 1 bytes), write (single, prepared batches, commands),
/// subscribe and receive notifications through a bounded update queue. Runs on a `ManualEventLoop`.
final class FakePeripheralBackend: CBPeripheralBackend, @unchecked Sendable {
    struct LongRead {
        var central: CBBackendPeer
        var characteristicID: Int
        var mtu: Int
        var collected: [UInt8] = []
        var offsets: [Int] = []
        var done = false
        var error: UInt8?
    }

    struct State {
        var sink: (@Sendable (CBPeripheralBackendEvent) -> Void)?
        var services: [Int: CBBackendLocalService] = [:]
        var advertising: (name: String?, uuids: [BluetoothUUID])?
        var nextRequest: UInt64 = 1
        var responses: [UInt64: (result: UInt8, value: [UInt8]?)] = [:]
        var responseCounts: [UInt64: Int] = [:]
        var longReads: [UInt64: Int] = [:]  // request id -> long read index
        var reads: [LongRead] = []
        var staticServes = 0
        var updateQueue: [(CBBackendPeer, [UInt8])] = []
        var delivered: [CBBackendPeer: [[UInt8]]] = [:]
        var updateQueueWasFull = false
        var mtus: [CBBackendPeer: Int] = [:]
        var isShutDown = false
    }

    let loop: ManualEventLoop
    let initialState: CBManagerState
    let updateQueueCapacity: Int
    let state = LockedValue(State())

    init(loop: ManualEventLoop, initialState: CBManagerState = .poweredOn, updateQueueCapacity: Int = 2) {
        self.loop = loop
        self.initialState = initialState
        self.updateQueueCapacity = updateQueueCapacity
    }

    private func emit(_ event: CBPeripheralBackendEvent) {
        let sink = state.withLock { $0.isShutDown ? nil : $0.sink }
        sink?(event)
    }

    private func onLoop(_ job: @escaping @Sendable () -> Void) { loop.execute(job) }

    func characteristicID(_ uuid: BluetoothUUID) -> Int? {
        state.withLock { $0.services.values.flatMap(\.characteristics).first { $0.uuid == uuid }?.id }
    }

    private func characteristic(_ id: Int) -> CBBackendLocalCharacteristic? {
        state.withLock { $0.services.values.flatMap(\.characteristics).first { $0.id == id } }
    }

    var advertising: (name: String?, uuids: [BluetoothUUID])? { state.withLock { $0.advertising } }
    var staticServes: Int { state.withLock { $0.staticServes } }
    func responses(_ id: UInt64) -> (result: UInt8, value: [UInt8]?)? { state.withLock { $0.responses[id] } }
    func responseCount(_ id: UInt64) -> Int { state.withLock { $0.responseCounts[id] ?? 0 } }
    func delivered(to peer: CBBackendPeer) -> [[UInt8]] { state.withLock { $0.delivered[peer] ?? [] } }
    func longRead(_ index: Int) -> LongRead? { state.withLock { $0.reads.indices.contains(index) ? $0.reads[index] : nil } }

    // MARK: Remote central controls

    func setPower(_ newState: CBManagerState) { onLoop { self.emit(.stateChanged(newState)) } }

    func connect(_ central: CBBackendPeer, mtu: Int = 23) {
        state.withLock { $0.mtus[central] = mtu }
        onLoop { self.emit(.centralConnected(central, mtu: mtu)) }
    }

    func disconnect(_ central: CBBackendPeer) { onLoop { self.emit(.centralDisconnected(central)) } }

    func subscribe(_ central: CBBackendPeer, to id: Int) { onLoop { self.emit(.subscribed(central, characteristicID: id)) } }
    func unsubscribe(_ central: CBBackendPeer, from id: Int) { onLoop { self.emit(.unsubscribed(central, characteristicID: id)) } }

    private func newRequestID() -> UInt64 {
        state.withLock { state in
            defer { state.nextRequest += 1 }
            return state.nextRequest
        }
    }

    /// A whole read by a remote central (Read, then Read Blob while full). Returns the read's index; inspect it
    /// with `longRead(_:)`. A static value is served without an event.
    @discardableResult
    func read(_ central: CBBackendPeer, _ id: Int) -> Int {
        let mtu = state.withLock { $0.mtus[central] ?? 23 }
        let index = state.withLock { state -> Int in
            state.reads.append(LongRead(central: central, characteristicID: id, mtu: mtu))
            return state.reads.count - 1
        }
        onLoop { self.readStep(index, offset: 0) }
        return index
    }

    private func readStep(_ index: Int, offset: Int) {
        guard let read = longRead(index), let characteristic = characteristic(read.characteristicID) else { return }
        if let value = characteristic.staticValue {
            state.withLock { state in
                state.staticServes += 1
                state.reads[index].offsets.append(offset)
                state.reads[index].collected = value
                state.reads[index].done = true
            }
            return
        }
        let request = newRequestID()
        state.withLock { state in
            state.longReads[request] = index
            state.reads[index].offsets.append(offset)
        }
        emit(.readRequest(id: request, central: read.central, characteristicID: read.characteristicID, offset: offset))
    }

    /// A remote central's write batch; returns the request id (inspect with `responses(_:)`).
    @discardableResult
    func write(_ central: CBBackendPeer, _ writes: [CBBackendWrite], responseRequired: Bool = true) -> UInt64 {
        let request = newRequestID()
        onLoop { self.emit(.writeRequests(id: request, central: central, writes: writes, responseRequired: responseRequired)) }
        return request
    }

    /// Sends what the update queue holds; reports room if it had been full.
    func drainUpdates() {
        onLoop {
            let wasFull = self.state.withLock { state -> Bool in
                for (peer, value) in state.updateQueue { state.delivered[peer, default: []].append(value) }
                state.updateQueue = []
                defer { state.updateQueueWasFull = false }
                return state.updateQueueWasFull
            }
            if wasFull { self.emit(.readyToUpdateSubscribers) }
        }
    }

    func openChannel(from central: CBBackendPeer, psm: CBL2CAPPSM) -> FakeChannel {
        let channel = FakeChannel(psm: psm, peer: central, loop: loop)
        onLoop { self.emit(.l2capChannelOpened(channel)) }
        return channel
    }

    // MARK: CBPeripheralBackend

    func start(_ events: @escaping @Sendable (CBPeripheralBackendEvent) -> Void) {
        state.withLock { $0.sink = events }
        let initial = initialState
        onLoop { self.emit(.stateChanged(initial)) }
    }

    func shutdown() { state.withLock { $0.isShutDown = true } }

    func addService(_ service: CBBackendLocalService, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        onLoop {
            self.state.withLock { $0.services[service.id] = service }
            completion(.success(()))
        }
    }

    func removeService(id: Int) { state.withLock { $0.services[id] = nil } }
    func removeAllServices() { state.withLock { $0.services = [:] } }

    func startAdvertising(localName: String?, serviceUUIDs: [BluetoothUUID], overflowServiceUUIDs: [BluetoothUUID], completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        onLoop {
            self.state.withLock { $0.advertising = (localName, serviceUUIDs) }
            completion(.success(()))
        }
    }

    func stopAdvertising() { state.withLock { $0.advertising = nil } }

    func respond(to requestID: UInt64, result: UInt8, value: [UInt8]?) {
        onLoop {
            let next: (Int, Int)? = self.state.withLock { state in
                state.responses[requestID] = (result, value)
                state.responseCounts[requestID, default: 0] += 1
                guard let index = state.longReads.removeValue(forKey: requestID) else { return nil }
                if result != 0 {
                    state.reads[index].error = result
                    state.reads[index].done = true
                    return nil
                }
                let chunk = Array((value ?? []).prefix(state.reads[index].mtu - 1))
                state.reads[index].collected += chunk
                if chunk.count == state.reads[index].mtu - 1 {
                    return (index, state.reads[index].collected.count)
                }
                state.reads[index].done = true
                return nil
            }
            if let (index, offset) = next { self.readStep(index, offset: offset) }
        }
    }

    func updateValue(_ value: [UInt8], characteristicID: Int, centrals: [CBBackendPeer]) -> Bool {
        let capacity = updateQueueCapacity
        return state.withLock { state in
            guard state.updateQueue.count + centrals.count <= capacity else {
                state.updateQueueWasFull = true
                return false
            }
            for central in centrals {
                let limit = (state.mtus[central] ?? 23) - 3
                state.updateQueue.append((central, Array(value.prefix(limit))))
            }
            return true
        }
    }

    func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBBackendPeer) {}

    func publishL2CAPChannel(encryptionRequired: Bool, completion: @escaping @Sendable (Result<CBL2CAPPSM, CBBackendError>) -> Void) {
        onLoop { completion(.success(0x0080)) }
    }

    func unpublishL2CAPChannel(_ psm: CBL2CAPPSM, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        onLoop { completion(.success(())) }
    }
}
