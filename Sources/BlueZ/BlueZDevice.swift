import AdvertisingData
package import BluetoothCore
package import BluetoothEngine
package import DBus

/// What bluetoothd's Device1 objects say, read as the engine's vocabulary (BlueZ's doc/org.bluez.Device.rst,
/// doc/org.bluez.GattCharacteristic.rst): a device's address, its advertising as a scan report, a characteristic's
/// Flags as GATT properties (Core 5.4 Vol 3 Part G §3.3.1.1).
package enum BlueZDevice {
    package static let interface = BlueZAdapterSession.deviceInterface

    /// A Device1's identity: its Address and AddressType.
    package static func peer(_ properties: [String: DBusValue]) -> BluetoothAddress? {
        guard let text = properties["Address"]?.stringValue else { return nil }
        let type: BluetoothAddress.AddressType = properties["AddressType"]?.stringValue == "random" ? .random : .public
        guard let address = try? BluetoothAddress(string: text, type: type) else { return nil }
        return address
    }

    /// What a Device1 says of its advertising (Name, UUIDs, ManufacturerData a{qv}, ServiceData a{sv}, TxPower,
    /// RSSI), as the report our host gives (Core Supplement Part A): the decoded fields rebuilt into AD structures,
    /// since bluetoothd reports properties, not packets. Connectable: bluetoothd does not say.
    package static func scanReport(_ properties: [String: DBusValue]) -> ScanReport? {
        guard let address = peer(properties) else { return nil }
        var structures: [ADStructure] = []
        if let name = properties["Name"]?.stringValue { structures.append(.localName(LocalName(name), complete: true)) }
        let uuids = (properties["UUIDs"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap { try? BluetoothUUID(string: $0) } }
        let short = uuids.compactMap(\.uuid16)
        if !short.isEmpty { structures.append(.serviceUUIDs16(short, complete: true)) }
        let long = uuids.filter { $0.uuid16 == nil }
        if !long.isEmpty { structures.append(.serviceUUIDs128(long, complete: true)) }
        var serviceData: [(BluetoothUUID, [UInt8])] = []
        for (key, value) in properties["ServiceData"]?.dictionaryValue ?? [:] {
            if let uuid = try? BluetoothUUID(string: key), let bytes = value.bytesValue { serviceData.append((uuid, bytes)) }
        }
        for (uuid, data) in serviceData.sorted(by: { $0.0.uuidString < $1.0.uuidString }) {
            structures.append(uuid.uuid16.map { .serviceData16($0, data: data) } ?? .serviceData128(uuid, data: data))
        }
        if let power = properties["TxPower"]?.intValue { structures.append(.txPowerLevel(Int8(clamping: power))) }
        if case .array(_, let entries)? = properties["ManufacturerData"], case .dictEntry(let key, let value)? = entries.first,
           let company = key.intValue, let bytes = value.bytesValue {
            structures.append(.manufacturerData(CompanyIdentifier(rawValue: UInt16(truncatingIfNeeded: company)), data: bytes))
        }
        let data = AdvertisingData(structures)
        return ScanReport(address: address, addressType: address.type == .random ? .random : .public,
                          rssi: Int8(clamping: properties["RSSI"]?.intValue ?? 127), eventType: .advInd, isConnectable: true,
                          // bluetoothd merges the scan response into the device's properties: nothing more will come.
                          advertisingData: data, rawAdvertisingData: data.encode(), rawScanResponse: [])
    }

    package static let propertyBits: [String: UInt8] = [
        "broadcast": 0x01, "read": 0x02, "write-without-response": 0x04, "write": 0x08, "notify": 0x10,
        "indicate": 0x20, "authenticated-signed-writes": 0x40, "extended-properties": 0x80,
    ]
}
