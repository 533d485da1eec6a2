/// Why a request of the link's owner (``L2CAPLink/connect(psm:mtu:mps:initialCredits:creditPolicy:now:)``,
/// ``L2CAPLink/send(sdu:on:)``...) was refused, with a machine-readable code and a reason in words. Nothing is
/// sent when one of these is thrown.
public struct L2CAPLinkError: Error, Hashable, Sendable, CustomStringConvertible, Codable {
    public enum Code: String, Hashable, Sendable, CaseIterable, Codable {
        /// A parameter is outside the range the specification allows (PSM, MTU, MPS, credits, connection
        /// parameters, payload size).
        case invalidParameters
        /// No channel with that local CID exists.
        case unknownChannel
        /// The channel exists but is not open (still connecting, or disconnecting).
        case channelNotOpen
        /// All 64 LE dynamic CIDs (0x0040...0x007F) are in use.
        case noChannelAvailable
        /// The SDU is larger than the peer's MTU.
        case sduTooLarge
        /// The request belongs to the other role (a Central cannot send a Connection Parameter Update Request;
        /// a Peripheral cannot answer one).
        case wrongRole
        /// No received request has that signaling identifier.
        case unknownIdentifier
        /// All 255 signaling identifiers are waiting for responses.
        case noIdentifierAvailable
        /// A server is already registered on that PSM.
        case psmInUse
        /// Granting the credits would give the peer more than 65535.
        case creditOverflow
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}
