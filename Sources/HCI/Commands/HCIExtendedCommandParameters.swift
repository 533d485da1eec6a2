public import BluetoothCore

/// The Advertising_Event_Properties bit field of HCI_LE_Set_Extended_Advertising_Parameters (Core 5.4 Vol 4
/// Part E §7.8.53). Bits 7...15 are reserved and kept as they are.
public struct LEAdvertisingEventProperties: OptionSet, Hashable, Sendable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public static let connectable = LEAdvertisingEventProperties(rawValue: 1 << 0)
    public static let scannable = LEAdvertisingEventProperties(rawValue: 1 << 1)
    public static let directed = LEAdvertisingEventProperties(rawValue: 1 << 2)
    /// High duty cycle directed connectable advertising (at most 3.75 ms interval).
    public static let highDutyCycleDirected = LEAdvertisingEventProperties(rawValue: 1 << 3)
    /// Use legacy advertising PDUs.
    public static let legacy = LEAdvertisingEventProperties(rawValue: 1 << 4)
    /// Omit the advertiser's address from all PDUs.
    public static let anonymous = LEAdvertisingEventProperties(rawValue: 1 << 5)
    /// Include TxPower in the extended header of at least one advertising PDU.
    public static let includeTxPower = LEAdvertisingEventProperties(rawValue: 1 << 6)

    /// Legacy ADV_IND (connectable and scannable undirected, legacy PDUs): 0x0013.
    public static let legacyConnectableScannable: LEAdvertisingEventProperties = [.connectable, .scannable, .legacy]

    static let names: [(UInt16, String)] = [
        (1 << 0, "Connectable"), (1 << 1, "Scannable"), (1 << 2, "Directed"), (1 << 3, "High Duty Cycle"),
        (1 << 4, "Legacy PDUs"), (1 << 5, "Anonymous"), (1 << 6, "Include TxPower"),
    ]

    /// "0x0013 (Connectable, Scannable, Legacy PDUs)".
    public var description: String {
        var names = Self.names.filter { rawValue & $0.0 != 0 }.map(\.1)
        if rawValue & 0xFF80 != 0 { names.append("reserved bits") }
        return "\(Dissection.hex16(rawValue)) (\(names.isEmpty ? "none" : names.joined(separator: ", ")))"
    }
}

/// The parameters of HCI_LE_Set_Extended_Advertising_Parameters [v1] (Core 5.4 Vol 4 Part E §7.8.53).
/// Primary intervals are 24-bit values in 0.625 ms units (only their low 24 bits are encoded).
public struct LEExtendedAdvertisingParameters: Hashable, Sendable {
    /// The advertising set (0x00...0xEF).
    public var advertisingHandle: UInt8
    public var eventProperties: LEAdvertisingEventProperties
    /// 0.625 ms units, 24 bits (0x000020...0xFFFFFF).
    public var primaryIntervalMin: UInt32
    /// 0.625 ms units, 24 bits.
    public var primaryIntervalMax: UInt32
    /// Bit 0: channel 37, bit 1: channel 38, bit 2: channel 39.
    public var primaryChannelMap: UInt8
    public var ownAddressType: LEAddressType
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    /// As in the legacy command (0x00...0x03).
    public var filterPolicy: UInt8
    /// dBm, -127...+20; ``noTxPowerPreference`` (0x7F) leaves the choice to the controller.
    public var txPower: Int8
    /// LE 1M or LE Coded.
    public var primaryPHY: LEPhy
    /// Advertising events the controller may skip on the secondary channel before sending AUX_ADV_IND.
    public var secondaryMaxSkip: UInt8
    /// LE 1M, LE 2M or LE Coded.
    public var secondaryPHY: LEPhy
    /// Advertising_SID, 0x00...0x0F.
    public var sid: UInt8
    public var scanRequestNotificationEnable: Bool

    /// Advertising_TX_Power 0x7F: the host has no preference.
    public static let noTxPowerPreference: Int8 = 0x7F

    public init(
        advertisingHandle: UInt8 = 0, eventProperties: LEAdvertisingEventProperties = .legacyConnectableScannable,
        primaryIntervalMin: UInt32 = 0x0800, primaryIntervalMax: UInt32 = 0x0800, primaryChannelMap: UInt8 = 0x07,
        ownAddressType: LEAddressType = .public, peerAddressType: LEAddressType = .public,
        peerAddress: BluetoothAddress = .zero, filterPolicy: UInt8 = 0, txPower: Int8 = noTxPowerPreference,
        primaryPHY: LEPhy = .le1M, secondaryMaxSkip: UInt8 = 0, secondaryPHY: LEPhy = .le1M, sid: UInt8 = 0,
        scanRequestNotificationEnable: Bool = false
    ) {
        self.advertisingHandle = advertisingHandle
        self.eventProperties = eventProperties
        self.primaryIntervalMin = primaryIntervalMin
        self.primaryIntervalMax = primaryIntervalMax
        self.primaryChannelMap = primaryChannelMap
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.filterPolicy = filterPolicy
        self.txPower = txPower
        self.primaryPHY = primaryPHY
        self.secondaryMaxSkip = secondaryMaxSkip
        self.secondaryPHY = secondaryPHY
        self.sid = sid
        self.scanRequestNotificationEnable = scanRequestNotificationEnable
    }
}

/// The Operation of HCI_LE_Set_Extended_Advertising_Data / _Scan_Response_Data (Core 5.4 Vol 4 Part E §7.8.54,
/// §7.8.55): which fragment of the data this command carries.
public struct LEAdvertisingDataOperation: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "advertising data operation"
    public static let intermediateFragment = LEAdvertisingDataOperation(0x00)
    public static let firstFragment = LEAdvertisingDataOperation(0x01)
    public static let lastFragment = LEAdvertisingDataOperation(0x02)
    public static let complete = LEAdvertisingDataOperation(0x03)
    /// Unchanged data: only the Advertising DID is updated (no data).
    public static let unchanged = LEAdvertisingDataOperation(0x04)
    public static let names: [UInt8: String] = [
        0x00: "Intermediate fragment", 0x01: "First fragment", 0x02: "Last fragment", 0x03: "Complete data",
        0x04: "Unchanged data",
    ]
}

/// The parameters of HCI_LE_Set_Extended_Advertising_Data and HCI_LE_Set_Extended_Scan_Response_Data
/// (Core 5.4 Vol 4 Part E §7.8.54, §7.8.55): one fragment of at most 251 octets.
public struct LEExtendedAdvertisingData: Hashable, Sendable {
    public var advertisingHandle: UInt8
    public var operation: LEAdvertisingDataOperation
    /// 0x00: the controller may fragment all data; 0x01: it should not fragment (or should minimize it).
    public var fragmentPreference: UInt8
    /// At most ``maximumFragmentLength`` octets; longer data is truncated when encoding.
    public var data: [UInt8]

    /// The largest fragment one command carries (255 parameter octets minus the 4 before the data).
    public static let maximumFragmentLength = 251

    public init(advertisingHandle: UInt8 = 0, operation: LEAdvertisingDataOperation = .complete,
                fragmentPreference: UInt8 = 0x01, data: [UInt8]) {
        self.advertisingHandle = advertisingHandle
        self.operation = operation
        self.fragmentPreference = fragmentPreference
        self.data = data
    }
}

/// One advertising set of HCI_LE_Set_Extended_Advertising_Enable (Core 5.4 Vol 4 Part E §7.8.56).
public struct LEExtendedAdvertisingSet: Hashable, Sendable {
    public var advertisingHandle: UInt8
    /// 10 ms units; 0: advertise until disabled.
    public var duration: UInt16
    /// 0: no maximum.
    public var maxExtendedAdvertisingEvents: UInt8

    public init(advertisingHandle: UInt8, duration: UInt16 = 0, maxExtendedAdvertisingEvents: UInt8 = 0) {
        self.advertisingHandle = advertisingHandle
        self.duration = duration
        self.maxExtendedAdvertisingEvents = maxExtendedAdvertisingEvents
    }
}

/// The scan parameters of one PHY in HCI_LE_Set_Extended_Scan_Parameters (Core 5.4 Vol 4 Part E §7.8.64).
/// Interval and window are in 0.625 ms units.
public struct LEExtendedScanPHYParameters: Hashable, Sendable {
    /// 0x00 passive, 0x01 active.
    public var scanType: UInt8
    public var interval: UInt16
    public var window: UInt16

    public init(scanType: UInt8 = 0x01, interval: UInt16 = 0x0010, window: UInt16 = 0x0010) {
        self.scanType = scanType
        self.interval = interval
        self.window = window
    }
}

/// The parameters of HCI_LE_Set_Extended_Scan_Parameters (Core 5.4 Vol 4 Part E §7.8.64). Scanning_PHYs follows
/// from which PHYs have parameters (bit 0 LE 1M, bit 2 LE Coded), so the bits and the blocks always agree.
public struct LEExtendedScanParameters: Hashable, Sendable {
    public var ownAddressType: LEAddressType
    /// 0x00...0x03 as in the legacy command.
    public var filterPolicy: UInt8
    /// Scanning on LE 1M (Scanning_PHYs bit 0).
    public var le1M: LEExtendedScanPHYParameters?
    /// Scanning on LE Coded (Scanning_PHYs bit 2).
    public var leCoded: LEExtendedScanPHYParameters?

    public init(ownAddressType: LEAddressType = .public, filterPolicy: UInt8 = 0,
                le1M: LEExtendedScanPHYParameters? = LEExtendedScanPHYParameters(),
                leCoded: LEExtendedScanPHYParameters? = nil) {
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
        self.le1M = le1M
        self.leCoded = leCoded
    }

    /// The Scanning_PHYs bit field.
    public var scanningPHYs: UInt8 { (le1M == nil ? 0 : 0x01) | (leCoded == nil ? 0 : 0x04) }

    /// The per-PHY parameters in wire order with their PHY bit.
    var blocks: [(UInt8, LEExtendedScanPHYParameters)] {
        [(0x01, le1M), (0x04, leCoded)].compactMap { bit, block in block.map { (bit, $0) } }
    }
}

/// The parameters of one PHY in HCI_LE_Extended_Create_Connection (Core 5.4 Vol 4 Part E §7.8.66): scan interval
/// and window in 0.625 ms units, then the connection parameters as HCI_LE_Create_Connection carries them.
public struct LEExtendedInitiatingPHYParameters: Hashable, Sendable {
    public var scanInterval: UInt16
    public var scanWindow: UInt16
    public var connection: LEConnectionParameters

    public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060,
                connection: LEConnectionParameters = LEConnectionParameters()) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.connection = connection
    }
}

/// The parameters of HCI_LE_Extended_Create_Connection [v1] (Core 5.4 Vol 4 Part E §7.8.66). Initiating_PHYs
/// follows from which PHYs have parameters (bit 0 LE 1M, bit 1 LE 2M, bit 2 LE Coded).
public struct LEExtendedCreateConnectionParameters: Hashable, Sendable {
    /// 0x00: use the peer address; 0x01: use the Filter Accept List.
    public var initiatorFilterPolicy: UInt8
    public var ownAddressType: LEAddressType
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    public var le1M: LEExtendedInitiatingPHYParameters?
    public var le2M: LEExtendedInitiatingPHYParameters?
    public var leCoded: LEExtendedInitiatingPHYParameters?

    public init(initiatorFilterPolicy: UInt8 = 0, ownAddressType: LEAddressType = .public,
                peerAddressType: LEAddressType, peerAddress: BluetoothAddress,
                le1M: LEExtendedInitiatingPHYParameters? = LEExtendedInitiatingPHYParameters(),
                le2M: LEExtendedInitiatingPHYParameters? = nil, leCoded: LEExtendedInitiatingPHYParameters? = nil) {
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.le1M = le1M
        self.le2M = le2M
        self.leCoded = leCoded
    }

    /// Connects to `peer`, with its address type taken from the address.
    public init(peer: BluetoothAddress, ownAddressType: LEAddressType = .public,
                le1M: LEExtendedInitiatingPHYParameters? = LEExtendedInitiatingPHYParameters(),
                le2M: LEExtendedInitiatingPHYParameters? = nil, leCoded: LEExtendedInitiatingPHYParameters? = nil) {
        self.init(ownAddressType: ownAddressType, peerAddressType: LEAddressType(peer.type), peerAddress: peer,
                  le1M: le1M, le2M: le2M, leCoded: leCoded)
    }

    /// The Initiating_PHYs bit field.
    public var initiatingPHYs: UInt8 {
        (le1M == nil ? 0 : 0x01) | (le2M == nil ? 0 : 0x02) | (leCoded == nil ? 0 : 0x04)
    }

    var blocks: [(UInt8, LEExtendedInitiatingPHYParameters)] {
        [(0x01, le1M), (0x02, le2M), (0x04, leCoded)].compactMap { bit, block in block.map { (bit, $0) } }
    }
}
