import BluetoothCore
import BluetoothDissector
import HCI
import TestSupport
import Testing

/// btmon-style rendering of btsnoop records.
@Suite struct SnoopFormatterTests {
    @Test func formatsDirectionNameNumberAndRelativeTime() throws {
        var writer = BTSnoopWriter()
        writer.write(try H4Frame(decoding: hex("01030c00")), direction: .sent, unixMicroseconds: 1_000_000)
        writer.write(try H4Frame(decoding: hex("040e0401030c00")), direction: .received, unixMicroseconds: 1_002_500)
        let capture = try BTSnoopReader.readAll(writer.takeBytes())
        var formatter = SnoopFormatter()
        let first = formatter.format(capture.records[0], number: 1, datalink: capture.header.datalink)
        let second = formatter.format(capture.records[1], number: 2, datalink: capture.header.datalink)
        #expect(first.hasPrefix("< Reset"))
        #expect(first.contains("#1 0.000000"))
        #expect(second.hasPrefix("> Command Complete"))
        #expect(second.contains("#2 0.002500"))
        #expect(second.contains("    Status: Success (0x00)"))
    }

    @Test func malformedRecordIsShownWithItsBytes() throws {
        let record = BTSnoopRecord(flags: BTSnoopFlags(type: .event, direction: .received), timestamp: 0, data: [0x04, 0x0E])
        let node = SnoopFormatter.dissection(of: record, datalink: .hciUART)
        #expect(node.label == "Malformed packet")
        #expect(node.renderText().contains("04 0e"))
    }
}
