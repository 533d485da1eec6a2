import AdvertisingData
import BluetoothCore
import Host
import BluetoothEngine

/// Which advertising reports `blue scan` shows (Core 5.4 Vol 4 Part E §7.7.65.2 reports; Core Supplement Part A
/// §1.1 local name, §1.4 manufacturer data): service UUIDs, a name substring, an address or its leading octets, a
/// minimum RSSI and a company identifier; every given criterion must hold. Built from the command line, each bad
/// value a usage error of one line.
struct ScanFilter: Sendable {
    var services: [BluetoothUUID] = []
    /// Lowercased; matched against the local name (complete or shortened).
    var name: String?
    /// Octets from the most significant, as written ("AA:BB" matches AA:BB:xx:xx:xx:xx).
    var addressPrefix: [UInt8] = []
    var minimumRSSI: Int?
    var company: UInt16?

    init() {}

    init(services: [String], name: String?, address: String?, rssiMin: Int?, manufacturer: String?) throws(CLIFailure) {
        for text in services {
            do {
                self.services.append(try BluetoothUUID(string: text))
            } catch {
                throw CLIFailure(.usage, "bad UUID \"\(text)\": expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits")
            }
        }
        if let name {
            guard !name.isEmpty else { throw CLIFailure(.usage, "--name: give the text a name must contain") }
            self.name = name.lowercased()
        }
        if let address {
            let parts = address.split(separator: ":", omittingEmptySubsequences: false)
            let octets = parts.compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
            guard (1...6).contains(parts.count), octets.count == parts.count else {
                throw CLIFailure(.usage, "--address \(address): expected an address or its first octets (AA:BB:CC)")
            }
            addressPrefix = octets
        }
        if let rssiMin {
            guard (-127...20).contains(rssiMin) else {
                throw CLIFailure(.usage, "--rssi-min \(rssiMin): expected dBm from -127 to 20 (e.g. -70)")
            }
            minimumRSSI = rssiMin
        }
        if let manufacturer {
            let text = manufacturer.lowercased()
            let value = text.hasPrefix("0x") ? UInt16(text.dropFirst(2), radix: 16) : UInt16(text)
            guard let value else {
                throw CLIFailure(.usage, "--manufacturer \(manufacturer): expected a company identifier (0x004C or 76)")
            }
            company = value
        }
    }

    func accepts(_ report: ScanReport) -> Bool {
        let data = report.advertisingData
        if !services.isEmpty, !data.serviceUUIDs.contains(where: services.contains) { return false }
        if let name, !(report.localName?.lowercased().contains(name) ?? false) { return false }
        if !addressPrefix.isEmpty {
            let bytes = report.address.bytesMostSignificantFirst
            guard Array(bytes.prefix(addressPrefix.count)) == addressPrefix else { return false }
        }
        if let minimumRSSI {
            guard report.rssi != ScanTable.rssiNotAvailable, Int(report.rssi) >= minimumRSSI else { return false }
        }
        if let company, data.manufacturerData?.company.rawValue != company { return false }
        return true
    }
}

/// The order of `blue scan`'s live table.
enum ScanOrder: String, CaseIterable, Sendable {
    /// First heard first.
    case first
    /// Strongest first (unknown RSSI last).
    case rssi
    /// By name (devices without one last), then address.
    case name
}

extension BluetoothAddress {
    /// The six octets as written (most significant first).
    var bytesMostSignificantFirst: [UInt8] {
        (0..<6).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(5 - $0))) }
    }
}
