import BluetoothCore
import Foundation

/// A connected peripheral's discovered GATT database as a central manager's restoration file keeps it (Core 5.4
/// Vol 3 Part G §3: services with their handle ranges, characteristics with properties, handles and notification
/// state, descriptors with their handles), so that a manager taking back a link the system kept restores the
/// peripheral "with its services, characteristics, characteristic descriptors and notification states" (Apple),
/// with no discovery. Included services are not kept (`discoverIncludedServices` again).
struct RestoredRemoteService: Codable, Equatable {
    struct Characteristic: Codable, Equatable {
        var uuid: String
        var properties: UInt8
        var declaration: UInt16
        var value: UInt16
        var end: UInt16
        var notifying: Bool
        /// nil: not discovered.
        var descriptors: [Descriptor]?
    }

    struct Descriptor: Codable, Equatable {
        var uuid: String
        var handle: UInt16
    }

    var uuid: String
    var primary: Bool
    var start: UInt16
    var end: UInt16
    /// nil: not discovered.
    var characteristics: [Characteristic]?

    /// The records of a peripheral's services as they are now (on the manager's queue).
    static func records(of services: [CBService]) -> [RestoredRemoteService] {
        services.compactMap { service in
            guard let remote = service.remote else { return nil }
            return RestoredRemoteService(
                uuid: remote.uuid.uuidString, primary: remote.isPrimary, start: remote.startHandle, end: remote.endHandle,
                characteristics: service._characteristics?.compactMap { characteristic in
                    guard let item = characteristic.remote else { return nil }
                    return Characteristic(
                        uuid: item.uuid.uuidString, properties: item.properties, declaration: item.declarationHandle,
                        value: item.valueHandle, end: item.endHandle, notifying: characteristic._isNotifying,
                        descriptors: characteristic._descriptors?.compactMap { descriptor in
                            descriptor.remote.map { Descriptor(uuid: $0.uuid.uuidString, handle: $0.handle) }
                        })
                })
        }
    }

    /// Checks the record (UUIDs, handles in order and inside their service and characteristic) and builds the
    /// objects, wired to `peripheral`.
    func restored(for peripheral: CBPeripheral?, index: Int) throws(StateRestorationError) -> CBService {
        let label = "service \(index)"
        guard start > 0, start <= end else { throw StateRestorationError(.corrupt, "\(label): handles \(start)...\(end)") }
        let remote = CBBackendService(uuid: try OpenCoreBluetooth.uuid(self.uuid, label), isPrimary: primary, startHandle: start, endHandle: end)
        let service = CBService(uuid: CBUUID(bluetoothUUID: remote.uuid), isPrimary: primary)
        service.remote = remote
        service.peripheral = peripheral
        if let characteristics {
            service._characteristics = try characteristics.enumerated().map { (offset, record) throws(StateRestorationError) in
                let where_ = "\(label) characteristic \(offset)"
                guard start < record.declaration, record.declaration < record.value, record.value <= record.end, record.end <= end else {
                    throw StateRestorationError(.corrupt, "\(where_): handles outside its service")
                }
                let item = CBBackendCharacteristic(uuid: try OpenCoreBluetooth.uuid(record.uuid, where_), properties: record.properties,
                                                   declarationHandle: record.declaration, valueHandle: record.value,
                                                   endHandle: record.end)
                let characteristic = CBCharacteristic(uuid: CBUUID(bluetoothUUID: item.uuid),
                                                      properties: CBCharacteristicProperties(rawValue: UInt(item.properties)), value: nil)
                characteristic.remote = item
                characteristic.service = service
                characteristic._isNotifying = record.notifying
                if let descriptors = record.descriptors {
                    characteristic._descriptors = try descriptors.enumerated().map { (number, entry) throws(StateRestorationError) in
                        guard record.value < entry.handle, entry.handle <= record.end else {
                            throw StateRestorationError(.corrupt, "\(where_) descriptor \(number): handle outside its characteristic")
                        }
                        let descriptor = CBDescriptor(uuid: CBUUID(bluetoothUUID: try OpenCoreBluetooth.uuid(entry.uuid, "\(where_) descriptor \(number)")),
                                                      value: nil)
                        descriptor.remote = CBBackendDescriptor(uuid: descriptor.uuid.bluetoothUUID, handle: entry.handle)
                        descriptor.characteristic = characteristic
                        return descriptor
                    }
                }
                return characteristic
            }
        }
        return service
    }
}
