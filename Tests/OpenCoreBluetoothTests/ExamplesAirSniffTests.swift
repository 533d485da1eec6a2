import Foundation
import TestSupport
import Testing

/// `blue air --sniff FILE` as a user runs it: a `blue chat` on a hub that sniffs and records, the capture read by
/// Wireshark's tshark (the chat's connection followed from its CONNECT_IND, its text in ATT values) and by `blue
/// snoop show` (text and JSON; a capture cut short is one line and exit 1), and the replay of the recording sniffed
/// again: the same PDUs, packet for packet (only the timestamps differ).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ExamplesAirSniffTests {
    @Test("blue air --sniff: a chat as a sniffer captures it, and its replay captures the same PDUs",
          .enabled(if: Tshark.enabled, "tshark is not installed"))
    func sniffAChatLiveAndReplayed() async throws {
        let tag = UUID().uuidString.prefix(6)
        let live = testTemporaryPath("ocb-sniff-\(tag).pcap")
        let replayed = testTemporaryPath("ocb-sniff-replayed-\(tag).pcap")
        let recording = testTemporaryPath("ocb-sniff-\(tag).air")
        defer { for path in [live, replayed, recording] { try? FileManager.default.removeItem(atPath: path) } }
        let hub = try await ExampleHub(arguments: ["--seed", "3", "--record", recording, "--sniff", live])
        try await exampleChat(on: hub, bytes: 3_000)
        let text = exampleText(bytes: 3_000)
        await hub.hub.stop()

        let rows = try await Tshark.fields(live, [
            "btle.access_address", "btle.advertising_header.pdu_type", "btatt.opcode", "btatt.value", "_ws.malformed",
            "btle.crc.incorrect",
        ])
        try #require(rows.count > 50 && rows.allSatisfy { $0.count == 6 }, "\(rows.prefix(5))")
        #expect(rows.allSatisfy { $0[4].isEmpty && $0[5].isEmpty }, "\(rows.filter { !$0[4].isEmpty || !$0[5].isEmpty }.prefix(5))")
        #expect(rows.contains { $0[1] == "0x05" }, "the CONNECT_IND")
        let opcodes = Set(rows.flatMap { $0[2].split(separator: ",").map(String.init) })
        #expect(opcodes.isSuperset(of: ["0x10", "0x08"]), "service and characteristic discovery: \(opcodes)")
        // The text went by in ATT values (writes or notifications), its first line among them.
        let firstLine = Array(text.utf8.prefix(20)).map { String(format: "%02x", $0) }.joined()
        #expect(rows.contains { $0[3].contains(firstLine) }, "the chat's first bytes in an ATT value")

        // blue snoop show reads the same capture: the connection, GATT discovery, the empty PDUs counted.
        let show = try ExampleProcess("blue", ["snoop", "show", live])
        #expect(await show.waitForExit(limit: .seconds(60)) == 0, "\(show.errors)")
        for expected in ["pcap, link type 256", "CONNECT_IND", "Exchange MTU Request", "Read By Group Type Request", "empty data PDUs not shown",
                         "LL_LENGTH_REQ: RX 251 octets/2120 µs, TX 251 octets/2120 µs", "LL_TERMINATE_IND: Remote User Terminated Connection"] {
            #expect(show.output.contains(expected), "\(expected): \(show.output.prefix(3000))")
        }
        let json = try ExampleProcess("blue", ["snoop", "show", "--json", live])
        #expect(await json.waitForExit(limit: .seconds(60)) == 0, "\(json.errors)")
        let objects = json.output.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
        #expect(objects.count == json.output.split(separator: "\n").count && objects.count > 20)
        #expect(objects.allSatisfy { $0["dissection"] != nil && $0["accessAddress"] != nil })
        // Cut in the middle of a record: the packets before it, then one line on stderr and exit 1.
        let cut = testTemporaryPath("ocb-sniff-cut-\(tag).pcap")
        defer { try? FileManager.default.removeItem(atPath: cut) }
        let whole = try Data(contentsOf: URL(fileURLWithPath: live))
        try whole.prefix(whole.count - 2).write(to: URL(fileURLWithPath: cut))
        let cutShow = try ExampleProcess("blue", ["snoop", "show", cut])
        #expect(await cutShow.waitForExit(limit: .seconds(60)) == 1)
        #expect(cutShow.errors.contains("stopped after") && cutShow.errors.split(separator: "\n").count == 1, "\(cutShow.errors)")
        #expect(cutShow.output.contains("CONNECT_IND"))

        let replay = try ExampleProcess("blue", ["air", "--replay", recording, "--sniff", replayed])
        #expect(await replay.waitForExit(limit: .seconds(60)) == 0, "\(replay.output) \(replay.errors)")
        let a = try Self.records(live), b = try Self.records(replayed)
        #expect(a.count == b.count && a == b, "the replay's PDUs: \(b.count) packets against \(a.count) live")
    }

    @Test("blue air --sniff into a folder that does not exist: one line, exit 1")
    func sniffIntoAMissingFolder() async throws {
        let hub = try ExampleProcess("blue", ["air", "--socket", testTemporaryPath("ocb-sniff-bad-\(UUID().uuidString.prefix(6)).sock"),
                                              "--sniff", "/nonexistent-\(UUID().uuidString.prefix(6))/air.pcap"])
        #expect(await hub.waitForExit(limit: .seconds(20)) == 1)
        #expect(hub.errors.contains("cannot create the capture"), "\(hub.errors)")
        #expect(hub.errors.split(separator: "\n").count == 1, "\(hub.errors)")
    }

    /// The packet records of a pcap file without their timestamps.
    static func records(_ path: String) throws -> [[UInt8]] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var records: [[UInt8]] = []
        var offset = 24
        while offset + 16 <= bytes.count {
            let length = Int(bytes[offset + 8]) | Int(bytes[offset + 9]) << 8 | Int(bytes[offset + 10]) << 16 | Int(bytes[offset + 11]) << 24
            guard offset + 16 + length <= bytes.count else { break }
            records.append(Array(bytes[(offset + 16)..<(offset + 16 + length)]))
            offset += 16 + length
        }
        return records
    }
}
