import BluetoothCore
import L2CAP
import TestSupport
import Testing

/// Two `L2CAPLink`s wired back to back: every `.send` of one is fed to the other, in order, until nothing moves.
struct LinkPair {
    enum Side: Hashable { case central, peripheral }

    var central: L2CAPLink
    var peripheral: L2CAPLink
    var now = StackInstant.zero
    /// Every frame that crossed the wire, with its sender.
    var wire: [(from: Side, frame: [UInt8])] = []
    var centralEvents: [L2CAPLinkAction] = []
    var peripheralEvents: [L2CAPLinkAction] = []

    init(
        central: L2CAPLinkConfiguration = L2CAPLinkConfiguration(role: .central),
        peripheral: L2CAPLinkConfiguration = L2CAPLinkConfiguration(role: .peripheral)
    ) {
        self.central = L2CAPLink(configuration: central)
        self.peripheral = L2CAPLink(configuration: peripheral)
    }

    /// Carries out `actions` produced by `side`, and everything they cause, breadth first.
    mutating func run(_ actions: [L2CAPLinkAction], from side: Side) {
        var queue = actions.map { (side, $0) }
        var index = 0
        while index < queue.count {
            let (from, action) = queue[index]
            index += 1
            guard case .send(let frame) = action else {
                if from == .central { centralEvents.append(action) } else { peripheralEvents.append(action) }
                continue
            }
            wire.append((from, frame))
            if from == .central {
                queue += peripheral.receive(frame: frame, now: now).map { (Side.peripheral, $0) }
            } else {
                queue += central.receive(frame: frame, now: now).map { (Side.central, $0) }
            }
        }
    }

    /// Takes the events collected so far.
    mutating func takeEvents(_ side: Side) -> [L2CAPLinkAction] {
        defer { if side == .central { centralEvents = [] } else { peripheralEvents = [] } }
        return side == .central ? centralEvents : peripheralEvents
    }

    /// Opens a channel from the central to a server on the peripheral; returns (central CID, peripheral CID).
    mutating func open(
        psm: UInt16 = 0x0080, centralMTU: UInt16 = 100, centralMPS: UInt16 = 50, centralCredits: UInt16 = 3,
        serverMTU: UInt16 = 200, serverMPS: UInt16 = 40, serverCredits: UInt16 = 4,
        centralPolicy: L2CAPChannelCreditPolicy = .automatic(), serverPolicy: L2CAPChannelCreditPolicy = .automatic()
    ) throws -> (L2CAPChannelIdentifier, L2CAPChannelIdentifier) {
        try peripheral.registerServer(
            psm: psm, mtu: serverMTU, mps: serverMPS, initialCredits: serverCredits, creditPolicy: serverPolicy)
        let (cid, actions) = try central.connect(
            psm: psm, mtu: centralMTU, mps: centralMPS, initialCredits: centralCredits, creditPolicy: centralPolicy,
            now: now)
        run(actions, from: .central)
        guard case .channelOpened(let info)? = takeEvents(.central).first,
            case .channelOpened(let serverInfo)? = takeEvents(.peripheral).first
        else {
            Issue.record("channel did not open")
            return (cid, .null)
        }
        #expect(info.localCID == cid)
        return (cid, serverInfo.localCID)
    }

    /// Whether both links hold nothing: no request, channel, queued frame or partial SDU.
    var bothIdle: Bool {
        central.isIdle && peripheral.isIdle && central.queuedFrameCount == 0 && peripheral.queuedFrameCount == 0
            && central.nextDeadline == nil && peripheral.nextDeadline == nil
    }
}

/// A basic frame on the LE signaling channel around a command given in hex.
func signalingFrame(_ command: String) -> [UInt8] {
    let payload = hex(command)
    return [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8), 0x05, 0x00] + payload
}

/// The frames of `actions` (the `.send` ones).
func sentFrames(_ actions: [L2CAPLinkAction]) -> [[UInt8]] {
    actions.compactMap { if case .send(let frame) = $0 { frame } else { nil } }
}

@Suite struct L2CAPLinkPairTests {
    @Test func openChannelWithExactSignalingBytes() throws {
        var pair = LinkPair()
        try pair.peripheral.registerServer(psm: 0x0080, mtu: 200, mps: 40, initialCredits: 4)
        let (cid, actions) = try pair.central.connect(psm: 0x0080, mtu: 100, mps: 50, initialCredits: 3, now: .zero)
        #expect(cid == L2CAPChannelIdentifier(0x0040))
        // LE Credit Based Connection Request: code 0x14, id 1, length 10, LE_PSM, Source CID, MTU, MPS, credits.
        #expect(actions == [.send(hex("0E00 0500 14 01 0A00 8000 4000 6400 3200 0300"))])
        #expect(pair.central.outstandingRequestCount == 1)
        #expect(pair.central.nextDeadline == StackInstant.zero + .seconds(30))
        pair.run(actions, from: .central)
        // Response: code 0x15, same id, Destination CID, MTU 200, MPS 40, credits 4, result success.
        #expect(pair.wire.count == 2)
        #expect(pair.wire[1].frame == hex("0E00 0500 15 01 0A00 4000 C800 2800 0400 0000"))
        let expectedCentral = L2CAPChannelInfo(
            localCID: cid, remoteCID: L2CAPChannelIdentifier(0x0040), psm: 0x80, localMTU: 100, localMPS: 50,
            remoteMTU: 200, remoteMPS: 40, isInitiator: true)
        #expect(pair.takeEvents(.central) == [.channelOpened(expectedCentral)])
        let expectedPeripheral = L2CAPChannelInfo(
            localCID: L2CAPChannelIdentifier(0x0040), remoteCID: cid, psm: 0x80, localMTU: 200, localMPS: 40,
            remoteMTU: 100, remoteMPS: 50, isInitiator: false)
        #expect(pair.takeEvents(.peripheral) == [.channelOpened(expectedPeripheral)])
        #expect(pair.central.sendCredits(on: cid) == 4)
        #expect(pair.peripheral.sendCredits(on: L2CAPChannelIdentifier(0x0040)) == 3)
        #expect(pair.central.outstandingRequestCount == 0 && pair.central.nextDeadline == nil)

        // Disconnect from the central: Disconnection Request (dest = peer's CID, source = ours) and its echo.
        let disconnect = try pair.central.disconnect(channel: cid, now: .zero)
        #expect(disconnect == [.send(hex("0800 0500 06 02 0400 4000 4000"))])
        pair.run(disconnect, from: .central)
        #expect(pair.wire.last?.frame == hex("0800 0500 07 02 0400 4000 4000"))
        #expect(pair.takeEvents(.central) == [.channelClosed(cid, .localRequest)])
        #expect(pair.takeEvents(.peripheral) == [.channelClosed(L2CAPChannelIdentifier(0x0040), .peerRequest)])
        #expect(pair.bothIdle)
    }

    @Test func segmentationAcrossCreditsWithAutomaticReturn() throws {
        var pair = LinkPair()
        let (centralCID, peripheralCID) = try pair.open(serverMPS: 40, serverCredits: 2)
        pair.wire = []
        let sdu = (0..<150).map { UInt8($0) }
        let actions = try pair.central.send(sdu: sdu, on: centralCID)
        // 150 bytes + 2-byte SDU length over MPS 40: 40, 40, 40, 32 octets; only 2 credits.
        #expect(actions == [
            .send(hex("2800 4000 9600") + Array(sdu[0..<38])),
            .send(hex("2800 4000") + Array(sdu[38..<78])),
        ])
        #expect(pair.central.queuedFrameCount(on: centralCID) == 2)
        #expect(pair.central.sendCredits(on: centralCID) == 0)
        pair.run(actions, from: .central)
        // The server returned credits (threshold 1 of 2): indications carry the server's CID.
        let indications = pair.wire.filter { $0.from == .peripheral }.map(\.frame)
        #expect(indications.first == hex("0800 0500 16 01 0400 4000 0100"))
        #expect(pair.takeEvents(.peripheral) == [.sdu(peripheralCID, sdu)])
        #expect(pair.takeEvents(.central).last == .creditsAvailable(centralCID))
        #expect(pair.central.queuedFrameCount == 0)
        #expect(pair.peripheral.reassemblingChannelCount == 0)
        let kFrames = pair.wire.filter { $0.from == .central }.map(\.frame)
        #expect(kFrames.map(\.count) == [44, 44, 44, 36])
        pair.run(try pair.central.disconnect(channel: centralCID, now: pair.now), from: .central)
        #expect(pair.bothIdle)
    }

    @Test func randomSDUsOverManyMPSAndCreditValues() throws {
        var generator = SeededGenerator(seed: 0x12CA_4B)
        for round in 0..<30 {
            var pair = LinkPair()
            let serverMPS = UInt16.random(in: 23...120, using: &generator)
            let centralMPS = UInt16.random(in: 23...120, using: &generator)
            let serverCredits = UInt16.random(in: 1...6, using: &generator)
            let centralCredits = UInt16.random(in: 1...6, using: &generator)
            let (centralCID, peripheralCID) = try pair.open(
                centralMTU: 600, centralMPS: centralMPS, centralCredits: centralCredits, serverMTU: 700,
                serverMPS: serverMPS, serverCredits: serverCredits)
            var toPeripheral: [[UInt8]] = []
            var toCentral: [[UInt8]] = []
            for _ in 0..<8 {
                let up = generator.bytes(Int.random(in: 0...700, using: &generator))
                toPeripheral.append(up)
                pair.run(try pair.central.send(sdu: up, on: centralCID), from: .central)
                let down = generator.bytes(Int.random(in: 0...600, using: &generator))
                toCentral.append(down)
                pair.run(try pair.peripheral.send(sdu: down, on: peripheralCID), from: .peripheral)
            }
            let receivedByPeripheral = pair.takeEvents(.peripheral).compactMap { event -> [UInt8]? in
                if case .sdu(peripheralCID, let sdu) = event { sdu } else { nil }
            }
            let receivedByCentral = pair.takeEvents(.central).compactMap { event -> [UInt8]? in
                if case .sdu(centralCID, let sdu) = event { sdu } else { nil }
            }
            #expect(receivedByPeripheral == toPeripheral, "round \(round)")
            #expect(receivedByCentral == toCentral, "round \(round)")
            // No K-frame ever exceeded the receiver's MPS.
            for (from, frame) in pair.wire where frame[2] != 0x05 {
                #expect(frame.count - 4 <= Int(from == .central ? serverMPS : centralMPS))
            }
            #expect(pair.central.queuedFrameCount == 0 && pair.peripheral.queuedFrameCount == 0)
            pair.run(try pair.peripheral.disconnect(channel: peripheralCID, now: pair.now), from: .peripheral)
            #expect(pair.bothIdle, "round \(round)")
        }
    }

    @Test func manualCreditsHoldTheSenderUntilGiven() throws {
        var pair = LinkPair()
        let (centralCID, peripheralCID) = try pair.open(serverMPS: 23, serverCredits: 1, serverPolicy: .manual)
        let sdu = [UInt8](repeating: 0xAB, count: 60)  // 62 octets over MPS 23: 3 K-frames
        pair.run(try pair.central.send(sdu: sdu, on: centralCID), from: .central)
        #expect(pair.central.queuedFrameCount(on: centralCID) == 2)
        #expect(pair.peripheral.peerCredits(on: peripheralCID) == 0)
        #expect(pair.peripheral.reassemblingChannelCount == 1)
        let give = try pair.peripheral.giveCredits(5, on: peripheralCID)
        #expect(give == [.send(hex("0800 0500 16 01 0400 4000 0500"))])
        pair.run(give, from: .peripheral)
        #expect(pair.takeEvents(.peripheral) == [.sdu(peripheralCID, sdu)])
        #expect(pair.takeEvents(.central) == [.creditsAvailable(centralCID)])
        #expect(pair.central.sendCredits(on: centralCID) == 3)
        #expect(pair.peripheral.peerCredits(on: peripheralCID) == 3)
        #expect(throws: L2CAPLinkError.self) { try pair.peripheral.giveCredits(65533, on: peripheralCID) }
        #expect(throws: L2CAPLinkError.self) { try pair.peripheral.giveCredits(0, on: peripheralCID) }
        pair.run(pair.central.linkDisconnected(), from: .central)
        pair.run(pair.peripheral.linkDisconnected(), from: .peripheral)
        #expect(pair.takeEvents(.central) == [.channelClosed(centralCID, .linkClosed)])
        #expect(pair.takeEvents(.peripheral) == [.channelClosed(peripheralCID, .linkClosed)])
        #expect(pair.bothIdle)
    }

    @Test func sendErrors() throws {
        var pair = LinkPair()
        let (centralCID, _) = try pair.open(serverMTU: 30)
        #expect(throws: L2CAPLinkError(.unknownChannel, "no channel Dynamic LE channel (0x0041)")) {
            try pair.central.send(sdu: [1], on: L2CAPChannelIdentifier(0x41))
        }
        do {
            _ = try pair.central.send(sdu: [UInt8](repeating: 0, count: 31), on: centralCID)
            Issue.record("an SDU above the peer's MTU was accepted")
        } catch {
            #expect(error.code == .sduTooLarge)
        }
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.connect(psm: 0x0100, mtu: 23, mps: 23, initialCredits: 1, now: .zero)
        }
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.connect(psm: 0x0081, mtu: 22, mps: 23, initialCredits: 1, now: .zero)
        }
        #expect(throws: L2CAPLinkError.self) {
            try pair.peripheral.registerServer(psm: 0x0080, mtu: 23, mps: 23, initialCredits: 1)
        }
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.sendFixed(channel: .leSignaling, payload: [])
        }
        #expect(try pair.central.sendFixed(channel: .attributeProtocol, payload: hex("0A0100")) == [
            .send(hex("0300 0400 0A0100"))
        ])
        #expect(try pair.central.sendFixed(channel: .securityManager, payload: hex("0B01")) == [
            .send(hex("0200 0600 0B01"))
        ])
    }

    @Test func fixedChannelsAndUnroutableFrames() {
        var link = L2CAPLink(role: .central)
        #expect(link.receive(frame: hex("0300 0400 0A0100"), now: .zero) == [.deliverFixed(.attributeProtocol, hex("0A0100")[...])])
        #expect(link.receive(frame: hex("0200 0600 0B01"), now: .zero) == [.deliverFixed(.securityManager, hex("0B01")[...])])
        #expect(link.receive(frame: hex("0000 0400"), now: .zero) == [.deliverFixed(.attributeProtocol, [])])
        // A length field that disagrees with the frame's size drops the frame, as before (§3.1).
        #expect(link.receive(frame: hex("0400 0400 0A0100"), now: .zero) == [])
        #expect(link.receive(frame: hex("0200 0400 0A0100"), now: .zero) == [])
        #expect(link.receive(frame: hex("0300 04"), now: .zero) == [])
        // Length mismatch, too short, unknown fixed CID, dynamic CID without a channel: discarded.
        #expect(link.receive(frame: hex("0400 0400 0A0100"), now: .zero) == [])
        #expect(link.receive(frame: hex("0300"), now: .zero) == [])
        #expect(link.receive(frame: hex("0100 0300 00"), now: .zero) == [])
        #expect(link.receive(frame: hex("0100 4000 00"), now: .zero) == [])
        #expect(link.receive(frame: hex("0100 0001 00"), now: .zero) == [])
        #expect(link.isIdle)
    }

    @Test func simultaneousDisconnection() throws {
        var pair = LinkPair()
        let (centralCID, peripheralCID) = try pair.open()
        let fromCentral = try pair.central.disconnect(channel: centralCID, now: .zero)
        let fromPeripheral = try pair.peripheral.disconnect(channel: peripheralCID, now: .zero)
        // Cross the requests on the wire, then their responses.
        let centralAnswers = pair.central.receive(frame: sentFrames(fromPeripheral)[0], now: .zero)
        let peripheralAnswers = pair.peripheral.receive(frame: sentFrames(fromCentral)[0], now: .zero)
        #expect(centralAnswers.contains(.channelClosed(centralCID, .localRequest)))
        #expect(peripheralAnswers.contains(.channelClosed(peripheralCID, .localRequest)))
        #expect(pair.central.receive(frame: sentFrames(peripheralAnswers)[0], now: .zero) == [])
        #expect(pair.peripheral.receive(frame: sentFrames(centralAnswers)[0], now: .zero) == [])
        #expect(pair.bothIdle)
    }

    @Test func channelsOpenedByBothSidesAndCIDAllocation() throws {
        var pair = LinkPair()
        try pair.central.registerServer(psm: 0x0025, mtu: 64, mps: 64, initialCredits: 2)
        var centralCIDs: [L2CAPChannelIdentifier] = []
        try pair.peripheral.registerServer(psm: 0x0080, mtu: 64, mps: 64, initialCredits: 2)
        for _ in 0..<64 {
            let (cid, actions) = try pair.central.connect(psm: 0x80, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
            centralCIDs.append(cid)
            pair.run(actions, from: .central)
        }
        #expect(centralCIDs == (0x0040...0x007F).map { L2CAPChannelIdentifier($0) })
        #expect(pair.central.channelCount == 64 && pair.peripheral.channelCount == 64)
        #expect(throws: L2CAPLinkError(.noChannelAvailable, "all LE dynamic CIDs 0x0040...0x007F are in use")) {
            try pair.central.connect(psm: 0x80, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
        }
        // Free 0x0045 on both sides, then open the other way: each side takes its lowest free CID.
        pair.run(try pair.central.disconnect(channel: L2CAPChannelIdentifier(0x45), now: .zero), from: .central)
        _ = pair.takeEvents(.central)
        _ = pair.takeEvents(.peripheral)
        let (reverse, actions) = try pair.peripheral.connect(psm: 0x25, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
        #expect(reverse == L2CAPChannelIdentifier(0x45))
        pair.run(actions, from: .peripheral)
        guard case .channelOpened(let info)? = pair.takeEvents(.central).first else {
            Issue.record("reverse channel did not open")
            return
        }
        #expect(info.localCID == L2CAPChannelIdentifier(0x45) && info.remoteCID == L2CAPChannelIdentifier(0x45))
        #expect(info.psm == 0x25 && !info.isInitiator)
        pair.run(pair.central.linkDisconnected(), from: .central)
        pair.run(pair.peripheral.linkDisconnected(), from: .peripheral)
        #expect(pair.bothIdle)
    }

    @Test func largestSDUOverSmallestMPS() throws {
        var pair = LinkPair()
        let (centralCID, peripheralCID) = try pair.open(serverMTU: 65535, serverMPS: 23, serverCredits: 10)
        var generator = SeededGenerator(seed: 0xFFFF)
        let sdu = generator.bytes(65535)
        pair.wire = []
        pair.run(try pair.central.send(sdu: sdu, on: centralCID), from: .central)
        #expect(pair.takeEvents(.peripheral) == [.sdu(peripheralCID, sdu)])
        // 65537 octets in K-frames of 23: 2850 frames, the last one of 10.
        let kFrames = pair.wire.filter { $0.from == .central }.map(\.frame)
        #expect(kFrames.count == 2850 && kFrames.last?.count == 4 + 10)
        #expect(pair.central.queuedFrameCount == 0 && pair.peripheral.reassemblingChannelCount == 0)
    }
}
