public import Foundation

/// A CoreBluetooth error (domain `CBErrorDomain`), shaped as Apple's imported `NS_ERROR_ENUM`: a struct with a
/// nested `Code` and one static shortcut per code, so `error as? CBError`, `error.code == .notConnected` and
/// `catch CBError.peripheralDisconnected` work as on Apple platforms.
public struct CBError: CustomNSError, Hashable, Error, Sendable, CustomStringConvertible {
    /// The CoreBluetooth error codes, with Apple's raw values.
    public enum Code: Int, Sendable, Hashable {
        /// An unknown error.
        case unknown = 0
        /// The parameters are invalid, e.g. a local service that breaks CoreBluetooth's rules.
        case invalidParameters = 1
        /// The attribute handle is invalid, e.g. an attribute gone since discovery.
        case invalidHandle = 2
        /// The peripheral is not connected.
        case notConnected = 3
        /// The device has no room left, e.g. in the GATT database or among the dynamic PSMs.
        case outOfSpace = 4
        /// The operation was cancelled.
        case operationCancelled = 5
        /// The connection timed out: the link supervision timeout, or an ATT transaction timeout.
        case connectionTimeout = 6
        /// The peripheral disconnected.
        case peripheralDisconnected = 7
        /// The UUID is not permitted.
        case uuidNotAllowed = 8
        /// The peripheral manager is already advertising.
        case alreadyAdvertising = 9
        /// The connection attempt failed.
        case connectionFailed = 10
        /// The device already has the maximum number of connections.
        case connectionLimitReached = 11
        /// The device is unknown (Apple's misspelt name of code 12; use `unknownDevice`).
        @available(iOS, deprecated: 13.0, renamed: "unknownDevice")
        @available(macOS, deprecated: 10.15, renamed: "unknownDevice")
        case unkownDevice = 12
        /// The operation is not supported.
        case operationNotSupported = 13
        /// The peer no longer has the pairing information (a lost bond): encrypting the link failed.
        case peerRemovedPairingInformation = 14
        /// Pairing or encryption timed out (the SMP timeout).
        case encryptionTimedOut = 15
        /// There are too many LE paired devices.
        case tooManyLEPairedDevices = 16
        /// The background notification limit was exceeded (watchOS only; never reported on Linux).
        case leGattExceededBackgroundNotificationLimit = 17
        /// The background notification limit is near (watchOS only; never reported on Linux).
        case leGattNearBackgroundNotificationLimit = 18

        /// Code 12 under its corrected spelling.
        public static var unknownDevice: Code { Code(rawValue: 12) ?? .unknown }
    }

    /// The error code.
    public let code: Code
    /// Why it happened, in words (the `NSLocalizedDescriptionKey` of the bridged NSError).
    public let reason: String
    /// The user info given at init, kept as Apple's bridged error structs keep theirs (`init(_:reason:)` gives
    /// `[NSLocalizedDescriptionKey: reason]`). Not `Sendable`-checked, as `NSError.userInfo` is not.
    public nonisolated(unsafe) let userInfo: [String: Any]

    /// An error with `code` and `userInfo`; the reason is the `NSLocalizedDescriptionKey` or Apple's text for the code.
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


    /// Shortcut for `Code.unknown`.
    public static var unknown: Code { .unknown }
    /// Shortcut for `Code.invalidParameters`.
    public static var invalidParameters: Code { .invalidParameters }
    /// Shortcut for `Code.invalidHandle`.
    public static var invalidHandle: Code { .invalidHandle }
    /// Shortcut for `Code.notConnected`.
    public static var notConnected: Code { .notConnected }
    /// Shortcut for `Code.outOfSpace`.
    public static var outOfSpace: Code { .outOfSpace }
    /// Shortcut for `Code.operationCancelled`.
    public static var operationCancelled: Code { .operationCancelled }
    /// Shortcut for `Code.connectionTimeout`.
    public static var connectionTimeout: Code { .connectionTimeout }
    /// Shortcut for `Code.peripheralDisconnected`.
    public static var peripheralDisconnected: Code { .peripheralDisconnected }
    /// Shortcut for `Code.uuidNotAllowed`.
    public static var uuidNotAllowed: Code { .uuidNotAllowed }
    /// Shortcut for `Code.alreadyAdvertising`.
    public static var alreadyAdvertising: Code { .alreadyAdvertising }
    /// Shortcut for `Code.connectionFailed`.
    public static var connectionFailed: Code { .connectionFailed }
    /// Shortcut for `Code.connectionLimitReached`.
    public static var connectionLimitReached: Code { .connectionLimitReached }
    /// Shortcut for `Code.unknownDevice`.
    public static var unknownDevice: Code { Code.unknownDevice }
    /// Apple's misspelt shortcut for code 12, kept (deprecated) as in Apple's SDK.
    @available(iOS, deprecated: 13.0, renamed: "unknownDevice")
    @available(macOS, deprecated: 10.15, renamed: "unknownDevice")
    public static var unkownDevice: Code { Code.unknownDevice }
    /// Shortcut for `Code.operationNotSupported`.
    public static var operationNotSupported: Code { .operationNotSupported }
    /// Shortcut for `Code.peerRemovedPairingInformation`.
    public static var peerRemovedPairingInformation: Code { .peerRemovedPairingInformation }
    /// Shortcut for `Code.encryptionTimedOut`.
    public static var encryptionTimedOut: Code { .encryptionTimedOut }
    /// Shortcut for `Code.tooManyLEPairedDevices`.
    public static var tooManyLEPairedDevices: Code { .tooManyLEPairedDevices }
    /// Shortcut for `Code.leGattExceededBackgroundNotificationLimit`.
    public static var leGattExceededBackgroundNotificationLimit: Code { .leGattExceededBackgroundNotificationLimit }
    /// Shortcut for `Code.leGattNearBackgroundNotificationLimit`.
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
    /// The ATT error codes (Core 5.4 Vol 3 Part F §3.4.1.1), with their values on the air.
    public enum Code: Int, Sendable, Hashable {
        /// No error (0x00): the result for a successful request in `respond(to:withResult:)`.
        case success = 0x00
        /// The attribute handle is not valid on this server (0x01).
        case invalidHandle = 0x01
        /// The attribute cannot be read (0x02).
        case readNotPermitted = 0x02
        /// The attribute cannot be written (0x03).
        case writeNotPermitted = 0x03
        /// The request PDU was invalid (0x04).
        case invalidPdu = 0x04
        /// The attribute requires an authenticated link (0x05).
        case insufficientAuthentication = 0x05
        /// The server does not support the request (0x06).
        case requestNotSupported = 0x06
        /// The offset is past the end of the attribute value (0x07).
        case invalidOffset = 0x07
        /// The attribute requires authorization (0x08).
        case insufficientAuthorization = 0x08
        /// Too many prepared writes are queued (0x09).
        case prepareQueueFull = 0x09
        /// No attribute was found in the handle range (0x0A).
        case attributeNotFound = 0x0A
        /// The attribute cannot be read or written with Read Blob or Prepare Write (0x0B).
        case attributeNotLong = 0x0B
        /// The encryption key is too short for this attribute (0x0C).
        case insufficientEncryptionKeySize = 0x0C
        /// The length of the value is invalid for this attribute (0x0D).
        case invalidAttributeValueLength = 0x0D
        /// The request failed for an unlikely reason (0x0E); also stands for codes outside this enum.
        case unlikelyError = 0x0E
        /// The attribute requires an encrypted link (0x0F).
        case insufficientEncryption = 0x0F
        /// The attribute type is not a supported grouping attribute (0x10).
        case unsupportedGroupType = 0x10
        /// The server lacks the resources to complete the request (0x11).
        case insufficientResources = 0x11
    }

    /// The error code; `.unlikelyError` for codes outside `Code` (see `attErrorCode`).
    public let code: Code
    /// The ATT error code as received, also for codes outside `Code` (application errors 0x80-0x9F, common
    /// profile errors 0xE0-0xFF), which map to `.unlikelyError` in `code`.
    public let attErrorCode: UInt8
    /// The user info given at init (empty for errors from the air), kept as Apple's bridged error structs keep
    /// theirs. Not `Sendable`-checked, as `NSError.userInfo` is not.
    public nonisolated(unsafe) let userInfo: [String: Any]

    /// An error with `code` and `userInfo`.
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


    /// Shortcut for `Code.success`.
    public static var success: Code { .success }
    /// Shortcut for `Code.invalidHandle`.
    public static var invalidHandle: Code { .invalidHandle }
    /// Shortcut for `Code.readNotPermitted`.
    public static var readNotPermitted: Code { .readNotPermitted }
    /// Shortcut for `Code.writeNotPermitted`.
    public static var writeNotPermitted: Code { .writeNotPermitted }
    /// Shortcut for `Code.invalidPdu`.
    public static var invalidPdu: Code { .invalidPdu }
    /// Shortcut for `Code.insufficientAuthentication`.
    public static var insufficientAuthentication: Code { .insufficientAuthentication }
    /// Shortcut for `Code.requestNotSupported`.
    public static var requestNotSupported: Code { .requestNotSupported }
    /// Shortcut for `Code.invalidOffset`.
    public static var invalidOffset: Code { .invalidOffset }
    /// Shortcut for `Code.insufficientAuthorization`.
    public static var insufficientAuthorization: Code { .insufficientAuthorization }
    /// Shortcut for `Code.prepareQueueFull`.
    public static var prepareQueueFull: Code { .prepareQueueFull }
    /// Shortcut for `Code.attributeNotFound`.
    public static var attributeNotFound: Code { .attributeNotFound }
    /// Shortcut for `Code.attributeNotLong`.
    public static var attributeNotLong: Code { .attributeNotLong }
    /// Shortcut for `Code.insufficientEncryptionKeySize`.
    public static var insufficientEncryptionKeySize: Code { .insufficientEncryptionKeySize }
    /// Shortcut for `Code.invalidAttributeValueLength`.
    public static var invalidAttributeValueLength: Code { .invalidAttributeValueLength }
    /// Shortcut for `Code.unlikelyError`.
    public static var unlikelyError: Code { .unlikelyError }
    /// Shortcut for `Code.insufficientEncryption`.
    public static var insufficientEncryption: Code { .insufficientEncryption }
    /// Shortcut for `Code.unsupportedGroupType`.
    public static var unsupportedGroupType: Code { .unsupportedGroupType }
    /// Shortcut for `Code.insufficientResources`.
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
