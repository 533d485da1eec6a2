public import BluetoothCore
public import HCI

/// Prints btsnoop records the way btmon does: one summary line per packet — `<` host to controller, `>`
/// controller to host, the packet kind and name, its length, the record number and the time since the first
/// record — followed by the decoded fields, indented.
public struct SnoopFormatter: Sendable {
    private var firstTimestamp: Int64?

    public init() {}

    /// The decoded packet of a record, or the reason it could not be decoded (kept as a node, never thrown: one
    /// bad record must not hide the rest of a capture).
    public static func dissection(of record: BTSnoopRecord, datalink: BTSnoopDatalink) -> Dissection {
        do {
            let frame = try record.frame(datalink: datalink)
            return try PacketDissector.describe(frame: frame).0
        } catch {
            return Dissection("Malformed packet", error.description, [Dissection("Data", Dissection.bytes(record.data))])
        }
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
        let node = Self.dissection(of: record, datalink: datalink)
        let summary = "\(arrow) \(node.label)\(node.value.map { ": \($0)" } ?? "")"
        let padding = String(repeating: " ", count: max(1, 64 - summary.count))
        var lines = ["\(summary)\(padding)#\(number) \(time)"]
        for child in node.children {
            lines.append(child.renderText(indent: 4))
        }
        return lines.joined(separator: "\n")
    }

    /// The JSON of one record: number, time, direction and the decoded packet.
    public static func json(_ record: BTSnoopRecord, number: Int, datalink: BTSnoopDatalink) -> String {
        let node = dissection(of: record, datalink: datalink)
        return "{\"number\":\(number),\"unixMicroseconds\":\(record.unixMicroseconds)"
            + ",\"direction\":\"\(record.direction == .received ? "received" : "sent")\""
            + ",\"bytes\":" + Dissection.jsonString(Hex.encode(record.data))
            + ",\"dissection\":" + node.renderJSON() + "}"
    }
}
