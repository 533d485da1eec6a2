/// An ATT error code, carried in the Error Response (Core 5.4 Vol 3 Part F §3.4.1.1, Table 3.4), plus the common
/// profile and service error codes (Core Specification Supplement Part B §1.2).
public struct ATTErrorCode: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "ATT error"

    public static let invalidHandle = ATTErrorCode(0x01)
    public static let readNotPermitted = ATTErrorCode(0x02)
    public static let writeNotPermitted = ATTErrorCode(0x03)
    public static let invalidPDU = ATTErrorCode(0x04)
    public static let insufficientAuthentication = ATTErrorCode(0x05)
    public static let requestNotSupported = ATTErrorCode(0x06)
    public static let invalidOffset = ATTErrorCode(0x07)
    public static let insufficientAuthorization = ATTErrorCode(0x08)
    public static let prepareQueueFull = ATTErrorCode(0x09)
    public static let attributeNotFound = ATTErrorCode(0x0A)
    public static let attributeNotLong = ATTErrorCode(0x0B)
    public static let insufficientEncryptionKeySize = ATTErrorCode(0x0C)
    public static let invalidAttributeValueLength = ATTErrorCode(0x0D)
    public static let unlikelyError = ATTErrorCode(0x0E)
    public static let insufficientEncryption = ATTErrorCode(0x0F)
    public static let unsupportedGroupType = ATTErrorCode(0x10)
    public static let insufficientResources = ATTErrorCode(0x11)
    public static let databaseOutOfSync = ATTErrorCode(0x12)
    public static let valueNotAllowed = ATTErrorCode(0x13)
    public static let writeRequestRejected = ATTErrorCode(0xFC)
    public static let cccdImproperlyConfigured = ATTErrorCode(0xFD)
    public static let procedureAlreadyInProgress = ATTErrorCode(0xFE)
    public static let outOfRange = ATTErrorCode(0xFF)

    /// Application errors (0x80–0x9F) are defined by a higher layer specification.
    public var isApplicationError: Bool { (0x80...0x9F).contains(rawValue) }

    public static let names: [UInt8: String] = {
        var names: [UInt8: String] = [
            0x01: "Invalid Handle",
            0x02: "Read Not Permitted",
            0x03: "Write Not Permitted",
            0x04: "Invalid PDU",
            0x05: "Insufficient Authentication",
            0x06: "Request Not Supported",
            0x07: "Invalid Offset",
            0x08: "Insufficient Authorization",
            0x09: "Prepare Queue Full",
            0x0A: "Attribute Not Found",
            0x0B: "Attribute Not Long",
            0x0C: "Encryption Key Size Too Short",
            0x0D: "Invalid Attribute Value Length",
            0x0E: "Unlikely Error",
            0x0F: "Insufficient Encryption",
            0x10: "Unsupported Group Type",
            0x11: "Insufficient Resources",
            0x12: "Database Out Of Sync",
            0x13: "Value Not Allowed",
            0xFC: "Write Request Rejected",
            0xFD: "Client Characteristic Configuration Descriptor Improperly Configured",
            0xFE: "Procedure Already in Progress",
            0xFF: "Out of Range",
        ]
        for value in UInt8(0x80)...UInt8(0x9F) { names[value] = "Application Error" }
        return names
    }()
}
