public import Foundation

/// A CoreBluetooth error (domain `CBErrorDomain`), shaped as Apple's imported `NS_ERROR_ENUM`: a struct with a
/// nested `Code` and one static shortcut per code, so `error as? CBError`, `error.code == .notConnected` and
/// `catch CBError.peripheralDisconnected` work as on Apple platforms.
public struct CBError: CustomNSError, Hashable, Error, Sendable, CustomStringConvertible {
    public enum Code: Int, Sendable, Hashable {
        case unknown = 0
        case invalidParameters = 1
        case invalidHandle = 2
        case notConnected = 3
        case outOfSpace = 4
        case operationCancelled = 5
        case connectionTimeout = 6
        case peripheralDisconnected = 7
        case uuidNotAllowed = 8
        case alreadyAdvertising = 9
        case connectionFailed = 10
        case connectionLimitReached = 11
        @available(iOS, deprecated: 13.0, renamed: "unknownDevice")
        @available(macOS, deprecated: 10.15, renamed: "unknownDevice")
        case unkownDevice = 12
        case operationNotSupported = 13
        case peerRemovedPairingInformation = 14
        case encryptionTimedOut = 15
        case tooManyLEPairedDevices = 16
        case leGattExceededBackgroundNotificationLimit = 17
        case leGattNearBackgroundNotificationLimit = 18

        /// Code 12 under its corrected spelling.
        public static var unknownDevice: Code { Code(rawValue: 12) ?? .unknown }
    }

    public let code: Code
    /// Why it happened, in words (the `NSLocalizedDescriptionKey` of the bridged NSError).
    public let reason: String
    /// The user info given at init, kept as Apple's bridged error structs keep theirs (`init(_:reason:)` gives
    /// `[NSLocalizedDescriptionKey: reason]`). Not `Sendable`-checked, as `NSError.userInfo` is not.
    public nonisolated(unsafe) let userInfo: [String: Any]

    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        self.reason = (userInfo[NSLocalizedDescriptionKey] as? String) ?? Self.defaultReason(code)
        self.userInfo = userInfo
    }

    /// An error with a reason in words.
    public init(_ code: Code, reason: String) {
        self.code = code
        self.reason = reason
        self.userInfo = [NSLocalizedDescriptionKey: reason]
    }

    public static var errorDomain: String { CBErrorDomain }
    public var errorCode: Int { code.rawValue }
    /// `userInfo`, with the reason as `NSLocalizedDescriptionKey` when it has none.
    public var errorUserInfo: [String: Any] { userInfo.merging([NSLocalizedDescriptionKey: reason]) { given, _ in given } }
    public var localizedDescription: String { reason }
    public var description: String { "CBError(\(code.rawValue)): \(reason)" }

    public static func == (lhs: CBError, rhs: CBError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }


    public static var unknown: Code { .unknown }
    public static var invalidParameters: Code { .invalidParameters }
    public static var invalidHandle: Code { .invalidHandle }
    public static var notConnected: Code { .notConnected }
    public static var outOfSpace: Code { .outOfSpace }
    public static var operationCancelled: Code { .operationCancelled }
    public static var connectionTimeout: Code { .connectionTimeout }
    public static var peripheralDisconnected: Code { .peripheralDisconnected }
    public static var uuidNotAllowed: Code { .uuidNotAllowed }
    public static var alreadyAdvertising: Code { .alreadyAdvertising }
    public static var connectionFailed: Code { .connectionFailed }
    public static var connectionLimitReached: Code { .connectionLimitReached }
    public static var unknownDevice: Code { Code.unknownDevice }
    /// Apple's misspelt shortcut for code 12, kept (deprecated) as in Apple's SDK.
    @available(iOS, deprecated: 13.0, renamed: "unknownDevice")
    @available(macOS, deprecated: 10.15, renamed: "unknownDevice")
    public static var unkownDevice: Code { Code.unknownDevice }
    public static var operationNotSupported: Code { .operationNotSupported }
    public static var peerRemovedPairingInformation: Code { .peerRemovedPairingInformation }
    public static var encryptionTimedOut: Code { .encryptionTimedOut }
    public static var tooManyLEPairedDevices: Code { .tooManyLEPairedDevices }
    public static var leGattExceededBackgroundNotificationLimit: Code { .leGattExceededBackgroundNotificationLimit }
    public static var leGattNearBackgroundNotificationLimit: Code { .leGattNearBackgroundNotificationLimit }

    static func defaultReason(_ code: Code) -> String {
        switch code.rawValue {
        case 0: "Unknown error."
        case 1: "The specified parameters are invalid."
        case 2: "The specified attribute handle is invalid."
        case 3: "The device is not connected."
        case 4: "The device has run out of space to complete the intended operation."
        case 5: "The operation is canceled."
        case 6: "The connection timed out."
        case 7: "The peripheral disconnected."
        case 8: "The specified UUID is not permitted."
        case 9: "The peripheral is already advertising."
        case 10: "The connection failed."
        case 11: "The device already has the maximum number of connections."
        case 12: "The device is unknown."
        case 13: "The operation is not supported."
        case 14: "Peer removed pairing information."
        case 15: "Encryption timed out."
        case 16: "Too many LE paired devices."
        default: "Background notification limit."
        }
    }
}

/// An ATT error (domain `CBATTErrorDomain`): the codes are the ATT error codes on the air (Core 5.4 Vol 3 Part F
/// §3.4.1.1). `CBPeripheralManager.respond(to:withResult:)` takes a `CBATTError.Code`, so `.success` is one.
public struct CBATTError: CustomNSError, Hashable, Error, Sendable, CustomStringConvertible {
    public enum Code: Int, Sendable, Hashable {
        case success = 0x00
        case invalidHandle = 0x01
        case readNotPermitted = 0x02
        case writeNotPermitted = 0x03
        case invalidPdu = 0x04
        case insufficientAuthentication = 0x05
        case requestNotSupported = 0x06
        case invalidOffset = 0x07
        case insufficientAuthorization = 0x08
        case prepareQueueFull = 0x09
        case attributeNotFound = 0x0A
        case attributeNotLong = 0x0B
        case insufficientEncryptionKeySize = 0x0C
        case invalidAttributeValueLength = 0x0D
        case unlikelyError = 0x0E
        case insufficientEncryption = 0x0F
        case unsupportedGroupType = 0x10
        case insufficientResources = 0x11
    }

    public let code: Code
    /// The ATT error code as received, also for codes outside `Code` (application errors 0x80-0x9F, common
    /// profile errors 0xE0-0xFF), which map to `.unlikelyError` in `code`.
    public let attErrorCode: UInt8
    /// The user info given at init (empty for errors from the air), kept as Apple's bridged error structs keep
    /// theirs. Not `Sendable`-checked, as `NSError.userInfo` is not.
    public nonisolated(unsafe) let userInfo: [String: Any]

    public init(_ code: Code, userInfo: [String: Any] = [:]) {
        self.code = code
        self.attErrorCode = UInt8(truncatingIfNeeded: code.rawValue)
        self.userInfo = userInfo
    }

    /// The error for an ATT error code from the air.
    public init(attErrorCode: UInt8) {
        self.attErrorCode = attErrorCode
        self.code = Code(rawValue: Int(attErrorCode)) ?? .unlikelyError
        self.userInfo = [:]
    }

    public static var errorDomain: String { CBATTErrorDomain }
    public var errorCode: Int { Int(attErrorCode) }
    /// `userInfo`, with the description as `NSLocalizedDescriptionKey` when it has none.
    public var errorUserInfo: [String: Any] { userInfo.merging([NSLocalizedDescriptionKey: description]) { given, _ in given } }
    public var description: String { "CBATTError(0x\(String(attErrorCode, radix: 16, uppercase: true)))" }

    /// Equal when the codes are (the user info is not compared, as for `CBError`).
    public static func == (lhs: CBATTError, rhs: CBATTError) -> Bool {
        lhs.code == rhs.code && lhs.attErrorCode == rhs.attErrorCode
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(attErrorCode)
    }


    public static var success: Code { .success }
    public static var invalidHandle: Code { .invalidHandle }
    public static var readNotPermitted: Code { .readNotPermitted }
    public static var writeNotPermitted: Code { .writeNotPermitted }
    public static var invalidPdu: Code { .invalidPdu }
    public static var insufficientAuthentication: Code { .insufficientAuthentication }
    public static var requestNotSupported: Code { .requestNotSupported }
    public static var invalidOffset: Code { .invalidOffset }
    public static var insufficientAuthorization: Code { .insufficientAuthorization }
    public static var prepareQueueFull: Code { .prepareQueueFull }
    public static var attributeNotFound: Code { .attributeNotFound }
    public static var attributeNotLong: Code { .attributeNotLong }
    public static var insufficientEncryptionKeySize: Code { .insufficientEncryptionKeySize }
    public static var invalidAttributeValueLength: Code { .invalidAttributeValueLength }
    public static var unlikelyError: Code { .unlikelyError }
    public static var insufficientEncryption: Code { .insufficientEncryption }
    public static var unsupportedGroupType: Code { .unsupportedGroupType }
    public static var insufficientResources: Code { .insufficientResources }
}

/// Pattern matching on codes: `catch CBError.notConnected`.
public func ~= (code: CBError.Code, error: any Error) -> Bool {
    (error as? CBError)?.code == code
}

/// Pattern matching on codes: `catch CBATTError.writeNotPermitted`.
public func ~= (code: CBATTError.Code, error: any Error) -> Bool {
    (error as? CBATTError)?.code == code
}
