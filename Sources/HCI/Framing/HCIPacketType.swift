public import BluetoothCore

/// The HCI packet indicator: the octet that precedes every HCI packet on the UART transport and names its type
/// (Core 5.4 Vol 4 Part A §2, Table 2.1). btsnoop captures with datalink 1002 carry it too.
///
/// An open code: unknown values are representable (``isKnown`` is false) so a capture can still be described, but
/// ``H4Framer`` refuses them because it cannot know the length of such a packet.
public struct HCIPacketType: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "HCI packet type"

    /// HCI Command packet (host to controller), Vol 4 Part E §5.4.1.
    public static let command = HCIPacketType(0x01)
    /// HCI ACL Data packet, Vol 4 Part E §5.4.2.
    public static let aclData = HCIPacketType(0x02)
    /// HCI Synchronous Data packet (SCO/eSCO), Vol 4 Part E §5.4.3.
    public static let synchronousData = HCIPacketType(0x03)
    /// HCI Event packet (controller to host), Vol 4 Part E §5.4.4.
    public static let event = HCIPacketType(0x04)
    /// HCI ISO Data packet, Vol 4 Part E §5.4.5.
    public static let isoData = HCIPacketType(0x05)

    public static let names: [UInt8: String] = [
        0x01: "HCI Command packet",
        0x02: "HCI ACL Data packet",
        0x03: "HCI Synchronous Data packet",
        0x04: "HCI Event packet",
        0x05: "HCI ISO Data packet",
    ]

    /// The length of the packet header that precedes the parameters/data (without the indicator octet), or nil
    /// for an unknown type: command 3 (opcode, length), ACL 4 (handle and flags, LE16 length), synchronous 3
    /// (handle and flags, length), event 2 (event code, length), ISO 4 (handle and flags, 14-bit length).
    public var headerLength: Int? {
        switch rawValue {
        case 0x01: 3
        case 0x02: 4
        case 0x03: 3
        case 0x04: 2
        case 0x05: 4
        default: nil
        }
    }

    /// The largest parameter/data length the header's length field can express (255, 65535 or 16383).
    public var maximumLengthFieldValue: Int? {
        switch rawValue {
        case 0x01, 0x03, 0x04: 255
        case 0x02: 65535
        case 0x05: 0x3FFF
        default: nil
        }
    }

    /// Reads the parameter/data length from a complete header of this type (`header.count` must be at least
    /// ``headerLength``); nil for an unknown type or a short header.
    public func payloadLength(header: some Collection<UInt8>) -> Int? {
        guard let headerLength, header.count >= headerLength else { return nil }
        let octets = Array(header.prefix(headerLength))
        switch rawValue {
        case 0x01, 0x03: return Int(octets[2])
        case 0x04: return Int(octets[1])
        case 0x02: return Int(octets[2]) | Int(octets[3]) << 8
        case 0x05: return (Int(octets[2]) | Int(octets[3]) << 8) & 0x3FFF
        default: return nil
        }
    }
}
