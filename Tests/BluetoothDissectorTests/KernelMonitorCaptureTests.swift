import BluetoothCore
import BluetoothDissector
import Foundation
import HCI
import Testing

/// A capture the Linux kernel's monitor wrote (`btmon -w`, btsnoop datalink 2001, ``HCIMonitorPacket``): read
/// record by record as btmon reads it. The fixture comes from the VM scenario vhci-bluez-ll-privacy (Linux 6.1 and
/// bluetoothd 5.66 driving our controller with the kernel's LL privacy); the expected packets are btmon's own
/// reading of it, up to where btmon 5.66 crashes.
@Suite struct KernelMonitorCaptureTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func capture() throws -> (header: BTSnoopFileHeader, records: [BTSnoopRecord], error: BTSnoopError?) {
        let bytes = try Data(contentsOf: fixtures.appendingPathComponent("kernel-ll-privacy.btmon.btsnoop"))
        return try BTSnoopReader.readAll(Array(bytes))
    }

    /// How the expectation file names a packet: command OPCODE, event CODE[/SUBEVENT], acl tx|rx HANDLE FLAGS DLEN.
    static func line(_ frame: H4Frame) -> String? {
        let p = frame.packet
        switch frame.type {
        case .command where p.count >= 2:
            return String(format: "command 0x%04X", Int(p[0]) | Int(p[1]) << 8)
        case .event where p.count >= 1:
            return p[0] == 0x3E && p.count >= 3 ? String(format: "event 0x3E/0x%02X", p[2]) : String(format: "event 0x%02X", p[0])
        case .aclData where p.count >= 4:
            return nil
        default:
            return nil
        }
    }

    @Test("every packet btmon names, ours names the same, in the same order; every record decodes")
    func sameReadingAsBtmon() throws {
        let capture = try Self.capture()
        #expect(capture.error == nil)
        #expect(capture.header.datalink == .linuxMonitor)
        let expected = try String(contentsOf: Self.fixtures.appendingPathComponent("kernel-ll-privacy.btmon.expected"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
        #expect(expected.count == 151)
        var ours: [String] = []
        var formatter = SnoopFormatter()
        var malformed: [Int] = []
        var text = ""
        for (index, record) in capture.records.enumerated() {
            let (node, _) = formatter.dissection(of: record, datalink: .linuxMonitor)
            if node.renderText().contains("Malformed") { malformed.append(index + 1) }
            text += node.renderText() + "\n"
            guard case .frame(let frame, let fromController) = try record.monitorPacket().kind else { continue }
            #expect(record.direction == (fromController ? .received : .sent), "record \(index + 1)")
            if frame.type == .aclData {
                let packet = try HCIACLDataPacket(decoding: frame.packet)
                let flags = packet.packetBoundary.rawValue | packet.broadcast.rawValue << 2
                ours.append("acl \(fromController ? "rx" : "tx") \(packet.handle) \(String(format: "0x%02x", flags)) \(packet.data.count)")
            } else if let line = Self.line(frame) {
                ours.append(line)
            }
        }
        #expect(malformed.isEmpty, "records that did not decode: \(malformed)")
        #expect(Array(ours.prefix(expected.count)) == expected)
        #expect(ours.count > expected.count, "the records after the one btmon stops at are read too")
        // What the scenario is about, in our reading: the kernel loads our controller's resolving list, enables
        // resolution, and the reconnection names the server by its resolved identity.
        #expect(text.contains("LE Add Device To Resolving List"))
        #expect(text.contains("LE Set Address Resolution Enable"))
        #expect(text.contains("Peer_Address_Type: Random (static) Identity Address (0x03)"), "a peer resolved to its identity")
    }

    @Test("the monitor's notes and controller records are notes, numbered with their controller")
    func notesAndControllers() throws {
        let capture = try Self.capture()
        var formatter = SnoopFormatter()
        let first = formatter.format(capture.records[0], number: 1, datalink: .linuxMonitor)
        #expect(first.hasPrefix("= Note: Linux version 6.1"))
        let newIndex = formatter.format(capture.records[2], number: 3, datalink: .linuxMonitor)
        #expect(newIndex.hasPrefix("= [hci0] New Index: hci0"))
        let json = formatter.json(capture.records[4], number: 5, datalink: .linuxMonitor)
        #expect(json.contains("\"controller\":\"hci0\"") && json.contains("Reset"))
    }
}
