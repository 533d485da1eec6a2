/// Why a D-Bus operation failed: a code a program can test and one line a person can read. An error reply from a
/// peer (D-Bus Specification, "Message Types": ERROR) keeps its name (`org.bluez.Error.Failed`) and message.
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// Bytes that are not a valid message, value or signature (hostile or broken input).
        case decode
        /// A value or message this side was asked to send that the specification forbids.
        case invalidArgument
        /// The bus address could not be used, or the socket could not be opened.
        case connectFailed
        /// The bus refused the authentication.
        case authenticationFailed
        /// The peer answered with an error reply (``name``).
        case errorReply
        /// No reply within the time limit.
        case timedOut
        /// The connection is closed (by the bus, by us, or before the reply).
        case disconnected
    }

    public var code: Code
    public var reason: String
    /// The D-Bus error name of an error reply (`org.freedesktop.DBus.Error.UnknownMethod`); nil otherwise.
    public var name: String?

    public init(_ code: Code, _ reason: String, name: String? = nil) {
        self.code = code
        self.reason = reason
        self.name = name
    }

    public var description: String { name.map { "\($0): \(reason)" } ?? reason }

    static func decode(_ reason: String, at offset: Int) -> DBusError {
        DBusError(.decode, "\(reason) at offset \(offset)")
    }
}
