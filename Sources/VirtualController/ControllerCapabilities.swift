import BluetoothCore
import HCI

/// What the virtual controller reports about itself: version (Core 5.4 Vol 4 Part E §7.4.1), LMP features
/// (Vol 2 Part C §3.3: LE only), LE features (Vol 6 Part B §4.6), supported states (§7.8.27) and the Supported
/// Commands bit mask (Vol 4 Part E §6.27) for exactly the commands it implements.
enum ControllerCapabilities {
    /// Core 5.4, company 0xFFFF (no company: test/interop use).
    static let version = HCILocalVersionInformation(hciVersion: 0x0D, hciSubversion: 0x0001, lmpVersion: 0x0D,
                                                    companyIdentifier: CompanyIdentifier(0xFFFF), lmpSubversion: 0x0001)

    /// BR/EDR Not Supported (bit 37) and LE Supported (Controller) (bit 38).
    static let lmpFeatures: UInt64 = 1 << 37 | 1 << 38

    /// LE Encryption (0), Extended Reject Indication (2), Peripheral-initiated Features Exchange (3),
    /// LE Data Packet Length Extension (5), LL Privacy (6), LE 2M PHY (8), LE Coded PHY (11), LE Extended Advertising
    /// (12).
    static let leFeatures: UInt64 = 1 << 0 | 1 << 2 | 1 << 3 | 1 << 5 | 1 << 6 | 1 << 8 | 1 << 11 | 1 << 12

    /// Every legacy state and role combination (bits 0...41).
    static let supportedStates: UInt64 = (1 << 42) - 1

    /// Every command it implements, set in its Supported_Commands mask (§6.27, ``HCISupportedCommands``).
    static let implementedCommands: [HCIOpcode] = [
        .disconnect,
        .readRemoteVersionInformation,
        .setEventMask,
        .reset,
        .readTransmitPowerLevel,
        .setControllerToHostFlowControl,
        .hostBufferSize,
        .readLocalVersionInformation,
        .readLocalSupportedFeatures,
        .readBufferSize,
        .readBDADDR,
        .readRSSI,
        .setEventMaskPage2,
        .writeLEHostSupport,
        .leSetEventMask,
        .leReadBufferSize,
        .leReadLocalSupportedFeatures,
        .leSetRandomAddress,
        .leSetAdvertisingParameters,
        .leReadAdvertisingPhysicalChannelTxPower,
        .leSetAdvertisingData,
        .leSetScanResponseData,
        .leSetAdvertisingEnable,
        .leSetScanParameters,
        .leSetScanEnable,
        .leCreateConnection,
        .leCreateConnectionCancel,
        .leReadFilterAcceptListSize,
        .leClearFilterAcceptList,
        .leAddDeviceToFilterAcceptList,
        .leRemoveDeviceFromFilterAcceptList,
        .leConnectionUpdate,
        .leReadRemoteFeatures,
        .leEncrypt,
        .leRand,
        .leEnableEncryption,
        .leLongTermKeyRequestReply,
        .leLongTermKeyRequestNegativeReply,
        .leReadSupportedStates,
        .leSetDataLength,
        .leReadSuggestedDefaultDataLength,
        .leWriteSuggestedDefaultDataLength,
        .leAddDeviceToResolvingList,
        .leRemoveDeviceFromResolvingList,
        .leClearResolvingList,
        .leReadResolvingListSize,
        .leReadPeerResolvableAddress,
        .leReadLocalResolvableAddress,
        .leSetAddressResolutionEnable,
        .leSetResolvablePrivateAddressTimeout,
        .leReadMaximumDataLength,
        .leReadPHY,
        .leSetDefaultPHY,
        .leSetPHY,
        .leSetAdvertisingSetRandomAddress,
        .leSetExtendedAdvertisingParameters,
        .leSetExtendedAdvertisingData,
        .leSetExtendedScanResponseData,
        .leSetExtendedAdvertisingEnable,
        .leReadMaximumAdvertisingDataLength,
        .leReadNumberOfSupportedAdvertisingSets,
        .leRemoveAdvertisingSet,
        .leClearAdvertisingSets,
        .leSetExtendedScanParameters,
        .leSetExtendedScanEnable,
        .leExtendedCreateConnection,
        .leSetPrivacyMode,
        .leReadBufferSizeV2,
    ]

    /// The 64-octet Supported_Commands mask.
    static let supportedCommands: [UInt8] = HCISupportedCommands(implementedCommands).mask
}
