public import BluetoothCore

/// The advertising data and scan response a peripheral sends for a local name and a list of services, laid out
/// the way CoreBluetooth's `startAdvertising([CBAdvertisementDataLocalNameKey:, ...ServiceUUIDsKey:])` does on
/// legacy advertising (31 octets each; Core 5.4 Vol 3 Part C §11).
///
/// Advertising data: Flags (LE General Discoverable, BR/EDR Not Supported), then the 16-bit and 128-bit service
/// UUID lists, as many UUIDs as fit. Scan response: the local name (complete, or shortened to the space left)
/// and the UUIDs that did not fit in the advertising data. Lists that could not carry every UUID are marked
/// incomplete ("overflow", as CoreBluetooth calls it). 32-bit UUIDs are sent in the 128-bit list.
///
/// `overflowServiceUUIDs` (an app in the background, on iOS) go into the ``ServiceOverflowArea`` instead: Apple's
/// Manufacturer Specific Data in the advertising data, found only by a central scanning for one of them.
public struct PeripheralAdvertisement: Hashable, Sendable {
    public var advertisingData: AdvertisingData
    public var scanResponse: AdvertisingData

    public init(localName: String?, serviceUUIDs: [BluetoothUUID], overflowServiceUUIDs: [BluetoothUUID] = [],
                flags: ADFlags = .generalDiscoverableLEOnly) {
        var advertising = AdvertisingDataBuilder()
        var response = AdvertisingDataBuilder()
        try? advertising.append(.flags(flags))
        if !overflowServiceUUIDs.isEmpty {
            let area = ServiceOverflowArea(serviceUUIDs: overflowServiceUUIDs)
            try? advertising.append(.manufacturerData(ServiceOverflowArea.company, data: area.dataAfterCompany))
        }
        let uuids = serviceUUIDs.uniqued()
        let short = uuids.compactMap(\.uuid16)
        let long = uuids.filter { $0.uuid16 == nil }
        // How many of each list fit in the advertising data, then in the scan response after the name.
        let shortInAdvertising = Self.fitting(count: short.count, size: 2, space: advertising.remainingSpace)
        var space = advertising.remainingSpace - (shortInAdvertising > 0 ? 2 + 2 * shortInAdvertising : 0)
        let longInAdvertising = Self.fitting(count: long.count, size: 16, space: space)
        if let localName { try? response.appendLocalName(localName) }
        space = response.remainingSpace
        let shortInResponse = Self.fitting(count: short.count - shortInAdvertising, size: 2, space: space)
        space -= shortInResponse > 0 ? 2 + 2 * shortInResponse : 0
        let longInResponse = Self.fitting(count: long.count - longInAdvertising, size: 16, space: space)
        let shortComplete = shortInAdvertising + shortInResponse == short.count
        let longComplete = longInAdvertising + longInResponse == long.count
        let shortSplit = [Array(short.prefix(shortInAdvertising)), Array(short.dropFirst(shortInAdvertising).prefix(shortInResponse))]
        let longSplit = [Array(long.prefix(longInAdvertising)), Array(long.dropFirst(longInAdvertising).prefix(longInResponse))]
        if !shortSplit[0].isEmpty { try? advertising.append(.serviceUUIDs16(shortSplit[0], complete: shortComplete)) }
        if !longSplit[0].isEmpty { try? advertising.append(.serviceUUIDs128(longSplit[0], complete: longComplete)) }
        if !shortSplit[1].isEmpty { try? response.append(.serviceUUIDs16(shortSplit[1], complete: shortComplete)) }
        if !longSplit[1].isEmpty { try? response.append(.serviceUUIDs128(longSplit[1], complete: longComplete)) }
        advertisingData = advertising.advertisingData
        scanResponse = response.advertisingData
    }

    /// How many `size`-octet items of `count` fit in one structure within `space` octets.
    private static func fitting(count: Int, size: Int, space: Int) -> Int {
        guard count > 0, space >= 2 + size else { return 0 }
        return min(count, (space - 2) / size)
    }

    /// Every service UUID of both packets.
    public var serviceUUIDs: [BluetoothUUID] {
        (advertisingData.serviceUUIDs + scanResponse.serviceUUIDs).uniqued()
    }
}
