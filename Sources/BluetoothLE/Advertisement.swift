public import AdvertisingData
public import BluetoothCore
public import BluetoothEngine

/// One device heard while scanning: its advertising data merged with its scan response (Core 5.4 Vol 3 Part C
/// §11; Vol 4 Part E §7.7.65.2), with the RSSI of the packet that produced this report.
public struct Advertisement: Hashable, Sendable, CustomStringConvertible {
    /// The advertiser's address (public or random), as `connect(to:)` takes it.
    public var address: BluetoothAddress
    /// The RSSI of the packet that produced this report, in dBm (127: not available).
    public var rssi: Int8
    /// Whether the advertising event type was connectable.
    public var isConnectable: Bool
    /// The AD structures of the advertising data followed by those of the scan response.
    public var data: AdvertisingData
    /// The host's report, with the raw packets.
    public var report: ScanReport

    /// The advertisement of a host scan report.
    public init(_ report: ScanReport) {
        address = report.address
        rssi = report.rssi
        isConnectable = report.isConnectable
        data = report.advertisingData
        self.report = report
    }

    /// The local name (complete or shortened), from either packet.
    public var localName: String? { data.localName }
    /// The service UUIDs listed (16-, 32- and 128-bit lists, complete or not).
    public var serviceUUIDs: [BluetoothUUID] { data.serviceUUIDs }
    /// The Manufacturer Specific Data: the company identifier and the bytes after it.
    public var manufacturerData: (company: CompanyIdentifier, data: [UInt8])? { data.manufacturerData }
    /// Service data, by service UUID.
    public var serviceData: [BluetoothUUID: [UInt8]] { data.serviceData }
    /// The advertised TX Power Level, in dBm.
    public var txPowerLevel: Int8? { data.txPowerLevel }
    /// Whether it came in legacy advertising PDUs (false: Bluetooth 5 extended advertising, ADV_EXT_IND and its
    /// auxiliary chain, Core 5.4 Vol 6 Part B §2.3.4).
    public var isLegacy: Bool { report.isLegacy }
    /// The PHY of the primary advertising channel (LE 1M, or LE Coded for long range) and, for extended advertising,
    /// of its auxiliary PDUs (LE 1M, 2M or Coded).
    public var primaryPHY: LEPhy { report.primaryPHY }
    public var secondaryPHY: LEPhy? { report.secondaryPHY }

    public var description: String {
        "\(address) \(rssi) dBm \(localName.map { "\"\($0)\"" } ?? "(no name)")"
            + (serviceUUIDs.isEmpty ? "" : " services \(serviceUUIDs)")
    }

    /// The raw bytes both packets carried, to tell a changed advertisement from a repeated one.
    var contentKey: [UInt8] { report.rawAdvertisingData + [0xFF] + (report.rawScanResponse ?? []) }
}
