import BluetoothCore
import BluetoothDissector
import HCI
import Testing

/// `blue snoop chart`'s model and page (issue 29 item 4): lanes per device, link-layer reports and L2CAP PDUs as
/// arrows in time order, each PDU drawn once across two captures of one link, and text escaped in the page.
@Suite struct SequenceChartTests {
    private static let peripheralAddress = BluetoothAddress(0x0A1B_0000_0001, type: .public)
    private static let centralAddress = BluetoothAddress(0x0A1B_0000_0002, type: .public)

    private func record(_ frame: H4Frame, _ direction: BTSnoopDirection, at milliseconds: Int64) -> BTSnoopRecord {
        BTSnoopRecord(flags: BTSnoopFlags(type: frame.type, direction: direction),
                      timestamp: BTSnoop.timestamp(unixMicroseconds: 1_764_000_000_000_000 + milliseconds * 1000), data: frame.encode())
    }

    private func event(_ event: HCIEvent, at milliseconds: Int64) -> BTSnoopRecord {
        record(H4Frame(type: .event, packet: event.encode()), .received, at: milliseconds)
    }

    private func att(_ pdu: [UInt8], _ direction: BTSnoopDirection, at milliseconds: Int64) -> BTSnoopRecord {
        let length = UInt16(pdu.count)
        let l2cap = [UInt8(length & 0xFF), UInt8(length >> 8), 0x04, 0x00] + pdu
        let total = UInt16(l2cap.count)
        return record(H4Frame(type: .aclData, packet: [0x01, 0x00, UInt8(total & 0xFF), UInt8(total >> 8)] + l2cap), direction, at: milliseconds)
    }

    private func ownAddress(_ address: BluetoothAddress) -> BTSnoopRecord {
        event(.commandComplete(numHCICommandPackets: 1, opcode: .readBDADDR, returnParameters: .readBDADDR(status: .success, address: address)), at: 0)
    }

    /// The central's capture: it connects, reads handle 3 and disconnects.
    private var centralCapture: SequenceChart.Capture {
        let connection = LEConnectionComplete(handle: 1, role: .central, peerAddressType: .public, peerAddress: Self.peripheralAddress,
                                              connectionInterval: 24, supervisionTimeout: 500)
        return SequenceChart.Capture(name: "dev2-central", records: [
            ownAddress(Self.centralAddress),
            event(.leMeta(.connectionComplete(connection)), at: 10),
            att([0x0A, 0x03, 0x00], .sent, at: 20),
            att([0x0B, 0x48, 0x69], .received, at: 50),
            event(.disconnectionComplete(status: .success, handle: 1, reason: .remoteUserTerminatedConnection), at: 2_000),
        ], datalink: .hciUART)
    }

    /// The peripheral's capture of the same link.
    private var peripheralCapture: SequenceChart.Capture {
        let connection = LEConnectionComplete(handle: 1, role: .peripheral, peerAddressType: .public, peerAddress: Self.centralAddress,
                                              connectionInterval: 24, supervisionTimeout: 500)
        return SequenceChart.Capture(name: "dev1-<peripheral>", records: [
            ownAddress(Self.peripheralAddress),
            event(.leMeta(.connectionComplete(connection)), at: 11),
            att([0x0A, 0x03, 0x00], .received, at: 21),
            att([0x0B, 0x48, 0x69], .sent, at: 49),
            event(.disconnectionComplete(status: .success, handle: 1, reason: .remoteUserTerminatedConnection), at: 2_001),
        ], datalink: .hciUART)
    }

    @Test("one capture: our lane and the peer's, the connection, the read and its response, the disconnection")
    func oneCapture() {
        let chart = SequenceChart(captures: [centralCapture])
        #expect(chart.lanes.map(\.title) == ["dev2-central", Self.peripheralAddress.string])
        #expect(chart.entries.map(\.label) == ["connection: 30 ms, latency 0, timeout 5000 ms", "Read Request", "Read Response",
                                               "disconnected: Remote User Terminated Connection (0x13)"])
        #expect(chart.entries.map { "\($0.from)>\($0.to)" } == ["0>1", "0>1", "1>0", "0>1"])
        #expect(chart.entries.map(\.layer) == [.linkLayer, .att, .att, .linkLayer])
    }

    @Test("two captures of one link: one lane per device, each PDU once, from its sender's capture")
    func twoCaptures() {
        let chart = SequenceChart(captures: [peripheralCapture, centralCapture])
        #expect(chart.lanes.map(\.title) == ["dev1-<peripheral>", "dev2-central"])
        #expect(chart.entries.map(\.label) == ["connection: 30 ms, latency 0, timeout 5000 ms", "Read Request", "Read Response",
                                               "disconnected: Remote User Terminated Connection (0x13)"])
        #expect(chart.entries.map { "\($0.from)>\($0.to)" } == ["1>0", "1>0", "0>1", "1>0"])
    }

    @Test("the page: self-contained, every lane and exchange, text escaped, the gap over a second marked; a limit")
    func page() {
        let chart = SequenceChart(captures: [peripheralCapture, centralCapture])
        let html = chart.html(title: "a <b> & c")
        #expect(html.hasPrefix("<!doctype html>"))
        #expect(!html.contains("<script"))
        #expect(!html.contains("http://") || html.components(separatedBy: "http://").count == 2)  // the SVG namespace only
        #expect(html.contains("a &lt;b&gt; &amp; c"))
        #expect(html.contains("dev1-&lt;peripheral&gt;"))
        #expect(!html.contains("dev1-<peripheral>"))
        #expect(html.contains("Read Request") && html.contains("Read Response"))
        #expect(html.contains("… 1.951 s …"))
        #expect(html.contains("Δ 29.0 ms"))
        let limited = SequenceChart(captures: [centralCapture], limit: 2)
        #expect(limited.entries.count == 2 && limited.omitted == 2)
        #expect(limited.html(title: "x").contains("2 more left out"))
    }
}
