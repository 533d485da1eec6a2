import HCITransport

/// Why ``StackLauncher`` could not give a running stack, with a code a program can test and one line a person can
/// read (the `blue` tool prints ``reason`` as its error line).
public struct StackLaunchError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The `--hci` text is not a transport specification (``HCITransportSpec/expectedForms``).
        case invalidSpecification
        /// The transport could not be opened: nothing listens at the socket, no such device, permission denied.
        case unreachable
        /// The snoop file could not be created.
        case snoopFailed
        /// The air hub could not be started (``AirHubLauncher``).
        case hubFailed
        /// The transport opened but the controller did not initialise (no answer, refused commands, closed).
        case controllerFailed
        /// The persistent local identity could not be read or created (a corrupt file is left as it is).
        case identityFailed
        /// The engine named cannot do what the options ask (bluetoothd and our host's own options, ``BluetoothdLimitation``).
        case notOffered
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason }

    /// The launch error for a failed transport open on `spec`.
    static func opening(_ spec: HCITransportSpec, _ error: HCITransportError) -> StackLaunchError {
        if error.code == .invalidSpecification { return StackLaunchError(.invalidSpecification, error.reason) }
        return StackLaunchError(.unreachable, "cannot open the HCI transport \(error.reason)")
    }
}
