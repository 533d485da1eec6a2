import BluetoothRuntime
public import HCI

/// How to advertise (Core 5.4 Vol 4 Part E §7.8.5; Vol 3 Part C §9.1, §9.3 modes). Intervals in 0.625 ms units
/// (0x0020...0x4000; non-connectable and scannable types need at least 0x00A0 before 5.0 controllers).
public struct AdvertisingOptions: Hashable, Sendable, Codable {
    /// The legacy advertising PDU.
    public enum Kind: Hashable, Sendable, Codable {
        /// ADV_IND: connectable and scannable.
        case connectable
        /// ADV_SCAN_IND: scannable, not connectable.
        case scannable
        /// ADV_NONCONN_IND: neither (a beacon).
        case nonConnectable

        package var advertisingType: LEAdvertisingType {
            switch self {
            case .connectable: .connectableUndirected
            case .scannable: .scannableUndirected
            case .nonConnectable: .nonConnectableUndirected
            }
        }

        /// Whether a scanner can ask for a scan response.
        public var hasScanResponse: Bool { self != .nonConnectable }
    }

    /// Which advertising PDUs carry the data on a controller with the extended commands (Core 5.4 Vol 6 Part B
    /// §2.3.1, §2.3.4).
    public enum PDUs: Hashable, Sendable, Codable {
        /// Legacy PDUs when the data fits them (31 octets of advertising data and of scan response: every scanner,
        /// 4.x ones too, sees it), else extended ones. As Linux does.
        case automatic
        /// ADV_EXT_IND and its auxiliary chain even for short data (the primary and secondary PHYs then apply).
        case extended
    }

    public var kind: Kind
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    /// Bit 0: channel 37, bit 1: 38, bit 2: 39.
    public var channelMap: UInt8
    public var pdus: PDUs
    /// The PHY of ADV_EXT_IND (LE 1M or LE Coded) and of the auxiliary PDUs (LE 1M, 2M or Coded) of extended
    /// advertising; legacy PDUs are always on LE 1M.
    public var primaryPHY: LEPhy
    public var secondaryPHY: LEPhy

    public init(kind: Kind = .connectable, intervalMin: UInt16 = 0x00A0, intervalMax: UInt16 = 0x00A0, channelMap: UInt8 = 0x07,
                pdus: PDUs = .automatic, primaryPHY: LEPhy = .le1M, secondaryPHY: LEPhy = .le1M) {
        self.kind = kind
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.channelMap = channelMap
        self.pdus = pdus
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
    }
}

/// How to scan (Core 5.4 Vol 4 Part E §7.8.10, §7.8.11). Interval and window in 0.625 ms units (0x0004...0x4000,
/// window ≤ interval).
public struct ScanOptions: Hashable, Sendable, Codable {
    /// Active scanning sends SCAN_REQ and receives scan responses; passive only listens.
    public var active: Bool
    public var interval: UInt16
    public var window: UInt16
    /// Ask the controller to report each device once per scan.
    public var filterDuplicates: Bool
    /// With the extended commands: scan on LE Coded too, when the controller has it (Core 5.4 Vol 4 Part E
    /// §7.8.64), to hear long-range advertisers.
    public var scansCodedPHY: Bool

    public init(active: Bool = true, interval: UInt16 = 0x0060, window: UInt16 = 0x0030, filterDuplicates: Bool = true,
                scansCodedPHY: Bool = true) {
        self.active = active
        self.interval = interval
        self.window = window
        self.filterDuplicates = filterDuplicates
        self.scansCodedPHY = scansCodedPHY
    }
}

/// How to connect (Core 5.4 Vol 4 Part E §7.8.12). A pending connect has no time limit unless `timeout` is set
/// (as CoreBluetooth's `connect` does not time out); on expiry the host cancels it and reports
/// ``HostError/Code/timedOut``.
public struct ConnectOptions: Hashable, Sendable, Codable {
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    public var parameters: LEConnectionParameters
    public var timeout: Duration?

    public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060,
                parameters: LEConnectionParameters = LEConnectionParameters(), timeout: Duration? = nil) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.parameters = parameters
        self.timeout = timeout
    }
}
