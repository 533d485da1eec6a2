import BluetoothCore
import BluetoothDissector
import BluetoothRuntime
import DequeModule
import FoundationEssentials
import HCI
import HCITransport
import SharedAir
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Captures the console starts and stops (issue 29 item 1): a btsnoop capture of one device's HCI traffic (the
/// format of `blue air --snoop`, Wireshark's "BTSnoop"), or a link-layer pcap of the whole air (`--sniff`'s, LINKTYPE
/// 256, Bluetooth LE LL with PHDR), kept in a private folder (0700, removed when the console stops) until deleted,
/// and downloadable while they run; and the recent HCI traffic of every device, from which the live sequence chart
/// is drawn (``chartHTML()``, the `blue snoop chart` of the last frames).
///
/// Threads: ``record(device:frame:direction:unixMicroseconds:)`` runs on the hub's frame tap (transport threads, the
/// air's loop) and the air-packet tap on the air's loop: each takes the one lock, appends, and writes to the files of
/// running captures (a btsnoop record is written at once; the pcap is flushed every 250 ms). The API calls take the
/// same lock.
final class ConsoleCaptures: Sendable {
    /// Captures kept at once (running or stopped); more are refused until one is deleted.
    static let captureLimit = 8
    /// A capture stops by itself at this size.
    static let sizeLimit = 32 << 20
    /// HCI frames per device kept for the chart.
    static let chartFramesPerDevice = 2_000

    enum Kind: String, Sendable {
        case btsnoop, pcap
    }

    enum CaptureError: Error {
        case notFound(String)
        case refused(String)
    }

    /// A capture as `/api/captures` lists it.
    struct Summary: Encodable, Sendable {
        var id: Int
        var kind: String
        var device: Int?
        var running: Bool
        var packets: Int
        var bytes: Int
        var startedAt: Double
        var stoppedAt: Double?
        /// Why it stopped by itself (the size limit, the device left), if it did.
        var note: String?
        var filename: String
    }

    private final class Capture: Sendable {
        let id: Int
        let kind: Kind
        let device: Int?
        let path: String
        let filename: String
        let startedAt: Double
        let snoop: BTSnoopFileSink?
        let sniffer: LinkLayerSniffer?

        init(id: Int, kind: Kind, device: Int?, path: String, filename: String, snoop: BTSnoopFileSink?, sniffer: LinkLayerSniffer?) {
            self.id = id
            self.kind = kind
            self.device = device
            self.path = path
            self.filename = filename
            self.startedAt = Date().timeIntervalSince1970
            self.snoop = snoop
            self.sniffer = sniffer
        }
    }

    private struct Entry {
        var capture: Capture
        var running = true
        var packets = 0
        var bytes = 0
        var stoppedAt: Double?
        var note: String?
    }

    private struct State {
        var entries: [Int: Entry] = [:]
        var nextID = 1
        /// The last frames of each device, for the chart, and the ones that name its addresses (kept whatever their age).
        var recent: [Int: Deque<BTSnoopRecord>] = [:]
        var identity: [Int: [BTSnoopRecord]] = [:]
        var folder: String?
    }

    private let hub: AirHub
    private let state = LockedValue(State())

    init(hub: AirHub) {
        self.hub = hub
    }

    // MARK: Taps

    /// One HCI frame of `device` (from the hub's frame tap).
    func record(device: Int, frame: H4Frame, direction: BTSnoopDirection, unixMicroseconds: Int64) {
        let record = BTSnoopRecord(flags: BTSnoopFlags(type: frame.type, direction: direction),
                                   timestamp: BTSnoop.timestamp(unixMicroseconds: unixMicroseconds), data: frame.encode())
        let size = 24 + record.data.count  // a btsnoop record's header and the packet
        let sinks = state.withLock { state -> [BTSnoopFileSink] in
            if Self.namesAddress(frame) {
                state.identity[device, default: []].append(record)
            } else {
                state.recent[device, default: []].append(record)
                if state.recent[device]!.count > Self.chartFramesPerDevice { state.recent[device]!.removeFirst() }
            }
            return admit(size, into: &state) { $0.kind == .btsnoop && $0.device == device }.compactMap(\.snoop)
        }
        for sink in sinks { sink.record(frame, direction: direction, unixMicroseconds: unixMicroseconds) }
    }

    /// One packet on the air (the hub's air-packet tap, installed while a pcap capture runs).
    private func airPacket(_ packet: AirPacket) {
        let size = 16 + LinkLayerSniffer.record(packet).count
        let sniffers = state.withLock { state in
            admit(size, into: &state) { $0.kind == .pcap }.compactMap(\.sniffer)
        }
        for sniffer in sniffers { sniffer.write(packet) }
    }

    /// LE Set Random Address and Read BD_ADDR's answer: the frames the chart needs to know a device by its addresses.
    private static func namesAddress(_ frame: H4Frame) -> Bool {
        let packet = frame.packet
        switch frame.type {
        case .command: return packet.count >= 2 && packet[0] == 0x05 && packet[1] == 0x20
        case .event: return packet.count >= 5 && packet[0] == 0x0E && packet[3] == 0x09 && packet[4] == 0x10
        default: return false
        }
    }

    /// `device` left the air: its frames are no longer kept for the chart, and its running capture stops (kept).
    func forget(device: Int) {
        state.withLock { state in
            state.recent[device] = nil
            state.identity[device] = nil
            for (id, entry) in state.entries where entry.running && entry.capture.device == device {
                stop(&state.entries[id]!, note: "dev\(device) left the air")
            }
        }
    }

    // MARK: The API

    func list() -> [Summary] {
        state.withLock { state in state.entries.values.map(Self.summary).sorted { $0.id < $1.id } }
    }

    /// Starts a capture: of `device`'s HCI traffic (btsnoop), or of the air (pcap, no device).
    func start(kind: Kind, device: Int?, deviceName: String?) throws(CaptureError) -> Summary {
        let result = state.withLock { state -> Result<(Summary, Bool), CaptureError> in
            guard state.entries.count < Self.captureLimit else {
                return .failure(.refused("\(Self.captureLimit) captures are kept already: delete one first"))
            }
            if state.folder == nil {
                let template = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-console-XXXXXX").path
                var bytes = Array(template.utf8CString)
                guard let made = mkdtemp(&bytes) else { return .failure(.refused("cannot create a folder for captures")) }
                state.folder = String(cString: made)
            }
            let id = state.nextID
            state.nextID += 1
            let folder = state.folder!
            let capture: Capture
            switch kind {
            case .btsnoop:
                let slug = deviceName.map { "-" + $0.map { $0.isLetter || $0.isNumber ? String($0) : "-" }.joined() } ?? ""
                let filename = "dev\(device ?? 0)\(slug)-capture\(id).btsnoop"
                let path = folder + "/" + filename
                guard let sink = try? BTSnoopFileSink(path: path) else { return .failure(.refused("cannot create \(filename)")) }
                capture = Capture(id: id, kind: kind, device: device, path: path, filename: filename, snoop: sink, sniffer: nil)
            case .pcap:
                let filename = "air-capture\(id).pcap"
                let path = folder + "/" + filename
                guard let sniffer = try? LinkLayerSniffer(path: path) else { return .failure(.refused("cannot create \(filename)")) }
                capture = Capture(id: id, kind: kind, device: nil, path: path, filename: filename, snoop: nil, sniffer: sniffer)
            }
            let entry = Entry(capture: capture)
            state.entries[id] = entry
            return .success((Self.summary(entry), kind == .pcap))
        }
        let (summary, needsAirTap) = try result.get()
        if needsAirTap { hub.setAirPacketTap { [weak self] packet in self?.airPacket(packet) } }
        return summary
    }

    func stop(id: Int) throws(CaptureError) -> Summary {
        let result = state.withLock { state -> Summary? in
            guard state.entries[id] != nil else { return nil }
            if state.entries[id]!.running { stop(&state.entries[id]!, note: nil) }
            return Self.summary(state.entries[id]!)
        }
        guard let result else { throw .notFound("no capture \(id)") }
        updateAirTap()
        return result
    }

    func delete(id: Int) throws(CaptureError) {
        let removed = state.withLock { state -> Entry? in
            guard var entry = state.entries.removeValue(forKey: id) else { return nil }
            if entry.running { stop(&entry, note: nil) }
            return entry
        }
        guard let removed else { throw .notFound("no capture \(id)") }
        try? FileManager.default.removeItem(atPath: removed.capture.path)
        updateAirTap()
    }

    /// The capture's bytes so far (a running pcap is flushed at most 250 ms behind) and its file name.
    func contents(id: Int) throws(CaptureError) -> (filename: String, kind: Kind, bytes: [UInt8]) {
        guard let capture = state.withLock({ $0.entries[id]?.capture }) else { throw .notFound("no capture \(id)") }
        capture.sniffer?.flush()
        guard let data = FileManager.default.contents(atPath: capture.path) else {
            throw .refused("the capture \(capture.filename) cannot be read")
        }
        return (capture.filename, capture.kind, Self.wholeRecords(Array(data), kind: capture.kind))
    }

    /// The longest prefix of a capture file made of whole records: a file read while it is written may end inside
    /// one, which Wireshark would call cut short. btsnoop: a 16-octet header, records with a 24-octet header whose
    /// Included Length (big-endian) is at offset 4; pcap: a 24-octet header, records with a 16-octet header whose
    /// incl_len (little-endian, as ours are written) is at offset 8.
    static func wholeRecords(_ bytes: [UInt8], kind: Kind) -> [UInt8] {
        let (fileHeader, recordHeader, lengthOffset) = kind == .btsnoop ? (16, 24, 4) : (24, 16, 8)
        guard bytes.count >= fileHeader else { return [] }
        var offset = fileHeader
        while offset + recordHeader <= bytes.count {
            let at = offset + lengthOffset
            let octets = (0..<4).map { Int(bytes[at + $0]) }
            let length = kind == .btsnoop ? octets[0] << 24 | octets[1] << 16 | octets[2] << 8 | octets[3]
                : octets[3] << 24 | octets[2] << 16 | octets[1] << 8 | octets[0]
            guard offset + recordHeader + length <= bytes.count else { break }
            offset += recordHeader + length
        }
        return Array(bytes[..<offset])
    }

    /// Stops every capture and removes the folder (the console stops).
    func close() {
        hub.setAirPacketTap(nil)
        let folder = state.withLock { state -> String? in
            for id in Array(state.entries.keys) { stop(&state.entries[id]!, note: nil) }
            state.entries = [:]
            defer { state.folder = nil }
            return state.folder
        }
        if let folder { try? FileManager.default.removeItem(atPath: folder) }
    }

    // MARK: The chart

    /// The sequence chart (`blue snoop chart`'s page) of the devices' recent HCI traffic: a lane per device, named
    /// `devN program` as the console names them.
    func chartHTML(names: [Int: String]) -> String {
        let captures = state.withLock { state in
            state.recent.keys.sorted().map { device in
                SequenceChart.Capture(name: names[device].map { "dev\(device) \($0)" } ?? "dev\(device)",
                                      records: (state.identity[device] ?? []) + Array(state.recent[device] ?? []),
                                      datalink: .hciUART)
            }
        }
        let chart = SequenceChart(captures: captures.map { capture in
            var sorted = capture
            sorted.records.sort { $0.timestamp < $1.timestamp }
            return sorted
        })
        return chart.html(title: "The air's last \(Self.chartFramesPerDevice) HCI packets per device")
    }

    // MARK: Helpers

    /// Counts a packet of `size` octets into each running capture `takes` wants, stopping one it would take past
    /// ``sizeLimit``; returns the captures that take it (their files are written outside the lock).
    private func admit(_ size: Int, into state: inout State, _ takes: (Capture) -> Bool) -> [Capture] {
        var admitted: [Capture] = []
        for (id, entry) in state.entries where entry.running && takes(entry.capture) {
            guard entry.bytes + size <= Self.sizeLimit else {
                stop(&state.entries[id]!, note: "size limit (\(Self.sizeLimit >> 20) MiB)")
                continue
            }
            state.entries[id]!.packets += 1
            state.entries[id]!.bytes += size
            admitted.append(entry.capture)
        }
        return admitted
    }

    private func stop(_ entry: inout Entry, note: String?) {
        guard entry.running else { return }
        entry.running = false
        entry.stoppedAt = Date().timeIntervalSince1970
        entry.note = note
        entry.capture.snoop?.close()
        _ = entry.capture.sniffer?.finish()
    }

    /// The air-packet tap stays while a pcap capture runs.
    private func updateAirTap() {
        let needed = state.withLock { $0.entries.values.contains { $0.running && $0.capture.kind == .pcap } }
        if !needed { hub.setAirPacketTap(nil) }
    }

    private static func summary(_ entry: Entry) -> Summary {
        Summary(id: entry.capture.id, kind: entry.capture.kind.rawValue, device: entry.capture.device, running: entry.running,
                packets: entry.packets, bytes: entry.bytes, startedAt: entry.capture.startedAt, stoppedAt: entry.stoppedAt,
                note: entry.note, filename: entry.capture.filename)
    }
}
