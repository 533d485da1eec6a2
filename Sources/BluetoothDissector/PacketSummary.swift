public import BluetoothCore

/// The one line a monitored HCI packet gets, and the layers it carries, as `blue monitor` and the air console show
/// them: a command or an event by its name; ACL data by its handle, the protocol of its L2CAP channel (ATT 0x0004,
/// L2CAP signaling 0x0005, SMP 0x0006: Core 5.4 Vol 3 Part A §2.1; EATT on a credit-based channel of SPSM 0x0027,
/// Vol 3 Part F §3.2.11) and the innermost PDU's name.
public struct PacketSummary: Hashable, Sendable {
    /// The layers a packet can be filtered by: hci = commands and events, acl = ACL data, l2cap = any L2CAP frame,
    /// att and smp = those channels.
    public static let layerNames = ["hci", "acl", "l2cap", "att", "smp"]

    /// "LE Set Scan Enable", "ACL 0x0001 ATT Read Request".
    public var text: String
    /// The protocol of an ACL packet's L2CAP frame ("ATT", "EATT", "SMP", "L2CAP signaling", "L2CAP"), nil otherwise.
    public var protocolName: String?
    /// The H4 packet indicator (0x01 command, 0x02 ACL data, 0x04 event).
    public var indicator: UInt8?

    /// The summary of `node`, the dissection of a frame whose H4 indicator is `indicator`.
    public init(_ node: Dissection, indicator: UInt8?) {
        self.indicator = indicator
        let plain = node.label + (node.value.map { ": \($0)" } ?? "")
        guard indicator == 0x02 else {
            (text, protocolName) = (plain, nil)
            return
        }
        let handle = node.children.first { $0.label == "Handle" }?.value ?? "?"
        guard let frame = node.children.first(where: { $0.label.hasPrefix("L2CAP") && !$0.children.isEmpty }) else {
            let fragment = node.children.first { $0.label == "L2CAP" }?.value
            (text, protocolName) = ("ACL \(handle)" + (fragment.map { " \($0)" } ?? ""), fragment == nil ? nil : "L2CAP")
            return
        }
        let channel = frame.children.first { $0.label == "Channel ID" }?.value ?? ""
        if let kFrame = frame.children.first(where: { $0.label == "K-frame" }) {
            let bearer = kFrame.children.first { $0.label == "Channel" }?.value ?? ""
            let name = bearer.hasSuffix(" EATT") ? "EATT" : "L2CAP"
            let inner = kFrame.children.last { !$0.children.isEmpty }?.label
                ?? kFrame.children.last.map { "\($0.label) \($0.value ?? "")" } ?? "K-frame"
            (text, protocolName) = ("ACL \(handle) \(name) \(channel) \(inner)", name)
            return
        }
        let name = channel.contains("(0x0004)") ? "ATT" : channel.contains("(0x0006)") ? "SMP"
            : channel.contains("(0x0005)") ? "L2CAP signaling" : "L2CAP"
        // The PDU is the last node that groups fields, or names a PDU without any (Write Response).
        let inner = frame.children.last { !$0.children.isEmpty || $0.value == nil }?.label ?? channel
        (text, protocolName) = ("ACL \(handle) \(name) \(inner)", name)
    }

    /// Whether the packet is (or carries) `layer` (one of ``layerNames``).
    public func carries(_ layer: String) -> Bool {
        switch layer {
        case "hci": indicator == 0x01 || indicator == 0x04
        case "acl": indicator == 0x02
        case "l2cap": protocolName != nil
        case "att": protocolName == "ATT" || protocolName == "EATT"
        case "smp": protocolName == "SMP"
        default: false
        }
    }

    /// The ``layerNames`` the packet carries.
    public var layers: [String] { Self.layerNames.filter(carries) }
}
