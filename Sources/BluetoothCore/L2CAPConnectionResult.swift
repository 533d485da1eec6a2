/// The result of an LE Credit Based Connection Response or an L2CAP Credit Based Connection Response
/// (Core 5.4 Vol 3 Part A §4.23, Table 4.16, and §4.26).
public struct L2CAPConnectionResult: OpenCode, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static let codeKind = "L2CAP result"

    public static let successful = Self(0x0000)
    public static let spsmNotSupported = Self(0x0002)
    public static let someConnectionsRefusedInsufficientResources = Self(0x0004)
    public static let allConnectionsRefusedInsufficientAuthentication = Self(0x0005)
    public static let allConnectionsRefusedInsufficientAuthorization = Self(0x0006)
    public static let allConnectionsRefusedEncryptionKeySizeTooShort = Self(0x0007)
    public static let allConnectionsRefusedInsufficientEncryption = Self(0x0008)
    public static let someConnectionsRefusedInvalidSourceCID = Self(0x0009)
    public static let someConnectionsRefusedSourceCIDAlreadyAllocated = Self(0x000A)
    public static let allConnectionsRefusedUnacceptableParameters = Self(0x000B)
    public static let allConnectionsRefusedInvalidParameters = Self(0x000C)
    public static let allConnectionsPendingNoFurtherInformation = Self(0x000D)
    public static let allConnectionsPendingAuthenticationPending = Self(0x000E)
    public static let allConnectionsPendingAuthorizationPending = Self(0x000F)

    public static let names: [UInt16: String] = [
        0x0000: "Connection successful",
        0x0002: "Connection refused - SPSM not supported",
        0x0004: "Connection refused - no resources available",
        0x0005: "Connection refused - insufficient authentication",
        0x0006: "Connection refused - insufficient authorization",
        0x0007: "Connection refused - encryption key size too short",
        0x0008: "Connection refused - insufficient encryption",
        0x0009: "Connection refused - invalid Source CID",
        0x000A: "Connection refused - Source CID already allocated",
        0x000B: "Connection refused - unacceptable parameters",
        0x000C: "Connection refused - invalid parameters",
        0x000D: "Connection pending - no further information available",
        0x000E: "Connection pending - authentication pending",
        0x000F: "Connection pending - authorization pending",
    ]
}
