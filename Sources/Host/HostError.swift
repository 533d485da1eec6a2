public import BluetoothCore
public import HCI

/// Why a host operation failed, with a code a program can test and a reason a person can read.
///
/// Command failures carry the HCI status the controller returned (Core 5.4 Vol 2 Part D, error codes) and the
/// opcode of the command (Vol 4 Part E §5.4.1).
public struct HostError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The controller did not answer a command within the command timeout (it ignored it or is dead).
        case unresponsiveController
        /// The controller answered a command with an error status (see ``HostError/status``).
        case commandFailed
        /// The controller does not support what was asked (unknown command, unsupported feature).
        case unsupported
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
    }

    public var code: Code
    public var reason: String
    /// The HCI status of a failed command or event, when there is one.
    public var status: HCIStatus?
    /// The command concerned, when there is one.
    public var opcode: HCIOpcode?

    public init(_ code: Code, _ reason: String, status: HCIStatus? = nil, opcode: HCIOpcode? = nil) {
        self.code = code
        self.reason = reason
        self.status = status
        self.opcode = opcode
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    /// The error for a command answered with a non-success status. Unknown Command and Unsupported Feature map
    /// to ``Code/unsupported``, anything else to ``Code/commandFailed``.
    static func command(_ opcode: HCIOpcode, failedWith status: HCIStatus) -> HostError {
        let name = HCICommand.table[opcode]?.name ?? opcode.description
        let unsupported: Set<HCIStatus> = [.unknownCommand, .unsupportedFeatureOrParameterValue]
        return HostError(unsupported.contains(status) ? .unsupported : .commandFailed,
                         "\(name) failed: \(status)", status: status, opcode: opcode)
    }
}
