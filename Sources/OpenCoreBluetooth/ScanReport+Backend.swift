import AdvertisingData
import BluetoothCore
import Host
import BluetoothEngine

extension ScanReport {
    /// What a backend reports of an advertiser, as the report our host gives (Core Supplement Part A): the decoded
    /// fields (name, services, service data, manufacturer data, TX power) rebuilt into AD structures, since
    /// bluetoothd reports properties, not packets.
    package init(_ advertisement: CBBackendAdvertisement) {
        var structures: [ADStructure] = []
        if let name = advertisement.localName { structures.append(.localName(LocalName(name), complete: true)) }
        let uuids = advertisement.serviceUUIDs
        let short = uuids.compactMap(\.uuid16)
        if !short.isEmpty { structures.append(.serviceUUIDs16(short, complete: true)) }
        let long = uuids.filter { $0.uuid16 == nil }
        if !long.isEmpty { structures.append(.serviceUUIDs128(long, complete: true)) }
        for (uuid, data) in advertisement.serviceData.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            structures.append(uuid.uuid16.map { .serviceData16($0, data: data) } ?? .serviceData128(uuid, data: data))
        }
        if let power = advertisement.txPowerLevel { structures.append(.txPowerLevel(Int8(clamping: power))) }
        if let bytes = advertisement.manufacturerData, bytes.count >= 2 {
            let company = CompanyIdentifier(rawValue: UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
            structures.append(.manufacturerData(company, data: Array(bytes.dropFirst(2))))
        }
        let data = AdvertisingData(structures)
        let address = advertisement.peer.address
        self.init(address: address, addressType: address.type == .random ? .random : .public,
                  rssi: Int8(clamping: advertisement.rssi), eventType: advertisement.isConnectable ? .advInd : .advNonconnInd,
                  isConnectable: advertisement.isConnectable, advertisingData: data, rawAdvertisingData: data.encode(),
                  rawScanResponse: nil)
    }
}
