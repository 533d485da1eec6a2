import BluetoothCore
import L2CAP
import PropertyBased
import TestSupport
import Testing

@Suite struct L2CAPSDUTests {
    @Test func goldenSegmentation() throws {
        // SDU of 5 octets, MPS 4: first K-frame = SDU length (2) + 2 octets, then 3 octets.
        let frames = try L2CAPSDUSegmenter.segment([1, 2, 3, 4, 5], mtu: 23, mps: 4)
        #expect(frames == [hex("0500 0102"), hex("030405")])
        var reassembler = L2CAPSDUReassembler(mtu: 23, mps: 4)
        #expect(try reassembler.receive(frames[0]) == nil)
        #expect(reassembler.isReassembling && reassembler.missingLength == 3)
        #expect(try reassembler.receive(frames[1]) == [1, 2, 3, 4, 5])
        #expect(!reassembler.isReassembling)
    }

    @Test func emptySDU() throws {
        let frames = try L2CAPSDUSegmenter.segment([], mtu: 23, mps: 23)
        #expect(frames == [hex("0000")])
        var reassembler = L2CAPSDUReassembler(mtu: 23, mps: 23)
        #expect(try reassembler.receive(frames[0]) == [])
    }

    @Test func singleFrameSDU() throws {
        let sdu = Array(0..<21).map { UInt8($0) }
        let frames = try L2CAPSDUSegmenter.segment(sdu, mtu: 23, mps: 23)
        #expect(frames.count == 1 && frames[0].count == 23)
        var reassembler = L2CAPSDUReassembler(mtu: 23, mps: 23)
        #expect(try reassembler.receive(frames[0]) == sdu)
    }

    @Test func segmentationReassemblyIdentityOverRandomSizes() throws {
        var generator = SeededGenerator(seed: 0x4B_F4A3)
        for _ in 0..<400 {
            let mtu = UInt16.random(in: 23...2000, using: &generator)
            let mps = UInt16.random(in: 23...300, using: &generator)
            let sdu = generator.bytes(Int.random(in: 0...Int(mtu), using: &generator))
            let frames = try L2CAPSDUSegmenter.segment(sdu, mtu: mtu, mps: mps)
            #expect(frames.allSatisfy { $0.count <= Int(mps) })
            #expect(frames.dropLast().allSatisfy { $0.count == Int(mps) })
            #expect(frames.reduce(0) { $0 + $1.count } == sdu.count + 2)
            var reassembler = L2CAPSDUReassembler(mtu: mtu, mps: mps)
            var result: [UInt8]? = nil
            for (index, frame) in frames.enumerated() {
                result = try reassembler.receive(frame)
                #expect((result == nil) == (index < frames.count - 1))
            }
            #expect(result == sdu)
        }
    }

    @Test func propertyIdentity() async {
        await propertyCheck(
            count: 200, input: Gen.uint8().array(of: 0...600), Gen.uint16(in: 2...700)
        ) { sdu, mps in
            let frames = try L2CAPSDUSegmenter.segment(sdu, mtu: 600, mps: mps)
            var reassembler = L2CAPSDUReassembler(mtu: 600, mps: mps)
            var result: [UInt8]? = nil
            for frame in frames { result = try reassembler.receive(frame) }
            #expect(result == sdu)
        }
    }

    @Test func payloadAboveMPSIsRefused() throws {
        var reassembler = L2CAPSDUReassembler(mtu: 100, mps: 23)
        #expect(throws: L2CAPSDUError.payloadExceedsMPS(payloadLength: 24, mps: 23)) {
            try reassembler.receive(hex("1400") + [UInt8](repeating: 7, count: 22))
        }
        // Also in a continuation frame.
        #expect(try reassembler.receive(hex("2800") + [UInt8](repeating: 1, count: 21)) == nil)
        #expect(throws: L2CAPSDUError.payloadExceedsMPS(payloadLength: 24, mps: 23)) {
            try reassembler.receive([UInt8](repeating: 2, count: 24))
        }
        #expect(!reassembler.isReassembling)
    }

    @Test func sduLengthAboveMTUIsRefused() {
        var reassembler = L2CAPSDUReassembler(mtu: 100, mps: 23)
        #expect(throws: L2CAPSDUError.sduLengthExceedsMTU(sduLength: 101, mtu: 100)) {
            try reassembler.receive(hex("6500 0102"))
        }
        #expect(throws: L2CAPSDUError.sduLengthExceedsMTU(sduLength: 101, mtu: 100)) {
            try L2CAPSDUSegmenter.segment([UInt8](repeating: 0, count: 101), mtu: 100, mps: 23)
        }
    }

    @Test func moreDataThanAnnouncedIsRefused() throws {
        var reassembler = L2CAPSDUReassembler(mtu: 100, mps: 23)
        // In the first K-frame.
        #expect(throws: L2CAPSDUError.dataExceedsSDULength(sduLength: 2, received: 3)) {
            try reassembler.receive(hex("0200 010203"))
        }
        // Across K-frames.
        #expect(try reassembler.receive(hex("0500 0102")) == nil)
        #expect(throws: L2CAPSDUError.dataExceedsSDULength(sduLength: 5, received: 6)) {
            try reassembler.receive(hex("03040506"))
        }
        #expect(!reassembler.isReassembling)
    }

    @Test func firstFrameWithoutSDULengthIsRefused() {
        var reassembler = L2CAPSDUReassembler(mtu: 100, mps: 23)
        #expect(throws: L2CAPSDUError.missingSDULength(payloadLength: 0)) { try reassembler.receive([]) }
        #expect(throws: L2CAPSDUError.missingSDULength(payloadLength: 1)) { try reassembler.receive([0x05]) }
    }

    @Test func segmenterNeedsRoomForTheLengthField() {
        #expect(throws: L2CAPSDUError.mpsTooSmall(mps: 1)) { try L2CAPSDUSegmenter.segment([1], mtu: 23, mps: 1) }
    }

    @Test func recoversAfterAnErrorAndResets() throws {
        var reassembler = L2CAPSDUReassembler(mtu: 100, mps: 23)
        _ = try? reassembler.receive(hex("6500"))
        #expect(try reassembler.receive(hex("0100 09")) == [9])
        #expect(try reassembler.receive(hex("0300 01")) == nil)
        reassembler.reset()
        #expect(try reassembler.receive(hex("0100 0a")) == [10])
    }

    @Test func errorsDescribeTheRule() {
        #expect(L2CAPSDUError.sduLengthExceedsMTU(sduLength: 101, mtu: 100).description.contains("MTU"))
        #expect(L2CAPSDUError.payloadExceedsMPS(payloadLength: 24, mps: 23).description.contains("MPS"))
        #expect(L2CAPSDUError.dataExceedsSDULength(sduLength: 2, received: 3).description.contains("SDU length"))
    }

    @Test func hostileFramesNeverCrash() {
        var generator = SeededGenerator(seed: 0xDEAD)
        var reassembler = L2CAPSDUReassembler(mtu: 512, mps: 64)
        for _ in 0..<3000 {
            let payload = generator.bytes(Int.random(in: 0...80, using: &generator))
            if let sdu = try? reassembler.receive(payload) {
                #expect(sdu.count <= 512)
            }
        }
    }
}
