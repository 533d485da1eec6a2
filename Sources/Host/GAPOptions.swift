import BluetoothRuntime
public import HCI

/// How to advertise (Core 5.4 Vol 4 Part E §7.8.5; Vol 3 Part C §9.1, §9.3 modes). Intervals in 0.625 ms units
/// (0x0020...0x4000; non-connectable and scannable types need at least 0x00A0 before 5.0 controllers).
public struct AdvertisingOptions: Hashable, Sendable {
    /// The legacy advertising PDU.
    public enum Kind: Hashable, Sendable {
        /// ADV_IND: connectable and scannable.
        case connectable
        /// ADV_SCAN_IND: scannable, not connectable.
        case scannable
        /// ADV_NONCONN_IND: neither (a beacon).
        case nonConnectable

        var advertisingType: LEAdvertisingType {
            switch self {
            case .connectable: .connectableUndirected
            case .scannable: .scannableUndirected
            case .nonConnectable: .nonConnectableUndirected
            }
        }

        /// Whether a scanner can ask for a scan response.
        public var hasScanResponse: Bool { self != .nonConnectable }
    }

    public var kind: Kind
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    /// Bit 0: channel 37, bit 1: 38, bit 2: 39.
    public var channelMap: UInt8

    public init(kind: Kind = .connectable, intervalMin: UInt16 = 0x00A0, intervalMax: UInt16 = 0x00A0, channelMap: UInt8 = 0x07) {
        self.kind = kind
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.channelMap = channelMap
    }
}

/// How to scan (Core 5.4 Vol 4 Part E §7.8.10, §7.8.11). Interval and window in 0.625 ms units (0x0004...0x4000,
/// window ≤ interval).
public struct ScanOptions: Hashable, Sendable {
    /// Active scanning sends SCAN_REQ and receives scan responses; passive only listens.
    public var active: Bool
    public var interval: UInt16
    public var window: UInt16
    /// Ask the controller to report each device once per scan.
    public var filterDuplicates: Bool

    public init(active: Bool = true, interval: UInt16 = 0x0060, window: UInt16 = 0x0030, filterDuplicates: Bool = true) {
        self.active = active
        self.interval = interval
        self.window = window
        self.filterDuplicates = filterDuplicates
    }
}

/// How to connect (Core 5.4 Vol 4 Part E §7.8.12). A pending connect has no time limit unless `timeout` is set
/// (as CoreBluetooth's `connect` does not time out); on expiry the host cancels it and reports
/// ``HostError/Code/timedOut``.
public struct ConnectOptions: Hashable, Sendable {
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
