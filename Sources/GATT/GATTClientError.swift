public import ATT
public import BluetoothCore

/// Why the ATT bearer under a ``GATTClient`` stopped (Core 5.4 Vol 3 Part F §3.3.3: a transaction that times out
/// ends the bearer; a disconnected link ends it too).
public enum GATTClientBearerFailure: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The 30-second ATT transaction timeout expired (Vol 3 Part F §3.3.3).
    case transactionTimeout
    /// The link (or the L2CAP channel) went away; the HCI reason when known.
    case disconnected(reason: UInt8?)
    /// Any other reason the owner gives.
    case other(String)

    public var description: String {
        switch self {
        case .transactionTimeout: return "ATT transaction timeout"
        case .disconnected(let reason?): return "disconnected (reason \(Dissection.hex8(reason)))"
        case .disconnected(nil): return "disconnected"
        case .other(let text): return text
        }
    }
}

/// Why securing the link failed for a request the server refused with Insufficient Authentication / Encryption /
/// Encryption Key Size (Core 5.4 Vol 3 Part C §10.3.2: the client pairs or encrypts, then retries), as the owner
/// of the client reports it (GATT does not know the Security Manager: Vol 3 Part H §3.5.5 reasons, §3.4 timeout).
public enum GATTSecurityFailure: Hashable, Sendable, CustomStringConvertible, Codable {
    /// Pairing failed with this SMP Pairing Failed reason, sent by the peer (`remote`) or by us.
    case pairingFailed(SMPPairingFailedReason, remote: Bool)
    /// The 30 s SMP timeout expired (no more pairing on this link).
    case timedOut
    /// Encryption failed with this HCI status (MIC Failure 0x3D, ...).
    case encryptionFailed(HCIStatus)
    /// The peer lost the bond we hold (PIN or Key Missing, 0x06) and re-pairing was not allowed.
    case bondLost
    /// Anything else, in words (no Security Manager on the link, the controller refused...).
    case other(String)

    public var description: String {
        switch self {
        case .pairingFailed(let reason, let remote): return "pairing failed: \(reason), \(remote ? "remote" : "local")"
        case .timedOut: return "SMP timeout"
        case .encryptionFailed(let status): return "encryption failed: \(status)"
        case .bondLost: return "the peer lost its bond (PIN or Key Missing)"
        case .other(let text): return text
        }
    }
}

/// Why a GATT client procedure failed (Core 5.4 Vol 3 Part G §4; errors of Vol 3 Part F §3.4.1.1).
public enum GATTClientError: Error, Hashable, Sendable, CustomStringConvertible, Codable {
    /// The server answered with an Error Response: the ATT error code and the handle it named.
    case attError(ATTErrorCode, handle: UInt16)
    /// The server answered with a PDU that does not answer the outstanding request (expected is the response
    /// opcode the request calls for).
    case unexpectedResponse(received: ATTOpcode, expected: ATTOpcode)
    /// The response is of the right kind but breaks the procedure's rules: handles that go backwards or do not
    /// advance, entries outside the requested range, a wrong echo length, a malformed value.
    case invalidResponse(String)
    /// A Prepare Write Response did not echo the request (handle, offset and value); the prepared writes were
    /// cancelled with Execute Write (0x00) (§4.9.4, §4.9.5).
    case prepareWriteEchoMismatch(handle: UInt16, offset: UInt16)
    /// The bearer failed (timeout or disconnection) before the procedure finished; nothing more can be sent.
    case bearerFailed(GATTClientBearerFailure)
    /// The procedure cannot be run as asked (a value too long for the MTU, a bad handle range, too few handles).
    case invalidParameter(String)
    /// A signed write was asked for and no signer is set, or the signer declined.
    case signingUnavailable
    /// The bearer refused to send the request (too long for ATT_MTU, not a request); the reason in words.
    case requestRefused(String)
    /// The server answered with a security Error Response (Insufficient Authentication / Encryption / Encryption
    /// Key Size), securing the link was tried (Vol 3 Part C §10.3.2) and failed: the ATT error and handle of the
    /// original answer, and why securing failed.
    case securityFailed(ATTErrorCode, handle: UInt16, GATTSecurityFailure)

    /// The ATT error code, when the server answered with an Error Response (also when securing the link for the
    /// retry failed: the original answer's code).
    public var attErrorCode: ATTErrorCode? {
        switch self {
        case .attError(let code, _), .securityFailed(let code, _, _): return code
        default: return nil
        }
    }

    /// Why securing the link failed, for ``securityFailed(_:handle:_:)``.
    public var securityFailure: GATTSecurityFailure? {
        if case .securityFailed(_, _, let failure) = self { return failure }
        return nil
    }

    public var description: String {
        switch self {
        case .attError(let code, let handle): return "\(code) (handle \(Dissection.hex16(handle)))"
        case .unexpectedResponse(let received, let expected): return "unexpected \(received), expected \(expected)"
        case .invalidResponse(let reason): return "invalid response: \(reason)"
        case .prepareWriteEchoMismatch(let handle, let offset):
            return "the Prepare Write Response for handle \(Dissection.hex16(handle)) offset \(offset) does not echo the request"
        case .bearerFailed(let failure): return "bearer failed: \(failure)"
        case .invalidParameter(let reason): return "invalid parameter: \(reason)"
        case .signingUnavailable: return "no signing key for a signed write"
        case .requestRefused(let reason): return "the bearer refused the request: \(reason)"
        case .securityFailed(let code, let handle, let failure):
            return "\(code) (handle \(Dissection.hex16(handle))); securing the link failed: \(failure)"
        }
    }
}
