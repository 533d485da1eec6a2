import BluetoothCore
import BluetoothRuntime
import HCI

/// One advertising set of the extended advertising commands (Core 5.4 Vol 4 Part E §7.8.53–§7.8.61; Vol 6 Part B
/// §4.4.2): its parameters, random address, advertising and scan response data (assembled from the host's
/// fragments), and whether and until when it is enabled.
struct AdvertisingSet {
    var parameters: LEExtendedAdvertisingParameters
    /// LE Set Advertising Set Random Address (§7.8.52): the address of Own_Address_Type 0x01 (and 0x03 without a
    /// local IRK).
    var randomAddress: BluetoothAddress?
    var data: [UInt8] = []
    var scanResponseData: [UInt8] = []
    /// A First fragment arrived and its Last has not (§7.8.54): the set may not be enabled meanwhile.
    var dataIncomplete = false
    var scanResponseIncomplete = false
    /// The Advertising Data ID (ADI's DID, §2.3.4.6): a new value whenever the data changes.
    var dataID: UInt16 = 0
    var enabled = false
    /// When the set stops with Advertising Set Terminated 0x3C (Duration, §7.8.56), nil for no limit.
    var deadline: StackInstant?
    /// 0: no limit; else Advertising Set Terminated 0x43 after that many extended advertising events.
    var maximumEvents: UInt8 = 0
    var completedEvents: UInt8 = 0

    var properties: LEAdvertisingEventProperties { parameters.eventProperties }
    var isLegacy: Bool { properties.contains(.legacy) }

    /// Whether this kind of advertising carries advertising data (§7.8.54: not legacy directed, not extended
    /// scannable).
    var carriesAdvertisingData: Bool {
        isLegacy ? !properties.contains(.directed) : !properties.contains(.scannable)
    }

    /// Whether this kind of advertising answers scan requests with scan response data (§7.8.55).
    var carriesScanResponseData: Bool { properties.contains(.scannable) }

    /// The largest advertising data this set can send: 31 octets for legacy PDUs, what one AUX_ADV_IND holds for
    /// connectable extended advertising (no AUX_CHAIN_IND follows it, §4.4.2.2.2), else the controller's maximum.
    var maximumDataLength: Int {
        if isLegacy { return HCICommand.maximumAdvertisingDataLength }
        if properties.contains(.connectable) {
            return AuxiliaryChain.capacity(of: .auxAdvInd, properties: properties, chained: false)
        }
        return AdvertisingSet.maximumAdvertisingDataLength
    }

    /// HCI_LE_Read_Maximum_Advertising_Data_Length (§7.8.57).
    static let maximumAdvertisingDataLength = 1650
    /// HCI_LE_Read_Number_of_Supported_Advertising_Sets (§7.8.58).
    static let supportedSets = 16

    /// The legacy PDU type of a legacy-PDU set (Table 7.2 of §7.8.53), nil for a combination that has none.
    static func legacyType(_ properties: LEAdvertisingEventProperties) -> LEAdvertisingType? {
        switch properties.rawValue & 0x7F {
        case 0x13: .connectableUndirected
        case 0x15: .connectableLowDutyCycleDirected
        case 0x1D: .connectableHighDutyCycleDirected
        case 0x12: .scannableUndirected
        case 0x10: .nonConnectableUndirected
        default: nil
        }
    }

    /// The event properties of a legacy advertising type (the legacy commands' Advertising_Type).
    static func properties(of type: LEAdvertisingType) -> LEAdvertisingEventProperties {
        switch type {
        case .connectableUndirected: [.connectable, .scannable, .legacy]
        case .connectableHighDutyCycleDirected: [.connectable, .directed, .highDutyCycleDirected, .legacy]
        case .scannableUndirected: [.scannable, .legacy]
        case .connectableLowDutyCycleDirected: [.connectable, .directed, .legacy]
        default: [.legacy]
        }
    }
}

/// Which family of advertising, scanning and initiating commands the host chose (Core 5.4 Vol 4 Part E §3.1.1):
/// the first legacy or extended command fixes it until HCI_Reset; a command of the other family is then refused
/// with Command Disallowed (0x0C).
enum AdvertisingCommandFamily {
    case undetermined
    case legacy
    case extended

    /// The legacy advertising, scanning and initiating commands (§3.1.1).
    static let legacyOpcodes: Set<HCIOpcode> = [
        .leSetAdvertisingParameters, .leReadAdvertisingPhysicalChannelTxPower, .leSetAdvertisingData,
        .leSetScanResponseData, .leSetAdvertisingEnable, .leSetScanParameters, .leSetScanEnable, .leCreateConnection,
    ]
}
