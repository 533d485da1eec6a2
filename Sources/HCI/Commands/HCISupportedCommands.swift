import BluetoothCore

/// The Supported_Commands bit mask of Read Local Supported Commands (Core 5.4 Vol 4 Part E §6.27, §7.4.2): 64
/// octets, one bit per command, at the octet and bit the table gives it. The positions of the commands this module
/// knows; a mask's other bits are counted, not named.
public struct HCISupportedCommands: Hashable, Sendable {
    /// A command's place in the mask.
    public struct Position: Hashable, Sendable {
        public var octet: Int
        public var bit: Int
    }

    /// The 64 octets as the controller returned them (shorter masks are read as zeros beyond their end).
    public var mask: [UInt8]

    public init(mask: [UInt8]) { self.mask = mask }

    /// The mask with exactly `commands` set (a controller's answer).
    public init(_ commands: [HCIOpcode]) {
        var mask = [UInt8](repeating: 0, count: 64)
        for command in commands {
            guard let position = Self.positions[command] else { continue }
            mask[position.octet] |= 1 << UInt8(position.bit)
        }
        self.mask = mask
    }

    /// Whether the mask has `command`'s bit (false for a command whose place this module does not know).
    public func contains(_ command: HCIOpcode) -> Bool {
        guard let position = Self.positions[command], position.octet < mask.count else { return false }
        return mask[position.octet] & (1 << UInt8(position.bit)) != 0
    }

    /// The commands set in the mask that this module knows, by their place in the table.
    public var known: [HCIOpcode] {
        Self.positions.filter { contains($0.key) }.sorted { ($0.value.octet, $0.value.bit) < ($1.value.octet, $1.value.bit) }.map(\.key)
    }

    /// How many bits the mask sets in all.
    public var count: Int { mask.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// §6.27's octet and bit of each command this module knows.
    public static let positions: [HCIOpcode: Position] = [
        .disconnect: Position(octet: 0, bit: 5),
        .readRemoteVersionInformation: Position(octet: 2, bit: 7),
        .setEventMask: Position(octet: 5, bit: 6),
        .reset: Position(octet: 5, bit: 7),
        .readTransmitPowerLevel: Position(octet: 10, bit: 2),
        .setControllerToHostFlowControl: Position(octet: 10, bit: 5),
        .hostBufferSize: Position(octet: 10, bit: 6),
        .readLocalVersionInformation: Position(octet: 14, bit: 3),
        .readLocalSupportedFeatures: Position(octet: 14, bit: 5),
        .readBufferSize: Position(octet: 14, bit: 7),
        .readBDADDR: Position(octet: 15, bit: 1),
        .readRSSI: Position(octet: 15, bit: 5),
        .setEventMaskPage2: Position(octet: 22, bit: 2),
        .writeLEHostSupport: Position(octet: 24, bit: 6),
        .leSetEventMask: Position(octet: 25, bit: 0),
        .leReadBufferSize: Position(octet: 25, bit: 1),
        .leReadLocalSupportedFeatures: Position(octet: 25, bit: 2),
        .leSetRandomAddress: Position(octet: 25, bit: 4),
        .leSetAdvertisingParameters: Position(octet: 25, bit: 5),
        .leReadAdvertisingPhysicalChannelTxPower: Position(octet: 25, bit: 6),
        .leSetAdvertisingData: Position(octet: 25, bit: 7),
        .leSetScanResponseData: Position(octet: 26, bit: 0),
        .leSetAdvertisingEnable: Position(octet: 26, bit: 1),
        .leSetScanParameters: Position(octet: 26, bit: 2),
        .leSetScanEnable: Position(octet: 26, bit: 3),
        .leCreateConnection: Position(octet: 26, bit: 4),
        .leCreateConnectionCancel: Position(octet: 26, bit: 5),
        .leReadFilterAcceptListSize: Position(octet: 26, bit: 6),
        .leClearFilterAcceptList: Position(octet: 26, bit: 7),
        .leAddDeviceToFilterAcceptList: Position(octet: 27, bit: 0),
        .leRemoveDeviceFromFilterAcceptList: Position(octet: 27, bit: 1),
        .leConnectionUpdate: Position(octet: 27, bit: 2),
        .leReadRemoteFeatures: Position(octet: 27, bit: 5),
        .leEncrypt: Position(octet: 27, bit: 6),
        .leRand: Position(octet: 27, bit: 7),
        .leEnableEncryption: Position(octet: 28, bit: 0),
        .leLongTermKeyRequestReply: Position(octet: 28, bit: 1),
        .leLongTermKeyRequestNegativeReply: Position(octet: 28, bit: 2),
        .leReadSupportedStates: Position(octet: 28, bit: 3),
        .leSetDataLength: Position(octet: 33, bit: 6),
        .leReadSuggestedDefaultDataLength: Position(octet: 33, bit: 7),
        .leWriteSuggestedDefaultDataLength: Position(octet: 34, bit: 0),
        .leAddDeviceToResolvingList: Position(octet: 34, bit: 3),
        .leRemoveDeviceFromResolvingList: Position(octet: 34, bit: 4),
        .leClearResolvingList: Position(octet: 34, bit: 5),
        .leReadResolvingListSize: Position(octet: 34, bit: 6),
        .leReadPeerResolvableAddress: Position(octet: 34, bit: 7),
        .leReadLocalResolvableAddress: Position(octet: 35, bit: 0),
        .leSetAddressResolutionEnable: Position(octet: 35, bit: 1),
        .leSetResolvablePrivateAddressTimeout: Position(octet: 35, bit: 2),
        .leReadMaximumDataLength: Position(octet: 35, bit: 3),
        .leReadPHY: Position(octet: 35, bit: 4),
        .leSetDefaultPHY: Position(octet: 35, bit: 5),
        .leSetPHY: Position(octet: 35, bit: 6),
        .leSetAdvertisingSetRandomAddress: Position(octet: 36, bit: 1),
        .leSetExtendedAdvertisingParameters: Position(octet: 36, bit: 2),
        .leSetExtendedAdvertisingData: Position(octet: 36, bit: 3),
        .leSetExtendedScanResponseData: Position(octet: 36, bit: 4),
        .leSetExtendedAdvertisingEnable: Position(octet: 36, bit: 5),
        .leReadMaximumAdvertisingDataLength: Position(octet: 36, bit: 6),
        .leReadNumberOfSupportedAdvertisingSets: Position(octet: 36, bit: 7),
        .leRemoveAdvertisingSet: Position(octet: 37, bit: 0),
        .leClearAdvertisingSets: Position(octet: 37, bit: 1),
        .leSetExtendedScanParameters: Position(octet: 37, bit: 5),
        .leSetExtendedScanEnable: Position(octet: 37, bit: 6),
        .leExtendedCreateConnection: Position(octet: 37, bit: 7),
        .leSetPrivacyMode: Position(octet: 39, bit: 2),
        .leReadBufferSizeV2: Position(octet: 41, bit: 5),
    ]
}
