package import AdvertisingData
import BluetoothCore
package import BluetoothEngine
import DBus

/// Advertising (Core 5.4 Vol 3 Part C §9.3, §11) on bluetoothd: an LEAdvertisement1 object the engine exports at
/// `ROOT/advertisement`, registered with LEAdvertisingManager1.RegisterAdvertisement (BlueZ's
/// doc/org.bluez.LEAdvertisement.rst): a connectable advertisement of a local name, service UUIDs and one
/// manufacturer's data, which bluetoothd lays out with its own flags and interval.
extension BlueZEngine {
    static let advertisingManager = "org.bluez.LEAdvertisingManager1"

    /// Where the advertisement object is.
    var advertisementPath: String { root + "/advertisement" }

    package func startAdvertising(_ content: AdvertisingContent, options: AdvertisingOptions,
                          completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            guard content.serviceData.isEmpty, options.kind == .connectable else {
                return completion(.failure(Self.refusal("an advertisement carries a name, service UUIDs and manufacturer data, connectable")))
            }
            advertise(localName: content.localName, serviceUUIDs: content.serviceUUIDs,
                      manufacturerData: content.manufacturerData.map { ($0.company.rawValue, $0.data) }, completion)
        }
    }

    /// Advertises exactly what bluetoothd's LEAdvertisement1 can say of these packets: the name, the service UUIDs
    /// and one manufacturer's data (CoreBluetooth's layout, `PeripheralAdvertisement`); bluetoothd lays them out
    /// and adds the flags. Anything else in them (service data, TX power, appearance...) is refused, not dropped.
    package func startAdvertising(advertisingData: AdvertisingData, scanResponse: AdvertisingData, options: AdvertisingOptions,
                                  completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            let structures = advertisingData.structures + scanResponse.structures
            let manufacturers = advertisingData.allManufacturerData + scanResponse.allManufacturerData
            let said = structures.allSatisfy { structure in
                switch structure {
                case .flags, .serviceUUIDs16, .serviceUUIDs32, .serviceUUIDs128, .localName, .manufacturerData: true
                default: false
                }
            }
            guard options.kind == .connectable, manufacturers.count <= 1, said else {
                return completion(.failure(Self.refusal("an advertisement carries a name, service UUIDs and manufacturer data, connectable")))
            }
            advertise(localName: scanResponse.localName ?? advertisingData.localName,
                      serviceUUIDs: advertisingData.serviceUUIDs + scanResponse.serviceUUIDs,
                      manufacturerData: manufacturers.first.map { ($0.company.rawValue, $0.data) }, completion)
        }
    }

    /// Registers the advertisement, unless the same one is already registered (bluetoothd advertises again by itself
    /// after a connection); a different one replaces it (UnregisterAdvertisement, then RegisterAdvertisement).
    private func advertise(localName: String?, serviceUUIDs: [BluetoothUUID], manufacturerData: (company: UInt16, data: [UInt8])?,
                           _ completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        let advertisement = Advertisement(localName: localName, serviceUUIDs: serviceUUIDs, company: manufacturerData?.company,
                                          manufacturerData: manufacturerData?.data)
        if advertising == advertisement { return completion(.success(())) }
        let replacing = advertising != nil
        advertising = advertisement
        let path = advertisementPath
        let register: @Sendable () -> Void = { [weak self] in
            guard let engine = self else { return }
            engine.callAdapter(Self.advertisingManager, "RegisterAdvertisement", [.objectPath(path), .properties([:])]) { result in
                engine.onLoop {
                    if case .failure = result, engine.advertising == advertisement { engine.advertising = nil }
                    completion(result.map { _ in () }.mapError { HostError(.commandFailed, "bluetoothd refused the advertisement: \($0)") })
                }
            }
        }
        if replacing {
            callAdapter(Self.advertisingManager, "UnregisterAdvertisement", [.objectPath(path)]) { _ in register() }
        } else {
            register()
        }
    }

    package func stopAdvertising(completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            if advertising != nil {
                callAdapter(Self.advertisingManager, "UnregisterAdvertisement", [.objectPath(advertisementPath)]) { _ in }
            }
            advertising = nil
            completion?(.success(()))
        }
    }

    /// The advertisement object's answers (on the loop): its properties, and bluetoothd's Release when it drops it.
    func advertisementCall(_ call: DBusMessage) -> DBusMessage {
        var properties: [String: DBusValue] = [:]
        if let advertising {
            properties["Type"] = .string("peripheral")
            properties["ServiceUUIDs"] = .array(.string, advertising.serviceUUIDs.map { .string($0.fullString.lowercased()) })
            if let localName = advertising.localName { properties["LocalName"] = .string(localName) }
            if let company = advertising.company, let data = advertising.manufacturerData {
                properties["ManufacturerData"] = .dictionary(key: .uint16, value: .variant, [(.uint16(company), .variant(.bytes(data)))])
            }
        }
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            return call.methodReturn([.properties(properties)])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard call.body.count == 2, let name = call.body[1].stringValue, let value = properties[name] else {
                return call.errorReply(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
            }
            return call.methodReturn([.variant(value)])
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return call.methodReturn([.string(Self.introspection(["org.bluez.LEAdvertisement1", "org.freedesktop.DBus.Properties"]))])
        case ("org.bluez.LEAdvertisement1", "Release"):
            advertising = nil
            return call.methodReturn()
        default:
            return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(call.member ?? "?") is not a method here")
        }
    }
}
