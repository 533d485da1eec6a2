public import BluetoothCore
public import HCI

/// Prints btsnoop records the way btmon does: one summary line per packet — `<` host to controller, `>`
/// controller to host, `=` a note, the packet kind and name, the record number and the time since the first
/// record — followed by the decoded fields, indented. Records are read in order with their context
/// (``CaptureDecoder``: ACL reassembly, credit-based channels, joined advertising data), one context per
/// controller: a capture of datalink 2001 (`btmon -w`, ``HCIMonitorPacket``) holds every controller of the kernel,
/// each line then names its `[hciN]`, and the monitor's notes (controllers appearing, system and program notes)
/// are shown as such.
public struct SnoopFormatter: Sendable {
    private var firstTimestamp: Int64?
    /// One decoder per controller index (only index 0 for the single-controller datalinks).
    private var decoders: [UInt16: CaptureDecoder] = [:]

    public init() {}

    /// The decoded packet of one record on its own, without a capture's context, or the reason it could not be
    /// decoded (kept as a node, never thrown: one bad record must not hide the rest of a capture).
    public static func dissection(of record: BTSnoopRecord, datalink: BTSnoopDatalink) -> Dissection {
        var formatter = SnoopFormatter()
        return formatter.dissection(of: record, datalink: datalink).node
    }

    /// A record in the capture's context: its dissection, and the controller it belongs to (2001 only).
    public mutating func dissection(of record: BTSnoopRecord, datalink: BTSnoopDatalink) -> (node: Dissection, controller: UInt16?) {
        guard datalink == .linuxMonitor else {
            return (decoders[0, default: CaptureDecoder()].dissection(of: record, datalink: datalink), nil)
        }
        let packet: HCIMonitorPacket
        do {
            packet = try record.monitorPacket()
        } catch {
            return (Dissection("Malformed packet", error.description, [Dissection("Data", Dissection.bytes(record.data))]), nil)
        }
        let index = packet.index
        let controller: UInt16? = index == 0xFFFF ? nil : index
        switch packet.kind {
        case .frame(let frame, _):
            do {
                return (try decoders[index, default: CaptureDecoder()].dissection(of: frame, direction: record.direction), controller)
            } catch {
                return (Dissection("Malformed packet", error.description, [Dissection("Data", Dissection.bytes(record.data))]), controller)
            }
        case .newIndex(let type, let bus, let address, let name):
            decoders[index] = nil
            return (Dissection("New Index", "hci\(index) \(address.string)\(name.isEmpty ? "" : " (\(name))")", [
                Dissection("Type", Dissection.hex8(type)), Dissection("Bus", Dissection.hex8(bus)),
            ]), controller)
        case .deleteIndex:
            decoders[index] = nil
            return (Dissection("Delete Index", "hci\(index)"), controller)
        case .note(let text):
            return (Dissection("Note", text), controller)
        case .other(let opcode):
            return (Self.otherMonitorPacket(opcode, record.data), controller)
        }
    }

    /// A monitor packet that is no HCI packet nor note: its name, and for the management channel's traffic
    /// (control commands and events, hci_mon.h: le32 cookie, le16 code, parameters) the socket's cookie and the
    /// MGMT opcode or event code (BlueZ doc/mgmt-api.txt).
    static func otherMonitorPacket(_ opcode: UInt16, _ data: [UInt8]) -> Dissection {
        let name = HCIMonitorPacket.opcodeNames[opcode] ?? "Monitor packet"
        guard opcode == 16 || opcode == 17, data.count >= 6 else {
            return Dissection(name, "opcode \(opcode)", [Dissection("Data", Dissection.bytes(data))])
        }
        let cookie = UInt32(data[0]) | UInt32(data[1]) << 8 | UInt32(data[2]) << 16 | UInt32(data[3]) << 24
        let code = UInt16(data[4]) | UInt16(data[5]) << 8
        return Dissection(name, Dissection.hex16(code), [
            Dissection("Cookie", "\(cookie)"), Dissection(opcode == 16 ? "Opcode" : "Event", Dissection.hex16(code)),
            Dissection("Parameters", Dissection.bytes(Array(data.dropFirst(6)))),
        ])
    }

    /// The text of one record (summary line and indented fields).
    public mutating func format(_ record: BTSnoopRecord, number: Int, datalink: BTSnoopDatalink) -> String {
        let start = firstTimestamp ?? record.timestamp
        firstTimestamp = start
        let elapsed = record.timestamp &- start
        let seconds = elapsed / 1_000_000
        let micros = String(elapsed % 1_000_000)
        let time = "\(seconds).\(String(repeating: "0", count: max(0, 6 - micros.count)))\(micros)"
        let (node, controller) = dissection(of: record, datalink: datalink)
        let isNote = datalink == .linuxMonitor && !((try? record.frame(datalink: datalink)) != nil)
        let arrow = isNote ? "=" : record.direction == .received ? ">" : "<"
        let summary = "\(arrow) \(controller.map { "[hci\($0)] " } ?? "")\(node.label)\(node.value.map { ": \($0)" } ?? "")"
        let padding = String(repeating: " ", count: max(1, 64 - summary.count))
        var lines = ["\(summary)\(padding)#\(number) \(time)"]
        for child in node.children {
            lines.append(child.renderText(indent: 4))
        }
        return lines.joined(separator: "\n")
    }

    /// The JSON of one record: number, time, direction, controller (2001) and the decoded packet (in the capture's
    /// context).
    public mutating func json(_ record: BTSnoopRecord, number: Int, datalink: BTSnoopDatalink) -> String {
        let (node, controller) = dissection(of: record, datalink: datalink)
        var text = Self.json(record, number: number, node: node)
        if let controller {
            text.removeLast()
            text += ",\"controller\":\"hci\(controller)\"}"
        }
        return text
    }

    /// The JSON of one record and its dissection.
    public static func json(_ record: BTSnoopRecord, number: Int, node: Dissection) -> String {
        return "{\"number\":\(number),\"unixMicroseconds\":\(record.unixMicroseconds)"
            + ",\"direction\":\"\(record.direction == .received ? "received" : "sent")\""
            + ",\"bytes\":" + Dissection.jsonString(Hex.encode(record.data))
            + ",\"dissection\":" + node.renderJSON() + "}"
    }
}
