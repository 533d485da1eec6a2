public import BluetoothCore

/// An HCI command opcode (Core 5.4 Vol 4 Part E §5.4.1): a 16-bit value whose upper 6 bits are the OpCode Group
/// Field (OGF) and whose lower 10 bits are the OpCode Command Field (OCF), sent little-endian.
///
/// Open set: every 16-bit value is representable; the known ones print the spec's command name, taken from the
/// command table (``HCICommand/table``), e.g. `LE Set Advertising Parameters (0x2006)`.
public struct HCIOpcode: OpenCode, Comparable, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    /// From the group and command fields; `ogf` is masked to 6 bits and `ocf` to 10 bits.
    public init(ogf: UInt8, ocf: UInt16) {
        rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x03FF)
    }

    /// The OpCode Group Field (0x01 Link Control, 0x03 Controller & Baseband, 0x04 Informational,
    /// 0x05 Status Parameters, 0x08 LE Controller, 0x3F vendor specific).
    public var ogf: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 10) }
    /// The OpCode Command Field.
    public var ocf: UInt16 { rawValue & 0x03FF }

    public static let codeKind = "HCI command"
    public static var names: [UInt16: String] { HCICommand.opcodeNames }

    public static func < (lhs: HCIOpcode, rhs: HCIOpcode) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The No Operation opcode (0x0000), used by the controller in Command Complete/Status to grant credits.
    public static let noOperation = HCIOpcode(0x0000)

    // Link Control (OGF 0x01), §7.1
    public static let disconnect = HCIOpcode(ogf: 0x01, ocf: 0x0006)
    public static let readRemoteVersionInformation = HCIOpcode(ogf: 0x01, ocf: 0x001D)
    // Controller & Baseband (OGF 0x03), §7.3
    public static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    public static let readTransmitPowerLevel = HCIOpcode(ogf: 0x03, ocf: 0x002D)
    public static let setControllerToHostFlowControl = HCIOpcode(ogf: 0x03, ocf: 0x0031)
    public static let hostBufferSize = HCIOpcode(ogf: 0x03, ocf: 0x0033)
    public static let setEventMaskPage2 = HCIOpcode(ogf: 0x03, ocf: 0x0063)
    public static let writeLEHostSupport = HCIOpcode(ogf: 0x03, ocf: 0x006D)
    // Informational (OGF 0x04), §7.4
    public static let readLocalVersionInformation = HCIOpcode(ogf: 0x04, ocf: 0x0001)
    public static let readLocalSupportedCommands = HCIOpcode(ogf: 0x04, ocf: 0x0002)
    public static let readLocalSupportedFeatures = HCIOpcode(ogf: 0x04, ocf: 0x0003)
    public static let readBufferSize = HCIOpcode(ogf: 0x04, ocf: 0x0005)
    public static let readBDADDR = HCIOpcode(ogf: 0x04, ocf: 0x0009)
    // Status parameters (OGF 0x05), §7.5
    public static let readRSSI = HCIOpcode(ogf: 0x05, ocf: 0x0005)
    // LE Controller (OGF 0x08), §7.8
    public static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    public static let leReadBufferSize = HCIOpcode(ogf: 0x08, ocf: 0x0002)
    public static let leReadLocalSupportedFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0003)
    public static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    public static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
    public static let leReadAdvertisingPhysicalChannelTxPower = HCIOpcode(ogf: 0x08, ocf: 0x0007)
    public static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
    public static let leSetScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0009)
    public static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
    public static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
    public static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)
    public static let leCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x000D)
    public static let leCreateConnectionCancel = HCIOpcode(ogf: 0x08, ocf: 0x000E)
    public static let leReadFilterAcceptListSize = HCIOpcode(ogf: 0x08, ocf: 0x000F)
    public static let leClearFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0010)
    public static let leAddDeviceToFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0011)
    public static let leRemoveDeviceFromFilterAcceptList = HCIOpcode(ogf: 0x08, ocf: 0x0012)
    public static let leConnectionUpdate = HCIOpcode(ogf: 0x08, ocf: 0x0013)
    public static let leReadRemoteFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0016)
    public static let leEncrypt = HCIOpcode(ogf: 0x08, ocf: 0x0017)
    public static let leRand = HCIOpcode(ogf: 0x08, ocf: 0x0018)
    public static let leEnableEncryption = HCIOpcode(ogf: 0x08, ocf: 0x0019)
    public static let leLongTermKeyRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x001A)
    public static let leLongTermKeyRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x001B)
    public static let leReadSupportedStates = HCIOpcode(ogf: 0x08, ocf: 0x001C)
    public static let leRemoteConnectionParameterRequestReply = HCIOpcode(ogf: 0x08, ocf: 0x0020)
    public static let leRemoteConnectionParameterRequestNegativeReply = HCIOpcode(ogf: 0x08, ocf: 0x0021)
    public static let leSetDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0022)
    public static let leReadSuggestedDefaultDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0023)
    public static let leWriteSuggestedDefaultDataLength = HCIOpcode(ogf: 0x08, ocf: 0x0024)
    public static let leReadLocalP256PublicKey = HCIOpcode(ogf: 0x08, ocf: 0x0025)
    public static let leGenerateDHKey = HCIOpcode(ogf: 0x08, ocf: 0x0026)
    public static let leAddDeviceToResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0027)
    public static let leRemoveDeviceFromResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0028)
    public static let leClearResolvingList = HCIOpcode(ogf: 0x08, ocf: 0x0029)
    public static let leReadResolvingListSize = HCIOpcode(ogf: 0x08, ocf: 0x002A)
    public static let leReadPeerResolvableAddress = HCIOpcode(ogf: 0x08, ocf: 0x002B)
    public static let leReadLocalResolvableAddress = HCIOpcode(ogf: 0x08, ocf: 0x002C)
    public static let leSetAddressResolutionEnable = HCIOpcode(ogf: 0x08, ocf: 0x002D)
    public static let leSetResolvablePrivateAddressTimeout = HCIOpcode(ogf: 0x08, ocf: 0x002E)
    public static let leReadMaximumDataLength = HCIOpcode(ogf: 0x08, ocf: 0x002F)
    public static let leReadPHY = HCIOpcode(ogf: 0x08, ocf: 0x0030)
    public static let leSetDefaultPHY = HCIOpcode(ogf: 0x08, ocf: 0x0031)
    public static let leSetPHY = HCIOpcode(ogf: 0x08, ocf: 0x0032)
    public static let leSetPrivacyMode = HCIOpcode(ogf: 0x08, ocf: 0x004E)
    // Extended advertising, scanning and initiating (Bluetooth 5), §7.8.52–§7.8.66
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0035)
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0036)
    public static let leSetExtendedAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0037)
    public static let leSetExtendedScanResponseData = HCIOpcode(ogf: 0x08, ocf: 0x0038)
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x0039)
    public static let leReadMaximumAdvertisingDataLength = HCIOpcode(ogf: 0x08, ocf: 0x003A)
    public static let leReadNumberOfSupportedAdvertisingSets = HCIOpcode(ogf: 0x08, ocf: 0x003B)
    public static let leRemoveAdvertisingSet = HCIOpcode(ogf: 0x08, ocf: 0x003C)
    public static let leClearAdvertisingSets = HCIOpcode(ogf: 0x08, ocf: 0x003D)
    public static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
    public static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)
    public static let leExtendedCreateConnection = HCIOpcode(ogf: 0x08, ocf: 0x0043)
    public static let leReadBufferSizeV2 = HCIOpcode(ogf: 0x08, ocf: 0x0060)
}
