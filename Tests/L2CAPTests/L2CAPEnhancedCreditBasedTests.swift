import BluetoothCore
import L2CAP
import TestSupport
import Testing

/// Enhanced Credit Based Flow Control mode in `L2CAPLink` (Core 5.4 Vol 3 Part A §4.25–§4.28): several channels
/// per request in both roles with exact signaling bytes, the acceptor's result codes, reconfiguration rules,
/// timeouts, link loss and hostile input.
@Suite struct L2CAPEnhancedCreditBasedTests {
    static let eatt: UInt16 = 0x0027

    /// A peripheral link with an enhanced-mode server on SPSM 0x0027 (MTU 100, MPS 80, 5 credits).
    func server(accept: L2CAPChannelAcceptPolicy = .acceptAll) throws -> L2CAPLink {
        var link = L2CAPLink(role: .peripheral)
        try link.registerServer(
            L2CAPChannelServer(psm: Self.eatt, mtu: 100, mps: 80, initialCredits: 5, acceptPolicy: accept))
        return link
    }

    /// Opens `count` enhanced channels from the central to the peripheral's server; returns both sides' CIDs.
    func openPair(count: Int = 2) throws -> (LinkPair, [L2CAPChannelIdentifier], [L2CAPChannelIdentifier]) {
        var pair = LinkPair()
        try pair.peripheral.registerServer(
            L2CAPChannelServer(psm: Self.eatt, mtu: 100, mps: 80, initialCredits: 5))
        let (cids, actions) = try pair.central.connectEnhanced(
            spsm: Self.eatt, count: count, mtu: 517, mps: 247, initialCredits: 10, now: pair.now)
        pair.run(actions, from: .central)
        let central = pair.takeEvents(.central).compactMap { if case .channelOpened(let info) = $0 { info.localCID } else { nil } }
        let peripheral = pair.takeEvents(.peripheral).compactMap { if case .channelOpened(let info) = $0 { info.localCID } else { nil } }
        #expect(central == cids)
        return (pair, central, peripheral)
    }

    @Test func twoChannelsWithExactSignalingBytes() throws {
        var pair = LinkPair()
        try pair.peripheral.registerServer(L2CAPChannelServer(psm: Self.eatt, mtu: 100, mps: 80, initialCredits: 5))
        let (cids, actions) = try pair.central.connectEnhanced(
            spsm: Self.eatt, count: 2, mtu: 517, mps: 247, initialCredits: 10, now: .zero)
        #expect(cids == [L2CAPChannelIdentifier(0x0040), L2CAPChannelIdentifier(0x0041)])
        // Code 0x17, id 1, length 12: SPSM 0x0027, MTU 517, MPS 247, credits 10, Source CIDs 0x0040 0x0041.
        #expect(actions == [.send(hex("1000 0500 17 01 0C00 2700 0502 F700 0A00 4000 4100"))])
        #expect(pair.central.outstandingRequestCount == 1)
        pair.run(actions, from: .central)
        // Code 0x18, id 1, length 12: MTU 100, MPS 80, credits 5, result 0, Destination CIDs 0x0040 0x0041.
        #expect(pair.wire.map(\.frame).last == hex("1000 0500 18 01 0C00 6400 5000 0500 0000 4000 4100"))
        let central = pair.takeEvents(.central)
        #expect(central == [
            .channelOpened(L2CAPChannelInfo(
                localCID: L2CAPChannelIdentifier(0x0040), remoteCID: L2CAPChannelIdentifier(0x0040), psm: 0x27,
                localMTU: 517, localMPS: 247, remoteMTU: 100, remoteMPS: 80, isInitiator: true, mode: .enhancedCreditBased)),
            .channelOpened(L2CAPChannelInfo(
                localCID: L2CAPChannelIdentifier(0x0041), remoteCID: L2CAPChannelIdentifier(0x0041), psm: 0x27,
                localMTU: 517, localMPS: 247, remoteMTU: 100, remoteMPS: 80, isInitiator: true, mode: .enhancedCreditBased)),
        ])
        let peripheral = pair.takeEvents(.peripheral)
        #expect(peripheral.count == 2)
        if case .channelOpened(let info)? = peripheral.first {
            #expect(info.mode == .enhancedCreditBased && !info.isInitiator && info.remoteMTU == 517 && info.localMPS == 80)
        }
        #expect(pair.central.sendCredits(on: cids[0]) == 5 && pair.peripheral.sendCredits(on: L2CAPChannelIdentifier(0x0041)) == 10)
        #expect(pair.central.outstandingRequestCount == 0)

        // SDUs on both channels use the shared K-frame machinery: 100 octets to MPS 80 is two K-frames.
        let sdu = Array(0..<100).map { UInt8($0) }
        pair.run(try pair.central.send(sdu: sdu, on: cids[1]), from: .central)
        #expect(pair.takeEvents(.peripheral).contains(.sdu(L2CAPChannelIdentifier(0x0041), sdu)))
        pair.run(try pair.peripheral.send(sdu: [1, 2, 3], on: L2CAPChannelIdentifier(0x0040)), from: .peripheral)
        #expect(pair.takeEvents(.central).contains(.sdu(cids[0], [1, 2, 3])))
        // A larger SDU than the peer's MTU is refused locally.
        #expect(throws: L2CAPLinkError.self) { try pair.central.send(sdu: Array(repeating: 0, count: 101), on: cids[0]) }

        for cid in cids { pair.run(try pair.central.disconnect(channel: cid, now: pair.now), from: .central) }
        #expect(pair.bothIdle)
    }

    @Test func fiveChannelsInOneRequestAndNoMore() throws {
        var (pair, central, peripheral) = try openPair(count: 5)
        #expect(central.count == 5 && peripheral.count == 5)
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.connectEnhanced(spsm: Self.eatt, count: 6, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
        }
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.connectEnhanced(spsm: Self.eatt, count: 0, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
        }
        // MTU and MPS minimum 64 in enhanced mode.
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.connectEnhanced(spsm: Self.eatt, count: 1, mtu: 63, mps: 64, initialCredits: 1, now: .zero)
        }
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.connectEnhanced(spsm: Self.eatt, count: 1, mtu: 64, mps: 63, initialCredits: 1, now: .zero)
        }
        pair.run(pair.central.linkDisconnected(), from: .central)
        #expect(pair.central.isIdle)
    }

    @Test(arguments: [
        // SPSM not registered: all refused 0x0002, one null Destination CID per Source CID.
        ("1721 0C00 8100 4000 4000 0100 4000 4100", "1821 0C00 0000 0000 0000 0200 0000 0000"),
        // MTU 63 / MPS 63 / MPS 65534: all refused, unacceptable parameters 0x000B.
        ("1722 0A00 2700 3F00 4000 0100 4000", "1822 0A00 0000 0000 0000 0B00 0000"),
        ("1723 0A00 2700 4000 3F00 0100 4000", "1823 0A00 0000 0000 0000 0B00 0000"),
        ("1724 0A00 2700 4000 FEFF 0100 4000", "1824 0A00 0000 0000 0000 0B00 0000"),
    ])
    func connectionRequestRefusedForAll(request: String, response: String) throws {
        var link = try server()
        #expect(link.receive(frame: signalingFrame(request), now: .zero) == [.send(signalingFrame(response))])
        #expect(link.isIdle)
    }

    @Test func someConnectionsRefused() throws {
        var link = try server()
        // Source CIDs 0x0040 (good), 0x0020 (outside the dynamic range), 0x0040 again (already allocated):
        // the valid one opens; the result names the last refusal.
        let actions = link.receive(frame: signalingFrame("1731 0E00 2700 4000 4000 0100 4000 2000 4000"), now: .zero)
        #expect(sentFrames(actions) == [signalingFrame("1831 0E00 6400 5000 0500 0A00 4000 0000 0000")])
        #expect(actions.count == 2)
        // Only the invalid Source CID: 0x0009.
        let second = link.receive(frame: signalingFrame("1732 0C00 2700 4000 4000 0100 4100 8000"), now: .zero)
        #expect(sentFrames(second) == [signalingFrame("1832 0C00 6400 5000 0500 0900 4100 0000")])
        #expect(link.channelCount == 2)
    }

    @Test func noResourcesForEveryChannel() throws {
        var link = try server()
        // Our own requests, still unanswered, hold 62 of the 64 local dynamic CIDs.
        for _ in 0..<12 { _ = try link.connectEnhanced(spsm: 0x80, count: 5, mtu: 64, mps: 64, initialCredits: 1, now: .zero) }
        _ = try link.connectEnhanced(spsm: 0x80, count: 2, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
        #expect(link.channelCount == 62)
        // Three channels asked for with two local CIDs left: the third is refused for resources (0x0004).
        let actions = link.receive(frame: signalingFrame("17F0 0E00 2700 4000 4000 0100 4000 4100 4200"), now: .zero)
        #expect(sentFrames(actions) == [signalingFrame("18F0 0E00 6400 5000 0500 0400 7E00 7F00 0000")])
        #expect(link.channelCount == 64)
        #expect(throws: L2CAPLinkError.self) {
            try link.connectEnhanced(spsm: 0x80, count: 1, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
        }
    }

    @Test func securityAndModeRefusals() throws {
        var link = try server(accept: .refuseAll(.allConnectionsRefusedInsufficientAuthentication))
        #expect(link.receive(frame: signalingFrame("1741 0C00 2700 4000 4000 0100 4000 4100"), now: .zero) == [
            .send(signalingFrame("1841 0C00 0000 0000 0000 0500 0000 0000"))
        ])
        var encryption = try server(accept: .decide { _ in .allConnectionsRefusedInsufficientEncryption })
        #expect(encryption.receive(frame: signalingFrame("1742 0A00 2700 4000 4000 0100 4000"), now: .zero) == [
            .send(signalingFrame("1842 0A00 0000 0000 0000 0800 0000"))
        ])
        // A server for LE mode only, or with MPS below 64, takes no enhanced request; an enhanced-only server takes
        // no LE Credit Based Connection Request.
        var leOnly = L2CAPLink(role: .peripheral)
        try leOnly.registerServer(L2CAPChannelServer(psm: 0x80, mtu: 100, mps: 100, initialCredits: 1, modes: [.leCreditBased]))
        try leOnly.registerServer(L2CAPChannelServer(psm: 0x81, mtu: 100, mps: 40, initialCredits: 1))
        try leOnly.registerServer(L2CAPChannelServer(psm: 0x82, mtu: 100, mps: 100, initialCredits: 1, modes: [.enhancedCreditBased]))
        #expect(leOnly.receive(frame: signalingFrame("1743 0A00 8000 4000 4000 0100 4000"), now: .zero) == [
            .send(signalingFrame("1843 0A00 0000 0000 0000 0200 0000"))
        ])
        #expect(leOnly.receive(frame: signalingFrame("1744 0A00 8100 4000 4000 0100 4000"), now: .zero) == [
            .send(signalingFrame("1844 0A00 0000 0000 0000 0200 0000"))
        ])
        #expect(leOnly.receive(frame: signalingFrame("1445 0A00 8200 4000 1700 1700 0100"), now: .zero) == [
            .send(signalingFrame("1545 0A00 0000 0000 0000 0000 0200"))
        ])
        #expect(leOnly.isIdle)
    }

    @Test func initiatorSeesSomeRefusedAndBadDestinations() throws {
        var link = L2CAPLink(role: .central)
        let (cids, _) = try link.connectEnhanced(spsm: Self.eatt, count: 4, mtu: 64, mps: 64, initialCredits: 2, now: .zero)
        // Accepted 0x0050; refused (0x0000); 0x0020 outside the range; and a missing fourth entry.
        let actions = link.receive(frame: signalingFrame("1801 0E00 6400 4000 0300 0400 5000 0000 2000"), now: .zero)
        #expect(actions == [
            .channelOpened(L2CAPChannelInfo(
                localCID: cids[0], remoteCID: L2CAPChannelIdentifier(0x0050), psm: 0x27, localMTU: 64, localMPS: 64,
                remoteMTU: 100, remoteMPS: 64, isInitiator: true, mode: .enhancedCreditBased)),
            .channelConnectFailed(cids[1], .refused(.someConnectionsRefusedInsufficientResources)),
            .channelConnectFailed(cids[2], .invalidResponse("destination CID \(L2CAPChannelIdentifier(0x0020)) outside 0x0040...0x007F")),
            .channelConnectFailed(cids[3], .refused(.someConnectionsRefusedInsufficientResources)),
        ])
        #expect(link.channelCount == 1 && link.outstandingRequestCount == 0)
        // A second response to the same identifier is ignored.
        #expect(link.receive(frame: signalingFrame("1801 0A00 6400 4000 0300 0000 5100"), now: .zero) == [])

        // Accepted with MTU 63: invalid, each usable channel is disconnected properly.
        let (more, _) = try link.connectEnhanced(spsm: Self.eatt, count: 1, mtu: 64, mps: 64, initialCredits: 2, now: .zero)
        let bad = link.receive(frame: signalingFrame("1802 0A00 3F00 4000 0300 0000 5100"), now: .zero)
        #expect(bad.count == 2)
        #expect(sentFrames(bad) == [signalingFrame("0603 0400 5100 \(String(format: "%02X00", more[0].rawValue))")])
        #expect(bad.last == .channelConnectFailed(more[0], .invalidResponse("MTU 63 below 64")))

        // Pending, then all refused with a security result.
        let (third, _) = try link.connectEnhanced(spsm: Self.eatt, count: 2, mtu: 64, mps: 64, initialCredits: 2, now: .zero)
        #expect(link.receive(frame: signalingFrame("1804 0C00 0000 0000 0000 0E00 0000 0000"), now: .zero) == [])
        #expect(link.receive(frame: signalingFrame("1804 0C00 0000 0000 0000 0500 0000 0000"), now: .zero) == [
            .channelConnectFailed(third[0], .refused(.allConnectionsRefusedInsufficientAuthentication)),
            .channelConnectFailed(third[1], .refused(.allConnectionsRefusedInsufficientAuthentication)),
        ])
    }

    @Test func timeoutsCommandRejectAndLinkLoss() throws {
        var link = L2CAPLink(role: .central)
        let (cids, _) = try link.connectEnhanced(spsm: Self.eatt, count: 2, mtu: 64, mps: 64, initialCredits: 2, now: .zero)
        #expect(link.handleTimeout(now: .zero + .seconds(30)) == [
            .channelConnectFailed(cids[0], .signalingTimeout), .channelConnectFailed(cids[1], .signalingTimeout),
        ])
        #expect(link.isIdle)
        let (again, _) = try link.connectEnhanced(spsm: Self.eatt, count: 1, mtu: 64, mps: 64, initialCredits: 2, now: .zero)
        // A peer that does not know the command rejects it (identifier 2).
        #expect(link.receive(frame: signalingFrame("0102 0200 0000"), now: .zero) == [
            .channelConnectFailed(again[0], .commandRejected(.commandNotUnderstood))
        ])
        let (last, _) = try link.connectEnhanced(spsm: Self.eatt, count: 3, mtu: 64, mps: 64, initialCredits: 2, now: .zero)
        #expect(link.linkDisconnected() == last.map { .channelConnectFailed($0, .linkClosed) })
        #expect(link.isIdle)
    }

    // MARK: Reconfiguration

    @Test func reconfigureRaisesMTUWithExactBytes() throws {
        var (pair, central, peripheral) = try openPair(count: 2)
        let actions = try pair.central.reconfigure(channels: central, mtu: 600, mps: 300, now: pair.now)
        // Code 0x19, id 2, length 8: MTU 600, MPS 300, the sender's own CIDs 0x0040 0x0041.
        #expect(actions == [.send(hex("0C00 0500 19 02 0800 5802 2C01 4000 4100"))])
        pair.run(actions, from: .central)
        #expect(pair.wire.map(\.frame).last == hex("0600 0500 1A 02 0200 0000"))
        let peer = pair.takeEvents(.peripheral)
        #expect(peer.count == 2)
        if case .channelReconfigured(let info)? = peer.first {
            #expect(info.localCID == peripheral[0] && info.remoteMTU == 600 && info.remoteMPS == 300 && info.localMTU == 100)
        } else {
            Issue.record("no reconfiguration on the peripheral: \(peer)")
        }
        let ours = pair.takeEvents(.central)
        if case .channelReconfigured(let info)? = ours.last {
            #expect(info.localCID == central[1] && info.localMTU == 600 && info.localMPS == 300)
        } else {
            Issue.record("no reconfiguration on the central: \(ours)")
        }
        // The peripheral now sends a 550-octet SDU in K-frames of up to 300.
        let sdu = Array(repeating: UInt8(0x5A), count: 550)
        pair.run(try pair.peripheral.send(sdu: sdu, on: peripheral[0]), from: .peripheral)
        #expect(pair.takeEvents(.central).contains(.sdu(central[0], sdu)))

        // Our own rules: the MTU may not decrease; the MPS only on one channel at a time; enhanced channels only.
        #expect(throws: L2CAPLinkError.self) { try pair.central.reconfigure(channels: central, mtu: 599, mps: 300, now: pair.now) }
        #expect(throws: L2CAPLinkError.self) { try pair.central.reconfigure(channels: central, mtu: 600, mps: 299, now: pair.now) }
        #expect(throws: L2CAPLinkError.self) { try pair.central.reconfigure(channels: [central[0], central[0]], mtu: 600, mps: 300, now: pair.now) }
        #expect(throws: L2CAPLinkError.self) { try pair.central.reconfigure(channels: [L2CAPChannelIdentifier(0x0050)], mtu: 600, mps: 300, now: pair.now) }
        // One channel may lower its MPS.
        pair.run(try pair.central.reconfigure(channels: [central[0]], mtu: 600, mps: 100, now: pair.now), from: .central)
        #expect(pair.central.channelInfo(central[0])?.localMPS == 100)
        #expect(pair.peripheral.channelInfo(peripheral[0])?.remoteMPS == 100)
    }

    @Test(arguments: [
        ("1951 0800 6300 5000 4000 4100", "1A51 0200 0100"),  // MTU 99 below 100: reduction not allowed
        ("1952 0800 6400 4F00 4000 4100", "1A52 0200 0200"),  // MPS 79 on two channels
        ("1953 0600 6400 4000 5000", "1A53 0200 0300"),  // no channel with the peer's CID 0x0050
        ("1954 0800 6400 5000 4000 4000", "1A54 0200 0300"),  // the same channel twice
        ("1955 0600 3F00 5000 4000", "1A55 0200 0400"),  // MTU 63
        ("1956 0600 6400 3F00 4000", "1A56 0200 0400"),  // MPS 63
    ])
    func reconfigureRefusals(request: String, response: String) throws {
        // The central's server side: channels opened by the peripheral with MTU 100, MPS 80.
        var link = L2CAPLink(role: .central)
        try link.registerServer(L2CAPChannelServer(psm: Self.eatt, mtu: 200, mps: 200, initialCredits: 5))
        _ = link.receive(frame: signalingFrame("1701 0C00 2700 6400 5000 0100 4000 4100"), now: .zero)
        #expect(link.channelCount == 2)
        #expect(link.receive(frame: signalingFrame(request), now: .zero) == [.send(signalingFrame(response))])
        // Nothing changed.
        #expect(link.channelInfo(L2CAPChannelIdentifier(0x0040))?.remoteMTU == 100)
        #expect(link.channelInfo(L2CAPChannelIdentifier(0x0041))?.remoteMPS == 80)
        // One channel may lower its MPS.
        let lower = link.receive(frame: signalingFrame("1960 0600 6400 4000 4000"), now: .zero)
        #expect(sentFrames(lower) == [signalingFrame("1A60 0200 0000")])
        #expect(link.channelInfo(L2CAPChannelIdentifier(0x0040))?.remoteMPS == 64)
    }

    @Test func ourReconfigurationRefusedTimedOutOrLost() throws {
        var (pair, central, _) = try openPair(count: 2)
        var link = pair.central
        _ = try link.reconfigure(channels: central, mtu: 700, mps: 247, now: .zero)
        // Refused: nothing changes, the reassembler takes the old MTU again.
        #expect(link.receive(frame: signalingFrame("1A02 0200 0400"), now: .zero) == [
            .channelReconfigureFailed(central, .refused(.unacceptableParameters))
        ])
        #expect(link.channelInfo(central[0])?.localMTU == 517)
        _ = try link.reconfigure(channels: [central[1]], mtu: 700, mps: 247, now: .zero)
        #expect(link.handleTimeout(now: .zero + .seconds(30)) == [.channelReconfigureFailed([central[1]], .signalingTimeout)])
        _ = try link.reconfigure(channels: [central[0]], mtu: 700, mps: 247, now: .zero)
        #expect(link.receive(frame: signalingFrame("0104 0200 0000"), now: .zero) == [
            .channelReconfigureFailed([central[0]], .commandRejected(.commandNotUnderstood))
        ])
        _ = try link.reconfigure(channels: central, mtu: 700, mps: 247, now: .zero)
        let lost = link.linkDisconnected()
        #expect(lost.last == .channelReconfigureFailed(central, .linkClosed))
        #expect(link.isIdle)
        pair.central = link
    }

    @Test func hostileEnhancedSignaling() throws {
        var link = try server()
        for frame in [
            "1701 0800 2700 4000 4000 0100",  // no Source CID
            "1702 0B00 2700 4000 4000 0100 4000 40",  // odd length
            "1703 0C00 2700 4000 4000 0100 4000",  // length above the data present
            "1904 0500 4000 4000 40",  // reconfigure of odd length
            "1A05 0300 000000",  // reconfigure response of 3 octets
            "1806 0700 6400 4000 0300 00",  // connection response too short
        ] {
            let identifier = hex(frame)[1]
            #expect(link.receive(frame: signalingFrame(frame), now: .zero) == [
                .send(signalingFrame(String(format: "01%02X 0200 0000", identifier)))
            ], "\(frame)")
        }
        // Six Source CIDs: 24 octets exceed MTU_sig 23.
        let six = link.receive(frame: signalingFrame("1707 1400 2700 4000 4000 0100 4000 4100 4200 4300 4400 4500"), now: .zero)
        #expect(six == [.send(signalingFrame("0107 0400 0100 1700"))])
        #expect(link.isIdle)
    }

    @Test func randomEnhancedSignalingNeverTrapsAndEndsIdle() throws {
        // A deterministic stream of frames biased towards codes 0x17...0x1A, valid CIDs and small lengths, against
        // a link with open enhanced channels and requests of its own outstanding.
        var state: UInt64 = 0x5EED_EA77
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        for round in 0..<200 {
            var link = try server()
            try link.registerServer(psm: 0x80, mtu: 100, mps: 40, initialCredits: 2)
            _ = link.receive(frame: signalingFrame("1701 0C00 2700 4000 4000 0200 4000 4100"), now: .zero)
            _ = try link.connectEnhanced(spsm: Self.eatt, count: 3, mtu: 64, mps: 64, initialCredits: 1, now: .zero)
            _ = try link.reconfigure(channels: [L2CAPChannelIdentifier(0x0040)], mtu: 200, mps: 80, now: .zero)
            var now = StackInstant.zero
            for _ in 0..<40 {
                let codes: [UInt8] = [0x17, 0x18, 0x19, 0x1A, 0x06, 0x07, 0x16, 0x01]
                var payload = [codes[Int(next() % 8)], UInt8(1 + next() % 8)]
                let length = Int(next() % 20)
                payload += [UInt8(length), 0]
                for _ in 0..<length {
                    // Mostly plausible 16-bit values: CIDs 0x0040...0x0047, MTU/MPS around 64, or anything.
                    switch next() % 3 {
                    case 0: payload.append(UInt8(0x40 + next() % 8))
                    case 1: payload.append(UInt8(next() % 2 == 0 ? 0x00 : 0x40))
                    default: payload.append(UInt8(truncatingIfNeeded: next()))
                    }
                }
                if next() % 5 == 0 { payload = Array(payload.prefix(Int(next() % UInt64(payload.count + 1)))) }
                let cid: UInt16 = next() % 4 == 0 ? 0x0040 + UInt16(next() % 4) : 0x0005
                let frame = [UInt8(payload.count), 0, UInt8(cid & 0xFF), UInt8(cid >> 8)] + payload
                _ = link.receive(frame: frame, now: now)
                now = now + .milliseconds(500)
                #expect(link.channelCount <= 64, "round \(round)")
            }
            _ = link.handleTimeout(now: now + .seconds(60))
            _ = link.linkDisconnected()
            #expect(link.isIdle, "round \(round)")
        }
    }
}
