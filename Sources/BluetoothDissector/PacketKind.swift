/// The kinds of packet `PacketDissector` recognises.
public enum PacketKind: String, CaseIterable, Sendable, Hashable {
    /// An HCI packet with its UART packet-type octet (Core 5.4 Vol 4 Part A §2).
    case h4
    /// An HCI command packet without the type octet (Vol 4 Part E §5.4.1).
    case hciCommand = "hci-command"
    /// An HCI event packet without the type octet (Vol 4 Part E §5.4.4).
    case hciEvent = "hci-event"
    /// An HCI ACL data packet without the type octet (Vol 4 Part E §5.4.2).
    case acl
    /// An L2CAP basic frame (Vol 3 Part A §3.1).
    case l2cap
    /// An ATT PDU (Vol 3 Part F §3.4).
    case att
    /// An SMP PDU (Vol 3 Part H §3).
    case smp
    /// Advertising or scan response data (Core Specification Supplement Part A).
    case ad

    /// How the kind is named in output.
    public var displayName: String {
        switch self {
        case .h4: "H4 packet"
        case .hciCommand: "HCI command"
        case .hciEvent: "HCI event"
        case .acl: "HCI ACL data"
        case .l2cap: "L2CAP frame"
        case .att: "ATT PDU"
        case .smp: "SMP PDU"
        case .ad: "advertising data"
        }
    }
}
