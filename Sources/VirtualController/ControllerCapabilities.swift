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

    /// (octet, bit) of each implemented command in the Supported_Commands table (§6.27).
    static let commandBits: [(HCIOpcode, Int, Int)] = [
        (.disconnect, 0, 5), (.readRemoteVersionInformation, 2, 7), (.setEventMask, 5, 6), (.reset, 5, 7),
        (.readTransmitPowerLevel, 10, 2), (.setControllerToHostFlowControl, 10, 5), (.hostBufferSize, 10, 6),
        (.readLocalVersionInformation, 14, 3), (.readLocalSupportedFeatures, 14, 5), (.readBufferSize, 14, 7),
        (.readBDADDR, 15, 1), (.readRSSI, 15, 5), (.setEventMaskPage2, 22, 2), (.writeLEHostSupport, 24, 6),
        (.leSetEventMask, 25, 0), (.leReadBufferSize, 25, 1), (.leReadLocalSupportedFeatures, 25, 2),
        (.leSetRandomAddress, 25, 4), (.leSetAdvertisingParameters, 25, 5),
        (.leReadAdvertisingPhysicalChannelTxPower, 25, 6), (.leSetAdvertisingData, 25, 7),
        (.leSetScanResponseData, 26, 0), (.leSetAdvertisingEnable, 26, 1), (.leSetScanParameters, 26, 2),
        (.leSetScanEnable, 26, 3), (.leCreateConnection, 26, 4), (.leCreateConnectionCancel, 26, 5),
        (.leReadFilterAcceptListSize, 26, 6), (.leClearFilterAcceptList, 26, 7),
        (.leAddDeviceToFilterAcceptList, 27, 0), (.leRemoveDeviceFromFilterAcceptList, 27, 1),
        (.leConnectionUpdate, 27, 2), (.leReadRemoteFeatures, 27, 5), (.leEncrypt, 27, 6), (.leRand, 27, 7),
        (.leEnableEncryption, 28, 0), (.leLongTermKeyRequestReply, 28, 1), (.leLongTermKeyRequestNegativeReply, 28, 2),
        (.leReadSupportedStates, 28, 3), (.leSetDataLength, 33, 6), (.leReadSuggestedDefaultDataLength, 33, 7),
        (.leWriteSuggestedDefaultDataLength, 34, 0), (.leAddDeviceToResolvingList, 34, 3),
        (.leRemoveDeviceFromResolvingList, 34, 4), (.leClearResolvingList, 34, 5), (.leReadResolvingListSize, 34, 6),
        (.leReadPeerResolvableAddress, 34, 7), (.leReadLocalResolvableAddress, 35, 0),
        (.leSetAddressResolutionEnable, 35, 1), (.leSetResolvablePrivateAddressTimeout, 35, 2),
        (.leReadMaximumDataLength, 35, 3), (.leReadPHY, 35, 4),
        (.leSetDefaultPHY, 35, 5), (.leSetPHY, 35, 6), (.leSetAdvertisingSetRandomAddress, 36, 1),
        (.leSetExtendedAdvertisingParameters, 36, 2), (.leSetExtendedAdvertisingData, 36, 3),
        (.leSetExtendedScanResponseData, 36, 4), (.leSetExtendedAdvertisingEnable, 36, 5),
        (.leReadMaximumAdvertisingDataLength, 36, 6), (.leReadNumberOfSupportedAdvertisingSets, 36, 7),
        (.leRemoveAdvertisingSet, 37, 0), (.leClearAdvertisingSets, 37, 1), (.leSetExtendedScanParameters, 37, 5),
        (.leSetExtendedScanEnable, 37, 6), (.leExtendedCreateConnection, 37, 7), (.leSetPrivacyMode, 39, 2),
        (.leReadBufferSizeV2, 41, 5),
    ]

    /// The 64-octet Supported_Commands mask.
    static let supportedCommands: [UInt8] = {
        var mask = [UInt8](repeating: 0, count: 64)
        for (_, octet, bit) in commandBits { mask[octet] |= 1 << UInt8(bit) }
        return mask
    }()
}
