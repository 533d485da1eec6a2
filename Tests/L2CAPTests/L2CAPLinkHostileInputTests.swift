import BluetoothCore
import L2CAP
import TestSupport
import Testing

/// Random and mutated frames from a hostile peer: `L2CAPLink` never traps, never answers a frame with more than a
/// few actions, keeps every credit count within 0...65535, and still ends clean after the link goes down.
@Suite struct L2CAPLinkHostileInputTests {
    @Test func randomFramesOnEveryChannel() throws {
        var generator = SeededGenerator(seed: 0x6E57_11)
        var pair = LinkPair()
        let (centralCID, peripheralCID) = try pair.open(serverCredits: 3)
        try pair.central.registerServer(psm: 0x0081, mtu: 64, mps: 30, initialCredits: 2)
        let cids: [UInt16] = [0x0004, 0x0005, 0x0006, 0x0040, 0x0041, 0x007F, 0x0001, 0xFFFF]
        for step in 0..<20_000 {
            let cid = cids[Int.random(in: 0..<cids.count, using: &generator)]
            var payload = generator.bytes(Int.random(in: 0...48, using: &generator))
            if cid == 0x0005, payload.count >= 4, Bool.random(using: &generator) {
                // Mostly well-formed headers with LE codes, so the command decoders are reached.
                payload[0] = UInt8.random(in: 0x01...0x1A, using: &generator)
                payload[2] = UInt8(truncatingIfNeeded: payload.count - 4)
                payload[3] = 0
            }
            let frame = [UInt8(payload.count), 0, UInt8(cid & 0xFF), UInt8(cid >> 8)] + payload
            let toCentral = Bool.random(using: &generator)
            let actions = toCentral
                ? pair.central.receive(frame: frame, now: pair.now) : pair.peripheral.receive(frame: frame, now: pair.now)
            #expect(actions.count <= 4, "step \(step)")
            for link in [pair.central, pair.peripheral] {
                for raw in L2CAPChannelIdentifier.leDynamicRange {
                    let channel = L2CAPChannelIdentifier(raw)
                    if let credits = link.sendCredits(on: channel) { #expect((0...65535).contains(credits)) }
                    if let credits = link.peerCredits(on: channel) { #expect((0...65535).contains(credits)) }
                }
            }
            if step % 1000 == 0 {
                pair.now = pair.now + .seconds(31)
                _ = pair.central.handleTimeout(now: pair.now)
                _ = pair.peripheral.handleTimeout(now: pair.now)
            }
        }
        _ = (centralCID, peripheralCID)
        _ = pair.central.linkDisconnected()
        _ = pair.peripheral.linkDisconnected()
        #expect(pair.bothIdle)
    }
}
