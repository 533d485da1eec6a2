public import BluetoothCore

/// Identifies a request enqueued on an ``ATTBearer``: its answer comes back as
/// ``ATTBearerAction/response(_:_:)`` with the same identifier (Core 5.4 Vol 3 Part F §3.3.2).
public struct ATTBearerRequestID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: ATTBearerRequestID, rhs: ATTBearerRequestID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "request #\(rawValue)" }
}

/// Why an operation on an ``ATTBearer`` failed: a machine-readable ``Code`` and a reason in words
/// (Core 5.4 Vol 3 Part F §3.3.3 for the timeout, §3.4.1.1 for Error Responses).
public struct ATTBearerError: Error, Hashable, Sendable, CustomStringConvertible, Codable {
    public enum Code: String, Hashable, Sendable, Codable, CaseIterable {
        /// The peer answered with an Error Response (``ATTBearerError/attError`` and ``ATTBearerError/handle``).
        case errorResponse
        /// No response (or confirmation) within 30 s: the bearer is dead (§3.3.3).
        case transactionTimeout
        /// The bearer was closed (timeout, protocol violation or link loss) before the operation completed.
        case bearerClosed
        /// The PDU cannot be sent this way (a response enqueued as a request, a second MTU exchange...).
        case invalidOperation
        /// The PDU is longer than the bearer's ATT_MTU.
        case exceedsMTU
    }

    public var code: Code
    public var reason: String
    /// For ``Code/errorResponse``: the error code the peer sent.
    public var attError: ATTErrorCode?
    /// For ``Code/errorResponse``: the attribute handle the peer named.
    public var handle: UInt16

    public init(_ code: Code, _ reason: String, attError: ATTErrorCode? = nil, handle: UInt16 = 0) {
        self.code = code
        self.reason = reason
        self.attError = attError
        self.handle = handle
    }

    public var description: String {
        if let attError { return "\(code.rawValue): \(attError) on handle \(Dissection.hex16(handle)) (\(reason))" }
        return "\(code.rawValue): \(reason)"
    }
}

/// Why an ``ATTBearer`` asks its owner to disconnect the link (Core 5.4 Vol 3 Part F §3.3.3: after a transaction
/// timeout no further ATT PDU may be sent on the bearer; an unexpected response is a protocol violation).
public enum ATTBearerDisconnectReason: Hashable, Sendable, CustomStringConvertible {
    /// A request of ours was not answered within 30 s.
    case transactionTimeout
    /// An indication of ours was not confirmed within 30 s.
    case confirmationTimeout
    /// The peer sent a response (or Error Response) that answers no outstanding request.
    case unexpectedResponse(opcode: ATTOpcode)
    /// The peer sent a response that does not decode.
    case invalidResponse(opcode: ATTOpcode, reason: String)
    /// The peer pipelined more requests than the bearer queues (see ``ATTBearer/maximumPipelinedRequests``).
    case tooManyPipelinedRequests

    public var description: String {
        switch self {
        case .transactionTimeout: return "ATT transaction timeout (30 s without a response)"
        case .confirmationTimeout: return "ATT transaction timeout (30 s without a confirmation)"
        case .unexpectedResponse(let opcode): return "unexpected ATT response \(opcode)"
        case .invalidResponse(let opcode, let reason): return "invalid ATT response \(opcode): \(reason)"
        case .tooManyPipelinedRequests: return "the peer pipelined too many ATT requests"
        }
    }
}

/// What an ``ATTBearer`` asks its owner to do (Core 5.4 Vol 3 Part F §3.3). The owner performs the actions in
/// order.
public enum ATTBearerAction: Hashable, Sendable {
    /// Send these bytes as one L2CAP basic frame on the ATT channel (CID 0x0004).
    case send([UInt8])
    /// A request enqueued on this side completed: its response PDU, or why it failed (an Error Response from the
    /// peer is a failure with code ``ATTBearerError/Code/errorResponse``).
    case response(ATTBearerRequestID, Result<ATTPDU, ATTBearerError>)
    /// For the local server: a request from the peer to answer with ``ATTBearer/respond(_:now:)``. Requests are
    /// handed up one at a time; Exchange MTU is answered by the bearer itself and never handed up.
    case request(ATTPDU)
    /// For the local server: a command from the peer (Write Command, Signed Write Command). Never answered.
    case command(ATTPDU)
    /// For the local client: a Handle Value Notification or Multiple Handle Value Notification.
    case notification(ATTPDU)
    /// For the local client: a Handle Value Indication; confirm with ``ATTBearer/confirmIndication()``.
    case indication(ATTPDU)
    /// ATT_MTU changed after an Exchange MTU (in either direction).
    case mtuChanged(Int)
    /// The peer confirmed the indication we sent for `handle`.
    case indicationConfirmed(handle: UInt16)
    /// An indication we sent or queued will never be confirmed (bearer dead).
    case indicationFailed(handle: UInt16, ATTBearerError)
    /// Disconnect the link: the bearer is dead (no further PDU will be sent or accepted).
    case disconnectLink(ATTBearerDisconnectReason)
}
