import BluetoothCore
import HCI
import PropertyBased
import TestSupport
import Testing

/// HCI ACL Data packets (Core 5.4 Vol 4 Part E §5.4.2) and L2CAP fragmentation (Vol 3 Part A §7.2).
@Suite struct FramingACLTests {
    /// An L2CAP basic frame: LE16 length, LE16 CID, payload.
    static func l2cap(cid: UInt16, payload: [UInt8]) -> [UInt8] {
        [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), UInt8(cid & 0xFF), UInt8(cid >> 8)] + payload
    }

    static func packet(_ handle: UInt16, _ boundary: HCIACLDataPacket.PacketBoundary, _ data: [UInt8]) -> HCIACLDataPacket? {
        try? HCIACLDataPacket(handle: handle, packetBoundary: boundary, data: data)
    }

    // MARK: - Packet codec

    @Test func goldenPacketBothWays() throws {
        // Handle 0x0040, PB 0b10 (first flushable), BC 0b00, length 7, ATT Read Request on CID 0x0004.
        let bytes = hex("40 20 07 00 03 00 04 00 0A 01 00")
        let packet = try HCIACLDataPacket(decoding: bytes)
        #expect(packet.handle == 0x0040)
        #expect(packet.packetBoundary == .firstFlushable)
        #expect(packet.broadcast == .pointToPoint)
        #expect(packet.data == hex("03 00 04 00 0A 01 00"))
        #expect(packet.encode() == bytes)
        #expect(packet == (try HCIACLDataPacket(handle: 0x0040, packetBoundary: .firstFlushable, data: hex("03 00 04 00 0A 01 00"))))
        #expect(try HCIACLDataPacket(frame: H4Frame(decoding: [0x02] + bytes)) == packet)
        #expect(packet.frame.encode() == [0x02] + bytes)
    }

    @Test func everyFlagCombinationRoundTrips() throws {
        for boundary in HCIACLDataPacket.PacketBoundary.allCases {
            for broadcast in UInt8(0)...3 {
                let packet = try HCIACLDataPacket(
                    handle: 0x0EFF, packetBoundary: boundary,
                    broadcast: HCIACLDataPacket.BroadcastFlag(rawValue: broadcast), data: [0x55])
                let bytes = packet.encode()
                #expect(bytes[1] == 0x0E | boundary.rawValue << 4 | broadcast << 6)
                #expect(try HCIACLDataPacket(decoding: bytes) == packet)
            }
        }
        // Continuing fragment, BR/EDR broadcast: 0x01 << 12 | 0x01 << 14 | 0x001 = 0x5001.
        let continuing = try HCIACLDataPacket(decoding: hex("01 50 00 00"))
        #expect(continuing.packetBoundary == .continuing)
        #expect(continuing.broadcast == .brEdrBroadcast)
        #expect(continuing.handle == 0x0001)
    }

    @Test func reservedHandlesAreRefused() {
        #expect(throws: DecodeError.self) { try HCIACLDataPacket(handle: 0x0F00, packetBoundary: .firstNonFlushable, data: []) }
        #expect(throws: DecodeError(.invalidValue, at: 0, "connection handle 0x0FFF is reserved (above 0x0EFF)")) {
            try HCIACLDataPacket(decoding: hex("FF 0F 00 00"))
        }
        #expect(throws: DecodeError.self) {
            try HCIACLDataPacket(handle: 1, packetBoundary: .complete, data: [UInt8](repeating: 0, count: 65536))
        }
        #expect(throws: DecodeError.self) { try HCIACLDataPacket(frame: H4Frame(type: .event, packet: hex("40 20 00 00"))) }
    }

    @Test func truncationAndTrailingBytesThrow() {
        let bytes = hex("40 20 07 00 03 00 04 00 0A 01 00")
        for length in 0..<bytes.count {
            do {
                _ = try HCIACLDataPacket(decoding: Array(bytes.prefix(length)))
                Issue.record("accepted \(length) bytes")
            } catch {
                #expect(error.code == .truncated)
            }
        }
        #expect(throws: DecodeError(.trailingBytes, at: 11, "1 unexpected byte after HCI ACL Data packet")) {
            try HCIACLDataPacket(decoding: bytes + [0x00])
        }
    }

    @Test func randomBytesNeverCrash() {
        var rng = SeededGenerator(seed: 0xAC1)
        for _ in 0..<3000 {
            let bytes = rng.bytes(Int.random(in: 0...12, using: &rng))
            if let packet = try? HCIACLDataPacket(decoding: bytes) {
                #expect(packet.encode() == bytes)
            }
        }
    }

    @Test func dissection() throws {
        let packet = try HCIACLDataPacket(decoding: hex("40 00 05 00 01 00 04 00 0A"))
        #expect(packet.dissection.renderText() == """
            HCI ACL Data Packet
              Handle: 0x0040
              Packet_Boundary_Flag: First non-automatically-flushable packet (0b00)
              Broadcast_Flag: Point-to-point (0x00)
              Data_Total_Length: 5
              Data: 01 00 04 00 0a (5 bytes)
            """)
    }

    // MARK: - Fragmentation

    @Test func fragmenterSplitsAtTheBufferSize() throws {
        let pdu = Self.l2cap(cid: 0x0004, payload: Array(0..<60))  // 64 bytes
        let fragmenter = try ACLFragmenter(maximumDataLength: 27)
        let packets = try fragmenter.fragment(pdu, handle: 0x0042)
        #expect(packets.map(\.data.count) == [27, 27, 10])
        #expect(packets.map(\.packetBoundary) == [.firstNonFlushable, .continuing, .continuing])
        #expect(packets.allSatisfy { $0.handle == 0x0042 })
        #expect(packets.flatMap(\.data) == pdu)
        #expect(try fragmenter.fragment(pdu, handle: 1, flushable: true).first?.packetBoundary == .firstFlushable)
        // Exactly one buffer: one packet.
        #expect(try ACLFragmenter(maximumDataLength: 64).fragment(pdu, handle: 1).count == 1)
        // An empty PDU still gives one (empty) start packet.
        #expect(try fragmenter.fragment([], handle: 1).map(\.data) == [[]])
        #expect(throws: DecodeError.self) { try fragmenter.fragment(pdu, handle: 0x0F00) }
        #expect(throws: DecodeError.self) { try ACLFragmenter(maximumDataLength: 0) }
        #expect(throws: DecodeError.self) { try ACLFragmenter(maximumDataLength: 65536) }
    }

    @Test func fragmentReassembleIdentity() async {
        await propertyCheck(input: Gen.int(in: 0...2000), Gen.int(in: 27...251), Gen.uint16(in: 0...0x0EFF)) { size, buffer, handle in
            var rng = SeededGenerator(seed: UInt64(size * 1000 + buffer))
            let pdu = Self.l2cap(cid: UInt16.random(in: 0...0xFFFF, using: &rng), payload: rng.bytes(size))
            let packets = try ACLFragmenter(maximumDataLength: buffer).fragment(pdu, handle: handle)
            #expect(packets.allSatisfy { $0.data.count <= buffer })
            var reassembler = ACLReassembler()
            var outputs: [ACLReassembler.Output] = []
            for packet in packets {
                // Through the wire format too.
                let decoded = try HCIACLDataPacket(decoding: packet.encode())
                outputs.append(reassembler.receive(decoded))
            }
            #expect(outputs.dropLast().allSatisfy { $0 == ACLReassembler.Output() })
            #expect(outputs.last == ACLReassembler.Output(pdu: ReassembledL2CAPPDU(handle: handle, bytes: pdu)))
            #expect(reassembler.bufferedByteCount == 0)
            #expect(reassembler.pendingHandles.isEmpty)
        }
    }

    @Test func interleavedHandlesReassembleIndependently() throws {
        var rng = SeededGenerator(seed: 0x1A7E)
        for round in 0..<40 {
            let buffer = Int.random(in: 27...251, using: &rng)
            let fragmenter = try ACLFragmenter(maximumDataLength: buffer)
            let handles: [UInt16] = [0x0001, 0x0040, 0x0EFF, UInt16.random(in: 2...0x3F, using: &rng)]
            // Per handle, a queue of PDUs fragmented in order.
            var expected: [ReassembledL2CAPPDU] = []
            var queues: [[HCIACLDataPacket]] = []
            for handle in handles {
                var queue: [HCIACLDataPacket] = []
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    let pdu = Self.l2cap(cid: 0x0004, payload: rng.bytes(Int.random(in: 0...2000, using: &rng)))
                    expected.append(ReassembledL2CAPPDU(handle: handle, bytes: pdu))
                    queue += try fragmenter.fragment(pdu, handle: handle)
                }
                queues.append(queue)
            }
            // Interleave: pick a random non-empty queue each time (order within a handle is kept).
            var reassembler = ACLReassembler()
            var received: [ReassembledL2CAPPDU] = []
            while queues.contains(where: { !$0.isEmpty }) {
                let candidates = queues.indices.filter { !queues[$0].isEmpty }
                let pick = candidates[Int.random(in: 0..<candidates.count, using: &rng)]
                let output = reassembler.receive(queues[pick].removeFirst())
                #expect(output.error == nil, "round \(round)")
                if let pdu = output.pdu { received.append(pdu) }
            }
            for handle in handles {
                #expect(received.filter { $0.handle == handle } == expected.filter { $0.handle == handle }, "round \(round)")
            }
            #expect(reassembler.bufferedByteCount == 0)
        }
    }

    // MARK: - Reassembly errors

    @Test func continuationWithoutStartIsDropped() throws {
        var reassembler = ACLReassembler()
        let output = reassembler.receive(try #require(Self.packet(0x0040, .continuing, [1, 2, 3])))
        #expect(output == ACLReassembler.Output(error: .continuationWithoutStart(handle: 0x0040, length: 3)))
        #expect(reassembler.pendingHandles.isEmpty)
    }

    @Test func startWhileInProgressDropsTheOldPDU() throws {
        var reassembler = ACLReassembler()
        #expect(reassembler.receive(try #require(Self.packet(1, .firstNonFlushable, hex("0A 00 04 00 01 02")))) == ACLReassembler.Output())
        #expect(reassembler.bufferedByteCount == 6)
        // A new, complete PDU arrives: it is delivered and the old partial one reported as dropped.
        let complete = hex("01 00 04 00 0B")
        let output = reassembler.receive(try #require(Self.packet(1, .firstFlushable, complete)))
        #expect(output.pdu == ReassembledL2CAPPDU(handle: 1, bytes: complete))
        #expect(output.error == .startWhileInProgress(handle: 1, droppedLength: 6))
        #expect(reassembler.bufferedByteCount == 0)
        // A new start that is itself partial replaces the old one.
        _ = reassembler.receive(try #require(Self.packet(1, .firstNonFlushable, hex("03 00 04 00"))))
        let second = reassembler.receive(try #require(Self.packet(1, .firstNonFlushable, hex("02 00 04 00 AA"))))
        #expect(second == ACLReassembler.Output(error: .startWhileInProgress(handle: 1, droppedLength: 4)))
        #expect(reassembler.receive(try #require(Self.packet(1, .continuing, hex("BB")))).pdu?.bytes == hex("02 00 04 00 AA BB"))
    }

    @Test func longerThanAnnouncedIsDroppedWithItsContinuations() throws {
        var reassembler = ACLReassembler()
        // Announces 2 payload bytes but the start already carries 3.
        let first = reassembler.receive(try #require(Self.packet(2, .firstNonFlushable, hex("02 00 04 00 01 02 03"))))
        #expect(first == ACLReassembler.Output(error: .longerThanAnnounced(handle: 2, announced: 6, received: 7)))
        // Overflow in a continuation.
        _ = reassembler.receive(try #require(Self.packet(3, .firstNonFlushable, hex("03 00 04 00 01"))))
        let overflow = reassembler.receive(try #require(Self.packet(3, .continuing, hex("02 03 04"))))
        #expect(overflow == ACLReassembler.Output(error: .longerThanAnnounced(handle: 3, announced: 7, received: 8)))
        #expect(reassembler.bufferedByteCount == 0)
        // The rest of a refused PDU is dropped silently, and the next start works.
        #expect(reassembler.receive(try #require(Self.packet(3, .continuing, hex("05")))) == ACLReassembler.Output())
        #expect(reassembler.receive(try #require(Self.packet(3, .firstNonFlushable, hex("00 00 05 00")))).pdu?.bytes == hex("00 00 05 00"))
    }

    @Test func announcedLengthAboveCapIsRefusedBeforeBuffering() throws {
        var reassembler = ACLReassembler(maximumPDULength: 100)
        let output = reassembler.receive(try #require(Self.packet(4, .firstNonFlushable, hex("61 00 04 00") + [UInt8](repeating: 0, count: 20))))
        #expect(output == ACLReassembler.Output(error: .announcedLengthAboveCap(handle: 4, announced: 101, cap: 100)))
        #expect(reassembler.bufferedByteCount == 0)
        #expect(reassembler.receive(try #require(Self.packet(4, .continuing, [0]))) == ACLReassembler.Output())
        // Exactly the cap is accepted.
        let pdu = hex("60 00 04 00") + [UInt8](repeating: 7, count: 96)
        #expect(reassembler.receive(try #require(Self.packet(4, .firstNonFlushable, pdu))).pdu?.bytes == pdu)
        // The default cap is 65535 + 4: the largest L2CAP length is accepted.
        #expect(ACLReassembler().maximumPDULength == 65539)
    }

    @Test func headerSplitAcrossFragments() throws {
        var reassembler = ACLReassembler()
        #expect(reassembler.receive(try #require(Self.packet(5, .firstNonFlushable, []))) == ACLReassembler.Output())
        #expect(reassembler.receive(try #require(Self.packet(5, .continuing, hex("02")))) == ACLReassembler.Output())
        #expect(reassembler.receive(try #require(Self.packet(5, .continuing, hex("00 06")))) == ACLReassembler.Output())
        let output = reassembler.receive(try #require(Self.packet(5, .continuing, hex("00 AA BB"))))
        #expect(output.pdu?.bytes == hex("02 00 06 00 AA BB"))
        #expect(output.pdu?.channelIdentifier == 0x0006)
        #expect(output.pdu.map { Array($0.payload) } == hex("AA BB"))
    }

    @Test func tooManyPendingHandlesAndDropState() throws {
        var reassembler = ACLReassembler(maximumPendingHandles: 2)
        _ = reassembler.receive(try #require(Self.packet(1, .firstNonFlushable, hex("05 00 04 00"))))
        _ = reassembler.receive(try #require(Self.packet(2, .firstNonFlushable, hex("05 00 04 00"))))
        let third = reassembler.receive(try #require(Self.packet(3, .firstNonFlushable, hex("05 00 04 00"))))
        #expect(third == ACLReassembler.Output(error: .tooManyPendingPDUs(handle: 3, limit: 2)))
        #expect(reassembler.pendingHandles == [1, 2])
        // Disconnection of handle 1 frees its slot; its continuations are then orphans.
        reassembler.dropState(for: 1)
        #expect(reassembler.pendingHandles == [2])
        #expect(reassembler.receive(try #require(Self.packet(1, .continuing, [0]))).error == .continuationWithoutStart(handle: 1, length: 1))
        #expect(reassembler.receive(try #require(Self.packet(3, .firstNonFlushable, hex("00 00 04 00")))).pdu != nil)
        reassembler.reset()
        #expect(reassembler.pendingHandles.isEmpty)
        #expect(reassembler.bufferedByteCount == 0)
    }

    @Test func errorDescriptions() {
        #expect(ACLReassemblyError.continuationWithoutStart(handle: 0x40, length: 3).description
            == "handle 0x0040: continuing fragment of 3 bytes without a start, dropped")
        #expect(ACLReassemblyError.announcedLengthAboveCap(handle: 1, announced: 101, cap: 100).handle == 1)
    }

    @Test func randomPacketSequencesStayBounded() throws {
        var rng = SeededGenerator(seed: 0x5EED)
        var reassembler = ACLReassembler(maximumPDULength: 600, maximumPendingHandles: 4)
        for _ in 0..<5000 {
            let boundary = HCIACLDataPacket.PacketBoundary(bits: UInt8.random(in: 0...3, using: &rng))
            let handle = UInt16.random(in: 0...7, using: &rng)
            let data = rng.bytes(Int.random(in: 0...64, using: &rng))
            let output = reassembler.receive(try HCIACLDataPacket(handle: handle, packetBoundary: boundary, data: data))
            if let pdu = output.pdu {
                #expect(pdu.bytes.count == Int(pdu.bytes[0]) + Int(pdu.bytes[1]) * 256 + 4)
            }
            #expect(reassembler.pendingHandles.count <= 4)
            #expect(reassembler.bufferedByteCount <= 4 * 600)
        }
    }
}
