public import BluetoothCore

/// A PDU that decoded but breaks a rule of Core 5.4 Vol 3 Part F §3.4 that the receiver must act on: a handle of
/// 0x0000, an inverted or zero-based handle range, too few handles or tuples.
public struct ATTProtocolViolation: Error, Hashable, Sendable, CustomStringConvertible {
    /// The opcode of the offending PDU.
    public var opcode: ATTOpcode
    /// The handle to name in the Error Response (the starting handle of a bad range, the zero handle...).
    public var handle: UInt16
    /// The error a server answers with.
    public var error: ATTErrorCode
    /// What is wrong, in words.
    public var reason: String

    public init(opcode: ATTOpcode, handle: UInt16, error: ATTErrorCode, reason: String) {
        self.opcode = opcode
        self.handle = handle
        self.error = error
        self.reason = reason
    }

    /// The Error Response a server sends, or nil when the offending PDU is not a request (commands,
    /// notifications and the rest are never answered with an Error Response).
    public var errorResponse: ATTPDU? {
        guard opcode.kind == .request else { return nil }
        return .errorResponse(requestOpcode: opcode, handle: handle, error: error)
    }

    public var description: String { "\(opcode): \(reason) (\(error))" }
}

extension ATTPDU {
    /// Checks the rules decoding leaves to the receiver, so that it answers with the right error:
    /// - handle ranges (Find Information, Find By Type Value, Read By Type, Read By Group Type requests) whose
    ///   starting handle is 0x0000 or above the ending handle: *Invalid Handle* naming the starting handle
    ///   (§3.4.3.1 and the others);
    /// - handle 0x0000 where the specification requires a real attribute handle (Read, Read Blob, Read Multiple,
    ///   Read Multiple Variable, Write, Write Command, Signed Write Command, Prepare Write requests,
    ///   notifications and indications): *Invalid Handle*;
    /// - lists that must not be empty or short (Read Multiple requests with fewer than two handles, an empty
    ///   Find By Type Value Response) — only reachable through values built in code: *Invalid PDU*.
    ///
    /// Decoding never rejects these, so a server can name the offending handle. Responses are checked for the
    /// same zero-handle rules (a client treats such a response as invalid).
    public func validate() throws(ATTProtocolViolation) {
        func violation(_ handle: UInt16, _ error: ATTErrorCode, _ reason: String) -> ATTProtocolViolation {
            ATTProtocolViolation(opcode: opcode, handle: handle, error: error, reason: reason)
        }
        func checkRange(_ range: ATTHandleRange) throws(ATTProtocolViolation) {
            if range.start == 0 {
                throw violation(range.start, .invalidHandle, "the starting handle is 0x0000")
            }
            if range.start > range.end {
                throw violation(range.start, .invalidHandle, "the starting handle \(hex16(range.start)) is above the ending handle \(hex16(range.end))")
            }
        }
        func checkHandle(_ handle: UInt16) throws(ATTProtocolViolation) {
            if handle == 0 { throw violation(0, .invalidHandle, "attribute handle 0x0000 is reserved") }
        }
        switch self {
        case .findInformationRequest(let range), .findByTypeValueRequest(let range, _, _),
             .readByTypeRequest(let range, _), .readByGroupTypeRequest(let range, _):
            try checkRange(range)
        case .readRequest(let handle), .readBlobRequest(let handle, _), .writeRequest(let handle, _),
             .writeCommand(let handle, _), .signedWriteCommand(let handle, _, _),
             .prepareWriteRequest(let handle, _, _), .prepareWriteResponse(let handle, _, _),
             .handleValueNotification(let handle, _), .handleValueIndication(let handle, _):
            try checkHandle(handle)
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            guard handles.count >= 2 else {
                throw violation(0, .invalidPDU, "a set of handles has at least two handles, found \(handles.count)")
            }
            for handle in handles { try checkHandle(handle) }
        case .findByTypeValueResponse(let list):
            guard !list.isEmpty else { throw violation(0, .invalidPDU, "the handles information list is empty") }
            for entry in list { try checkHandle(entry.foundAttributeHandle) }
        case .findInformationResponse(let response):
            for pair in response.information { try checkHandle(pair.handle) }
        case .readByTypeResponse(let response):
            for element in response.elements { try checkHandle(element.handle) }
        case .readByGroupTypeResponse(let response):
            for element in response.elements { try checkHandle(element.handle) }
        case .multipleHandleValueNotification(let notification):
            for tuple in notification.tuples { try checkHandle(tuple.handle) }
        case .errorResponse, .exchangeMTURequest, .exchangeMTUResponse, .readResponse, .readBlobResponse,
             .readMultipleResponse, .readMultipleVariableResponse, .writeResponse, .executeWriteRequest,
             .executeWriteResponse, .handleValueConfirmation:
            break
        }
    }

    /// What a server answers when `bytes`, received from a client, failed to decode: an Error
    /// Response (*Request Not Supported* for an unknown opcode without the command flag, *Invalid PDU* for a
    /// malformed known request; attribute handle 0x0000), or nil when nothing is sent (commands, whatever their
    /// opcode, and PDUs that are not requests). See ``ATTOpcode/errorForUndecodableRequest``.
    public static func errorResponse(answeringUndecodable bytes: some Collection<UInt8>) -> ATTPDU? {
        guard let first = bytes.first else { return nil }
        let opcode = ATTOpcode(rawValue: first)
        guard let code = opcode.errorForUndecodableRequest else { return nil }
        return .errorResponse(requestOpcode: opcode, handle: 0x0000, error: code)
    }
}
