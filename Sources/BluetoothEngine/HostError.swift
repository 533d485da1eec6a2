public import BluetoothCore
public import HCI

/// Why a host operation failed, with a code a program can test and a reason a person can read.
///
/// Command failures carry the HCI status the controller returned (Core 5.4 Vol 2 Part D, error codes) and the
/// opcode of the command (Vol 4 Part E §5.4.1). Security failures (code ``Code/securityFailed``, or
/// ``Code/timedOut`` for the SMP timeout) say why in ``security``: the SMP Pairing Failed reason (Vol 3 Part H
/// §3.5.5), or the HCI status encryption failed with (also in ``status``).
public struct HostError: Error, Hashable, Sendable, CustomStringConvertible, Codable {
    public enum Code: String, Hashable, Sendable, Codable {
        /// The controller did not answer a command within the command timeout (it ignored it or is dead).
        case unresponsiveController
        /// The controller answered a command with an error status (see ``HostError/status``).
        case commandFailed
        /// The controller does not support what was asked (unknown command, unsupported feature).
        case unsupported
        /// The engine offers no way to ask for this: the stack underneath decides it itself (bluetoothd chooses the
        /// PHY, the connection parameters, how it scans). A request to change, not a failure.
        case notOffered
        /// The transport failed or was closed.
        case transportFailed
        /// The stack is not started, or was shut down.
        case notReady
        /// No connection has this handle.
        case unknownConnection
        /// The connection ended before the operation completed.
        case disconnected
        /// The operation was cancelled by this host.
        case cancelled
        /// The operation's own time limit passed.
        case timedOut
        /// Another operation of the same kind is already running (one pending connect at a time).
        case busy
        /// Advertising or scan response data does not fit its 31 octets.
        case advertisingDataTooLarge
        /// A parameter is out of range.
        case invalidParameters
        /// The controller sent something the host could not decode or did not expect.
        case protocolError
        /// The local GATT database refused the services given (duplicate or out of handles, Vol 3 Part G §3).
        case invalidDatabase
        /// Securing the link failed: pairing failed (SMP Pairing Failed, either side), encryption failed, or the
        /// peer lost its bond and re-pairing was not allowed. ``HostError/security`` says which and why.
        case securityFailed
    }

    public var code: Code
    public var reason: String
    /// The HCI status of a failed command or event, when there is one.
    public var status: HCIStatus?
    /// The command concerned, when there is one.
    public var opcode: HCIOpcode?
    /// Why securing the link failed, when this is a security failure (``Code/securityFailed``; ``Code/timedOut``
    /// for the SMP timeout; ``Code/commandFailed`` when LE Enable Encryption itself was refused).
    public var security: HostSecurityFailure?
    /// The result an L2CAP LE Credit Based Connection Response refused a channel with (Core 5.4 Vol 3 Part A
    /// §4.23), when that is why an open failed.
    public var l2capRefusal: L2CAPConnectionResult?

    public init(_ code: Code, _ reason: String, status: HCIStatus? = nil, opcode: HCIOpcode? = nil,
                security: HostSecurityFailure? = nil) {
        self.code = code
        self.reason = reason
        self.status = status
        self.opcode = opcode
        self.security = security
    }

    /// The error for a security failure: ``Code/timedOut`` for the SMP timeout, ``Code/securityFailed`` otherwise;
    /// the HCI status of an encryption failure or lost bond is also in ``status``.
    public static func security(_ failure: HostSecurityFailure, _ reason: String? = nil) -> HostError {
        HostError(failure == .smpTimeout ? .timedOut : .securityFailed, reason ?? failure.description,
                  status: failure.hciStatus, security: failure)
    }

    /// The SMP Pairing Failed reason, when pairing failed with one (sent by the peer or by us).
    public var pairingFailedReason: SMPPairingFailedReason? {
        if case .pairingFailed(let reason, _)? = security { return reason }
        return nil
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    /// The error for a command answered with a non-success status. Unknown Command and Unsupported Feature map
    /// to ``Code/unsupported``, anything else to ``Code/commandFailed``.
    package static func command(_ opcode: HCIOpcode, failedWith status: HCIStatus) -> HostError {
        let name = HCICommand.table[opcode]?.name ?? opcode.description
        let unsupported: Set<HCIStatus> = [.unknownCommand, .unsupportedFeatureOrParameterValue]
        return HostError(unsupported.contains(status) ? .unsupported : .commandFailed,
                         "\(name) failed: \(status)", status: status, opcode: opcode)
    }
}

/// Why securing a link failed (Core 5.4 Vol 3 Part H: §3.5.5 Pairing Failed, §3.4 the SMP timeout, §2.4.4
/// encrypted session setup; Vol 4 Part E §7.7.8 Encryption Change, §7.8.26 LE Long Term Key Request Negative
/// Reply). Carried by ``HostError/security``.
public enum HostSecurityFailure: Hashable, Sendable, CustomStringConvertible, Codable {
    /// SMP Pairing Failed with this reason: sent by the peer (`remote`), or by us (`remote == false`: we detected
    /// the failure, e.g. Confirm Value Failed, or the user rejected / cancelled).
    case pairingFailed(SMPPairingFailedReason, remote: Bool)
    /// No SMP answer within 30 s (§3.4): SMP is over on this link until it is re-established.
    case smpTimeout
    /// Encryption failed with this HCI status: an Encryption Change or LE Enable Encryption failure, or the
    /// link ended with Connection Terminated due to MIC Failure (0x3D: the two sides' keys differ).
    case encryptionFailed(HCIStatus)
    /// The peer lost the bond we hold for `identity` (PIN or Key Missing, 0x06: it answered our encryption
    /// with an LE Long Term Key Request Negative Reply; or, as peripheral, the central paired again on an
    /// unencrypted link), and ``HostSecurityConfiguration/allowRepairing`` refused re-pairing.
    case bondLost(identity: BluetoothAddress)

    /// The HCI status behind the failure (encryption failed; PIN or Key Missing for a lost bond).
    public var hciStatus: HCIStatus? {
        switch self {
        case .encryptionFailed(let status): return status
        case .bondLost: return .pinOrKeyMissing
        case .pairingFailed, .smpTimeout: return nil
        }
    }

    /// `pairing failed: Confirm Value Failed (0x04), remote`.
    public var description: String {
        switch self {
        case .pairingFailed(let reason, let remote): return "pairing failed: \(reason), \(remote ? "remote" : "local")"
        case .smpTimeout: return "SMP timeout (30 s): no more pairing on this link"
        case .encryptionFailed(let status): return "encryption failed: \(status)"
        case .bondLost(let identity): return "\(identity) lost its bond (PIN or Key Missing); re-pairing is not allowed"
        }
    }
}
