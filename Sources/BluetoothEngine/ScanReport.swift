public import AdvertisingData
public import BluetoothCore
public import HCI

/// One device seen while scanning: its latest advertising PDU merged with its latest scan response (Core 5.4
/// Vol 4 Part E §7.7.65.2; Vol 6 Part B §2.3.2 SCAN_RSP; Vol 3 Part C §11 advertising data).
public struct ScanReport: Hashable, Sendable, Codable {
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
