public import BluetoothCore
public import HCI

/// What the host learned about its controller during initialisation (Core 5.4 Vol 4 Part E §7.4 informational
/// parameters, §7.8.2 / §7.8.3 / §7.8.93 LE buffer sizes and features, §7.4.6 BD_ADDR).
public struct ControllerInfo: Hashable, Sendable, Codable {
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

    /// The own address type to put in advertising, scanning and connection commands: 0x03 (the controller's RPA,
    /// else the random address) when the controller does our privacy.
    public var ownAddressType: LEAddressType {
        if usesControllerPrivacy { return ownAddress.type == .random ? .randomIdentity : .publicIdentity }
        return ownAddress.type == .random ? .random : .public
    }

    /// Whether the controller has LL Privacy (LE feature bit 6, Core 5.4 Vol 6 Part B §4.6) and the resolving-list
    /// commands the host needs (§7.8.38, §7.8.40, §7.8.44, §7.8.45).
    public var hasLLPrivacy: Bool {
        leFeatures & (1 << 6) != 0 && SupportedCommandBit.resolvingList.allSatisfy { supportsCommand(octet: $0.octet, bit: $0.bit) }
    }

    /// Whether the controller makes and rotates our resolvable private addresses and resolves bonded peers' (see
    /// `HostStack+ControllerPrivacy.swift`).
    public var usesControllerPrivacy = false

    /// Whether the controller has LE Extended Advertising (LE feature bit 12, Core 5.4 Vol 6 Part B §4.6).
    public var hasExtendedAdvertising: Bool { leFeatures & (1 << 12) != 0 }

    /// Whether the controller has the extended advertising, scanning and initiating commands (§7.8.53–§7.8.56,
    /// §7.8.64–§7.8.66 in its Supported_Commands) as well as the feature.
    public var hasExtendedAdvertisingCommands: Bool {
        hasExtendedAdvertising && SupportedCommandBit.extendedAdvertising.allSatisfy { supportsCommand(octet: $0.octet, bit: $0.bit) }
    }

    /// Whether this host advertises, scans and connects with the extended commands (the controller has them and
    /// ``HostConfiguration/usesExtendedAdvertising`` allows it); a controller takes one family or the other until
    /// Reset (Vol 4 Part E §3.1.1), so this holds for the host's whole life.
    public var usesExtendedAdvertising = false

    /// The longest advertising or scan response data the controller takes in one set (LE Read Maximum Advertising
    /// Data Length, §7.8.57): 31 under the legacy commands.
    public var maximumAdvertisingDataLength = 31

    /// Whether the controller has the LE 2M PHY (bit 8) and the LE Coded PHY (bit 11).
    public var has2MPHY: Bool { leFeatures & (1 << 8) != 0 }
    public var hasCodedPHY: Bool { leFeatures & (1 << 11) != 0 }
}

/// Positions in the Supported_Commands mask the host consults (Core 5.4 Vol 4 Part E §6.27).
package enum SupportedCommandBit {
    package static let readRSSI = (octet: 15, bit: 5)
    package static let leSetDataLength = (octet: 33, bit: 6)
    package static let leWriteSuggestedDefaultDataLength = (octet: 34, bit: 0)
    package static let leReadBufferSizeV2 = (octet: 41, bit: 5)
    package static let leSetPHY = (octet: 35, bit: 6)
    package static let leReadPHY = (octet: 35, bit: 4)
    /// LE Add Device To / Clear Resolving List, LE Set Address Resolution Enable, LE Set RPA Timeout.
    package static let resolvingList: [(octet: Int, bit: Int)] = [(34, 3), (34, 5), (35, 1), (35, 2)]
    /// LE Set Advertising Set Random Address, Set Extended Advertising Parameters / Data / Scan Response Data /
    /// Enable, Read Maximum Advertising Data Length (octet 36 bits 1–6), Set Extended Scan Parameters / Enable,
    /// Extended Create Connection (octet 37 bits 5–7).
    package static let extendedAdvertising: [(octet: Int, bit: Int)] = [
        (36, 1), (36, 2), (36, 3), (36, 4), (36, 5), (36, 6), (37, 5), (37, 6), (37, 7),
    ]
}
