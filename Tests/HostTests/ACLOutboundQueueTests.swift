import HCI
@testable import Host
import Testing
import BluetoothEngine

/// ``ACLOutbound`` (Core 5.4 Vol 4 Part E §4.1.1 host flow control) after its per-connection queue became an
/// in-place queue with a head index and a packet count (the notification benchmark's send path): order, round
/// robin, completions, counts and failure on disconnection are what they were.
@Suite("ACL outbound queue")
struct ACLOutboundQueueTests {
    /// A fragment whose first data octet names the PDU and second the fragment within it.
    static func fragments(_ pdu: UInt8, count: Int, handle: UInt16) throws -> [HCIACLDataPacket] {
        try (0..<count).map { index in
            try HCIACLDataPacket(handle: handle, packetBoundary: index == 0 ? .firstNonFlushable : .continuing,
                                 data: [pdu, UInt8(index)])
        }
    }

    /// Records which completions ran and how.
    final class Log: @unchecked Sendable {
        var entries: [String] = []
    }

    @Test("packets leave in order one per free buffer, completions come with each PDU's last fragment, counts are exact")
    func orderCompletionsAndCounts() throws {
        var outbound = ACLOutbound(totalBuffers: 3)
        let log = Log()
        for pdu in UInt8(0)..<UInt8(40) {
            // PDUs of 1, 2 or 3 fragments: more than 32 PDUs, so the sent ones are dropped in batches on the way.
            outbound.enqueue(try Self.fragments(pdu, count: Int(pdu % 3) + 1, handle: 0x0040), handle: 0x0040) { result in
                if case .success = result { log.entries.append("done \(pdu)") } else { log.entries.append("failed \(pdu)") }
            }
        }
        let total = (0..<40).reduce(0) { $0 + $1 % 3 + 1 }
        #expect(outbound.queuedPacketCount(for: 0x0040) == total)
        #expect(outbound.queuedPacketCount == total)
        var sent: [[UInt8]] = []
        while outbound.queuedPacketCount > 0 {
            let waiting = outbound.queuedPacketCount
            let (packets, completed) = outbound.takeSendable()
            #expect(packets.count == min(3, waiting))
            #expect(outbound.freeBuffers == 3 - packets.count)
            #expect(outbound.inFlightPacketCount(for: 0x0040) == packets.count)
            sent += packets.map(\.data)
            for completion in completed { completion(.success(())) }
            outbound.completed(handle: 0x0040, count: packets.count)
            #expect(outbound.queuedPacketCount(for: 0x0040) == total - sent.count)
        }
        let expected = (UInt8(0)..<UInt8(40)).flatMap { pdu in (0..<Int(pdu % 3) + 1).map { [pdu, UInt8($0)] } }
        #expect(sent == expected)
        #expect(log.entries == (0..<40).map { "done \($0)" })
        #expect(outbound.takeSendable().packets.isEmpty)
        #expect(outbound.inFlightPacketCount == 0 && outbound.freeBuffers == 3)
    }

    @Test("two connections are served round robin, one packet each in turn, and a new PDU joins the rotation")
    func roundRobin() throws {
        var outbound = ACLOutbound(totalBuffers: 16)
        outbound.enqueue(try Self.fragments(1, count: 3, handle: 0x0001), handle: 0x0001, completion: nil)
        outbound.enqueue(try Self.fragments(2, count: 1, handle: 0x0002), handle: 0x0002, completion: nil)
        outbound.enqueue(try Self.fragments(3, count: 1, handle: 0x0002), handle: 0x0002, completion: nil)
        let first = outbound.takeSendable().packets
        #expect(first.map(\.handle) == [0x0001, 0x0002, 0x0001, 0x0002, 0x0001])
        #expect(first.map(\.data) == [[1, 0], [2, 0], [1, 1], [3, 0], [1, 2]])
        // Both queues are empty: a later PDU starts a new rotation.
        outbound.enqueue(try Self.fragments(4, count: 2, handle: 0x0002), handle: 0x0002, completion: nil)
        #expect(outbound.takeSendable().packets.map(\.data) == [[4, 0], [4, 1]])
        #expect(outbound.queuedPacketCount == 0)
    }

    @Test("disconnection fails the PDUs still queued (a half-sent one included) and returns the buffers")
    func removeConnectionAfterPartialSend() throws {
        var outbound = ACLOutbound(totalBuffers: 2)
        let log = Log()
        for pdu in UInt8(0)..<UInt8(3) {
            outbound.enqueue(try Self.fragments(pdu, count: 3, handle: 0x0007), handle: 0x0007) { result in
                if case .failure(let error) = result { log.entries.append("failed \(pdu) \(error.code)") } else { log.entries.append("done \(pdu)") }
            }
        }
        #expect(outbound.takeSendable().packets.map(\.data) == [[0, 0], [0, 1]])
        #expect(outbound.queuedPacketCount(for: 0x0007) == 7)
        let failed = outbound.removeConnection(0x0007)
        for completion in failed { completion(.failure(HostError(.disconnected, "gone"))) }
        #expect(log.entries == ["failed 0 disconnected", "failed 1 disconnected", "failed 2 disconnected"])
        #expect(outbound.queuedPacketCount == 0 && outbound.queuedPacketCount(for: 0x0007) == 0)
        #expect(outbound.freeBuffers == 2 && outbound.inFlightPacketCount == 0)
        #expect(outbound.takeSendable().packets.isEmpty)
    }
}
