import ATT
import BluetoothCore
import GATT
import StackLauncher

/// A peer's whole GATT database as a client discovers it (Core 5.4 Vol 3 Part G §4.4 primary services, §4.6.1
/// characteristics, §4.7.1 descriptors), with the values read (§4.8.3 long reads, §4.12.2 descriptors) when asked.
/// `blue explore` prints it; `read`/`write`/`subscribe` find their characteristic in it.
struct GATTTree: Sendable {
    struct Descriptor: Sendable {
        var handle: UInt16
        var uuid: BluetoothUUID
        var value: [UInt8]?
        var readError: String?
    }

    struct Characteristic: Sendable {
        var declaration: GATTDiscoveredCharacteristic
        var descriptors: [Descriptor] = []
        var value: [UInt8]?
        var readError: String?
        /// The ATT error a read of the value was answered with (the security a clone must ask for).
        var readErrorCode: ATTErrorCode?
        var uuid: BluetoothUUID { declaration.uuid }
        var properties: GATTDiscoveredCharacteristic.Properties { declaration.properties }
        var cccdHandle: UInt16? {
            descriptors.first { $0.uuid == GATTUUID.clientCharacteristicConfiguration }?.handle
        }
    }

    struct Service: Sendable {
        var discovered: GATTDiscoveredService
        var characteristics: [Characteristic] = []
        var uuid: BluetoothUUID { discovered.uuid }
    }

    var services: [Service] = []

    /// Discovers everything on the connection; with `readValues`, reads every readable characteristic value and
    /// every descriptor (a failed read is kept as its error, not thrown).
    static func discover(on stack: any OpenedStack, connection handle: UInt16, readValues: Bool) async throws(CLIFailure) -> GATTTree {
        func fail(_ what: String, _ error: GATTClientError) -> CLIFailure {
            CLIFailure(.failed, "\(what) failed: \(error)")
        }
        var tree = GATTTree()
        switch await stack.gatt(handle, .discoverAllPrimaryServices) {
        case .success(.services(let services)): tree.services = services.map { Service(discovered: $0) }
        case .failure(let error): throw fail("service discovery", error)
        default: throw CLIFailure(.failed, "service discovery: unexpected result")
        }
        let progress = DiscoveryProgress()
        defer { progress.finish() }
        var attributes = tree.services.count
        for serviceIndex in tree.services.indices {
            progress.update(service: serviceIndex + 1, of: tree.services.count, attributes: attributes)
            let service = tree.services[serviceIndex].discovered
            switch await stack.gatt(handle, .discoverAllCharacteristics(of: service)) {
            case .success(.characteristics(let list)):
                tree.services[serviceIndex].characteristics = list.map { Characteristic(declaration: $0) }
            case .failure(.attError(.attributeNotFound, _)): continue
            case .failure(let error): throw fail("characteristic discovery of \(service.uuid)", error)
            default: continue
            }
            for index in tree.services[serviceIndex].characteristics.indices {
                var characteristic = tree.services[serviceIndex].characteristics[index]
                if characteristic.declaration.descriptorRange.isValid {
                    switch await stack.gatt(handle, .discoverAllDescriptors(of: characteristic.declaration)) {
                    case .success(.descriptors(let list)):
                        characteristic.descriptors = list.map { Descriptor(handle: $0.handle, uuid: $0.uuid) }
                    case .failure(.attError(.attributeNotFound, _)): break
                    case .failure(let error): throw fail("descriptor discovery of \(characteristic.uuid)", error)
                    default: break
                    }
                }
                if readValues {
                    if characteristic.properties.contains(.read) {
                        switch await stack.gatt(handle, .readLongCharacteristicValue(handle: characteristic.declaration.valueHandle)) {
                        case .success(.value(let value)): characteristic.value = value
                        case .failure(let error):
                            characteristic.readError = error.description
                            if case .attError(let code, _) = error { characteristic.readErrorCode = code }
                        default: break
                        }
                    }
                    for descriptorIndex in characteristic.descriptors.indices {
                        let descriptor = characteristic.descriptors[descriptorIndex]
                        switch await stack.gatt(handle, .readLongDescriptor(handle: descriptor.handle)) {
                        case .success(.value(let value)): characteristic.descriptors[descriptorIndex].value = value
                        case .failure(let error): characteristic.descriptors[descriptorIndex].readError = error.description
                        default: break
                        }
                    }
                }
                tree.services[serviceIndex].characteristics[index] = characteristic
                attributes += 2 + characteristic.descriptors.count
                progress.update(service: serviceIndex + 1, of: tree.services.count, attributes: attributes)
            }
        }
        return tree
    }

    /// The characteristic `uuid` (in `service` when given): the first in handle order.
    func characteristic(_ uuid: BluetoothUUID, in service: BluetoothUUID?) -> Characteristic? {
        for candidate in services where service == nil || candidate.uuid == service {
            if let found = candidate.characteristics.first(where: { $0.uuid == uuid }) { return found }
        }
        return nil
    }

    // MARK: Text

    /// "read, write, notify".
    static func propertyNames(_ properties: GATTDiscoveredCharacteristic.Properties) -> [String] {
        let names: [(GATTDiscoveredCharacteristic.Properties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"),
            (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
            (.authenticatedSignedWrites, "signed-write"), (.extendedProperties, "extended-properties"),
        ]
        return names.filter { properties.contains($0.0) }.map(\.1)
    }

    /// "= 01 (Chest)", "= 48 65 6c 6c 6f (\"Hello\")", "(read failed: ...)", or "" when nothing was read.
    static func valueText(_ value: [UInt8]?, error: String?, uuid: BluetoothUUID) -> String {
        if let error { return "  (read failed: \(error))" }
        guard let value else { return "" }
        var text = "  = \(ValueDecoding.hex(value))"
        if let decoded = ValueDecoding.describe(value, uuid: uuid) { text += "  (\(decoded))" }
        return text
    }

    /// The tree as indented lines with SIG names, handles, properties and decoded values.
    func renderText() -> [String] {
        var lines: [String] = []
        for (serviceIndex, service) in services.enumerated() {
            let lastService = serviceIndex == services.count - 1
            lines.append("\(lastService ? "└─" : "├─") " + TerminalStyle.bold("Service \(ValueDecoding.label(service.uuid))") + "  "
                         + "[\(Dissection.hex16(service.discovered.startHandle))-\(Dissection.hex16(service.discovered.endHandle))]")
            let servicePrefix = lastService ? "   " : "│  "
            for (index, characteristic) in service.characteristics.enumerated() {
                let last = index == service.characteristics.count - 1
                let properties = Self.propertyNames(characteristic.properties).joined(separator: ", ")
                lines.append(servicePrefix + (last ? "└─ " : "├─ ")
                             + "\(ValueDecoding.label(characteristic.uuid))  [\(properties)]  "
                             + "handle \(Dissection.hex16(characteristic.declaration.valueHandle))"
                             + Self.valueText(characteristic.value, error: characteristic.readError, uuid: characteristic.uuid))
                let characteristicPrefix = servicePrefix + (last ? "   " : "│  ")
                for (descriptorIndex, descriptor) in characteristic.descriptors.enumerated() {
                    let lastDescriptor = descriptorIndex == characteristic.descriptors.count - 1
                    lines.append(characteristicPrefix + (lastDescriptor ? "└─ " : "├─ ")
                                 + "\(ValueDecoding.label(descriptor.uuid))  handle \(Dissection.hex16(descriptor.handle))"
                                 + Self.valueText(descriptor.value, error: descriptor.readError, uuid: descriptor.uuid))
                }
            }
        }
        return lines
    }

    // MARK: JSON

    static func valueJSON(_ value: [UInt8]?, error: String?, uuid: BluetoothUUID) -> [String: Any] {
        var object: [String: Any] = [:]
        if let error { object["readError"] = error }
        if let value {
            object["hex"] = Hex.encode(value)
            if let decoded = ValueDecoding.describe(value, uuid: uuid) { object["decoded"] = decoded }
        }
        return object
    }

    static func uuidJSON(_ uuid: BluetoothUUID) -> [String: Any] {
        var object: [String: Any] = ["uuid": uuid.uuidString]
        if let name = uuid.assignedName { object["name"] = name }
        return object
    }

    func json() -> [[String: Any]] {
        services.map { service in
            var object = Self.uuidJSON(service.uuid)
            object["startHandle"] = Int(service.discovered.startHandle)
            object["endHandle"] = Int(service.discovered.endHandle)
            object["characteristics"] = service.characteristics.map { characteristic -> [String: Any] in
                var entry = Self.uuidJSON(characteristic.uuid)
                entry["handle"] = Int(characteristic.declaration.valueHandle)
                entry["properties"] = Self.propertyNames(characteristic.properties)
                entry.merge(Self.valueJSON(characteristic.value, error: characteristic.readError, uuid: characteristic.uuid)) { $1 }
                entry["descriptors"] = characteristic.descriptors.map { descriptor -> [String: Any] in
                    var item = Self.uuidJSON(descriptor.uuid)
                    item["handle"] = Int(descriptor.handle)
                    item.merge(Self.valueJSON(descriptor.value, error: descriptor.readError, uuid: descriptor.uuid)) { $1 }
                    return item
                }
                return entry
            }
            return object
        }
    }
}
