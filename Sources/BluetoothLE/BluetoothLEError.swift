public import BluetoothCore
public import GATT
import L2CAP
public import BluetoothEngine

/// Why an operation of the async API failed: a ``Code`` a program can test, a reason a person can read, and the
/// ATT error (Core 5.4 Vol 3 Part F §3.4.1.1, Table 3.4) or HCI status (Vol 1 Part F) behind it when there is one.
/// Security failures (``Code/securityFailed``) also say why securing the link failed (``securityFailure``: the SMP
/// Pairing Failed reason of Vol 3 Part H §3.5.5, the SMP timeout, an encryption failure, a lost bond).
///
/// Cancelling the task that awaits an operation throws `CancellationError`, not this type.
public struct BluetoothLEError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure it was.
    public enum Code: String, Hashable, Sendable {
        /// The stack is not started, or was shut down.
        case notReady
        /// The peer is not (or no longer) connected.
        case notConnected
        /// The link ended while the operation ran.
        case disconnected
        /// The operation's own time limit passed (connect timeout, 30 s ATT transaction timeout).
        case timedOut
        /// The remote GATT server answered with an ATT Error Response (see ``BluetoothLEError/attError``).
        case attError
        /// The characteristic does not support what was asked (no notify property, not writable...).
        case notSupported
        /// An attribute looked for (service, characteristic, CCCD) does not exist on the peer.
        case notFound
        /// A parameter is out of range (a value too long, a bad PSM...).
        case invalidParameters
        /// Another operation of the same kind is pending (one connect at a time).
        case busy
        /// Advertising data does not fit.
        case advertisingDataTooLarge
        /// The controller refused or failed a command (see ``BluetoothLEError/hciStatus``).
        case commandFailed
        /// The controller, transport or peer broke the protocol.
        case protocolError
        /// The local GATT database refused a service definition.
        case invalidDatabase
        /// An L2CAP channel could not be opened, or is closed.
        case channelFailed
        /// Securing the link failed (pairing failed, encryption failed, the peer lost its bond): see
        /// ``BluetoothLEError/securityFailure``. A request that needed security keeps its ``BluetoothLEError/attError``.
        case securityFailed
    }

    /// What kind of failure it was.
    public var code: Code
    /// What happened, in words, for a person to read.
    public var reason: String
    /// The ATT error code of an Error Response.
    public var attError: ATTErrorCode?
    /// The HCI status of a failed command or of the disconnection.
    public var hciStatus: HCIStatus?
    /// Why securing the link failed (``Code/securityFailed``; ``Code/timedOut`` for the SMP timeout).
    public var securityFailure: GATTSecurityFailure?

    /// An error with a code, a reason and what lies behind it, if anything.
    public init(_ code: Code, _ reason: String, attError: ATTErrorCode? = nil, hciStatus: HCIStatus? = nil,
                securityFailure: GATTSecurityFailure? = nil) {
        self.code = code
        self.reason = reason
        self.attError = attError
        self.hciStatus = hciStatus
        self.securityFailure = securityFailure
    }

    /// The SMP Pairing Failed reason, when pairing failed with one (Vol 3 Part H §3.5.5).
    public var smpReason: SMPPairingFailedReason? {
        if case .pairingFailed(let reason, _)? = securityFailure { return reason }
        return nil
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    /// Wraps a host error, keeping its HCI status.
    public init(_ error: HostError) {
        let code: Code = switch error.code {
        case .unresponsiveController, .protocolError: .protocolError
        case .commandFailed: .commandFailed
        case .unsupported, .notOffered: .notSupported
        case .transportFailed, .notReady: .notReady
        case .unknownConnection: .notConnected
        case .disconnected: .disconnected
        case .cancelled: .commandFailed
        case .timedOut: .timedOut
        case .busy: .busy
        case .advertisingDataTooLarge: .advertisingDataTooLarge
        case .invalidParameters: .invalidParameters
        case .securityFailed: .securityFailed
        case .invalidDatabase: .invalidDatabase
        }
        self.init(code, error.reason, hciStatus: error.status, securityFailure: error.security.map(Self.securityFailure))
    }

    /// A host security failure as the GATT layer names it.
    static func securityFailure(_ failure: HostSecurityFailure) -> GATTSecurityFailure {
        switch failure {
        case .pairingFailed(let reason, let remote): .pairingFailed(reason, remote: remote)
        case .smpTimeout: .timedOut
        case .encryptionFailed(let status): .encryptionFailed(status)
        case .bondLost: .bondLost
        }
    }

    /// Wraps a GATT client error: ATT Error Responses keep their code, a failed bearer becomes
    /// ``Code/disconnected`` or ``Code/timedOut``.
    public init(_ error: GATTClientError) {
        switch error {
        case .attError(let code, _):
            self.init(.attError, error.description, attError: code)
        case .bearerFailed(.transactionTimeout):
            self.init(.timedOut, error.description)
        case .bearerFailed(.disconnected(let reason)):
            self.init(.disconnected, error.description, hciStatus: reason.map { HCIStatus(rawValue: $0) })
        case .bearerFailed(.other):
            self.init(.disconnected, error.description)
        case .invalidParameter, .requestRefused:
            self.init(.invalidParameters, error.description)
        case .signingUnavailable:
            self.init(.notSupported, error.description)
        case .securityFailed(let code, _, let failure):
            let status: HCIStatus? = switch failure {
            case .encryptionFailed(let status): status
            case .bondLost: .pinOrKeyMissing
            default: nil
            }
            self.init(.securityFailed, error.description, attError: code, hciStatus: status, securityFailure: failure)
        case .unexpectedResponse, .invalidResponse, .prepareWriteEchoMismatch:
            self.init(.protocolError, error.description)
        }
    }

    /// Wraps a GATT database error.
    public init(_ error: GATTDatabaseError) {
        self.init(.invalidDatabase, error.description)
    }

    static func notConnected(_ handle: UInt16) -> BluetoothLEError {
        BluetoothLEError(.notConnected, "connection \(Dissection.hex16(handle)) is not open")
    }
}
