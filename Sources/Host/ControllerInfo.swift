public import BluetoothCore
public import HCI

/// What the host learned about its controller during initialisation (Core 5.4 Vol 4 Part E §7.4 informational
/// parameters, §7.8.2 / §7.8.3 / §7.8.93 LE buffer sizes and features, §7.4.6 BD_ADDR).
public struct ControllerInfo: Hashable, Sendable {
    /// From Read Local Version Information (nil if the controller did not answer it).
    public var version: HCILocalVersionInformation?
    /// LMP features (Read Local Supported Features), 0 when unknown.
    public var lmpFeatures: UInt64 = 0
    /// The 64-octet Supported_Commands bit mask (§6.27); empty when unknown.
    public var supportedCommands: [UInt8] = []
    /// LE features (LE Read Local Supported Features), 0 when unknown.
    public var leFeatures: UInt64 = 0
    /// The controller's ACL buffer for LE: data length of one packet and number of packets (§4.1.1).
    public var leACLDataPacketLength: Int = 27
    public var totalNumLEACLDataPackets: Int = 1
    /// The controller's public address (00:00:00:00:00:00 if it has none, as Bumble's).
    public var publicAddress: BluetoothAddress = .zero
    /// The address this host uses in advertising, scanning and connecting.
    public var ownAddress: BluetoothAddress = .zero
    /// What did not go as the spec says but was survived (ignored or failed optional commands, fallbacks).
    public var warnings: [String] = []

    public init() {}

    /// Whether the Supported_Commands mask has `bit` of `octet` set (§6.27). Unknown masks say no.
    public func supportsCommand(octet: Int, bit: Int) -> Bool {
        guard octet >= 0, octet < supportedCommands.count, bit >= 0, bit < 8 else { return false }
        return supportedCommands[octet] & (1 << UInt8(bit)) != 0
    }

    /// Whether the supported-commands mask is known at all.
    public var knowsSupportedCommands: Bool { supportedCommands.contains { $0 != 0 } }

    /// The own address type to put in advertising, scanning and connection commands.
    public var ownAddressType: LEAddressType { ownAddress.type == .random ? .random : .public }

    /// Whether the controller has LE Extended Advertising (LE feature bit 12, Core 5.4 Vol 6 Part B §4.6).
    public var hasExtendedAdvertising: Bool { leFeatures & (1 << 12) != 0 }
}

/// Positions in the Supported_Commands mask the host consults (Core 5.4 Vol 4 Part E §6.27).
enum SupportedCommandBit {
    static let readRSSI = (octet: 15, bit: 5)
    static let leSetDataLength = (octet: 33, bit: 6)
    static let leWriteSuggestedDefaultDataLength = (octet: 34, bit: 0)
    static let leReadBufferSizeV2 = (octet: 41, bit: 5)
    static let leSetPHY = (octet: 35, bit: 6)
}
