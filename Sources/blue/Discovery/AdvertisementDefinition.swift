import AdvertisingData
import BluetoothCore
import FoundationEssentials

/// What `blue advertise` puts on the air, from its options (Core Supplement Part A: flags, local name, service
/// UUIDs, service data, manufacturer data; Apple's iBeacon; Google's Eddystone UID, URL and TLM frames), checked
/// before anything is sent: each malformed value one line and exit 64, and the whole fitted into legacy advertising
/// (31 octets of advertising data, the name moved to the scan response when it does not fit).
struct AdvertisementDefinition: Sendable {
    var name: String?
    var services: [BluetoothUUID] = []
    var serviceData: [(BluetoothUUID, [UInt8])] = []
    var manufacturer: (CompanyIdentifier, [UInt8])?
    var beacon: ADStructure?
    /// Eddystone-TLM's battery and temperature: the frame is rebuilt with the live counts each time it is sent.
    var telemetry: (millivolts: UInt16, temperature: Int16)?
    var connectable = false

    /// Parses `COMPANY:HEX` ("0x004C:0215..." or "76:..."), `UUID:HEX`, `UUID,MAJOR,MINOR`, `NAMESPACE,INSTANCE` etc.
    static func parse(name: String?, services: [String], serviceData: [String], manufacturer: String?, iBeacon: String?,
                      measuredPower: Int, eddystoneUID: String?, eddystoneURL: String?, eddystoneTLM: String?, txPower: Int,
                      connectable: Bool) throws(CLIFailure) -> AdvertisementDefinition {
        var definition = AdvertisementDefinition()
        definition.name = name
        definition.connectable = connectable
        for text in services { definition.services.append(try uuid(text, "--service")) }
        for text in serviceData {
            let (uuidText, hex) = try split(text, "--service-data", "UUID:HEX")
            definition.serviceData.append((try uuid(uuidText, "--service-data"), try bytes(hex, "--service-data")))
        }
        if let manufacturer {
            let (companyText, hex) = try split(manufacturer, "--manufacturer", "COMPANY:HEX")
            let value = companyText.lowercased().hasPrefix("0x") ? UInt16(companyText.dropFirst(2), radix: 16) : UInt16(companyText)
            guard let value else { throw CLIFailure(.usage, "--manufacturer \(manufacturer): the company is 0x004C or 76") }
            definition.manufacturer = (CompanyIdentifier(rawValue: value), try bytes(hex, "--manufacturer"))
        }
        guard (-128...127).contains(measuredPower), (-128...127).contains(txPower) else {
            throw CLIFailure(.usage, "--measured-power and --tx-power are dBm from -128 to 127")
        }
        var beacons = 0
        if let iBeacon {
            beacons += 1
            let parts = iBeacon.split(separator: ",").map(String.init)
            guard parts.count == 3, let major = UInt16(parts[1]), let minor = UInt16(parts[2]),
                  let proximity = try? BluetoothUUID(string: parts[0]), proximity.uuid16 == nil, proximity.uuid32 == nil else {
                throw CLIFailure(.usage, "--ibeacon \(iBeacon): expected UUID,MAJOR,MINOR (a 128-bit UUID, 0-65535 twice)")
            }
            definition.beacon = IBeacon(proximityUUID: proximity, major: major, minor: minor, measuredPower: Int8(measuredPower)).adStructure
        }
        if let eddystoneUID {
            beacons += 1
            let parts = eddystoneUID.split(separator: ",").map(String.init)
            guard parts.count == 2, let namespace = try? Hex.decode(parts[0]), namespace.count == 10,
                  let instance = try? Hex.decode(parts[1]), instance.count == 6 else {
                throw CLIFailure(.usage, "--eddystone-uid \(eddystoneUID): expected NAMESPACE,INSTANCE (20 and 12 hex digits)")
            }
            definition.beacon = EddystoneFrame.uid(EddystoneUID(txPower: Int8(txPower), namespace: namespace, instance: instance)).adStructure
        }
        if let eddystoneURL {
            beacons += 1
            do {
                definition.beacon = EddystoneFrame.url(try EddystoneURL(txPower: Int8(txPower), url: eddystoneURL)).adStructure
            } catch {
                throw CLIFailure(.usage, "--eddystone-url \(eddystoneURL): \(error)")
            }
        }
        if let eddystoneTLM {
            beacons += 1
            let parts = eddystoneTLM.split(separator: ",").map(String.init)
            guard parts.count == 2, let millivolts = UInt16(parts[0]), let celsius = Double(parts[1]), (-128.0..<128.0).contains(celsius) else {
                throw CLIFailure(.usage, "--eddystone-tlm \(eddystoneTLM): expected MILLIVOLTS,CELSIUS (3000,21.5)")
            }
            definition.telemetry = (millivolts, Int16((celsius * 256).rounded()))
        }
        guard beacons <= 1 else {
            throw CLIFailure(.usage, "one beacon frame at a time (--ibeacon, --eddystone-uid, --eddystone-url or --eddystone-tlm)")
        }
        return definition
    }

    /// The advertising data and scan response, with TLM's counts when it is a telemetry beacon. The name goes into
    /// the advertising data when it fits, else into the scan response (which makes the advertising scannable).
    func packets(advertisementCount: UInt32 = 0, uptimeDeciseconds: UInt32 = 0) throws(CLIFailure) -> (advertising: AdvertisingData, scanResponse: AdvertisingData) {
        var structures: [ADStructure] = [.flags(.generalDiscoverableLEOnly)]
        let short = services.compactMap(\.uuid16)
        var eddystone = false
        if let telemetry {
            eddystone = true
            structures.append(.serviceUUIDs16([EddystoneFrame.serviceUUID], complete: true))
            structures.append(EddystoneFrame.tlm(.plain(.init(batteryMillivolts: telemetry.millivolts, temperature: telemetry.temperature,
                                                             advertisementCount: advertisementCount,
                                                             uptimeDeciseconds: uptimeDeciseconds))).adStructure)
        } else if case .serviceData16(EddystoneFrame.serviceUUID, _)? = beacon {
            eddystone = true
            structures.append(.serviceUUIDs16([EddystoneFrame.serviceUUID], complete: true))
        }
        if !eddystone, !short.isEmpty { structures.append(.serviceUUIDs16(short, complete: true)) }
        let long = services.filter { $0.uuid16 == nil }
        if !long.isEmpty { structures.append(.serviceUUIDs128(long, complete: true)) }
        if let beacon, telemetry == nil { structures.append(beacon) }
        for (uuid, data) in serviceData {
            structures.append(uuid.uuid16.map { .serviceData16($0, data: data) } ?? .serviceData128(uuid, data: data))
        }
        if let (company, data) = manufacturer { structures.append(.manufacturerData(company, data: data)) }
        var advertising = AdvertisingData(structures)
        var response = AdvertisingData()
        if let name {
            let named = AdvertisingData(structures + [.localName(LocalName(name), complete: true)])
            if named.encodedLength <= 31 { advertising = named } else { response = AdvertisingData([.localName(LocalName(name), complete: true)]) }
        }
        guard advertising.encodedLength <= 31 else {
            throw CLIFailure(.usage, "the advertising data takes \(advertising.encodedLength) octets; legacy advertising carries 31 "
                             + "(drop a --service, --service-data or --manufacturer)")
        }
        guard response.encodedLength <= 31 else {
            throw CLIFailure(.usage, "--name takes \(response.encodedLength) octets in the scan response; it carries 31")
        }
        return (advertising, response)
    }

    private static func uuid(_ text: String, _ option: String) throws(CLIFailure) -> BluetoothUUID {
        do { return try BluetoothUUID(string: text) } catch {
            throw CLIFailure(.usage, "\(option) \(text): expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits")
        }
    }

    private static func bytes(_ text: String, _ option: String) throws(CLIFailure) -> [UInt8] {
        do { return try Hex.decode(text) } catch { throw CLIFailure(.usage, "\(option): \"\(text)\" is not hex octets") }
    }

    private static func split(_ text: String, _ option: String, _ shape: String) throws(CLIFailure) -> (String, String) {
        guard let colon = text.lastIndex(of: ":") else { throw CLIFailure(.usage, "\(option) \(text): expected \(shape)") }
        return (String(text[..<colon]), String(text[text.index(after: colon)...]))
    }
}
