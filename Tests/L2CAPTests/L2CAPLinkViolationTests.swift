import BluetoothCore
import L2CAP
import TestSupport
import Testing

/// Every credit-based flow control rule whose violation disconnects the channel (Core 5.4 Vol 3 Part A §3.4.3,
/// §4.24): the exact Disconnection Request, the reason given to the owner, and both sides clean afterwards.
@Suite struct L2CAPLinkViolationTests {
    static let cid = L2CAPChannelIdentifier(0x0040)

    /// Opens a channel (server on the peripheral: MTU 200, MPS 40, 2 credits, manual return), feeds `frames` to
    /// the peripheral and returns its actions for the last one.
    func feedPeripheral(_ frames: [String]) throws -> (LinkPair, [L2CAPLinkAction]) {
        var pair = LinkPair()
        _ = try pair.open(serverMTU: 200, serverMPS: 40, serverCredits: 2, serverPolicy: .manual)
        var last: [L2CAPLinkAction] = []
        for frame in frames { last = pair.peripheral.receive(frame: hex(frame), now: .zero) }
        return (pair, last)
    }

    func expectChannelDisconnected(
        _ frames: [String], _ violation: L2CAPChannelViolation, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        var (pair, actions) = try feedPeripheral(frames)
        // Disconnection Request, id 1 (the peripheral's first request): Destination CID = the central's 0x0040,
        // Source CID = the peripheral's 0x0040.
        #expect(actions == [
            .send(signalingFrame("0601 0400 4000 4000")), .channelClosed(Self.cid, .violation(violation)),
        ], sourceLocation: sourceLocation)
        // Data after the violation is discarded.
        #expect(pair.peripheral.receive(frame: hex("0300 4000 0100 AA"), now: .zero) == [], sourceLocation: sourceLocation)
        pair.run(actions, from: .peripheral)
        #expect(pair.wire.last?.frame == signalingFrame("0701 0400 4000 4000"), sourceLocation: sourceLocation)
        #expect(pair.takeEvents(.central) == [.channelClosed(Self.cid, .peerRequest)], sourceLocation: sourceLocation)
        // The owner was told once, with the violation; the response closes nothing more.
        #expect(pair.takeEvents(.peripheral) == [.channelClosed(Self.cid, .violation(violation))], sourceLocation: sourceLocation)
        #expect(pair.bothIdle, sourceLocation: sourceLocation)
    }

    @Test func kFrameWithoutCredits() throws {
        try expectChannelDisconnected(
            ["0300 4000 0100 AA", "0300 4000 0100 BB", "0300 4000 0100 CC"], .kFrameWithoutCredits)
    }

    @Test func sduLengthAboveMTU() throws {
        try expectChannelDisconnected(["0400 4000 C900 AABB"], .reassembly(.sduLengthExceedsMTU(sduLength: 201, mtu: 200)))
    }

    @Test func kFramePayloadAboveMPS() throws {
        let frame = "2900 4000 2700" + String(repeating: "11", count: 39)
        try expectChannelDisconnected([frame], .reassembly(.payloadExceedsMPS(payloadLength: 41, mps: 40)))
    }

    @Test func moreDataThanAnnouncedInOneKFrame() throws {
        try expectChannelDisconnected(
            ["0700 4000 0300 0102030405"], .reassembly(.dataExceedsSDULength(sduLength: 3, received: 5)))
    }

    @Test func moreDataThanAnnouncedAcrossKFrames() throws {
        try expectChannelDisconnected(
            ["0400 4000 0500 0102", "0400 4000 03040506"], .reassembly(.dataExceedsSDULength(sduLength: 5, received: 6)))
    }

    @Test func firstKFrameTooShortForTheSDULength() throws {
        try expectChannelDisconnected(["0100 4000 05"], .reassembly(.missingSDULength(payloadLength: 1)))
    }

    @Test func creditOverflow() throws {
        var pair = LinkPair()
        let (centralCID, _) = try pair.open(serverCredits: 4)
        // 4 + 65531 = 65535 is the maximum: fine.
        #expect(pair.central.receive(frame: signalingFrame("1605 0400 4000 FBFF"), now: .zero) == [
            .creditsAvailable(centralCID)
        ])
        #expect(pair.central.sendCredits(on: centralCID) == 65535)
        // One more: the central disconnects the channel (its id 2: id 1 was the connection request).
        let actions = pair.central.receive(frame: signalingFrame("1606 0400 4000 0100"), now: .zero)
        #expect(actions == [
            .send(signalingFrame("0602 0400 4000 4000")),
            .channelClosed(centralCID, .violation(.creditOverflow(total: 65536))),
        ])
        pair.run(actions, from: .central)
        #expect(pair.wire.last?.frame == signalingFrame("0702 0400 4000 4000"))
        #expect(pair.takeEvents(.peripheral) == [.channelClosed(Self.cid, .peerRequest)])
        #expect(pair.bothIdle)
    }

    @Test func zeroCreditsAndUnknownChannelCreditsAreIgnored() throws {
        var pair = LinkPair()
        let (centralCID, _) = try pair.open(serverCredits: 4)
        #expect(pair.central.receive(frame: signalingFrame("1605 0400 4000 0000"), now: .zero) == [])
        #expect(pair.central.receive(frame: signalingFrame("1606 0400 4100 0100"), now: .zero) == [])
        #expect(pair.central.sendCredits(on: centralCID) == 4)
    }

    @Test func sendQueueIsDroppedOnViolation() throws {
        var pair = LinkPair()
        let (centralCID, _) = try pair.open(
            centralCredits: 1, serverMPS: 23, serverCredits: 1, centralPolicy: .manual, serverPolicy: .manual)
        #expect(sentFrames(try pair.central.send(sdu: [UInt8](repeating: 7, count: 100), on: centralCID)).count == 1)
        #expect(pair.central.queuedFrameCount(on: centralCID) == 4)
        #expect(pair.central.receive(frame: hex("0300 4000 0200 AA"), now: .zero) == [])
        #expect(pair.central.reassemblingChannelCount == 1)
        let actions = pair.central.receive(frame: hex("0100 4000 BB"), now: .zero)
        #expect(actions.last == .channelClosed(centralCID, .violation(.kFrameWithoutCredits)))
        #expect(pair.central.queuedFrameCount == 0 && pair.central.reassemblingChannelCount == 0)
        pair.run(actions, from: .central)
        #expect(pair.bothIdle)
    }
}
