public import BluetoothCore
public import HCI

/// Prints btsnoop records the way btmon does: one summary line per packet — `<` host to controller, `>`
/// controller to host, the packet kind and name, its length, the record number and the time since the first
/// record — followed by the decoded fields, indented. Records are read in order with their context
/// (``CaptureDecoder``: ACL reassembly, credit-based channels, joined advertising data).
public struct SnoopFormatter: Sendable {
    private var firstTimestamp: Int64?
    private var decoder = CaptureDecoder()

    public init() {}

    /// The decoded packet of one record on its own, without a capture's context, or the reason it could not be
    /// decoded (kept as a node, never thrown: one bad record must not hide the rest of a capture).
    public static func dissection(of record: BTSnoopRecord, datalink: BTSnoopDatalink) -> Dissection {
        var decoder = CaptureDecoder()
        return decoder.dissection(of: record, datalink: datalink)
    }

    /// The text of one record (summary line and indented fields).
    public mutating func format(_ record: BTSnoopRecord, number: Int, datalink: BTSnoopDatalink) -> String {
        let start = firstTimestamp ?? record.timestamp
        firstTimestamp = start
        let elapsed = record.timestamp &- start
        let seconds = elapsed / 1_000_000
        let micros = String(elapsed % 1_000_000)
        let time = "\(seconds).\(String(repeating: "0", count: max(0, 6 - micros.count)))\(micros)"
        let arrow = record.direction == .received ? ">" : "<"
        let node = decoder.dissection(of: record, datalink: datalink)
        let summary = "\(arrow) \(node.label)\(node.value.map { ": \($0)" } ?? "")"
        let padding = String(repeating: " ", count: max(1, 64 - summary.count))
        var lines = ["\(summary)\(padding)#\(number) \(time)"]
        for child in node.children {
            lines.append(child.renderText(indent: 4))
        }
        return lines.joined(separator: "\n")
    }

    /// The JSON of one record: number, time, direction and the decoded packet (in the capture's context).
    public mutating func json(_ record: BTSnoopRecord, number: Int, datalink: BTSnoopDatalink) -> String {
        Self.json(record, number: number, node: decoder.dissection(of: record, datalink: datalink))
    }

    /// The JSON of one record and its dissection.
    public static func json(_ record: BTSnoopRecord, number: Int, node: Dissection) -> String {
        return "{\"number\":\(number),\"unixMicroseconds\":\(record.unixMicroseconds)"
            + ",\"direction\":\"\(record.direction == .received ? "received" : "sent")\""
            + ",\"bytes\":" + Dissection.jsonString(Hex.encode(record.data))
            + ",\"dissection\":" + node.renderJSON() + "}"
    }
}
