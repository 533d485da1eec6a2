/// The reason carried by an SMP Pairing Failed PDU (Core 5.4 Vol 3 Part H §3.5.5, Table 3.7).
public struct SMPPairingFailedReason: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "SMP reason"

    public static let passkeyEntryFailed = Self(0x01)
    public static let oobNotAvailable = Self(0x02)
    public static let authenticationRequirements = Self(0x03)
    public static let confirmValueFailed = Self(0x04)
    public static let pairingNotSupported = Self(0x05)
    public static let encryptionKeySize = Self(0x06)
    public static let commandNotSupported = Self(0x07)
    public static let unspecifiedReason = Self(0x08)
    public static let repeatedAttempts = Self(0x09)
    public static let invalidParameters = Self(0x0A)
    public static let dhKeyCheckFailed = Self(0x0B)
    public static let numericComparisonFailed = Self(0x0C)
    public static let brEdrPairingInProgress = Self(0x0D)
    public static let crossTransportKeyDerivationNotAllowed = Self(0x0E)
    public static let keyRejected = Self(0x0F)
    public static let busy = Self(0x10)

    public static let names: [UInt8: String] = [
        0x01: "Passkey Entry Failed",
        0x02: "OOB Not Available",
        0x03: "Authentication Requirements",
        0x04: "Confirm Value Failed",
        0x05: "Pairing Not Supported",
        0x06: "Encryption Key Size",
        0x07: "Command Not Supported",
        0x08: "Unspecified Reason",
        0x09: "Repeated Attempts",
        0x0A: "Invalid Parameters",
        0x0B: "DHKey Check Failed",
        0x0C: "Numeric Comparison Failed",
        0x0D: "BR/EDR pairing in progress",
        0x0E: "Cross-transport Key Derivation/Generation not allowed",
        0x0F: "Key Rejected",
        0x10: "Busy",
    ]
}
