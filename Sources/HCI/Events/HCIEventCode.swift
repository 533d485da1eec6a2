public import BluetoothCore

/// An HCI event code (Core 5.4 Vol 4 Part E §5.4.4, §7.7). Open set: unknown codes print as
/// "Unknown HCI event (0x..)".
public struct HCIEventCode: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "HCI event"

    public static let disconnectionComplete = HCIEventCode(0x05)
    public static let encryptionChange = HCIEventCode(0x08)
    public static let readRemoteVersionInformationComplete = HCIEventCode(0x0C)
    public static let commandComplete = HCIEventCode(0x0E)
    public static let commandStatus = HCIEventCode(0x0F)
    public static let hardwareError = HCIEventCode(0x10)
    public static let numberOfCompletedPackets = HCIEventCode(0x13)
    public static let dataBufferOverflow = HCIEventCode(0x1A)
    public static let encryptionKeyRefreshComplete = HCIEventCode(0x30)
    public static let leMeta = HCIEventCode(0x3E)
    public static let encryptionChangeV2 = HCIEventCode(0x59)
    public static let vendor = HCIEventCode(0xFF)

    public static let names: [UInt8: String] = [
        0x05: "Disconnection Complete", 0x08: "Encryption Change", 0x0C: "Read Remote Version Information Complete",
        0x0E: "Command Complete", 0x0F: "Command Status", 0x10: "Hardware Error",
        0x13: "Number Of Completed Packets", 0x1A: "Data Buffer Overflow", 0x30: "Encryption Key Refresh Complete",
        0x3E: "LE Meta", 0x59: "Encryption Change [v2]", 0xFF: "Vendor Specific",
    ]
}

/// An LE Meta event subevent code (Core 5.4 Vol 4 Part E §7.7.65).
public struct LESubeventCode: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "LE subevent"

    public static let connectionComplete = LESubeventCode(0x01)
    public static let advertisingReport = LESubeventCode(0x02)
    public static let connectionUpdateComplete = LESubeventCode(0x03)
    public static let readRemoteFeaturesComplete = LESubeventCode(0x04)
    public static let longTermKeyRequest = LESubeventCode(0x05)
    public static let remoteConnectionParameterRequest = LESubeventCode(0x06)
    public static let dataLengthChange = LESubeventCode(0x07)
    public static let readLocalP256PublicKeyComplete = LESubeventCode(0x08)
    public static let generateDHKeyComplete = LESubeventCode(0x09)
    public static let enhancedConnectionComplete = LESubeventCode(0x0A)
    public static let directedAdvertisingReport = LESubeventCode(0x0B)
    public static let phyUpdateComplete = LESubeventCode(0x0C)
    public static let extendedAdvertisingReport = LESubeventCode(0x0D)
    public static let scanTimeout = LESubeventCode(0x11)
    public static let advertisingSetTerminated = LESubeventCode(0x12)
    public static let scanRequestReceived = LESubeventCode(0x13)
    public static let enhancedConnectionCompleteV2 = LESubeventCode(0x29)

    public static let names: [UInt8: String] = [
        0x01: "LE Connection Complete", 0x02: "LE Advertising Report", 0x03: "LE Connection Update Complete",
        0x04: "LE Read Remote Features Complete", 0x05: "LE Long Term Key Request",
        0x06: "LE Remote Connection Parameter Request", 0x07: "LE Data Length Change",
        0x08: "LE Read Local P-256 Public Key Complete", 0x09: "LE Generate DHKey Complete",
        0x0A: "LE Enhanced Connection Complete", 0x0B: "LE Directed Advertising Report",
        0x0C: "LE PHY Update Complete", 0x0D: "LE Extended Advertising Report",
        0x0E: "LE Periodic Advertising Sync Established", 0x0F: "LE Periodic Advertising Report",
        0x10: "LE Periodic Advertising Sync Lost", 0x11: "LE Scan Timeout", 0x12: "LE Advertising Set Terminated",
        0x13: "LE Scan Request Received", 0x14: "LE Channel Selection Algorithm",
        0x29: "LE Enhanced Connection Complete [v2]",
    ]
}
