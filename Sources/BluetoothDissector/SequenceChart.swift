import BluetoothCore
import AdvertisingData
public import HCI

/// A sequence chart of one or more HCI captures (issue 29 item 4, `blue snoop chart`): a lane per device and, on a
/// time axis, what passed between them: the link layer's procedures as the controllers report them (connection,
/// connection and PHY updates, data length, encryption: Core 5.4 Vol 6 Part B §5.1, seen through the HCI events of
/// Vol 4 Part E §7.7), and every L2CAP PDU with its protocol (L2CAP signaling, ATT, EATT, SMP: Vol 3 Parts A, F, H).
/// Advertising is shown once per advertiser heard (its first report, with its name).
///
/// With several captures (one per device, as `blue air --snoop` writes them), a device that was captured is one lane
/// whatever the others call it (its public and random addresses, read from its own commands), and each PDU is
/// taken from its sender's capture only, so nothing is drawn twice.
public struct SequenceChart: Sendable {
    /// A participant: a captured host, or a peer seen in a capture.
    public struct Lane: Hashable, Sendable {
        public var title: String
        public var subtitle: String
    }

    public enum Layer: String, Hashable, Sendable {
        case linkLayer = "LL"
        case l2cap = "L2CAP"
        case att = "ATT"
        case smp = "SMP"
        case advertising = "ADV"
    }

    /// One exchange (from one lane to another) or a note on one lane (`from == to`).
    public struct Entry: Hashable, Sendable {
        public var unixMicroseconds: Int64
        public var from: Int
        public var to: Int
        public var layer: Layer
        public var label: String
        /// The decoded packet, for a tooltip.
        public var detail: String
    }

    /// One capture: a name for its device's lane ("dev1-blue-serve") and its records.
    public struct Capture: Sendable {
        public var name: String
        public var records: [BTSnoopRecord]
        public var datalink: BTSnoopDatalink

        public init(name: String, records: [BTSnoopRecord], datalink: BTSnoopDatalink) {
            self.name = name
            self.records = records
            self.datalink = datalink
        }
    }

    public private(set) var lanes: [Lane] = []
    /// In time order.
    public private(set) var entries: [Entry] = []
    /// Entries left out beyond the limit.
    public private(set) var omitted = 0

    /// The chart of `captures`, at most `limit` entries (the first ones).
    public init(captures: [Capture], limit: Int = 5_000) {
        // A captured device's own addresses, so that peers in other captures map onto its lane.
        var laneByAddress: [String: Int] = [:]
        for capture in captures {
            let index = lanes.count
            lanes.append(Lane(title: capture.name, subtitle: "captured host"))
            var addresses: [String] = []
            for record in capture.records {
                guard let frame = try? record.frame(datalink: capture.datalink) else { continue }
                switch frame.type {
                case .command:
                    if case .leSetRandomAddress(let address)? = try? HCICommand(decoding: frame.packet) { addresses.append(address.string) }
                case .event:
                    if case .commandComplete(_, _, .readBDADDR(.success, let address))? = try? HCIEvent(decoding: frame.packet) {
                        addresses.append(address.string)
                    }
                default:
                    break
                }
            }
            for address in addresses { laneByAddress[address] = index }
            if let first = addresses.first { lanes[index].subtitle = first }
        }
        let capturedCount = captures.count
        var all: [Entry] = []
        for (captureIndex, capture) in captures.enumerated() {
            var reader = ChartReader(lane: captureIndex)
            var decoder = CaptureDecoder()
            for record in capture.records {
                let node = decoder.dissection(of: record, datalink: capture.datalink)
                guard let frame = try? record.frame(datalink: capture.datalink) else { continue }
                reader.read(frame, direction: record.direction, node: node, time: record.unixMicroseconds) { address, name in
                    if let lane = laneByAddress[address] { return lane }
                    lanes.append(Lane(title: name ?? address, subtitle: name == nil ? "peer" : address))
                    laneByAddress[address] = lanes.count - 1
                    return lanes.count - 1
                }
            }
            // A PDU both captures saw is drawn from its sender's capture, a link-layer report from its central's; each
            // scanner keeps the advertising it heard.
            all += reader.entries.filter { entry in
                entry.layer == .advertising || entry.from == captureIndex || entry.from >= capturedCount
            }
        }
        all.sort { $0.unixMicroseconds < $1.unixMicroseconds }
        omitted = max(0, all.count - limit)
        entries = Array(all.prefix(limit))
    }
}

/// Reads one capture's frames into chart entries (connections by handle, advertisers once).
private struct ChartReader {
    let lane: Int
    var entries: [SequenceChart.Entry] = []
    /// Each connection's peer lane and whether we are its central.
    private var connections: [UInt16: (peer: Int, central: Bool)] = [:]
    private var advertisersSeen: Set<String> = []

    init(lane: Int) {
        self.lane = lane
    }

    mutating func read(_ frame: H4Frame, direction: BTSnoopDirection, node: Dissection, time: Int64,
                       peerLane: (_ address: String, _ name: String?) -> Int) {
        let detail = String(node.renderText().prefix(4_000))
        switch frame.type {
        case .event:
            guard let event = try? HCIEvent(decoding: frame.packet) else { return }
            readEvent(event, time: time, detail: detail, peerLane: peerLane)
        case .aclData:
            guard let packet = try? HCIACLDataPacket(decoding: frame.packet), let connection = connections[packet.handle] else { return }
            let summary = PacketSummary(node, indicator: 0x02)
            guard let protocolName = summary.protocolName else { return }
            let layer: SequenceChart.Layer = switch protocolName {
            case "ATT", "EATT": .att
            case "SMP": .smp
            default: .l2cap
            }
            // "ACL 0x0001 ATT Read Request" → "Read Request"; an L2CAP fragment keeps its note.
            var label = summary.text
            for prefix in ["ACL \(Self.hex(packet.handle)) \(protocolName) ", "ACL \(Self.hex(packet.handle)) "] where label.hasPrefix(prefix) {
                label = String(label.dropFirst(prefix.count))
                break
            }
            if layer == .l2cap, protocolName != "L2CAP" { label = protocolName + ": " + label }
            let sent = direction == .sent
            entries.append(.init(unixMicroseconds: time, from: sent ? lane : connection.peer, to: sent ? connection.peer : lane,
                                 layer: layer, label: label, detail: detail))
        default:
            return
        }
    }

    private mutating func readEvent(_ event: HCIEvent, time: Int64, detail: String, peerLane: (String, String?) -> Int) {
        func linkLayer(_ handle: UInt16, _ label: String) {
            guard let connection = connections[handle] else { return }
            let (central, peripheral) = connection.central ? (lane, connection.peer) : (connection.peer, lane)
            entries.append(.init(unixMicroseconds: time, from: central, to: peripheral, layer: .linkLayer, label: label, detail: detail))
        }
        switch event {
        case .leMeta(.connectionComplete(let complete)):
            connected(complete, time: time, detail: detail, peerLane: peerLane)
        case .leMeta(.enhancedConnectionComplete(let enhanced)), .leMeta(.enhancedConnectionCompleteV2(let enhanced, _, _)):
            connected(enhanced.connection, time: time, detail: detail, peerLane: peerLane)
        case .disconnectionComplete(.success, let handle, let reason):
            linkLayer(handle, "disconnected: \(reason)")
            connections[handle] = nil
        case .encryptionChange(.success, let handle, let enabled), .encryptionChangeV2(.success, let handle, let enabled, _):
            linkLayer(handle, enabled != 0 ? "encryption started" : "encryption off")
        case .encryptionKeyRefreshComplete(.success, let handle):
            linkLayer(handle, "encryption key refreshed")
        case .leMeta(.connectionUpdateComplete(.success, let handle, let interval, let latency, let timeout)):
            linkLayer(handle, "connection update: \(Self.milliseconds(interval)) ms, latency \(latency), timeout \(Int(timeout) * 10) ms")
        case .leMeta(.phyUpdateComplete(.success, let handle, let tx, let rx)):
            linkLayer(handle, "PHY update: TX \(tx), RX \(rx)")
        case .leMeta(.dataLengthChange(let handle, let maxTx, _, let maxRx, _)):
            linkLayer(handle, "data length: TX \(maxTx), RX \(maxRx) octets")
        case .leMeta(.advertisingReport(let reports)):
            for report in reports { advertiser(report.address.string, data: report.data, time: time, detail: detail, peerLane: peerLane) }
        case .leMeta(.extendedAdvertisingReport(let reports)):
            for report in reports { advertiser(report.address.string, data: report.data, time: time, detail: detail, peerLane: peerLane) }
        default:
            return
        }
    }

    private mutating func connected(_ complete: LEConnectionComplete, time: Int64, detail: String, peerLane: (String, String?) -> Int) {
        guard complete.status == .success else { return }
        let peer = peerLane(complete.peerAddress.string, nil)
        let central = complete.role == .central
        connections[complete.handle] = (peer, central)
        entries.append(.init(unixMicroseconds: time, from: central ? lane : peer, to: central ? peer : lane, layer: .linkLayer,
                             label: "connection: \(Self.milliseconds(complete.connectionInterval)) ms, latency "
                                + "\(complete.peripheralLatency), timeout \(Int(complete.supervisionTimeout) * 10) ms",
                             detail: detail))
    }

    private mutating func advertiser(_ address: String, data: [UInt8], time: Int64, detail: String, peerLane: (String, String?) -> Int) {
        guard advertisersSeen.insert(address).inserted else { return }
        let name = (try? AdvertisingData(decoding: data, lenient: true))?.localName
        let peer = peerLane(address, name)
        guard peer != lane else { return }
        entries.append(.init(unixMicroseconds: time, from: peer, to: lane, layer: .advertising,
                             label: "advertising" + (name.map { " \"\($0)\"" } ?? ""), detail: detail))
    }

    static func hex(_ handle: UInt16) -> String {
        let digits = String(handle, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    static func milliseconds(_ interval: UInt16) -> String {
        let value = Double(interval) * 1.25
        return value.rounded() == value ? "\(Int(value))" : "\(value)"
    }
}
