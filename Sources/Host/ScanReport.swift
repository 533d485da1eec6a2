public import AdvertisingData
public import BluetoothCore
public import HCI

/// One device seen while scanning: its latest advertising PDU merged with its latest scan response (Core 5.4
/// Vol 4 Part E §7.7.65.2; Vol 6 Part B §2.3.2 SCAN_RSP; Vol 3 Part C §11 advertising data).
public struct ScanReport: Hashable, Sendable {
    public var address: BluetoothAddress
    public var addressType: LEAddressType
    public var rssi: Int8
    /// The type of the report that produced this one (ADV_IND ... SCAN_RSP).
    public var eventType: LEAdvertisingReportType
    /// Whether the device accepts connections (its advertising PDU was ADV_IND or ADV_DIRECT_IND).
    public var isConnectable: Bool
    /// The advertising data's AD structures followed by the scan response's.
    public var advertisingData: AdvertisingData
    /// The raw advertising data and scan response, as last received.
    public var rawAdvertisingData: [UInt8]
    public var rawScanResponse: [UInt8]?
    /// Extended advertising (Core 5.4 Vol 4 Part E §7.7.65.13): whether the last packet was a legacy PDU, the
    /// primary PHY it came on, the secondary PHY of its auxiliary PDUs (nil for legacy PDUs), its Advertising SID
    /// and the TX power it announced (nil when not given). Legacy scanning reports legacy PDUs on LE 1M.
    public var isLegacy: Bool
    public var primaryPHY: LEPhy
    public var secondaryPHY: LEPhy?
    public var advertisingSID: UInt8?
    public var txPower: Int8?

    public init(address: BluetoothAddress, addressType: LEAddressType, rssi: Int8, eventType: LEAdvertisingReportType,
                isConnectable: Bool, advertisingData: AdvertisingData, rawAdvertisingData: [UInt8],
                rawScanResponse: [UInt8]?, isLegacy: Bool = true, primaryPHY: LEPhy = .le1M, secondaryPHY: LEPhy? = nil,
                advertisingSID: UInt8? = nil, txPower: Int8? = nil) {
        self.address = address
        self.addressType = addressType
        self.rssi = rssi
        self.eventType = eventType
        self.isConnectable = isConnectable
        self.advertisingData = advertisingData
        self.rawAdvertisingData = rawAdvertisingData
        self.rawScanResponse = rawScanResponse
        self.isLegacy = isLegacy
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
    }

    /// The local name, from either packet.
    public var localName: String? { advertisingData.localName }
}

/// Merges advertising reports and scan responses per device while a scan runs (Core 5.4 Vol 4 Part E §7.7.65.2).
/// Keeps at most `capacity` devices, forgetting the least recently heard first. Confined to the host's loop.
struct ScanReportMerger {
    private struct Device {
        var advertisingData: [UInt8] = []
        var scanResponse: [UInt8]?
        var isConnectable = false
        var lastHeard: UInt64 = 0
    }

    let capacity: Int
    private var devices: [BluetoothAddress: Device] = [:]
    private var clock: UInt64 = 0
    /// Joins the pieces of extended advertising reports before they are merged.
    private var assembler = ExtendedReportAssembler()
    /// Extended advertisements dropped because the controller truncated them (or they grew past 1,650 octets).
    private(set) var droppedExtendedAdvertisements = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var deviceCount: Int { devices.count }

    mutating func reset() {
        devices = [:]
        assembler.reset()
    }

    /// One LE Extended Advertising Report: the merged device once its advertisement is whole, else nil.
    mutating func mergePiece(_ report: LEExtendedAdvertisingReport) -> ScanReport? {
        switch assembler.add(report) {
        case .complete(let whole): return merge(whole)
        case .pending: return nil
        case .dropped:
            droppedExtendedAdvertisements += 1
            return nil
        }
    }

    mutating func merge(_ report: LEAdvertisingReport) -> ScanReport {
        clock &+= 1
        var device = devices[report.address] ?? Device()
        if report.eventType == .scanResponse {
            device.scanResponse = report.data
        } else {
            device.advertisingData = report.data
            device.isConnectable = report.eventType == .advInd || report.eventType == .advDirectInd
        }
        device.lastHeard = clock
        if devices[report.address] == nil, devices.count >= capacity,
           let oldest = devices.min(by: { $0.value.lastHeard < $1.value.lastHeard })?.key {
            devices[oldest] = nil
        }
        devices[report.address] = device
        let advertising = Self.decode(device.advertisingData)
        let response = device.scanResponse.map(Self.decode) ?? AdvertisingData()
        return ScanReport(
            address: report.address, addressType: report.addressType, rssi: report.rssi, eventType: report.eventType,
            isConnectable: device.isConnectable,
            advertisingData: AdvertisingData(advertising.structures + response.structures),
            rawAdvertisingData: device.advertisingData, rawScanResponse: device.scanResponse)
    }

    /// A whole extended advertisement or scan response (``ExtendedReportAssembler``), legacy PDUs included.
    mutating func merge(_ report: LEExtendedAdvertisingReport) -> ScanReport? {
        guard let shape = report.legacyReport else { return nil }
        var merged = merge(shape)
        let legacy = report.eventType & 0x10 != 0
        merged.isLegacy = legacy
        merged.primaryPHY = report.primaryPHY
        merged.secondaryPHY = legacy ? nil : report.secondaryPHY
        merged.advertisingSID = report.advertisingSID <= 0x0F ? report.advertisingSID : nil
        merged.txPower = report.txPower == 127 ? nil : report.txPower
        return merged
    }

    /// AD structures of untrusted bytes, never throwing: contents that do not parse are kept raw, broken framing
    /// gives no structures (the raw bytes stay in the report).
    private static func decode(_ bytes: [UInt8]) -> AdvertisingData {
        (try? AdvertisingData(decoding: bytes, kind: bytes.count > 31 ? .extended : .legacy, lenient: true)) ?? AdvertisingData()
    }
}
