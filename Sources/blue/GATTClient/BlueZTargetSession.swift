import BluetoothCore
import BluetoothRuntime
import ATT
import GATT
import Host
import OpenCoreBluetooth
import BluetoothEngine

/// A connection to a TARGET through bluetoothd (`--hci bluez`, `bluez:hciN`): the scan is its discovery, the
/// connection Device1.Connect, the database the GATT objects it resolved, reads and writes ReadValue and WriteValue,
/// a subscription StartNotify (BlueZ's doc/org.bluez.*.rst, mapped by OpenCoreBluetooth's BlueZ backend).
///
/// Differences from our host's route, which bluetoothd decides: the advertisement is rebuilt from the device's
/// properties (no raw packets, no scan response apart); bluetoothd reads long values and writes long ones itself;
/// it subscribes with notifications when the characteristic has both.
struct BlueZTargetSession: GATTClientSession {
    let central: BackendCentral
    let report: ScanReport
    var peer: CBBackendPeer { CBBackendPeer(address: report.address) }

    static func open(adapter: BlueZAdapterChoice, target: String, timeout: Duration) async throws(CLIFailure) -> BlueZTargetSession {
        let central = try await BackendCentral.openBlueZ(adapter)
        do {
            let report = try await central.findTarget(TargetMatcher(target), timeout: timeout)
            try await central.connect(to: report.address, name: report.localName ?? report.address.string, timeout: timeout)
            return BlueZTargetSession(central: central, report: report)
        } catch {
            central.shutdown()
            throw error
        }
    }

    var eventLoop: any EventLoop { central.eventLoop }

    var attMTU: Int { central.attMTU(report.address) }

    /// bluetoothd tells the ATT_MTU only (no connection parameters, PHY, data length or RSSI of a connected peer).
    func link() async -> LinkDescription { LinkDescription(info: nil, attMTU: attMTU, rssi: nil) }

    func discover(readValues: Bool) async throws(CLIFailure) -> GATTTree {
        let backend = central.backend
        let peer = peer
        func fail(_ what: String, _ error: GATTOperationFailure) -> CLIFailure {
            CLIFailure(.failed, "\(what) failed: \(error)")
        }
        var tree = GATTTree()
        let services: [CBBackendService]
        switch await central.complete({ backend.discoverServices(peer, uuids: nil, completion: $0) }) {
        case .success(let found): services = found
        case .failure(let error): throw fail("service discovery", error)
        }
        for service in services {
            var entry = GATTTree.Service(discovered: GATTDiscoveredService(
                range: ATTHandleRange(start: service.startHandle, end: service.endHandle), uuid: service.uuid))
            let characteristics: [CBBackendCharacteristic]
            switch await central.complete({ backend.discoverCharacteristics(peer, in: service, uuids: nil, completion: $0) }) {
            case .success(let found): characteristics = found
            case .failure(let error): throw fail("characteristic discovery of \(service.uuid)", error)
            }
            for found in characteristics {
                var characteristic = GATTTree.Characteristic(declaration: GATTDiscoveredCharacteristic(
                    declarationHandle: found.declarationHandle, properties: .init(rawValue: found.properties),
                    valueHandle: found.valueHandle, uuid: found.uuid, endHandle: found.endHandle))
                switch await central.complete({ backend.discoverDescriptors(peer, for: found, completion: $0) }) {
                case .success(let descriptors):
                    characteristic.descriptors = descriptors.map { GATTTree.Descriptor(handle: $0.handle, uuid: $0.uuid) }
                case .failure(let error): throw fail("descriptor discovery of \(found.uuid)", error)
                }
                if readValues {
                    if characteristic.properties.contains(.read) {
                        switch await read(found.valueHandle) {
                        case .success(let value): characteristic.value = value
                        case .failure(let error): characteristic.readError = error.description
                        }
                    }
                    for index in characteristic.descriptors.indices {
                        let handle = characteristic.descriptors[index].handle
                        switch await central.complete({ backend.read(peer, handle: handle, completion: $0) }) {
                        case .success(let value): characteristic.descriptors[index].value = value
                        case .failure(let error): characteristic.descriptors[index].readError = error.description
                        }
                    }
                }
                entry.characteristics.append(characteristic)
            }
            tree.services.append(entry)
        }
        return tree
    }

    func read(_ handle: UInt16) async -> Result<[UInt8], GATTOperationFailure> {
        let (backend, peer) = (central.backend, peer)
        return await central.complete { backend.read(peer, handle: handle, completion: $0) }
    }

    func write(_ handle: UInt16, _ value: [UInt8], withResponse: Bool) async -> Result<Void, GATTOperationFailure> {
        let (backend, peer) = (central.backend, peer)
        guard withResponse else {
            _ = backend.writeWithoutResponse(peer, handle: handle, value: value)
            return .success(())
        }
        return await central.complete { backend.write(peer, handle: handle, value: value, completion: $0) }
    }

    func subscribe(_ characteristic: GATTTree.Characteristic, indications: Bool,
                   _ events: @escaping @Sendable (SubscriptionEvent) -> Void) -> @Sendable () -> Void {
        let peer = peer
        let valueHandle = characteristic.declaration.valueHandle
        let cancel = central.addHandler { event in
            switch event {
            case .valueUpdated(let from, let handle, let value) where from == peer && handle == valueHandle:
                events(.value(value))
            case .disconnected(let gone, let error) where gone == peer:
                events(.disconnected(error.map(BackendCentral.text) ?? "the link ended"))
            case .stateChanged(let state) where state != .poweredOn:
                events(.disconnected("bluetoothd's adapter is no longer powered on"))
            default:
                break
            }
        }
        let declaration = characteristic.declaration
        let found = CBBackendCharacteristic(uuid: declaration.uuid, properties: declaration.properties.rawValue,
                                            declarationHandle: declaration.declarationHandle, valueHandle: valueHandle,
                                            endHandle: declaration.endHandle)
        central.backend.setNotifications(peer, characteristic: found, cccdHandle: characteristic.cccdHandle, enabled: true) { result in
            if case .failure(let error) = result { events(.failed(GATTOperationFailure(description: BackendCentral.text(error)))) }
        }
        return cancel
    }

    func close() async {
        await central.disconnect(report.address)
        central.shutdown()
    }
}
