import ATT
import BluetoothCore
import BluetoothEngine
import GATT

/// A serve definition written from a device as a client saw it (`blue clone`): its advertisement (Core Supplement
/// Part A) and its GATT database (Core 5.4 Vol 3 Part G) with the values it let us read, so `blue serve FILE` plays
/// the device back with the same services, characteristics, properties, values and descriptors in the same order.
extension ServeDefinition {
    /// What a clone leaves out, one line each, for standard error.
    struct CloneNotes: Sendable {
        var lines: [String] = []
        var readValues = 0
    }

    /// The definition of the device `report` advertised and `tree` discovered. The GAP and GATT services are the
    /// server's own (`blue serve` adds them); their Device Name and Appearance become `name` and `appearance`.
    static func cloned(from report: ScanReport, tree: GATTTree) -> (ServeDefinition, CloneNotes) {
        var notes = CloneNotes()
        let advertising = report.advertisingData
        var definition = ServeDefinition(services: [])
        let gap = tree.services.first { $0.uuid == GATTUUID.genericAccessService }
        let gapName = gap?.characteristics.first { $0.uuid == GATTUUID.deviceName }?.value.flatMap { String(validating: $0, as: UTF8.self) }
        definition.name = advertising.localName ?? gapName
        if let advertised = advertising.localName, let gapName, advertised != gapName {
            notes.lines.append("the GAP Device Name \"\(gapName)\" differs from the advertised name: the clone uses \"\(advertised)\" for both")
        }
        let gapAppearance = gap?.characteristics.first { $0.uuid == GATTUUID.appearance }?.value
            .flatMap { $0.count == 2 ? UInt16($0[0]) | UInt16($0[1]) << 8 : nil }
        definition.appearance = gapAppearance ?? advertising.appearance?.rawValue
        definition.advertise = advertising.serviceUUIDs.map(\.uuidString)
        var extras = AdvertisingExtras()
        if let manufacturer = advertising.manufacturerData {
            extras.manufacturer = AdvertisingExtras.Manufacturer(company: manufacturer.company.rawValue, hex: Hex.encode(manufacturer.data))
        }
        let serviceData = advertising.serviceData.sorted { $0.key.uuidString < $1.key.uuidString }
        if !serviceData.isEmpty {
            extras.serviceData = serviceData.map { AdvertisingExtras.ServiceDataEntry(uuid: $0.key.uuidString, hex: Hex.encode($0.value)) }
        }
        extras.txPower = advertising.txPowerLevel
        if extras.manufacturer != nil || extras.serviceData != nil || extras.txPower != nil { definition.advertisingData = extras }

        for service in tree.services
        where service.uuid != GATTUUID.genericAccessService && service.uuid != GATTUUID.genericAttributeService {
            let characteristics = service.characteristics.map { cloned($0, in: service.uuid, &notes) }
            definition.services.append(Service(uuid: service.uuid.uuidString, primary: nil,
                                               characteristics: characteristics.isEmpty ? nil : characteristics))
        }
        return (definition, notes)
    }

    private static func cloned(_ found: GATTTree.Characteristic, in service: BluetoothUUID, _ notes: inout CloneNotes) -> Characteristic {
        let label = "\(ValueDecoding.label(service))/\(ValueDecoding.label(found.uuid))"
        let served = GATTTree.propertyNames(found.properties).filter { propertyNames[$0] != nil }
        for dropped in GATTTree.propertyNames(found.properties) where propertyNames[dropped] == nil {
            notes.lines.append("\(label): the \(dropped) property is not served by `blue serve`: left out")
        }
        var characteristic = Characteristic(uuid: found.uuid.uuidString, properties: served)
        if let value = found.value {
            characteristic.value = Value(hex: Hex.encode(value))
            notes.readValues += 1
        }
        // A read refused for security: the clone asks for the same (its writes too, as a server usually protects both).
        let writable = !found.properties.isDisjoint(with: [.write, .writeWithoutResponse])
        switch found.readErrorCode {
        case .insufficientEncryption?, .insufficientEncryptionKeySize?:
            characteristic.permissions = ["read-encrypted"] + (writable ? ["write-encrypted"] : [])
            notes.lines.append("\(label): readable only on an encrypted link: so is the clone's, with an empty value")
        case .insufficientAuthentication?:
            characteristic.permissions = ["read-authenticated"] + (writable ? ["write-authenticated"] : [])
            notes.lines.append("\(label): readable only after authenticated pairing: so is the clone's, with an empty value")
        case .readNotPermitted?:
            characteristic.permissions = writable ? ["write"] : []
        case let code?:
            notes.lines.append("\(label): its read was refused (\(code)): the clone's value is empty")
        case nil:
            if found.properties.contains(.read), found.value == nil, let error = found.readError {
                notes.lines.append("\(label): its read failed (\(error)): the clone's value is empty")
            }
        }
        var descriptors: [Descriptor] = []
        for descriptor in found.descriptors {
            switch descriptor.uuid {
            case GATTUUID.clientCharacteristicConfiguration, GATTUUID.characteristicExtendedProperties:
                continue // the server's own: per client, and from the properties
            case GATTUUID.characteristicUserDescription where descriptor.value.flatMap({ String(validating: $0, as: UTF8.self) }) != nil:
                characteristic.description = descriptor.value.flatMap { String(validating: $0, as: UTF8.self) }
            default:
                if descriptor.value == nil {
                    notes.lines.append("\(label): descriptor \(ValueDecoding.label(descriptor.uuid)) could not be read: its clone is empty")
                }
                descriptors.append(Descriptor(uuid: descriptor.uuid.uuidString, permissions: nil,
                                              value: descriptor.value.map { Value(hex: Hex.encode($0)) }, answer: nil))
            }
        }
        if !descriptors.isEmpty { characteristic.descriptors = descriptors }
        return characteristic
    }
}
