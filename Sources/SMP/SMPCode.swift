public import BluetoothCore

/// The code of an SMP PDU, Core 5.4 Vol 3 Part H §3.3, Table 3.4, with the exact length of each PDU
/// (``pduLengths``, code octet included).
public struct SMPCode: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "SMP code"

    public static let pairingRequest = Self(0x01)
    public static let pairingResponse = Self(0x02)
    public static let pairingConfirm = Self(0x03)
    public static let pairingRandom = Self(0x04)
    public static let pairingFailed = Self(0x05)
    public static let encryptionInformation = Self(0x06)
    public static let centralIdentification = Self(0x07)
    public static let identityInformation = Self(0x08)
    public static let identityAddressInformation = Self(0x09)
    public static let signingInformation = Self(0x0A)
    public static let securityRequest = Self(0x0B)
    public static let pairingPublicKey = Self(0x0C)
    public static let pairingDHKeyCheck = Self(0x0D)
    public static let pairingKeypressNotification = Self(0x0E)

    public static let names: [UInt8: String] = [
        0x01: "Pairing Request",
        0x02: "Pairing Response",
        0x03: "Pairing Confirm",
        0x04: "Pairing Random",
        0x05: "Pairing Failed",
        0x06: "Encryption Information",
        0x07: "Central Identification",
        0x08: "Identity Information",
        0x09: "Identity Address Information",
        0x0A: "Signing Information",
        0x0B: "Security Request",
        0x0C: "Pairing Public Key",
        0x0D: "Pairing DHKey Check",
        0x0E: "Pairing Keypress Notification",
    ]

    /// The exact length of each PDU, code octet included (§3.5 to §3.6).
    public static let pduLengths: [UInt8: Int] = [
        0x01: 7,
        0x02: 7,
        0x03: 17,
        0x04: 17,
        0x05: 2,
        0x06: 17,
        0x07: 11,
        0x08: 17,
        0x09: 8,
        0x0A: 17,
        0x0B: 2,
        0x0C: 65,
        0x0D: 17,
        0x0E: 2,
    ]

    /// The exact PDU length (code octet included), or nil for a reserved code.
    public var pduLength: Int? { Self.pduLengths[rawValue] }
}
