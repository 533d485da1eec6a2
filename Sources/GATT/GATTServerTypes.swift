public import ATT
public import BluetoothCore

/// What the application learns from a ``GATTServer`` (Core 5.4 Vol 3 Part G §4.9–§4.11).
public enum GATTServerEvent: Hashable, Sendable, Codable {
    /// A stored value was written (Write Request/Command, Signed Write, Execute Write): its new whole value.
    case valueWritten(connection: GATTConnectionID, handle: UInt16, value: [UInt8])
    /// A client wrote the CCCD of the characteristic whose value handle is given.
    case subscriptionChanged(connection: GATTConnectionID, valueHandle: UInt16, configuration: GATTClientConfiguration)
    /// A client wrote Client Supported Features.
    case clientFeaturesChanged(connection: GATTConnectionID, features: UInt8)
    /// A Signed Write Command was dropped (it is a command: the client hears nothing, Vol 3 Part F §3.4.5.4);
    /// `reason` says why.
    case signedWriteRejected(connection: GATTConnectionID, handle: UInt16, reason: GATTSignedWriteRejection)
}

/// Why a ``GATTServer`` dropped a Signed Write Command (Core 5.4 Vol 3 Part F §3.4.5.4 Signed Write Command,
/// Vol 3 Part H §2.4.5 data signing, Vol 3 Part C §10.4.2 authenticated signed writes).
public enum GATTSignedWriteRejection: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The link is unencrypted and no ``GATTSignatureVerifier`` is set (no bonded peer with a CSRK).
    case noVerifier
    /// The handle is 0, unknown, or its characteristic lacks the Authenticated Signed Writes property.
    case notPermitted
    /// The MAC does not match the message and the peer's CSRK (or the peer has no CSRK).
    case badSignature
    /// The MAC is good but the SignCounter is not greater than the last one accepted from that peer (replay).
    case replayedCounter
    /// The signature was accepted but the value refused the write (permissions, length): the ATT error a Write
    /// Request would have received.
    case writeRefused(ATTErrorCode)

    public var description: String {
        switch self {
        case .noVerifier: "no signature verifier"
        case .notPermitted: "signed writes not permitted on the attribute"
        case .badSignature: "bad signature"
        case .replayedCounter: "replayed sign counter"
        case .writeRefused(let code): "write refused (\(code))"
        }
    }
}

/// What a ``GATTSignatureVerifier`` decides about one Signed Write Command. A Boolean literal converts:
/// `true` is ``accepted``, `false` is ``rejected(_:)`` with ``GATTSignedWriteRejection/badSignature``.
public enum GATTSignatureVerdict: Hashable, Sendable, ExpressibleByBooleanLiteral {
    case accepted
    /// Dropped, with the reason (``GATTSignedWriteRejection/badSignature`` or ``GATTSignedWriteRejection/replayedCounter``
    /// from a verifier).
    case rejected(GATTSignedWriteRejection)

    public init(booleanLiteral value: Bool) { self = value ? .accepted : .rejected(.badSignature) }

    /// `true` → accepted, `false` → rejected as a bad signature.
    public init(_ valid: Bool) { self.init(booleanLiteral: valid) }
}

/// A PDU the server asks its owner to send to one connection's bearer: notifications through
/// `ATTBearer.send(_:)`, indications through `ATTBearer.sendIndication(handle:value:now:)`
/// (Core 5.4 Vol 3 Part G §4.10, §4.11).
public struct GATTServerOutbound: Hashable, Sendable {
    public var connection: GATTConnectionID
    public var pdu: ATTPDU
    /// The ATT bearer of the connection to send it on (its value was cut to that bearer's ATT_MTU).
    public var bearer: GATTBearerID

    public init(connection: GATTConnectionID, pdu: ATTPDU, bearer: GATTBearerID = .unenhanced) {
        self.connection = connection
        self.pdu = pdu
        self.bearer = bearer
    }

    /// Whether the PDU is an indication (one outstanding per bearer, confirmed).
    public var isIndication: Bool { pdu.opcode == .handleValueIndication }
}

/// The answer of a ``GATTServer`` to one request: the response PDU (or Error Response) for the bearer's
/// `respond(_:now:)`, and what the application should hear about.
public struct GATTServerReply: Hashable, Sendable {
    public var response: ATTPDU
    public var events: [GATTServerEvent]
    /// Set when the request was handed to the application to answer later (``GATTDeferral``): there is no
    /// response now (``response`` is then a Handle Value Confirmation, which answers no request, so an owner that
    /// ignores this field sends nothing); the answer comes from ``GATTServer/respond(toDeferred:on:result:)``.
    public var deferred: GATTPendingRequest?

    public init(response: ATTPDU, events: [GATTServerEvent] = [], deferred: GATTPendingRequest? = nil) {
        self.response = response
        self.events = events
        self.deferred = deferred
    }
}

/// A verifier of Signed Write Commands (Core 5.4 Vol 3 Part H §2.4.5): given the connection, the signed message
/// (opcode, handle and value, as sent) and the signature (sign counter and MAC), it checks the MAC with the
/// client's CSRK and the counter against the last one seen, and says ``GATTSignatureVerdict/accepted`` or why
/// not. GATT has no crypto dependency; the Host supplies this with BluetoothCrypto's DataSigning.
public typealias GATTSignatureVerifier = @Sendable (_ connection: GATTConnectionID, _ message: [UInt8], _ signature: ATTAuthenticationSignature) -> GATTSignatureVerdict
