import BluetoothCore
import BluetoothRuntime
@testable import OpenCoreBluetooth

/// A central backend and a peripheral backend wired to each other in memory, on one `ManualEventLoop`: the
/// peripheral's database gets ATT handles, reads become Read/Read Blob requests (next offset while a response
/// filled MTU - 1 octets), long writes become one prepared batch of MTU - 5 octet chunks, CCCD writes become
/// subscriptions, and updates become notifications. Enough GATT to run two façades against each other.
final class LoopbackAir: @unchecked Sendable {
    struct Characteristic {
        var serviceID: Int
        var local: CBBackendLocalCharacteristic
        var remote: CBBackendCharacteristic
        var cccd: UInt16?
        var descriptors: [(CBBackendDescriptor, [UInt8])]
    }

    struct State {
        var centralSink: (@Sendable (CBCentralBackendEvent) -> Void)?
        var peripheralSink: (@Sendable (CBPeripheralBackendEvent) -> Void)?
        var services: [(CBBackendService, Int)] = []
        var characteristics: [Characteristic] = []
        var nextHandle: UInt16 = 1
        var advertising: (name: String?, uuids: [BluetoothUUID])?
        var scanning = false
        var connected = false
        var subscribed: Set<Int> = []
        var nextRequest: UInt64 = 1
        var pending: [UInt64: @Sendable (UInt8, [UInt8]?) -> Void] = [:]
    }

    let loop: ManualEventLoop
    let mtu: Int
    let centralPeer = CBBackendPeer(address: BluetoothAddress(0xC4_0000_0001, type: .random))
    let peripheralPeer = CBBackendPeer(address: BluetoothAddress(0xC4_0000_0002, type: .random))
    let state = LockedValue(State())
    lazy var central = Central(air: self)
    lazy var peripheral = Peripheral(air: self)

    init(loop: ManualEventLoop, mtu: Int = 23) {
        self.loop = loop
        self.mtu = mtu
    }

    var provider: CBBackendProvider {
        let central = self.central, peripheral = self.peripheral
        return CBBackendProvider(makeCentral: { central }, makePeripheral: { peripheral })
    }

    func toCentral(_ event: CBCentralBackendEvent) {
        let sink = state.withLock { $0.centralSink }
        loop.execute { sink?(event) }
    }

    func toPeripheral(_ event: CBPeripheralBackendEvent) {
        let sink = state.withLock { $0.peripheralSink }
        loop.execute { sink?(event) }
    }

    /// Sends an ATT request to the peripheral's app; `answer` gets its response.
    func request(_ make: (UInt64) -> CBPeripheralBackendEvent, answer: @escaping @Sendable (UInt8, [UInt8]?) -> Void) {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextRequest += 1 }
            state.pending[state.nextRequest] = answer
            return state.nextRequest
        }
        toPeripheral(make(id))
    }

    func characteristic(valueHandle: UInt16) -> Characteristic? {
        state.withLock { $0.characteristics.first { $0.remote.valueHandle == valueHandle } }
    }

    func advertise() {
        let (scanning, advertising) = state.withLock { ($0.scanning, $0.advertising) }
        guard scanning, let advertising else { return }
        toCentral(.advertisement(CBBackendAdvertisement(peer: peripheralPeer, rssi: -42, localName: advertising.name,
                                                        serviceUUIDs: advertising.uuids)))
    }

    final class Central: CBCentralBackend, @unchecked Sendable {
        unowned let air: LoopbackAir
        init(air: LoopbackAir) { self.air = air }

        func start(_ events: @escaping @Sendable (CBCentralBackendEvent) -> Void) {
            air.state.withLock { $0.centralSink = events }
            air.toCentral(.stateChanged(.poweredOn))
        }
        func shutdown() {}
        func startScan(_ parameters: CBBackendScanParameters) {
            air.state.withLock { $0.scanning = true }
            air.advertise()
        }
        func stopScan() { air.state.withLock { $0.scanning = false } }
        func connect(_ peer: CBBackendPeer) {
            air.state.withLock { $0.connected = true }
            air.toPeripheral(.centralConnected(air.centralPeer, mtu: air.mtu))
            air.toCentral(.connected(peer, mtu: air.mtu))
        }
        func cancelConnection(_ peer: CBBackendPeer) {
            guard air.state.withLock({ state -> Bool in defer { state.connected = false }; return state.connected }) else { return }
            air.toPeripheral(.centralDisconnected(air.centralPeer))
            air.toCentral(.disconnected(peer, nil))
        }
        func knownPeers() -> [CBBackendPeer] { [] }
        func discoverServices(_ peer: CBBackendPeer, uuids: [BluetoothUUID]?, completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
            let services = air.state.withLock { $0.services.map(\.0) }.filter { uuids?.contains($0.uuid) ?? true }
            air.loop.execute { completion(.success(services)) }
        }
        func discoverIncludedServices(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?, completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
            air.loop.execute { completion(.success([])) }
        }
        func discoverCharacteristics(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?, completion: @escaping @Sendable (Result<[CBBackendCharacteristic], CBBackendError>) -> Void) {
            let list = air.state.withLock { state in
                state.characteristics.filter { $0.remote.valueHandle > service.startHandle && $0.remote.valueHandle <= service.endHandle }.map(\.remote)
            }.filter { uuids?.contains($0.uuid) ?? true }
            air.loop.execute { completion(.success(list)) }
        }
        func discoverDescriptors(_ peer: CBBackendPeer, for characteristic: CBBackendCharacteristic, completion: @escaping @Sendable (Result<[CBBackendDescriptor], CBBackendError>) -> Void) {
            let found = air.characteristic(valueHandle: characteristic.valueHandle)
            let list = (found?.cccd.map { [CBBackendDescriptor(uuid: BluetoothUUID(0x2902), handle: $0)] } ?? []) + (found?.descriptors.map(\.0) ?? [])
            air.loop.execute { completion(.success(list)) }
        }
        func read(_ peer: CBBackendPeer, handle: UInt16, completion: @escaping @Sendable (Result<[UInt8], CBBackendError>) -> Void) {
            guard let found = air.characteristic(valueHandle: handle) else {
                air.loop.execute { completion(.failure(.att(0x01))) }
                return
            }
            if let value = found.local.staticValue {
                air.loop.execute { completion(.success(value)) }
                return
            }
            readBlob(found.local.id, offset: 0, collected: [], completion: completion)
        }
        private func readBlob(_ id: Int, offset: Int, collected: [UInt8], completion: @escaping @Sendable (Result<[UInt8], CBBackendError>) -> Void) {
            let air = self.air
            let chunkSize = air.mtu - 1
            air.request({ .readRequest(id: $0, central: air.centralPeer, characteristicID: id, offset: offset) }) { result, value in
                guard result == 0 else { return completion(.failure(.att(result))) }
                let chunk = Array((value ?? []).prefix(chunkSize))
                if chunk.count == chunkSize {
                    self.readBlob(id, offset: offset + chunk.count, collected: collected + chunk, completion: completion)
                } else {
                    completion(.success(collected + chunk))
                }
            }
        }
        func write(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8], completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
            guard let found = air.characteristic(valueHandle: handle) else {
                air.loop.execute { completion(.failure(.att(0x01))) }
                return
            }
            var writes: [CBBackendWrite] = []
            if value.count <= air.mtu - 3 {
                writes = [CBBackendWrite(characteristicID: found.local.id, offset: 0, value: value)]
            } else {
                var offset = 0
                while offset < value.count {
                    let chunk = Array(value[offset..<min(value.count, offset + air.mtu - 5)])
                    writes.append(CBBackendWrite(characteristicID: found.local.id, offset: offset, value: chunk))
                    offset += chunk.count
                }
            }
            let air = self.air
            air.request({ .writeRequests(id: $0, central: air.centralPeer, writes: writes, responseRequired: true) }) { result, _ in
                completion(result == 0 ? .success(()) : .failure(.att(result)))
            }
        }
        func writeWithoutResponse(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8]) -> Bool {
            guard let found = air.characteristic(valueHandle: handle) else { return true }
            let air = self.air
            air.request({ .writeRequests(id: $0, central: air.centralPeer, writes: [CBBackendWrite(characteristicID: found.local.id, offset: 0, value: value)], responseRequired: false) }) { _, _ in }
            return true
        }
        func setNotifications(_ peer: CBBackendPeer, characteristic: CBBackendCharacteristic, cccdHandle: UInt16?, enabled: Bool, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
            guard let found = air.characteristic(valueHandle: characteristic.valueHandle), found.cccd != nil else {
                air.loop.execute { completion(.failure(.att(0x06))) }
                return
            }
            let id = found.local.id
            air.state.withLock { state in
                if enabled { state.subscribed.insert(id) } else { state.subscribed.remove(id) }
            }
            air.toPeripheral(enabled ? .subscribed(air.centralPeer, characteristicID: id) : .unsubscribed(air.centralPeer, characteristicID: id))
            air.loop.execute { completion(.success(())) }
        }
        func readRSSI(_ peer: CBBackendPeer, completion: @escaping @Sendable (Result<Int, CBBackendError>) -> Void) {
            air.loop.execute { completion(.success(-42)) }
        }
        func openL2CAPChannel(_ peer: CBBackendPeer, psm: CBL2CAPPSM, completion: @escaping @Sendable (Result<any CBL2CAPChannelBackend, CBBackendError>) -> Void) {
            air.loop.execute { completion(.failure(.core(.operationNotSupported, "no L2CAP on the loopback"))) }
        }
    }

    final class Peripheral: CBPeripheralBackend, @unchecked Sendable {
        unowned let air: LoopbackAir
        init(air: LoopbackAir) { self.air = air }

        func start(_ events: @escaping @Sendable (CBPeripheralBackendEvent) -> Void) {
            air.state.withLock { $0.peripheralSink = events }
            air.toPeripheral(.stateChanged(.poweredOn))
        }
        func shutdown() {}
        func addService(_ service: CBBackendLocalService, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
            air.state.withLock { state in
                let start = state.nextHandle
                var handle = start + 1
                for local in service.characteristics {
                    let declaration = handle
                    let value = handle + 1
                    handle += 2
                    var cccd: UInt16?
                    if local.properties & 0x30 != 0 {
                        cccd = handle
                        handle += 1
                    }
                    var descriptors: [(CBBackendDescriptor, [UInt8])] = []
                    for descriptor in local.descriptors {
                        descriptors.append((CBBackendDescriptor(uuid: descriptor.uuid, handle: handle), descriptor.value))
                        handle += 1
                    }
                    state.characteristics.append(Characteristic(
                        serviceID: service.id, local: local,
                        remote: CBBackendCharacteristic(uuid: local.uuid, properties: UInt8(truncatingIfNeeded: local.properties),
                                                        declarationHandle: declaration, valueHandle: value, endHandle: handle - 1),
                        cccd: cccd, descriptors: descriptors))
                }
                state.services.append((CBBackendService(uuid: service.uuid, isPrimary: service.isPrimary, startHandle: start, endHandle: handle - 1), service.id))
                state.nextHandle = handle
            }
            air.loop.execute { completion(.success(())) }
        }
        func removeService(id: Int) {
            air.state.withLock { state in
                state.services.removeAll { $0.1 == id }
                state.characteristics.removeAll { $0.serviceID == id }
            }
        }
        func removeAllServices() {
            air.state.withLock { state in
                state.services = []
                state.characteristics = []
            }
        }
        func startAdvertising(localName: String?, serviceUUIDs: [BluetoothUUID], overflowServiceUUIDs: [BluetoothUUID], completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
            air.state.withLock { $0.advertising = (localName, serviceUUIDs) }
            air.loop.execute { completion(.success(())) }
            air.advertise()
        }
        func stopAdvertising() { air.state.withLock { $0.advertising = nil } }
        func respond(to requestID: UInt64, result: UInt8, value: [UInt8]?) {
            let answer = air.state.withLock { $0.pending.removeValue(forKey: requestID) }
            air.loop.execute { answer?(result, value) }
        }
        func updateValue(_ value: [UInt8], characteristicID: Int, centrals: [CBBackendPeer]) -> Bool {
            let found = air.state.withLock { state in state.characteristics.first { $0.local.id == characteristicID } }
            guard let found, air.state.withLock({ $0.subscribed.contains(characteristicID) }) else { return true }
            air.toCentral(.valueUpdated(air.peripheralPeer, handle: found.remote.valueHandle, value: Array(value.prefix(air.mtu - 3))))
            return true
        }
        func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBBackendPeer) {}
        func publishL2CAPChannel(encryptionRequired: Bool, completion: @escaping @Sendable (Result<CBL2CAPPSM, CBBackendError>) -> Void) {
            air.loop.execute { completion(.failure(.core(.operationNotSupported, "no L2CAP on the loopback"))) }
        }
        func unpublishL2CAPChannel(_ psm: CBL2CAPPSM, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
            air.loop.execute { completion(.success(())) }
        }
    }
}
