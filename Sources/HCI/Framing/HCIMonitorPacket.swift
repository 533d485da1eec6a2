public import BluetoothCore

/// One packet of the Linux Bluetooth monitor (linux/include/net/bluetooth/hci_mon.h): what the kernel's HCI monitor
/// channel gives (`struct hci_mon_hdr { le16 opcode; le16 index; le16 len }` and `len` octets) and what a btsnoop
/// capture of datalink 2001 holds (`btmon -w`: the record flags are `index << 16 | opcode`, the data the payload).
/// Every HCI packet of every controller, both directions, and the notes about controllers and programs.
public struct HCIMonitorPacket: Hashable, Sendable {
    /// HCI_MON_* opcodes the monitor understands (others are kept as ``Kind/other(_:)``).
    public enum Kind: Hashable, Sendable {
        /// A controller appeared: its type, bus, address and name (HCI_MON_NEW_INDEX, 0).
        case newIndex(type: UInt8, bus: UInt8, address: BluetoothAddress, name: String)
        /// A controller went away (HCI_MON_DEL_INDEX, 1).
        case deleteIndex
        /// An HCI packet with its H4 type, and whether the controller sent it (commands 2, events 3, ACL 4/5,
        /// SCO 6/7, ISO 18/19).
        case frame(H4Frame, fromController: Bool)
        /// A line of text from the kernel (HCI_MON_SYSTEM_NOTE 12) or a program (HCI_MON_USER_LOGGING 13:
        /// "ident: message").
        case note(String)
        /// Any other opcode (open/close index, index info, vendor diagnostics, control channel traffic).
        case other(UInt16)
    }

    /// The controller's index (hciN), 0xFFFF for packets about no controller.
    public var index: UInt16
    public var kind: Kind

    public init(index: UInt16, kind: Kind) {
        self.index = index
        self.kind = kind
    }

    /// Decodes one packet as read from the monitor socket (header and payload); hostile bytes throw.
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes[...])
        let opcode = try reader.readLittleEndian(UInt16.self, "opcode")
        let index = try reader.readLittleEndian(UInt16.self, "index")
        let length = Int(try reader.readLittleEndian(UInt16.self, "length"))
        try self.init(opcode: opcode, index: index, payload: try reader.readBytes(length, "payload"))
    }

    /// Decodes one packet from its opcode, index and payload (a btsnoop 2001 record: flags and data).
    public init(opcode: UInt16, index: UInt16, payload: [UInt8]) throws(DecodeError) {
        self.index = index
        func frame(_ type: HCIPacketType, _ fromController: Bool) -> Kind {
            .frame(H4Frame(type: type, packet: payload), fromController: fromController)
        }
        switch opcode {
        case 0:
            var fields = ByteReader(payload[...])
            let type = try fields.readUInt8("type")
            let bus = try fields.readUInt8("bus")
            let address = try BluetoothAddress(littleEndianBytes: try fields.readBytes(6, "address"), type: .public)
            let name = try fields.readBytes(8, "name")
            kind = .newIndex(type: type, bus: bus, address: address, name: Self.text(name[...]))
        case 1: kind = .deleteIndex
        case 2: kind = frame(.command, false)
        case 3: kind = frame(.event, true)
        case 4: kind = frame(.aclData, false)
        case 5: kind = frame(.aclData, true)
        case 6: kind = frame(.synchronousData, false)
        case 7: kind = frame(.synchronousData, true)
        case 18: kind = frame(HCIPacketType(0x05), false)
        case 19: kind = frame(HCIPacketType(0x05), true)
        case 12: kind = .note(Self.text(payload[...]))
        case 13:
            // struct hci_mon_user_logging { u8 priority; u8 ident_len; } then the ident, then the message.
            var fields = ByteReader(payload[...])
            _ = try fields.readUInt8("priority")
            let identLength = Int(try fields.readUInt8("ident length"))
            let ident = Self.text(try fields.readBytes(identLength, "ident")[...])
            kind = .note((ident.isEmpty ? "" : ident + ": ") + Self.text(fields.readRemaining()[...]))
        default: kind = .other(opcode)
        }
    }

    /// The HCI_MON_* opcodes by name (hci_mon.h), for the ones kept as ``Kind/other(_:)`` too.
    public static let opcodeNames: [UInt16: String] = [
        0: "New Index", 1: "Delete Index", 2: "Command", 3: "Event", 4: "ACL TX", 5: "ACL RX", 6: "SCO TX",
        7: "SCO RX", 8: "Open Index", 9: "Close Index", 10: "Index Info", 11: "Vendor Diagnostic", 12: "System Note",
        13: "User Logging", 14: "Control Open", 15: "Control Close", 16: "MGMT Command", 17: "MGMT Event",
        18: "ISO TX", 19: "ISO RX",
    ]

    /// The text of a NUL-terminated field (up to its first NUL, or all of it).
    static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }
}
