public import BluetoothCore

/// The code of an L2CAP signaling command, Core 5.4 Vol 3 Part A §4, Table 4.2.
///
/// The table ``leLengthRule`` lists the commands allowed on the LE signaling channel (CID 0x0005) with the
/// lengths of their data fields; it drives decoding. Codes outside it (BR/EDR-only commands, reserved codes)
/// decode as ``L2CAPSignalingCommand/unknown(code:identifier:data:)`` and are answered with Command Reject
/// *Command not understood*.
public struct L2CAPSignalingCode: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "L2CAP signaling code"

    public static let commandReject = Self(0x01)
    public static let connectionRequest = Self(0x02)
    public static let connectionResponse = Self(0x03)
    public static let configurationRequest = Self(0x04)
    public static let configurationResponse = Self(0x05)
    public static let disconnectionRequest = Self(0x06)
    public static let disconnectionResponse = Self(0x07)
    public static let echoRequest = Self(0x08)
    public static let echoResponse = Self(0x09)
    public static let informationRequest = Self(0x0A)
    public static let informationResponse = Self(0x0B)
    public static let connectionParameterUpdateRequest = Self(0x12)
    public static let connectionParameterUpdateResponse = Self(0x13)
    public static let leCreditBasedConnectionRequest = Self(0x14)
    public static let leCreditBasedConnectionResponse = Self(0x15)
    public static let flowControlCreditIndication = Self(0x16)
    public static let creditBasedConnectionRequest = Self(0x17)
    public static let creditBasedConnectionResponse = Self(0x18)
    public static let creditBasedReconfigureRequest = Self(0x19)
    public static let creditBasedReconfigureResponse = Self(0x1A)

    public static let names: [UInt8: String] = [
        0x01: "L2CAP_COMMAND_REJECT_RSP",
        0x02: "L2CAP_CONNECTION_REQ",
        0x03: "L2CAP_CONNECTION_RSP",
        0x04: "L2CAP_CONFIGURATION_REQ",
        0x05: "L2CAP_CONFIGURATION_RSP",
        0x06: "L2CAP_DISCONNECTION_REQ",
        0x07: "L2CAP_DISCONNECTION_RSP",
        0x08: "L2CAP_ECHO_REQ",
        0x09: "L2CAP_ECHO_RSP",
        0x0A: "L2CAP_INFORMATION_REQ",
        0x0B: "L2CAP_INFORMATION_RSP",
        0x12: "L2CAP_CONNECTION_PARAMETER_UPDATE_REQ",
        0x13: "L2CAP_CONNECTION_PARAMETER_UPDATE_RSP",
        0x14: "L2CAP_LE_CREDIT_BASED_CONNECTION_REQ",
        0x15: "L2CAP_LE_CREDIT_BASED_CONNECTION_RSP",
        0x16: "L2CAP_FLOW_CONTROL_CREDIT_IND",
        0x17: "L2CAP_CREDIT_BASED_CONNECTION_REQ",
        0x18: "L2CAP_CREDIT_BASED_CONNECTION_RSP",
        0x19: "L2CAP_CREDIT_BASED_RECONFIGURE_REQ",
        0x1A: "L2CAP_CREDIT_BASED_RECONFIGURE_RSP",
    ]

    /// The spec's descriptive title of each code ("Command Reject"), used as the dissection root.
    public static let titles: [UInt8: String] = [
        0x01: "Command Reject",
        0x02: "Connection Request",
        0x03: "Connection Response",
        0x04: "Configuration Request",
        0x05: "Configuration Response",
        0x06: "Disconnection Request",
        0x07: "Disconnection Response",
        0x08: "Echo Request",
        0x09: "Echo Response",
        0x0A: "Information Request",
        0x0B: "Information Response",
        0x12: "Connection Parameter Update Request",
        0x13: "Connection Parameter Update Response",
        0x14: "LE Credit Based Connection Request",
        0x15: "LE Credit Based Connection Response",
        0x16: "Flow Control Credit Indication",
        0x17: "Credit Based Connection Request",
        0x18: "Credit Based Connection Response",
        0x19: "Credit Based Reconfigure Request",
        0x1A: "Credit Based Reconfigure Response",
    ]

    /// "LE Credit Based Connection Request", or "Unknown command (0x2F)".
    public var title: String { Self.titles[rawValue] ?? "Unknown command (\(hexValue))" }

    /// The commands valid on the LE signaling channel and the allowed lengths of their data field
    /// (Vol 3 Part A §4.1 to §4.27).
    public static let leLengthRule: [UInt8: L2CAPSignalingLengthRule] = [
        0x01: L2CAPSignalingLengthRule(minimum: 2, maximum: 6, step: 2),  // reason + 0, 2 or 4 octets
        0x06: .exactly(4),
        0x07: .exactly(4),
        0x12: .exactly(8),
        0x13: .exactly(2),
        0x14: .exactly(10),
        0x15: .exactly(10),
        0x16: .exactly(4),
        0x17: L2CAPSignalingLengthRule(minimum: 10, maximum: 18, step: 2),  // 8 + 2 × (1...5) source CIDs
        0x18: L2CAPSignalingLengthRule(minimum: 8, maximum: 18, step: 2),  // 8 + 2 × (0...5) destination CIDs
        0x19: L2CAPSignalingLengthRule(minimum: 6, maximum: 14, step: 2),  // 4 + 2 × (1...5) destination CIDs
        0x1A: .exactly(2),
    ]

    /// Whether the command is allowed on the LE signaling channel (and so has a codec here).
    public var isLECommand: Bool { Self.leLengthRule[rawValue] != nil }
}

/// The lengths a signaling command's data field may have: `minimum...maximum` in steps of `step` octets
/// (a step of 0 means exactly `minimum`).
public struct L2CAPSignalingLengthRule: Hashable, Sendable {
    public let minimum: Int
    public let maximum: Int
    public let step: Int

    public init(minimum: Int, maximum: Int, step: Int) {
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
        self.step = max(0, step)
    }

    public static func exactly(_ length: Int) -> Self { Self(minimum: length, maximum: length, step: 0) }

    public func accepts(_ length: Int) -> Bool {
        guard length >= minimum, length <= maximum else { return false }
        guard step > 0 else { return length == minimum }
        return (length - minimum) % step == 0
    }

    /// "exactly 4 octets" / "10 to 18 octets in steps of 2".
    public var description: String {
        step == 0 || minimum == maximum
            ? "exactly \(minimum) octets" : "\(minimum) to \(maximum) octets in steps of \(step)"
    }
}

/// The reason of an L2CAP Command Reject, Core 5.4 Vol 3 Part A §4.1, Table 4.3.
public struct L2CAPSignalingRejectReason: OpenCode, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static let codeKind = "reject reason"

    public static let commandNotUnderstood = Self(0x0000)
    public static let signalingMTUExceeded = Self(0x0001)
    public static let invalidCIDInRequest = Self(0x0002)

    public static let names: [UInt16: String] = [
        0x0000: "Command not understood",
        0x0001: "Signaling MTU exceeded",
        0x0002: "Invalid CID in request",
    ]
}

/// The result of a Connection Parameter Update Response, Core 5.4 Vol 3 Part A §4.21, Table 4.15.
public struct L2CAPConnectionParameterUpdateResult: OpenCode {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static let codeKind = "connection parameter update result"

    public static let accepted = Self(0x0000)
    public static let rejected = Self(0x0001)

    public static let names: [UInt16: String] = [
        0x0000: "Connection Parameters accepted",
        0x0001: "Connection Parameters rejected",
    ]
}

/// The result of a Credit Based Reconfigure Response, Core 5.4 Vol 3 Part A §4.28, Table 4.21.
public struct L2CAPReconfigureResult: OpenCode {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static let codeKind = "reconfigure result"

    public static let successful = Self(0x0000)
    public static let mtuReductionNotAllowed = Self(0x0001)
    public static let mpsReductionNotAllowed = Self(0x0002)
    public static let invalidDestinationCID = Self(0x0003)
    public static let unacceptableParameters = Self(0x0004)

    public static let names: [UInt16: String] = [
        0x0000: "Reconfiguration successful",
        0x0001: "Reconfiguration failed - reduction in size of MTU not allowed",
        0x0002: "Reconfiguration failed - reduction in size of MPS not allowed for more than one channel at a time",
        0x0003: "Reconfiguration failed - one or more Destination CIDs invalid",
        0x0004: "Reconfiguration failed - other unacceptable parameters",
    ]
}
