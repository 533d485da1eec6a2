import BluetoothCore
import HCI
import TestSupport
import Testing

/// H4 framing (Core 5.4 Vol 4 Part A §2): packet types, single-frame codec, the incremental framer.
@Suite struct FramingH4Tests {
    /// One packet of each type, golden bytes with the indicator octet.
    static let goldenFrames: [(bytes: [UInt8], frame: H4Frame)] = [
        // HCI_Reset (OGF 0x03, OCF 0x0003), no parameters.
        (hex("01 03 0C 00"), H4Frame(type: .command, packet: hex("03 0C 00"))),
        // Command Complete for HCI_Reset: Num_HCI_Command_Packets 1, opcode 0x0C03, status success.
        (hex("04 0E 04 01 03 0C 00"), H4Frame(type: .event, packet: hex("0E 04 01 03 0C 00"))),
        // ACL handle 0x0040, PB 0b10, length 7: L2CAP length 3, CID 0x0004, ATT Read Request handle 0x0001.
        (hex("02 40 20 07 00 03 00 04 00 0A 01 00"), H4Frame(type: .aclData, packet: hex("40 20 07 00 03 00 04 00 0A 01 00"))),
        // SCO handle 0x0001, length 2.
        (hex("03 01 00 02 AA BB"), H4Frame(type: .synchronousData, packet: hex("01 00 02 AA BB"))),
        // ISO handle 0x0001 (PB 0b10), length field 0x4002: the two RFU bits are ignored, length 2.
        (hex("05 01 20 02 40 11 22"), H4Frame(type: .isoData, packet: hex("01 20 02 40 11 22"))),
        // An event with no parameters at all (length 0) and an empty ACL packet.
        (hex("04 FF 00"), H4Frame(type: .event, packet: hex("FF 00"))),
        (hex("02 01 00 00 00"), H4Frame(type: .aclData, packet: hex("01 00 00 00"))),
    ]

    @Test func packetTypeNames() {
        #expect(HCIPacketType.command.description == "HCI Command packet (0x01)")
        #expect(HCIPacketType.aclData.rawValue == 0x02)
        #expect(HCIPacketType.synchronousData.rawValue == 0x03)
        #expect(HCIPacketType.event.rawValue == 0x04)
        #expect(HCIPacketType.isoData.description == "HCI ISO Data packet (0x05)")
        #expect(HCIPacketType(0x09).description == "Unknown HCI packet type (0x09)")
        #expect(HCIPacketType(0x09).headerLength == nil)
        #expect([HCIPacketType.command, .aclData, .synchronousData, .event, .isoData].map(\.headerLength) == [3, 4, 3, 2, 4])
    }

    @Test func goldenFramesBothWays() throws {
        for (bytes, frame) in Self.goldenFrames {
            #expect(try H4Frame(decoding: bytes) == frame)
            #expect(frame.encode() == bytes)
            #expect(H4Framer.encode(frame) == bytes)
        }
    }

    @Test func singleFrameTruncationAndTrailingBytesThrow() {
        for (bytes, _) in Self.goldenFrames {
            for length in 0..<bytes.count {
                #expect(throws: DecodeError.self) { try H4Frame(decoding: Array(bytes.prefix(length))) }
            }
            do {
                _ = try H4Frame(decoding: bytes + [0x00])
                Issue.record("trailing byte accepted")
            } catch {
                #expect(error.code == .trailingBytes)
            }
        }
        #expect(throws: DecodeError(.unknownType, at: 0, "unknown HCI packet indicator 0x09")) {
            try H4Frame(decoding: hex("09 00 00"))
        }
    }

    @Test func dissectionNamesTheType() {
        let text = H4Frame(type: .event, packet: hex("0E 04 01 03 0C 00")).dissection.renderText()
        #expect(text == """
            HCI UART Transport Packet: HCI Event packet
              HCI Packet Indicator: HCI Event packet (0x04)
              HCI Packet: 0e 04 01 03 0c 00 (6 bytes)
            """)
    }

    /// A stream of many mixed packets with random payloads.
    static func mixedStream(seed: UInt64, count: Int) -> [H4Frame] {
        var rng = SeededGenerator(seed: seed)
        var frames: [H4Frame] = []
        for _ in 0..<count {
            switch Int.random(in: 0..<5, using: &rng) {
            case 0:
                let length = Int.random(in: 0...255, using: &rng)
                frames.append(H4Frame(type: .command, packet: rng.bytes(2) + [UInt8(length)] + rng.bytes(length)))
            case 1:
                let length = Int.random(in: 0...1100, using: &rng)
                let lengthBytes = [UInt8(length & 0xFF), UInt8(length >> 8)]
                frames.append(H4Frame(type: .aclData, packet: rng.bytes(2) + lengthBytes + rng.bytes(length)))
            case 2:
                let length = Int.random(in: 0...255, using: &rng)
                frames.append(H4Frame(type: .synchronousData, packet: rng.bytes(2) + [UInt8(length)] + rng.bytes(length)))
            case 3:
                let length = Int.random(in: 0...255, using: &rng)
                frames.append(H4Frame(type: .event, packet: rng.bytes(1) + [UInt8(length)] + rng.bytes(length)))
            default:
                let length = Int.random(in: 0...600, using: &rng)
                // Random RFU bits in the top of the length field: the framer must mask them.
                let rfu = UInt8.random(in: 0...3, using: &rng) << 6
                let lengthBytes = [UInt8(length & 0xFF), UInt8(length >> 8) | rfu]
                frames.append(H4Frame(type: .isoData, packet: rng.bytes(2) + lengthBytes + rng.bytes(length)))
            }
        }
        return frames
    }

    @Test func framerGivesIdenticalResultsForAnyChunking() {
        let frames = Self.mixedStream(seed: 0xB1E, count: 300) + Self.goldenFrames.map(\.frame)
        let stream = H4Framer.encode(frames)

        var whole = H4Framer()
        let allAtOnce = whole.append(stream)
        #expect(allAtOnce == frames)
        #expect(whole.failure == nil)
        #expect(whole.bufferedByteCount == 0)
        #expect(whole.streamOffset == stream.count)

        var single = H4Framer()
        var byteByByte: [H4Frame] = []
        for byte in stream { byteByByte += single.append(CollectionOfOne(byte)) }
        #expect(byteByByte == frames)

        for seed in UInt64(1)...8 {
            var rng = SeededGenerator(seed: seed)
            var framer = H4Framer()
            var chunked: [H4Frame] = []
            var start = 0
            while start < stream.count {
                let end = min(stream.count, start + Int.random(in: 0...700, using: &rng))
                // Slices with non-zero start indices exercise the generic collection path.
                chunked += framer.append(stream[start..<end])
                start = end
            }
            #expect(chunked == frames, "seed \(seed)")
            #expect(framer.bufferedByteCount == 0)
        }
    }

    @Test func partialFrameIsBufferedUntilComplete() {
        var framer = H4Framer()
        #expect(framer.append(hex("04 0E 04 01")).isEmpty)
        #expect(framer.bufferedByteCount == 4)
        #expect(framer.append(hex("03 0C 00 01 03")) == [H4Frame(type: .event, packet: hex("0E 04 01 03 0C 00"))])
        #expect(framer.bufferedByteCount == 2)
        #expect(framer.append(hex("0C 00")) == [H4Frame(type: .command, packet: hex("03 0C 00"))])
    }

    @Test func unknownTypePoisonsTheStream() {
        var framer = H4Framer()
        // Two good frames, then 0x07 where an indicator is expected, then a good frame that must not come out.
        let frames = framer.append(hex("01 03 0C 00  04 0E 04 01 03 0C 00  07 01 03 0C 00"))
        #expect(frames.count == 2)
        #expect(framer.failure == H4FramingError(offset: 11, reason: .unknownPacketType(0x07)))
        #expect(framer.isPoisoned)
        #expect(framer.failure?.decodeError.code == .unknownType)
        #expect(framer.failure?.description == "unknown HCI packet indicator 0x07 at stream offset 11")
        // Refuses further input until reset.
        #expect(framer.append(hex("01 03 0C 00")).isEmpty)
        #expect(framer.isPoisoned)
        framer.reset()
        #expect(!framer.isPoisoned)
        #expect(framer.append(hex("01 03 0C 00")) == [H4Frame(type: .command, packet: hex("03 0C 00"))])
    }

    @Test func unknownTypeAtStartAndZeroIndicator() {
        var framer = H4Framer()
        #expect(framer.append([0x00]).isEmpty)
        #expect(framer.failure == H4FramingError(offset: 0, reason: .unknownPacketType(0x00)))
    }

    @Test func lengthAboveCapPoisonsTheStream() {
        var framer = H4Framer(maximumPayloadLength: 251)
        // An ACL packet announcing 252 bytes (0x00FC), fed in two pieces: the error comes when the header is in.
        #expect(framer.append(hex("01 03 0C 00 02 40 00")).count == 1)
        #expect(framer.failure == nil)
        #expect(framer.append(hex("FC 00 01 02")).isEmpty)
        #expect(framer.failure == H4FramingError(offset: 4, reason: .lengthAboveCap(type: .aclData, length: 252, cap: 251)))
        #expect(framer.failure?.decodeError.code == .invalidLength)
        #expect(framer.bufferedByteCount == 0)
        // At the cap is fine.
        var exact = H4Framer(maximumPayloadLength: 251)
        let packet = hex("40 00 FB 00") + [UInt8](repeating: 0xAB, count: 251)
        #expect(exact.append([0x02] + packet) == [H4Frame(type: .aclData, packet: packet)])
    }

    @Test func randomStreamsNeverCrashAndStayBounded() {
        var rng = SeededGenerator(seed: 0xF00D)
        for _ in 0..<3000 {
            var framer = H4Framer(maximumPayloadLength: Int.random(in: 0...1024, using: &rng))
            let bytes = rng.bytes(Int.random(in: 0...300, using: &rng))
            var start = 0
            var output: [H4Frame] = []
            while start < bytes.count {
                let end = min(bytes.count, start + Int.random(in: 1...40, using: &rng))
                output += framer.append(bytes[start..<end])
                #expect(framer.bufferedByteCount <= 5 + framer.maximumPayloadLength)
                start = end
            }
            // Whatever came out re-encodes to a prefix of the input.
            let encoded = H4Framer.encode(output)
            #expect(Array(bytes.prefix(encoded.count)) == encoded)
            for frame in output { #expect((try? H4Frame(decoding: frame.encode())) == frame) }
        }
    }
}
