import BluetoothCore
import Foundation

/// What a central manager's restoration file holds (`StateRestorationStore`): the peripherals it was connected
/// or connecting to (GAP connection establishment, Core 5.4 Vol 3 Part C §9.3: identity address and type, so the
/// identifier and the connection target are the same in the next process; the last known name) and the scan it
/// was running (the service filter of §9.2, duplicates, solicited services).
struct CentralRestorationSnapshot: Codable, Equatable, RestorationSnapshot {
    struct Peer: Codable, Equatable {
        var identifier: String
        var address: String
        var addressType: String
        var name: String?
        /// What was discovered of a connected peripheral (nil: nothing, or not connected).
        var services: [RestoredRemoteService]?
    }

    struct Scan: Codable, Equatable {
        /// Nil: every device.
        var services: [String]?
        /// Nil: the app gave no `CBCentralManagerScanOptionAllowDuplicatesKey` (none is invented on restoration).
        var allowDuplicates: Bool?
        var solicitedServices: [String]
    }

    var version = 1
    var peripherals: [Peer]
    var scan: Scan?

    var isEmpty: Bool { peripherals.isEmpty && scan == nil }

    init(peripherals: [(peer: CBBackendPeer, name: String?, services: [RestoredRemoteService]?)], scan: CBBackendScanParameters?,
         duplicatesGiven: Bool = true) {
        self.peripherals = peripherals.map { entry in
            Peer(identifier: CBPeerIdentifier.identifier(for: entry.peer.address).uuidString,
                 address: entry.peer.address.string, addressType: entry.peer.address.type.description, name: entry.name,
                 services: entry.services)
        }
        self.scan = scan.map { scan in
            Scan(services: scan.serviceUUIDs?.map(\.uuidString), allowDuplicates: duplicatesGiven ? scan.allowDuplicates : nil,
                 solicitedServices: scan.solicitedServiceUUIDs.map(\.uuidString))
        }
    }

    func validate() throws(StateRestorationError) {
        _ = try restoredPeers()
        _ = try restoredScan()
        for peer in peripherals {
            for (index, service) in (peer.services ?? []).enumerated() { _ = try service.restored(for: nil, index: index) }
        }
    }

    /// The peers, checked: a known address type, a valid address, the identifier that of the address.
    func restoredPeers() throws(StateRestorationError) -> [(peer: CBBackendPeer, name: String?, services: [RestoredRemoteService]?)] {
        try peripherals.enumerated().map { (index, record) throws(StateRestorationError) in
            let type: BluetoothAddress.AddressType
            switch record.addressType {
            case "public": type = .public
            case "random": type = .random
            default: throw StateRestorationError(.corrupt, "peripheral \(index): address type '\(record.addressType)'")
            }
            guard let address = try? BluetoothAddress(string: record.address, type: type),
                  address.string == record.address.uppercased() else {
                throw StateRestorationError(.corrupt, "peripheral \(index): address '\(record.address)'")
            }
            guard UUID(uuidString: record.identifier) == CBPeerIdentifier.identifier(for: address) else {
                throw StateRestorationError(.corrupt, "peripheral \(index): identifier \(record.identifier) is not that of \(record.address)")
            }
            return (CBBackendPeer(address: address), record.name, record.services)
        }
    }

    /// The scan's parameters, checked.
    func restoredScan() throws(StateRestorationError) -> CBBackendScanParameters? {
        guard let scan else { return nil }
        var services: [BluetoothUUID]?
        if let texts = scan.services { services = try uuids(texts, "scan service") }
        return CBBackendScanParameters(serviceUUIDs: services,
                                       allowDuplicates: scan.allowDuplicates ?? false,
                                       solicitedServiceUUIDs: try uuids(scan.solicitedServices, "solicited service"))
    }
}

/// What a peripheral manager's restoration file holds (`StateRestorationStore`): the local GATT database it
/// published (Core 5.4 Vol 3 Part G §3: services in publication order with their included services,
/// characteristics with properties, permissions and static value, descriptors with their value) and the
/// advertising data it was advertising (local name and service UUIDs, Core Supplement Part A §1.1, §1.2).
struct PeripheralRestorationSnapshot: Codable, Equatable, RestorationSnapshot {
    struct Descriptor: Codable, Equatable {
        var uuid: String
        var value: Data
    }

    struct Characteristic: Codable, Equatable {
        var uuid: String
        var properties: UInt
        var permissions: UInt
        /// The static (cached) value; nil for a dynamic characteristic.
        var value: Data?
        var descriptors: [Descriptor]
    }

    struct Service: Codable, Equatable {
        var uuid: String
        var primary: Bool
        /// Indexes of earlier services of `services`.
        var includedServices: [Int]
        var characteristics: [Characteristic]
    }

    struct Advertisement: Codable, Equatable {
        var localName: String?
        var serviceUUIDs: [String]
    }

    var version = 1
    var services: [Service]
    var advertisement: Advertisement?

    var isEmpty: Bool { services.isEmpty && advertisement == nil }

    /// From the definitions handed to the backend, in publication order, and the advertised name and services.
    init(services definitions: [CBBackendLocalService], advertisement: (localName: String?, serviceUUIDs: [BluetoothUUID])?) {
        let order = definitions.map(\.id)
        services = definitions.map { definition in
            Service(uuid: definition.uuid.uuidString, primary: definition.isPrimary,
                    includedServices: definition.includedServiceIDs.compactMap { order.firstIndex(of: $0) },
                    characteristics: definition.characteristics.map { characteristic in
                        Characteristic(uuid: characteristic.uuid.uuidString, properties: characteristic.properties,
                                       permissions: characteristic.permissions, value: characteristic.staticValue.map { Data($0) },
                                       descriptors: characteristic.descriptors.map { Descriptor(uuid: $0.uuid.uuidString, value: Data($0.value)) })
                    })
        }
        self.advertisement = advertisement.map {
            Advertisement(localName: $0.localName, serviceUUIDs: $0.serviceUUIDs.map(\.uuidString))
        }
    }

    func validate() throws(StateRestorationError) {
        _ = try restoredServices()
        _ = try restoredAdvertisement()
    }

    /// New CBMutableServices as the app had published them (included services wired to the restored objects).
    func restoredServices() throws(StateRestorationError) -> [CBMutableService] {
        var restored: [CBMutableService] = []
        for (index, record) in services.enumerated() {
            let service = CBMutableService(type: CBUUID(bluetoothUUID: try uuid(record.uuid, "service \(index)")),
                                           primary: record.primary)
            guard record.includedServices.allSatisfy({ $0 >= 0 && $0 < index }) else {
                throw StateRestorationError(.corrupt, "service \(index): included services \(record.includedServices)")
            }
            if !record.includedServices.isEmpty { service.includedServices = record.includedServices.map { restored[$0] } }
            var characteristics: [CBMutableCharacteristic] = []
            for (position, item) in record.characteristics.enumerated() {
                let label = "service \(index) characteristic \(position)"
                guard item.properties <= 0x3FF, item.permissions <= 0xF else {
                    throw StateRestorationError(.corrupt, "\(label): properties \(item.properties), permissions \(item.permissions)")
                }
                let characteristicUUID = CBUUID(bluetoothUUID: try uuid(item.uuid, label))
                let characteristic = CBMutableCharacteristic(
                    type: characteristicUUID, properties: CBCharacteristicProperties(rawValue: item.properties),
                    value: item.value, permissions: CBAttributePermissions(rawValue: item.permissions))
                if !item.descriptors.isEmpty {
                    characteristic.descriptors = try item.descriptors.map { (descriptor) throws(StateRestorationError) in
                        let descriptorUUID = CBUUID(bluetoothUUID: try uuid(descriptor.uuid, "\(label) descriptor"))
                        return CBMutableDescriptor(type: descriptorUUID, value: CBDescriptor.decode([UInt8](descriptor.value), uuid: descriptorUUID))
                    }
                }
                characteristics.append(characteristic)
            }
            service.characteristics = characteristics
            restored.append(service)
        }
        return restored
    }

    /// The advertisement dictionary as the app had passed it: local name and `[CBUUID]`.
    func restoredAdvertisement() throws(StateRestorationError) -> [String: Any]? {
        guard let advertisement else { return nil }
        var dictionary: [String: Any] = [:]
        if let name = advertisement.localName { dictionary[CBAdvertisementDataLocalNameKey] = name }
        let uuids = try uuids(advertisement.serviceUUIDs, "advertised service")
        if !uuids.isEmpty { dictionary[CBAdvertisementDataServiceUUIDsKey] = uuids.map(CBUUID.init(bluetoothUUID:)) }
        return dictionary
    }
}

func uuid(_ text: String, _ label: String) throws(StateRestorationError) -> BluetoothUUID {
    do {
        return try BluetoothUUID(string: text)
    } catch {
        throw StateRestorationError(.corrupt, "\(label): UUID '\(text)'")
    }
}

private func uuids(_ texts: [String], _ label: String) throws(StateRestorationError) -> [BluetoothUUID] {
    try texts.map { (text) throws(StateRestorationError) in try uuid(text, label) }
}
