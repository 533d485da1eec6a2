/// The kind of an ATT PDU (Core 5.4 Vol 3 Part F §3.3, "Attribute PDU" and §3.4.8 Table 3.37).
public enum ATTPDUKind: String, Hashable, Sendable, CaseIterable {
    /// Sent by a client; the server answers with the matching response or an Error Response.
    case request
    /// Sent by a server in answer to a request.
    case response
    /// Sent by a client; never answered (Command Flag set).
    case command
    /// Sent by a server unsolicited; never answered.
    case notification
    /// Sent by a server; the client answers with a Handle Value Confirmation.
    case indication
    /// Sent by a client in answer to an indication.
    case confirmation
}

/// The length a whole ATT PDU (opcode octet included) must have, from the parameter lengths of
/// Core 5.4 Vol 3 Part F §3.4. The rule is a predicate on the length; its cases say what kind of predicate.
public enum ATTLengthRule: Hashable, Sendable, CustomStringConvertible {
    /// Exactly this many octets.
    case exact(Int)
    /// At least this many octets.
    case minimum(Int)
    /// One of these lengths (Read By Type / Read By Group Type requests: a 2- or a 16-octet UUID).
    case oneOf([Int])
    /// `minimum`, `minimum + step`, `minimum + 2·step`, ... (lists of fixed-size items, e.g. Read Multiple
    /// Request: opcode + at least two 2-octet handles).
    case stepped(minimum: Int, step: Int)

    /// Whether a PDU of `length` octets satisfies the rule.
    public func accepts(_ length: Int) -> Bool {
        switch self {
        case .exact(let exact): return length == exact
        case .minimum(let minimum): return length >= minimum
        case .oneOf(let lengths): return lengths.contains(length)
        case .stepped(let minimum, let step):
            guard length >= minimum else { return false }
            guard step > 0 else { return length == minimum }
            return (length - minimum) % step == 0
        }
    }

    /// The smallest length the rule accepts.
    public var minimumLength: Int {
        switch self {
        case .exact(let exact): return exact
        case .minimum(let minimum): return minimum
        case .oneOf(let lengths): return lengths.min() ?? 0
        case .stepped(let minimum, _): return minimum
        }
    }

    public var description: String {
        switch self {
        case .exact(let exact): return "exactly \(exact) octets"
        case .minimum(let minimum): return "at least \(minimum) octets"
        case .oneOf(let lengths): return lengths.map(String.init).joined(separator: " or ") + " octets"
        case .stepped(let minimum, let step): return "\(minimum) + a multiple of \(step) octets"
        }
    }
}

/// One row of ``ATTOpcodeTable``: what the specification says about an opcode.
public struct ATTOpcodeInfo: Hashable, Sendable {
    public var opcode: ATTOpcode
    /// The PDU name, "Read By Type Request".
    public var name: String
    /// The specification's identifier, "ATT_READ_BY_TYPE_REQ".
    public var identifier: String
    public var kind: ATTPDUKind
    /// For requests, the response opcode that answers them.
    public var responseOpcode: ATTOpcode?
    /// The length the whole PDU must have.
    public var lengthRule: ATTLengthRule
    /// The section of Core 5.4 Vol 3 Part F defining the PDU.
    public var section: String

    public init(
        _ opcode: ATTOpcode, _ name: String, _ identifier: String, _ kind: ATTPDUKind,
        response: ATTOpcode? = nil, length: ATTLengthRule, section: String
    ) {
        self.opcode = opcode
        self.name = name
        self.identifier = identifier
        self.kind = kind
        self.responseOpcode = response
        self.lengthRule = length
        self.section = section
    }
}

/// Every ATT PDU of Core 5.4 Vol 3 Part F §3.4 (summary in §3.4.8, Table 3.37): kind, response, length rule.
/// ``ATTPDU/init(decoding:)`` checks a PDU against this table before decoding its fields.
public enum ATTOpcodeTable {
    public static let entries: [ATTOpcodeInfo] = [
        .init(.errorResponse, "Error Response", "ATT_ERROR_RSP", .response, length: .exact(5), section: "3.4.1.1"),
        .init(.exchangeMTURequest, "Exchange MTU Request", "ATT_EXCHANGE_MTU_REQ", .request,
              response: .exchangeMTUResponse, length: .exact(3), section: "3.4.2.1"),
        .init(.exchangeMTUResponse, "Exchange MTU Response", "ATT_EXCHANGE_MTU_RSP", .response,
              length: .exact(3), section: "3.4.2.2"),
        .init(.findInformationRequest, "Find Information Request", "ATT_FIND_INFORMATION_REQ", .request,
              response: .findInformationResponse, length: .exact(5), section: "3.4.3.1"),
        // Format octet + at least one 4-octet (format 1) pair; the format decides the rest.
        .init(.findInformationResponse, "Find Information Response", "ATT_FIND_INFORMATION_RSP", .response,
              length: .minimum(6), section: "3.4.3.2"),
        .init(.findByTypeValueRequest, "Find By Type Value Request", "ATT_FIND_BY_TYPE_VALUE_REQ", .request,
              response: .findByTypeValueResponse, length: .minimum(7), section: "3.4.3.3"),
        .init(.findByTypeValueResponse, "Find By Type Value Response", "ATT_FIND_BY_TYPE_VALUE_RSP", .response,
              length: .stepped(minimum: 5, step: 4), section: "3.4.3.4"),
        .init(.readByTypeRequest, "Read By Type Request", "ATT_READ_BY_TYPE_REQ", .request,
              response: .readByTypeResponse, length: .oneOf([7, 21]), section: "3.4.4.1"),
        // Length octet + at least one element of at least a handle.
        .init(.readByTypeResponse, "Read By Type Response", "ATT_READ_BY_TYPE_RSP", .response,
              length: .minimum(4), section: "3.4.4.2"),
        .init(.readRequest, "Read Request", "ATT_READ_REQ", .request,
              response: .readResponse, length: .exact(3), section: "3.4.4.3"),
        .init(.readResponse, "Read Response", "ATT_READ_RSP", .response, length: .minimum(1), section: "3.4.4.4"),
        .init(.readBlobRequest, "Read Blob Request", "ATT_READ_BLOB_REQ", .request,
              response: .readBlobResponse, length: .exact(5), section: "3.4.4.5"),
        .init(.readBlobResponse, "Read Blob Response", "ATT_READ_BLOB_RSP", .response,
              length: .minimum(1), section: "3.4.4.6"),
        .init(.readMultipleRequest, "Read Multiple Request", "ATT_READ_MULTIPLE_REQ", .request,
              response: .readMultipleResponse, length: .stepped(minimum: 5, step: 2), section: "3.4.4.7"),
        .init(.readMultipleResponse, "Read Multiple Response", "ATT_READ_MULTIPLE_RSP", .response,
              length: .minimum(1), section: "3.4.4.8"),
        .init(.readByGroupTypeRequest, "Read By Group Type Request", "ATT_READ_BY_GROUP_TYPE_REQ", .request,
              response: .readByGroupTypeResponse, length: .oneOf([7, 21]), section: "3.4.4.9"),
        // Length octet + at least one element of handle + end group handle.
        .init(.readByGroupTypeResponse, "Read By Group Type Response", "ATT_READ_BY_GROUP_TYPE_RSP", .response,
              length: .minimum(6), section: "3.4.4.10"),
        .init(.readMultipleVariableRequest, "Read Multiple Variable Request", "ATT_READ_MULTIPLE_VARIABLE_REQ",
              .request, response: .readMultipleVariableResponse, length: .stepped(minimum: 5, step: 2),
              section: "3.4.4.11"),
        // At least one length field.
        .init(.readMultipleVariableResponse, "Read Multiple Variable Response", "ATT_READ_MULTIPLE_VARIABLE_RSP",
              .response, length: .minimum(3), section: "3.4.4.12"),
        .init(.writeRequest, "Write Request", "ATT_WRITE_REQ", .request,
              response: .writeResponse, length: .minimum(3), section: "3.4.5.1"),
        .init(.writeResponse, "Write Response", "ATT_WRITE_RSP", .response, length: .exact(1), section: "3.4.5.2"),
        .init(.writeCommand, "Write Command", "ATT_WRITE_CMD", .command, length: .minimum(3), section: "3.4.5.3"),
        .init(.signedWriteCommand, "Signed Write Command", "ATT_SIGNED_WRITE_CMD", .command,
              length: .minimum(15), section: "3.4.5.4"),
        .init(.prepareWriteRequest, "Prepare Write Request", "ATT_PREPARE_WRITE_REQ", .request,
              response: .prepareWriteResponse, length: .minimum(5), section: "3.4.6.1"),
        .init(.prepareWriteResponse, "Prepare Write Response", "ATT_PREPARE_WRITE_RSP", .response,
              length: .minimum(5), section: "3.4.6.2"),
        .init(.executeWriteRequest, "Execute Write Request", "ATT_EXECUTE_WRITE_REQ", .request,
              response: .executeWriteResponse, length: .exact(2), section: "3.4.6.3"),
        .init(.executeWriteResponse, "Execute Write Response", "ATT_EXECUTE_WRITE_RSP", .response,
              length: .exact(1), section: "3.4.6.4"),
        .init(.handleValueNotification, "Handle Value Notification", "ATT_HANDLE_VALUE_NTF", .notification,
              length: .minimum(3), section: "3.4.7.1"),
        .init(.handleValueIndication, "Handle Value Indication", "ATT_HANDLE_VALUE_IND", .indication,
              length: .minimum(3), section: "3.4.7.2"),
        .init(.handleValueConfirmation, "Handle Value Confirmation", "ATT_HANDLE_VALUE_CFM", .confirmation,
              length: .exact(1), section: "3.4.7.3"),
        // Two tuples of handle + length at least.
        .init(.multipleHandleValueNotification, "Multiple Handle Value Notification",
              "ATT_MULTIPLE_HANDLE_VALUE_NTF", .notification, length: .minimum(9), section: "3.4.7.4"),
    ]

    /// Indexed by the opcode's value: every PDU sent and received asks, and a dictionary hashed the octet each time.
    private static let byOpcode: [ATTOpcodeInfo?] = {
        var table = [ATTOpcodeInfo?](repeating: nil, count: 256)
        for entry in entries { table[Int(entry.opcode.rawValue)] = entry }
        return table
    }()

    /// The entry for `opcode`, or nil for an opcode the specification does not define.
    public static func info(for opcode: ATTOpcode) -> ATTOpcodeInfo? { byOpcode[Int(opcode.rawValue)] }
}
