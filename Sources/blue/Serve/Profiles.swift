import ArgumentParser

/// The built-in `blue serve --profile` servers, as definitions in the JSON format (`blue serve --profile NAME
/// --print-definition` prints them, a starting point for your own file).
enum ServeProfile: String, CaseIterable, ExpressibleByArgument, Sendable {
    case heartRate = "heart-rate"
    case battery
    case chat
    case blueear

    var definition: ServeDefinition {
        typealias C = ServeDefinition.Characteristic
        typealias V = ServeDefinition.Value
        switch self {
        case .heartRate:
            // Heart Rate Service (HRS 1.0): Measurement (notify, simulated), Body Sensor Location (read: Chest),
            // Control Point (write: 01 resets Energy Expended). Plus Device Information and Battery.
            return ServeDefinition(name: "blue heart rate", appearance: 0x0340, advertise: nil, services: [
                .init(uuid: "180D", primary: true, characteristics: [
                    C(uuid: "2A37", properties: ["notify"], value: V(hex: "1648"),
                      notify: .init(generator: "heart-rate", interval: 1)),
                    C(uuid: "2A38", properties: ["read"], value: V(uint8: 1)),
                    C(uuid: "2A39", properties: ["write"], value: V(hex: "00"), maxLength: 1),
                ]),
                .init(uuid: "180F", primary: true, characteristics: [
                    C(uuid: "2A19", properties: ["read", "notify"], value: V(uint8: 87)),
                ]),
                .init(uuid: "180A", primary: true, characteristics: [
                    C(uuid: "2A29", properties: ["read"], value: V(text: "OpenCoreBluetooth")),
                    C(uuid: "2A24", properties: ["read"], value: V(text: "blue serve")),
                ]),
            ])
        case .battery:
            return ServeDefinition(name: "blue battery", appearance: nil, advertise: nil, services: [
                .init(uuid: "180F", primary: true, characteristics: [
                    C(uuid: "2A19", properties: ["read", "notify"], value: V(uint8: 100),
                      notify: .init(generator: "battery", interval: 2)),
                ]),
            ])
        case .chat:
            // The text transfer of seed 002 (Apple's BTLE Transfer UUIDs): write text to the characteristic, the
            // server prints it; subscribers get what others write.
            return ServeDefinition(name: "blue chat", appearance: nil, advertise: nil, services: [
                .init(uuid: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961", primary: true, characteristics: [
                    C(uuid: "08590F7E-DB05-467E-8757-72F6FAEB13D4",
                      properties: ["read", "write", "write-without-response", "notify"], value: V(text: ""),
                      description: "Chat message"),
                ]),
            ])
        case .blueear:
            // Seed 001's BlueEar peripheral: one characteristic (read, notify, write, write without response)
            // holding the binary plist {"Hello": "Darkness"}, notified to each central as soon as it subscribes
            // (the seed's `peripheralManager(_:central:didSubscribeTo:)`).
            return ServeDefinition(name: "Peripheral - iOS", appearance: nil, advertise: nil, services: [
                .init(uuid: "0CDBE648-EED0-11E6-BC64-92361F002671", primary: true, characteristics: [
                    C(uuid: "199AB74C-EED0-11E6-BC64-92361F002672",
                      properties: ["read", "notify", "write-without-response", "write"],
                      value: V(plist: ["Hello": "Darkness"]), onSubscribe: V(plist: ["Hello": "Darkness"])),
                ]),
            ])
        }
    }
}

extension ServeDefinition.Characteristic {
    init(uuid: String, properties: [String], value: ServeDefinition.Value? = nil, maxLength: Int? = nil,
         description: String? = nil, notify: ServeDefinition.Generator? = nil, onSubscribe: ServeDefinition.Value? = nil) {
        self.init(uuid: uuid, properties: properties, permissions: nil, value: value, maxLength: maxLength,
                  description: description, descriptors: nil, notify: notify, onSubscribe: onSubscribe, answer: nil, echo: nil)
    }
}

extension ServeDefinition.Generator {
    init(generator: String, interval: Double) {
        self.init(generator: generator, interval: interval, start: nil, step: nil, width: nil, values: nil)
    }
}

extension ServeDefinition {
    /// The definition with a 2902 descriptor declared on each characteristic that notifies or indicates and lists
    /// none: what a careful Android app adds (`BluetoothGattDescriptor`), for a built-in profile served as Android.
    func declaringClientConfigurations() -> ServeDefinition {
        var definition = self
        for serviceIndex in definition.services.indices {
            for index in (definition.services[serviceIndex].characteristics ?? []).indices {
                var characteristic = definition.services[serviceIndex].characteristics![index]
                let notifies = characteristic.properties.contains("notify") || characteristic.properties.contains("indicate")
                var descriptors = characteristic.descriptors ?? []
                guard notifies, !descriptors.contains(where: { $0.uuid == "2902" }) else { continue }
                descriptors.insert(Descriptor(uuid: "2902", permissions: nil, value: nil, answer: nil), at: 0)
                characteristic.descriptors = descriptors
                definition.services[serviceIndex].characteristics![index] = characteristic
            }
        }
        return definition
    }
}
