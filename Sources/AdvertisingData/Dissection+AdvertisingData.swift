public import BluetoothCore

extension AdvertisingData: Dissectable {
    /// "Advertising Data" with one child per AD structure.
    public var dissection: Dissection {
        Dissection("Advertising Data", "\(structures.count) AD structure\(structures.count == 1 ? "" : "s"), \(encodedLength) octets",
                   structures.map(\.dissection))
    }
}

extension ADStructure: Dissectable {
    /// Label: the SIG's AD type name ("Complete Local Name"); value: the decoded contents; children: fields.
    public var dissection: Dissection {
        let label = type.name ?? "Unknown AD type (\(Dissection.hex8(type.rawValue)))"
        let (value, children) = contents
        return Dissection(label, value, children)
    }

    private var contents: (String?, [Dissection]) {
        switch self {
        case .flags(let flags):
            return (flags.description, flags.names.map { Dissection($0, "set") })
        case .serviceUUIDs16(let values, _), .serviceSolicitation16(let values):
            return Self.uuidList(values.map { BluetoothUUID($0) })
        case .serviceUUIDs32(let values, _), .serviceSolicitation32(let values):
            return Self.uuidList(values.map { BluetoothUUID(uuid32: $0) })
        case .serviceUUIDs128(let values, _), .serviceSolicitation128(let values):
            return Self.uuidList(values)
        case .localName(let name, _):
            return (name.description, [])
        case .txPowerLevel(let power):
            return ("\(power) dBm", [])
        case .classOfDevice(let value):
            return (value.description, [
                Dissection("Major Service Classes", Dissection.hex16(value.majorServiceClasses)),
                Dissection("Major Device Class", Dissection.hex8(value.majorDeviceClass)),
                Dissection("Minor Device Class", Dissection.hex8(value.minorDeviceClass)),
            ])
        case .peripheralConnectionIntervalRange(let range):
            return (nil, [
                Dissection("Connection Interval Min", ConnectionIntervalRange.text(range.minimum)),
                Dissection("Connection Interval Max", ConnectionIntervalRange.text(range.maximum)),
            ])
        case .serviceData16(let uuid, let data):
            return Self.serviceData(BluetoothUUID(uuid), data)
        case .serviceData32(let uuid, let data):
            return Self.serviceData(BluetoothUUID(uuid32: uuid), data)
        case .serviceData128(let uuid, let data):
            return Self.serviceData(uuid, data)
        case .publicTargetAddresses(let addresses), .randomTargetAddresses(let addresses):
            return (addresses.map(\.string).joined(separator: ", "), addresses.map { Dissection("Address", $0.description) })
        case .appearance(let appearance):
            return (appearance.description, [])
        case .advertisingInterval(let interval):
            return ("\(Dissection.hex16(interval)) (\(milliseconds(UInt32(interval) * 625)))", [])
        case .advertisingIntervalLong(let interval):
            let microseconds = UInt64(interval) * 625
            let text = microseconds <= UInt64(UInt32.max) ? milliseconds(UInt32(microseconds)) : "\(microseconds / 1000) ms"
            return ("\(interval) (\(text))", [])
        case .leDeviceAddress(let address):
            return ("\(address.string) (\(address.type))", [])
        case .leRole(let role):
            return (role.description, [])
        case .uri(let uri):
            return (uri.description, [])
        case .leSupportedFeatures(let features):
            return (features.description, [Dissection("Octets", Dissection.bytes(features.bytes))])
        case .encryptedData(let bytes):
            return (Dissection.bytes(bytes), [])
        case .manufacturerData(let company, let data):
            var children = [Dissection("Company Identifier", company.description), Dissection("Data", Dissection.bytes(data))]
            if IBeacon.matches(company: company, data: data), let beacon = try? IBeacon(manufacturerData: data) {
                children.append(beacon.dissection)
            }
            return (company.description, children)
        case .unknown(_, let bytes):
            return (Dissection.bytes(bytes), [])
        }
    }

    private static func uuidList(_ uuids: [BluetoothUUID]) -> (String?, [Dissection]) {
        (uuids.map { Dissection.uuid($0) }.joined(separator: ", "), uuids.map { Dissection("UUID", Dissection.uuid($0)) })
    }

    private static func serviceData(_ uuid: BluetoothUUID, _ data: [UInt8]) -> (String?, [Dissection]) {
        var children = [Dissection("UUID", Dissection.uuid(uuid)), Dissection("Data", Dissection.bytes(data))]
        if uuid == BluetoothUUID(EddystoneFrame.serviceUUID) {
            if let frame = try? EddystoneFrame(serviceData: data) {
                children.append(frame.dissection)
            } else {
                children.append(Dissection("Eddystone", "malformed frame"))
            }
        }
        return (Dissection.uuid(uuid), children)
    }
}

extension IBeacon: Dissectable {
    public var dissection: Dissection {
        Dissection("iBeacon", nil, [
            Dissection("Proximity UUID", proximityUUID.fullString),
            Dissection("Major", "\(major) (\(Dissection.hex16(major)))"),
            Dissection("Minor", "\(minor) (\(Dissection.hex16(minor)))"),
            Dissection("Measured Power", "\(measuredPower) dBm"),
        ])
    }
}

extension EddystoneFrame: Dissectable {
    public var dissection: Dissection {
        switch self {
        case .uid(let uid):
            var children = [
                Dissection("Ranging Data", "\(uid.txPower) dBm"),
                Dissection("Namespace", Hex.encode(uid.namespace)),
                Dissection("Instance", Hex.encode(uid.instance)),
            ]
            if let reserved = uid.reserved { children.append(Dissection("RFU", Hex.encode(reserved))) }
            return Dissection(name, nil, children)
        case .url(let url):
            return Dissection(name, url.url, [
                Dissection("TX Power", "\(url.txPower) dBm"),
                Dissection("URL Scheme", "\(Dissection.hex8(url.schemeCode)) (\(EddystoneURL.schemePrefixes[url.schemeCode] ?? "reserved"))"),
                Dissection("Encoded URL", Dissection.bytes(url.encodedURL)),
                Dissection("URL", url.url),
            ])
        case .tlm(.plain(let tlm)):
            return Dissection(name, "version 0", [
                Dissection("Battery Voltage", "\(tlm.batteryMillivolts) mV"),
                Dissection("Temperature", tlm.temperatureText),
                Dissection("Advertising PDU Count", "\(tlm.advertisementCount)"),
                Dissection("Time Since Power-on", "\(tlm.uptimeDeciseconds / 10).\(tlm.uptimeDeciseconds % 10) s"),
            ])
        case .tlm(.encrypted(let etlm)):
            return Dissection(name, "version 1", [
                Dissection("Encrypted TLM", Dissection.bytes(etlm.ciphertext)),
                Dissection("Salt", Dissection.hex16(etlm.salt)),
                Dissection("Message Integrity Check", Dissection.hex16(etlm.integrityCheck)),
            ])
        case .eid(let eid):
            return Dissection(name, nil, [
                Dissection("Ranging Data", "\(eid.txPower) dBm"),
                Dissection("Ephemeral Identifier", Hex.encode(eid.identifier)),
            ])
        }
    }
}
