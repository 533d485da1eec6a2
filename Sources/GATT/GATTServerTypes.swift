public import ATT
import BluetoothCore

/// What the application learns from a ``GATTServer`` (Core 5.4 Vol 3 Part G §4.9–§4.11).
public enum GATTServerEvent: Hashable, Sendable {
    /// A stored value was written (Write Request/Command, Signed Write, Execute Write): its new whole value.
    case valueWritten(connection: GATTConnectionID, handle: UInt16, value: [UInt8])
    /// A client wrote the CCCD of the characteristic whose value handle is given.
    case subscriptionChanged(connection: GATTConnectionID, valueHandle: UInt16, configuration: GATTClientConfiguration)
    /// A client wrote Client Supported Features.
    case clientFeaturesChanged(connection: GATTConnectionID, features: UInt8)
    /// A Signed Write Command was dropped (no verifier, bad signature, or the characteristic does not allow it).
    case signedWriteRejected(connection: GATTConnectionID, handle: UInt16)
}

/// A PDU the server asks its owner to send to one connection's bearer: notifications through
/// `ATTBearer.send(_:)`, indications through `ATTBearer.sendIndication(handle:value:now:)`
/// (Core 5.4 Vol 3 Part G §4.10, §4.11).
public struct GATTServerOutbound: Hashable, Sendable {
    public var connection: GATTConnectionID
    public var pdu: ATTPDU

    public init(connection: GATTConnectionID, pdu: ATTPDU) {
        self.connection = connection
        self.pdu = pdu
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
/// client's CSRK and the counter against the last one seen. GATT has no crypto dependency; the Host supplies this
/// with BluetoothCrypto's DataSigning.
public typealias GATTSignatureVerifier = @Sendable (_ connection: GATTConnectionID, _ message: [UInt8], _ signature: ATTAuthenticationSignature) -> Bool
