import BlueZ
import BluetoothCore
import DBus
import GATT

/// CoreBluetooth's central role on bluetoothd (`OCB_HCI=bluez` or `bluez:hciN`): the façade's backend calls done
/// by ``BlueZCentral`` (the BlueZ module's D-Bus client: Adapter1, Device1, GattService1, GattCharacteristic1,
/// GattDescriptor1), its events and errors said in CoreBluetooth's words. README "BlueZ backend" says what
/// bluetoothd decides differently; ``BlueZCentral`` how each call maps onto its API.
final class BlueZCentralBackend: CBCentralBackend, Sendable {
    let client: BlueZCentral

    /// How many Write Commands may wait for bluetoothd's answer before `canSendWriteWithoutResponse` turns false.
    static var commandWindow: Int { BlueZCentral.commandWindow }

    init(adapter: String?, busAddress: String = DBusConnection.systemBusAddress,
         report: @escaping @Sendable (String) -> Void = { Log.bluez.error("\($0)") },
         pairingAgent: BlueZPairingAgent? = BlueZPairingAgent.fromEnvironment(),
         prompt: @escaping @Sendable (String) -> Void = { Log.bluez.notice("\($0)") }) {
        client = BlueZCentral(adapter: adapter, busAddress: busAddress, report: report, pairingAgent: pairingAgent, prompt: prompt)
    }

    func start(_ events: @escaping @Sendable (CBCentralBackendEvent) -> Void) {
        client.start { event in
            switch event {
            case .stateChanged(let state): events(.stateChanged(CBManagerState(state)))
            case .advertisement(let report): events(.advertisement(HostCentralBackend.advertisement(report)))
            case .connected(let peer, let mtu): events(.connected(CBBackendPeer(address: peer), mtu: mtu))
            case .connectionFailed(let peer, let error): events(.connectionFailed(CBBackendPeer(address: peer), CBBackendError(error)))
            case .disconnected(let peer, let error): events(.disconnected(CBBackendPeer(address: peer), error.map(CBBackendError.init)))
            case .mtuChanged(let peer, let mtu): events(.mtuChanged(CBBackendPeer(address: peer), mtu: mtu))
            case .valueUpdated(let peer, let handle, let value): events(.valueUpdated(CBBackendPeer(address: peer), handle: handle, value: value))
            case .readyToSendWriteWithoutResponse(let peer): events(.readyToSendWriteWithoutResponse(CBBackendPeer(address: peer)))
            case .nameUpdated(let peer, let name): events(.nameUpdated(CBBackendPeer(address: peer), name))
            }
        }
    }

    func shutdown() { client.shutdown() }

    func startScan(_ parameters: CBBackendScanParameters) {
        client.startScan(serviceUUIDs: parameters.serviceUUIDs, allowDuplicates: parameters.allowDuplicates)
    }

    func stopScan() { client.stopScan() }

    func connect(_ peer: CBBackendPeer) { client.connect(peer.address) }

    func cancelConnection(_ peer: CBBackendPeer) { client.cancelConnection(peer.address) }

    func knownPeers() -> [CBBackendPeer] { client.knownPeers().map(CBBackendPeer.init(address:)) }

    func discoverServices(_ peer: CBBackendPeer, uuids: [BluetoothUUID]?,
                          completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
        client.discoverServices(peer.address, uuids: uuids) { completion($0.map { $0.map(CBBackendService.init) }.mapError(CBBackendError.init)) }
    }

    func discoverIncludedServices(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                  completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void) {
        client.discoverIncludedServices(peer.address, in: BlueZRemoteService(service), uuids: uuids) {
            completion($0.map { $0.map(CBBackendService.init) }.mapError(CBBackendError.init))
        }
    }

    func discoverCharacteristics(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                 completion: @escaping @Sendable (Result<[CBBackendCharacteristic], CBBackendError>) -> Void) {
        client.discoverCharacteristics(peer.address, in: BlueZRemoteService(service), uuids: uuids) {
            completion($0.map { $0.map(CBBackendCharacteristic.init) }.mapError(CBBackendError.init))
        }
    }

    func discoverDescriptors(_ peer: CBBackendPeer, for characteristic: CBBackendCharacteristic,
                             completion: @escaping @Sendable (Result<[CBBackendDescriptor], CBBackendError>) -> Void) {
        client.discoverDescriptors(peer.address, valueHandle: characteristic.valueHandle) {
            completion($0.map { $0.map { CBBackendDescriptor(uuid: $0.uuid, handle: $0.handle) } }.mapError(CBBackendError.init))
        }
    }

    func read(_ peer: CBBackendPeer, handle: UInt16, completion: @escaping @Sendable (Result<[UInt8], CBBackendError>) -> Void) {
        client.read(peer.address, handle: handle) { completion($0.mapError(CBBackendError.init)) }
    }

    func write(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8], completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        client.write(peer.address, handle: handle, value: value) { completion($0.mapError(CBBackendError.init)) }
    }

    func writeWithoutResponse(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8]) -> Bool {
        client.writeWithoutResponse(peer.address, handle: handle, value: value)
    }

    func setNotifications(_ peer: CBBackendPeer, characteristic: CBBackendCharacteristic, cccdHandle: UInt16?, enabled: Bool,
                          completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        client.setNotifications(peer.address, valueHandle: characteristic.valueHandle, enabled: enabled) {
            completion($0.mapError(CBBackendError.init))
        }
    }

    func readRSSI(_ peer: CBBackendPeer, completion: @escaping @Sendable (Result<Int, CBBackendError>) -> Void) {
        client.readRSSI(peer.address) { completion($0.mapError(CBBackendError.init)) }
    }

    func openL2CAPChannel(_ peer: CBBackendPeer, psm: CBL2CAPPSM,
                          completion: @escaping @Sendable (Result<any CBL2CAPChannelBackend, CBBackendError>) -> Void) {
        client.openL2CAPChannel(peer.address, psm: psm) { result in
            completion(result.map { BlueZChannelBackend($0) as any CBL2CAPChannelBackend }.mapError(CBBackendError.init))
        }
    }
}

/// A kernel L2CAP socket's channel (``BlueZL2CAPChannel``) as the façade's channel backend.
final class BlueZChannelBackend: CBL2CAPChannelBackend, Sendable {
    let channel: BlueZL2CAPChannel
    var psm: CBL2CAPPSM { channel.psm }
    var peer: CBBackendPeer { CBBackendPeer(address: channel.peer) }

    init(_ channel: BlueZL2CAPChannel) { self.channel = channel }

    func start(_ events: @escaping @Sendable (CBL2CAPChannelBackendEvent) -> Void) {
        channel.start { event in
            switch event {
            case .received(let sdu): events(.received(sdu))
            case .canSend: events(.canSend)
            case .closed: events(.closed)
            }
        }
    }

    func send(_ bytes: [UInt8]) -> Int { channel.send(bytes) }

    func close() { channel.close() }
}

extension CBManagerState {
    /// What bluetoothd says of its adapter, as a manager's state.
    init(_ state: BlueZAdapterState) {
        switch state {
        case .poweredOn: self = .poweredOn
        case .poweredOff: self = .poweredOff
        case .unavailable: self = .unsupported
        }
    }
}

extension CBBackendError {
    /// bluetoothd's failure in CoreBluetooth's words: an ATT error stays one (`CBATTError`), the rest is `CBError`.
    init(_ error: BlueZCallError) {
        switch error {
        case .att(let code): self = .att(code)
        case .notConnected(let reason): self = .core(.notConnected, reason)
        case .peerDisconnected(let reason): self = .core(.peripheralDisconnected, reason)
        case .timedOut(let reason): self = .core(.connectionTimeout, reason)
        case .unknownDevice(let reason): self = .core(.unknownDevice, reason)
        case .invalidHandle(let reason): self = .core(.invalidHandle, reason)
        case .connectionFailed(let reason): self = .core(.connectionFailed, reason)
        case .unsupported(let reason): self = .core(.operationNotSupported, reason)
        case .failed(let reason): self = .core(.unknown, reason)
        }
    }
}

extension CBBackendService {
    init(_ service: BlueZRemoteService) {
        self.init(uuid: service.uuid, isPrimary: service.isPrimary, startHandle: service.startHandle, endHandle: service.endHandle)
    }
}

extension BlueZRemoteService {
    init(_ service: CBBackendService) {
        self.init(uuid: service.uuid, isPrimary: service.isPrimary, startHandle: service.startHandle, endHandle: service.endHandle)
    }
}

extension CBBackendCharacteristic {
    init(_ characteristic: GATTDiscoveredCharacteristic) {
        self.init(uuid: characteristic.uuid, properties: characteristic.properties.rawValue, declarationHandle: characteristic.declarationHandle,
                  valueHandle: characteristic.valueHandle, endHandle: characteristic.endHandle)
    }
}
