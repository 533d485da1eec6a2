import BluetoothRuntime
import Foundation
import HCI
import HCITransport
import TestSupport
import Testing

@Suite struct SnoopingTransportTests {
    /// A clock that ticks 1 ms per reading from a fixed start.
    final class SteppingClock: Sendable {
        static let start: Int64 = 1_700_000_000_123_456
        private let readings = LockedValue<Int64>(0)
        func now() -> Int64 {
            readings.withLock { count in
                defer { count += 1 }
                return Self.start + count * 1000
            }
        }
    }

    @Test func tapRecordsBothDirectionsAsBTSnoop() async throws {
        let path = temporaryPath(".btsnoop")
        defer { unlink(path) }
        let sink = try BTSnoopFileSink(path: path)
        let clock = SteppingClock()
        let (host, controller) = InProcessHCITransport.makePair()
        let tapped = SnoopingTransport(wrapping: host, sink: sink, clock: { clock.now() })
        #expect(tapped.name == "in-process (host side) (snoop: \(path))")
        let hostSeen = Collector()
        try hostSeen.start(tapped)
        // The controller answers each command with its Command Complete.
        let reset = H4Frame(type: .command, packet: hex("03 0C 00"))
        let resetComplete = H4Frame(type: .event, packet: hex("0E 04 01 03 0C 00"))
        let acl = H4Frame(type: .aclData, packet: hex("40 00 05 00 01 00 04 00 0A"))
        try controller.start(
            onFrame: { frame in
                if frame == reset { try? controller.send(resetComplete) }
            },
            onClose: { _ in })
        try tapped.send(reset)
        #expect(await hostSeen.waitForFrames(1) == [resetComplete])
        try tapped.send(acl)
        // The file is written as it goes: readable before anything is closed.
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let (header, records, error) = try BTSnoopReader.readAll(bytes)
        #expect(error == nil)
        #expect(header.datalink == .hciUART)
        #expect(records.count == 3)
        #expect(try records.map { try $0.frame(datalink: header.datalink) } == [reset, resetComplete, acl])
        #expect(records.map(\.direction) == [.sent, .received, .sent])
        #expect(records.map(\.flags.rawValue) == [0b10, 0b11, 0b00])
        #expect(records.map(\.unixMicroseconds) == [0, 1, 2].map { SteppingClock.start + $0 * 1000 })
        // Exact bytes of the first record: lengths 4/4, flags 2, no drops, timestamp, then the H4 frame.
        let timestamp = UInt64(BTSnoop.timestamp(unixMicroseconds: SteppingClock.start))
        let timestampBytes = (0..<8).reversed().map { UInt8(truncatingIfNeeded: timestamp >> (8 * UInt64($0))) }
        #expect(Array(bytes[0..<16]) == hex("62 74 73 6E 6F 6F 70 00 00 00 00 01 00 00 03 EA"))
        #expect(Array(bytes[16..<44]) == hex("00 00 00 04 00 00 00 04 00 00 00 02 00 00 00 00") + timestampBytes + hex("01 03 0C 00"))

        tapped.close()
        #expect(await hostSeen.waitForClose() == .some(nil))
        // After the close, sends throw and are not recorded.
        #expect(throws: HCITransportError.self) { try tapped.send(reset) }
        sink.close()
        let after = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(after == bytes)
    }
}
