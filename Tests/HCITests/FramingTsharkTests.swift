import Foundation
import HCI
import TestSupport
import Testing

/// Checks that a btsnoop capture written by ``BTSnoopWriter`` opens in Wireshark's `tshark`. Skipped cleanly when
/// `tshark` is not on the PATH, unless `OCB_REQUIRE_INTEROP=1` (set by Scripts/test.sh, which installs tshark): then
/// a missing tshark fails the test instead of skipping it.
@Suite struct FramingTsharkTests {
    static let interopRequired = Tshark.required

    static let tsharkPath: String? = Tshark.path

    /// Runs tshark on `bytes` and returns one line per packet: the fields joined by tabs. Suspends while tshark
    /// runs (TestSupport's `runToCompletion`), never blocking a thread of the cooperative pool.
    static func tsharkFields(_ bytes: [UInt8], fields: [String]) async throws -> (status: Int32, lines: [String], errors: String) {
        let tshark = try #require(tsharkPath)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("framing-\(UUID().uuidString).btsnoop")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await runToCompletion(
            URL(fileURLWithPath: tshark), ["-r", file.path, "-T", "fields"] + fields.flatMap { ["-e", $0] },
            limit: .seconds(120))
        return (run.status, run.output.split(separator: "\n").map(String.init), run.errors)
    }

    static let base: Int64 = 1_700_000_000_123_456
    static let capture: [(H4Frame, BTSnoopDirection)] = [
        (H4Frame(type: .command, packet: hex("03 0C 00")), .sent),
        (H4Frame(type: .event, packet: hex("0E 04 01 03 0C 00")), .received),
        // ATT Read Request on handle 0x0001, then its response, over L2CAP CID 0x0004.
        (H4Frame(type: .aclData, packet: hex("40 00 07 00 03 00 04 00 0A 01 00")), .sent),
        (H4Frame(type: .aclData, packet: hex("40 20 06 00 02 00 04 00 0B 42")), .received),
    ]

    @Test(.enabled(if: tsharkPath != nil || interopRequired, "tshark is not installed"))
    func tsharkReadsOurH4Capture() async throws {
        var writer = BTSnoopWriter()
        for (index, (frame, direction)) in Self.capture.enumerated() {
            writer.write(frame, direction: direction, unixMicroseconds: Self.base + Int64(index) * 1000)
        }
        let (status, lines, errors) = try await Self.tsharkFields(
            writer.takeBytes(), fields: ["frame.time_epoch", "frame.protocols", "hci_h4.direction", "hci_h4.type"])
        #expect(status == 0, "tshark: \(errors)")
        #expect(lines == [
            "1700000000.123456000\tbluetooth:hci_h4:bthci_cmd\t0x00\t0x01",
            "1700000000.124456000\tbluetooth:hci_h4:bthci_evt\t0x01\t0x04",
            "1700000000.125456000\tbluetooth:hci_h4:bthci_acl:btl2cap:btatt\t0x00\t0x02",
            "1700000000.126456000\tbluetooth:hci_h4:bthci_acl:btl2cap:btatt\t0x01\t0x02",
        ], "tshark stderr: \(errors)")
    }

    @Test(.enabled(if: tsharkPath != nil || interopRequired, "tshark is not installed"))
    func tsharkReadsOurUnencapsulatedCapture() async throws {
        var writer = BTSnoopWriter(datalink: .hciUnencapsulated)
        for (frame, direction) in Self.capture {
            writer.write(frame, direction: direction, unixMicroseconds: Self.base)
        }
        let (status, lines, errors) = try await Self.tsharkFields(writer.takeBytes(), fields: ["frame.protocols"])
        #expect(status == 0, "tshark: \(errors)")
        #expect(lines == [
            "bluetooth:hci_h1:bthci_cmd", "bluetooth:hci_h1:bthci_evt",
            "bluetooth:hci_h1:bthci_acl:btl2cap:btatt", "bluetooth:hci_h1:bthci_acl:btl2cap:btatt",
        ], "tshark stderr: \(errors)")
    }
}
