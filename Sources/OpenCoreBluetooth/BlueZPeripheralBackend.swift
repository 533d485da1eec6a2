import BlueZ
import BluetoothCore
import DBus

/// CoreBluetooth's peripheral role on bluetoothd (`OCB_HCI=bluez` or `bluez:hciN`): the façade's backend calls done
/// by ``BlueZPeripheral`` (the BlueZ module's D-Bus side: a GATT application registered with GattManager1, an
/// LEAdvertisement1, AcquireNotify sockets, listening kernel L2CAP sockets), its events said in CoreBluetooth's
/// words. Not yet: connection latency (bluetoothd has no call for it).
final class BlueZPeripheralBackend: CBPeripheralBackend, Sendable {
    let application: BlueZPeripheral

    init(adapter: String?, busAddress: String = DBusConnection.systemBusAddress,
         report: @escaping @Sendable (String) -> Void = { Log.bluez.error("\($0)") },
         pairingAgent: BlueZPairingAgent? = BlueZPairingAgent.fromEnvironment(),
         prompt: @escaping @Sendable (String) -> Void = { Log.bluez.notice("\($0)") }) {
        application = BlueZPeripheral(adapter: adapter, busAddress: busAddress, report: report, pairingAgent: pairingAgent, prompt: prompt)
    }

    /// The root of our objects on the bus.
    var root: String { application.root }

    func start(_ events: @escaping @Sendable (CBPeripheralBackendEvent) -> Void) {
        application.start { event in
            switch event {
            case .stateChanged(let state): events(.stateChanged(CBManagerState(state)))
            case .centralConnected(let central, let mtu): events(.centralConnected(CBBackendPeer(address: central), mtu: mtu))
            case .centralDisconnected(let central): events(.centralDisconnected(CBBackendPeer(address: central)))
            case .readRequest(let id, let central, let characteristicID, let offset):
                events(.readRequest(id: id, central: CBBackendPeer(address: central), characteristicID: characteristicID, offset: offset))
            case .writeRequests(let id, let central, let writes, let responseRequired):
                events(.writeRequests(id: id, central: CBBackendPeer(address: central),
                                      writes: writes.map { CBBackendWrite(characteristicID: $0.characteristicID, offset: $0.offset, value: $0.value) },
                                      responseRequired: responseRequired))
            case .subscribed(let central, let characteristicID): events(.subscribed(CBBackendPeer(address: central), characteristicID: characteristicID))
            case .unsubscribed(let central, let characteristicID): events(.unsubscribed(CBBackendPeer(address: central), characteristicID: characteristicID))
            case .readyToUpdateSubscribers: events(.readyToUpdateSubscribers)
            case .l2capChannelOpened(let channel): events(.l2capChannelOpened(BlueZChannelBackend(channel)))
            }
        }
    }

    func shutdown() { application.shutdown() }

    func addService(_ service: CBBackendLocalService, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        application.addService(BlueZLocalService(service)) { completion($0.mapError(CBBackendError.init)) }
    }

    func removeService(id: Int) { application.removeService(id: id) }

    func removeAllServices() { application.removeAllServices() }

    func startAdvertising(localName: String?, serviceUUIDs: [BluetoothUUID], overflowServiceUUIDs: [BluetoothUUID],
                          completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        application.startAdvertising(localName: localName, serviceUUIDs: serviceUUIDs, overflowServiceUUIDs: overflowServiceUUIDs) {
            completion($0.mapError(CBBackendError.init))
        }
    }

    func stopAdvertising() { application.stopAdvertising() }

    func respond(to requestID: UInt64, result: UInt8, value: [UInt8]?) {
        application.respond(to: requestID, result: result, value: value)
    }

    /// bluetoothd sends a value to every subscribed central: `centrals` cannot narrow it.
    func updateValue(_ value: [UInt8], characteristicID: Int, centrals: [CBBackendPeer]) -> Bool {
        application.updateValue(value, characteristicID: characteristicID)
    }

    func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBBackendPeer) {}

    /// A listening kernel L2CAP socket on a PSM the kernel picks (LE dynamic range, Core 5.4 Vol 3 Part A §4.22).
    func publishL2CAPChannel(encryptionRequired: Bool, completion: @escaping @Sendable (Result<CBL2CAPPSM, CBBackendError>) -> Void) {
        application.publishL2CAPChannel(psm: 0, encryptionRequired: encryptionRequired) { completion($0.mapError(CBBackendError.init)) }
    }

    func unpublishL2CAPChannel(_ psm: CBL2CAPPSM, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void) {
        application.unpublishL2CAPChannel(psm) { completion($0.mapError(CBBackendError.init)) }
    }
}

/// Permission bits beyond `CBAttributePermissions` (which stops at encryption), for the package's own tools:
/// an authenticated (MITM-protected) encrypted link required to read or write (BlueZ's `encrypt-authenticated-*`
/// flags). `blue serve --hci bluez` uses them for definitions that ask for authentication.
package let authenticatedReadPermission: UInt = 0x1_0000
package let authenticatedWritePermission: UInt = 0x2_0000

extension BlueZLocalService {
    /// A façade service as bluetoothd's GATT application publishes it.
    init(_ service: CBBackendLocalService) {
        self.init(id: service.id, uuid: service.uuid, isPrimary: service.isPrimary, includedServiceIDs: service.includedServiceIDs,
                  characteristics: service.characteristics.map(BlueZLocalCharacteristic.init))
    }
}

extension BlueZLocalCharacteristic {
    /// CoreBluetooth's properties and permissions as bluetoothd's flags take them (CBAttributePermissions: read and
    /// write encryption 0x04 / 0x08; authentication is the package's bits beyond them; CBCharacteristicProperties
    /// 0x100 / 0x200: notifications or indications only when encrypted).
    init(_ characteristic: CBBackendLocalCharacteristic) {
        let permissions = characteristic.permissions
        let read: BlueZAttributeSecurity = permissions & authenticatedReadPermission != 0 ? .authenticated
            : permissions & 0x04 != 0 ? .encrypted : .none
        let write: BlueZAttributeSecurity = permissions & authenticatedWritePermission != 0 ? .authenticated
            : permissions & 0x08 != 0 ? .encrypted : .none
        self.init(id: characteristic.id, uuid: characteristic.uuid, properties: UInt8(truncatingIfNeeded: characteristic.properties),
                  readSecurity: read, writeSecurity: write, encryptedNotifications: characteristic.properties & 0x300 != 0,
                  staticValue: characteristic.staticValue,
                  descriptors: characteristic.descriptors.map { BlueZLocalDescriptor(uuid: $0.uuid, value: $0.value) })
    }
}

extension HostBackend {
    /// A peripheral backend on bluetoothd for the package's own tools (`blue serve --hci bluez`), which print
    /// `report`'s lines themselves.
    package static func bluezPeripheral(adapter: String?, busAddress: String? = nil,
                                    report: @escaping @Sendable (String) -> Void) -> any CBPeripheralBackend {
        BlueZPeripheralBackend(adapter: adapter, busAddress: busAddress ?? DBusConnection.systemBusAddress, report: report)
    }
}
