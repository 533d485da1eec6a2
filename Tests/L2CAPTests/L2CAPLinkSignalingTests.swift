import BluetoothCore
import BluetoothRuntime
import L2CAP
import TestSupport
import Testing

/// The LE signaling channel of `L2CAPLink`: Command Reject for unknown and malformed commands, responses matched
/// by identifier, LE Credit Based Connection refusals, Connection Parameter Update in both roles, RTX.
@Suite struct L2CAPLinkSignalingTests {
    static let psm: UInt16 = 0x0080

    func server() throws -> L2CAPLink {
        var link = L2CAPLink(role: .peripheral)
        try link.registerServer(psm: Self.psm, mtu: 200, mps: 40, initialCredits: 4)
        return link
    }

    @Test(arguments: [
        ("0807 0000", "0107 0200 0000"),  // Echo Request: BR/EDR only
        ("2003 0200 AABB", "0103 0200 0000"),  // reserved code
        ("0204 0400 0100 4000", "0104 0200 0000"),  // BR/EDR Connection Request
        ("0A05 0200 0200", "0105 0200 0000"),  // Information Request
        ("170C 0800 8000 4000 4000 0100", "010C 0200 0000"),  // Credit Based Connection Request without a CID
        ("190D 0400 4000 4000", "010D 0200 0000"),  // Credit Based Reconfigure Request without a CID
        ("0609 0300 400040", "0109 0200 0000"),  // Disconnection Request with 3 data octets
        ("060A 0400 4000", "010A 0200 0000"),  // length field above the data present
        ("060E 0400 4000 4000 00", "010E 0200 0000"),  // trailing octet
        ("140F 0800 8000 4000 1700 1700", "010F 0200 0000"),  // LE Credit Based Connection Request too short
        ("0110 0300 000000", "0110 0200 0000"),  // Command Reject of odd length
    ])
    func unknownOrMalformedCommandsAreRejectedNotUnderstood(command: String, reject: String) throws {
        var link = try server()
        #expect(link.receive(frame: signalingFrame(command), now: .zero) == [.send(signalingFrame(reject))])
        #expect(link.isIdle)
    }

    @Test func signalingMTUAndIdentifierZero() throws {
        var link = try server()
        // 24 octets exceed MTU_sig 23: Command Reject "Signaling MTU exceeded" with the actual MTU 23.
        let long = signalingFrame("080B 1400" + String(repeating: "00", count: 20))
        #expect(link.receive(frame: long, now: .zero) == [.send(signalingFrame("010B 0400 0100 1700"))])
        // Identifier 0x00 is illegal: never answered. Fewer than 2 octets: no identifier to answer.
        #expect(link.receive(frame: signalingFrame("0800 0000"), now: .zero) == [])
        #expect(link.receive(frame: signalingFrame("14"), now: .zero) == [])
        #expect(link.receive(frame: signalingFrame(""), now: .zero) == [])
    }

    @Test func unexpectedResponsesAreIgnored() throws {
        var link = try server()
        for response in [
            "0705 0400 4000 4000",  // Disconnection Response
            "1505 0A00 4000 1700 1700 0100 0000",  // LE Credit Based Connection Response
            "1305 0200 0000",  // Connection Parameter Update Response
            "0105 0200 0000",  // Command Reject
            "1805 0800 4000 4000 0100 0000",  // Credit Based Connection Response
            "1A05 0200 0000",  // Credit Based Reconfigure Response
            "1605 0400 4000 0100",  // credits for no channel
        ] {
            #expect(link.receive(frame: signalingFrame(response), now: .zero) == [], "\(response)")
        }
        #expect(link.isIdle)
    }

    @Test(arguments: [
        ("1421 0A00 8100 4000 1700 1700 0100", "1521 0A00 0000 0000 0000 0000 0200"),  // PSM not registered
        ("1422 0A00 8000 2000 1700 1700 0100", "1522 0A00 0000 0000 0000 0000 0900"),  // source CID 0x0020
        ("1423 0A00 8000 8000 1700 1700 0100", "1523 0A00 0000 0000 0000 0000 0900"),  // source CID 0x0080
        ("1424 0A00 8000 0000 1700 1700 0100", "1524 0A00 0000 0000 0000 0000 0900"),  // source CID 0x0000
        ("1425 0A00 8000 4000 1600 1700 0100", "1525 0A00 0000 0000 0000 0000 0B00"),  // MTU 22
        ("1426 0A00 8000 4000 1700 1600 0100", "1526 0A00 0000 0000 0000 0000 0B00"),  // MPS 22
        ("1427 0A00 8000 4000 FFFF FEFF 0100", "1527 0A00 0000 0000 0000 0000 0B00"),  // MPS 65534
    ])
    func connectionRequestRefusals(request: String, response: String) throws {
        var link = try server()
        #expect(link.receive(frame: signalingFrame(request), now: .zero) == [.send(signalingFrame(response))])
        #expect(link.isIdle)
    }

    @Test func connectionRequestBoundsAndSourceCIDInUse() throws {
        var link = try server()
        // MTU 23, MPS 23 and MPS 65533 are the limits, accepted.
        let first = link.receive(frame: signalingFrame("1431 0A00 8000 4000 1700 1700 0000"), now: .zero)
        #expect(sentFrames(first) == [signalingFrame("1531 0A00 4000 C800 2800 0400 0000")])
        let second = link.receive(frame: signalingFrame("1432 0A00 8000 7F00 FFFF FDFF 0000"), now: .zero)
        #expect(sentFrames(second) == [signalingFrame("1532 0A00 4100 C800 2800 0400 0000")])
        // The peer's source CID 0x0040 is already in use on this link: 0x000A.
        #expect(link.receive(frame: signalingFrame("1433 0A00 8000 4000 1700 1700 0100"), now: .zero) == [
            .send(signalingFrame("1533 0A00 0000 0000 0000 0000 0A00"))
        ])
        #expect(link.channelCount == 2)
    }

    @Test func acceptPolicies() throws {
        var link = L2CAPLink(role: .central)
        try link.registerServer(
            psm: 0x0081, mtu: 100, mps: 100, initialCredits: 1,
            accept: .refuseAll(.allConnectionsRefusedInsufficientAuthentication))
        try link.registerServer(
            psm: 0x0082, mtu: 100, mps: 100, initialCredits: 1,
            accept: .decide { $0.mtu >= 100 ? .successful : .allConnectionsRefusedInsufficientAuthorization })
        #expect(link.receive(frame: signalingFrame("1441 0A00 8100 4000 6400 6400 0100"), now: .zero) == [
            .send(signalingFrame("1541 0A00 0000 0000 0000 0000 0500"))
        ])
        #expect(link.receive(frame: signalingFrame("1442 0A00 8200 4000 6300 6400 0100"), now: .zero) == [
            .send(signalingFrame("1542 0A00 0000 0000 0000 0000 0600"))
        ])
        let accepted = link.receive(frame: signalingFrame("1443 0A00 8200 4000 6400 6400 0100"), now: .zero)
        #expect(sentFrames(accepted) == [signalingFrame("1543 0A00 4000 6400 6400 0100 0000")])
        link.unregisterServer(psm: 0x0082)
        #expect(link.receive(frame: signalingFrame("1444 0A00 8200 4100 6400 6400 0100"), now: .zero) == [
            .send(signalingFrame("1544 0A00 0000 0000 0000 0000 0200"))
        ])
    }

    @Test func disconnectionRequestForUnknownOrMismatchedChannel() throws {
        var link = try server()
        // Unknown Destination CID: Command Reject "Invalid CID in request" with both CIDs.
        #expect(link.receive(frame: signalingFrame("0631 0400 4500 4100"), now: .zero) == [
            .send(signalingFrame("0131 0600 0200 4500 4100"))
        ])
        _ = link.receive(frame: signalingFrame("1432 0A00 8000 5000 1700 1700 0100"), now: .zero)
        // Known destination, wrong source: silently discarded, the channel stays.
        #expect(link.receive(frame: signalingFrame("0633 0400 4000 5100"), now: .zero) == [])
        #expect(link.channelCount == 1)
        #expect(link.receive(frame: signalingFrame("0634 0400 4000 5000"), now: .zero) == [
            .send(signalingFrame("0734 0400 4000 5000")),
            .channelClosed(L2CAPChannelIdentifier(0x40), .peerRequest),
        ])
        #expect(link.isIdle)
    }

    // MARK: Outgoing connection outcomes

    @Test func refusedAndRejectedConnections() throws {
        var pair = LinkPair()
        let (cid, actions) = try pair.central.connect(psm: 0x0080, mtu: 23, mps: 23, initialCredits: 1, now: .zero)
        pair.run(actions, from: .central)
        #expect(pair.wire.last?.frame == signalingFrame("1501 0A00 0000 0000 0000 0000 0200"))
        #expect(pair.takeEvents(.central) == [.channelConnectFailed(cid, .refused(.spsmNotSupported))])
        #expect(pair.bothIdle)

        var link = L2CAPLink(role: .central)
        let (second, _) = try link.connect(psm: 0x0080, mtu: 23, mps: 23, initialCredits: 1, now: .zero)
        #expect(link.receive(frame: signalingFrame("0101 0200 0000"), now: .zero) == [
            .channelConnectFailed(second, .commandRejected(.commandNotUnderstood))
        ])
        #expect(link.isIdle)
    }

    @Test func pendingResultThenSuccess() throws {
        var link = L2CAPLink(role: .central)
        let (cid, _) = try link.connect(psm: 0x0080, mtu: 23, mps: 23, initialCredits: 1, now: .zero)
        let later = StackInstant.zero + .seconds(20)
        #expect(link.receive(frame: signalingFrame("1501 0A00 0000 0000 0000 0000 0D00"), now: later) == [])
        #expect(link.nextDeadline == later + .seconds(30))
        let opened = link.receive(frame: signalingFrame("1501 0A00 4400 1700 1700 0200 0000"), now: later)
        #expect(opened == [
            .channelOpened(
                L2CAPChannelInfo(
                    localCID: cid, remoteCID: L2CAPChannelIdentifier(0x44), psm: 0x80, localMTU: 23, localMPS: 23,
                    remoteMTU: 23, remoteMPS: 23, isInitiator: true))
        ])
        #expect(link.sendCredits(on: cid) == 2 && link.outstandingRequestCount == 0)
    }

    @Test func invalidAcceptingResponses() throws {
        var link = L2CAPLink(role: .central)
        // Destination CID outside the dynamic range: the channel fails, nothing to disconnect.
        let (first, _) = try link.connect(psm: 0x0080, mtu: 23, mps: 23, initialCredits: 1, now: .zero)
        let actions = link.receive(frame: signalingFrame("1501 0A00 2000 1700 1700 0100 0000"), now: .zero)
        #expect(actions.count == 1 && sentFrames(actions).isEmpty)
        guard case .channelConnectFailed(first, .invalidResponse)? = actions.first else {
            Issue.record("expected an invalid response failure, got \(actions)")
            return
        }
        #expect(link.isIdle)
        // A usable destination CID with MPS 22: the channel fails and the peer's end is disconnected.
        let (second, _) = try link.connect(psm: 0x0080, mtu: 23, mps: 23, initialCredits: 1, now: .zero)
        let bad = link.receive(frame: signalingFrame("1502 0A00 4100 1700 1600 0100 0000"), now: .zero)
        #expect(sentFrames(bad) == [signalingFrame("0603 0400 4100 4000")])
        #expect(bad.count == 2)
        #expect(link.receive(frame: signalingFrame("0703 0400 4100 4000"), now: .zero) == [])
        #expect(link.isIdle && second == first)
    }

    // MARK: RTX

    @Test func connectionRequestTimesOutAfterThirtySeconds() throws {
        var link = L2CAPLink(role: .central)
        let (cid, _) = try link.connect(psm: 0x0080, mtu: 23, mps: 23, initialCredits: 1, now: .zero)
        #expect(link.nextDeadline == StackInstant(nanoseconds: 30_000_000_000))
        #expect(link.handleTimeout(now: StackInstant(nanoseconds: 29_999_999_999)) == [])
        #expect(link.handleTimeout(now: StackInstant(nanoseconds: 30_000_000_000)) == [
            .channelConnectFailed(cid, .signalingTimeout)
        ])
        #expect(link.isIdle && link.nextDeadline == nil)
        // The late response is unexpected now: ignored.
        #expect(link.receive(frame: signalingFrame("1501 0A00 4000 1700 1700 0100 0000"), now: .zero) == [])
        #expect(link.isIdle)
    }

    @Test func disconnectionTimesOutOnAManualLoop() throws {
        final class Owner: @unchecked Sendable {
            var link: L2CAPLink
            var events: [L2CAPLinkAction] = []
            var timer: ScheduledJob?
            let loop: ManualEventLoop
            init(link: L2CAPLink, loop: ManualEventLoop) {
                self.link = link
                self.loop = loop
            }
            func perform(_ actions: [L2CAPLinkAction]) {
                events += actions.filter { if case .send = $0 { false } else { true } }
                timer?.cancel()
                timer = nil
                if let deadline = link.nextDeadline {
                    timer = loop.schedule(at: deadline) { [self] in perform(link.handleTimeout(now: loop.now)) }
                }
            }
        }
        var pair = LinkPair(
            central: L2CAPLinkConfiguration(
                role: .central, signalingTimeout: .seconds(5), disconnectLinkOnSignalingTimeout: true))
        let (cid, _) = try pair.open()
        let loop = ManualEventLoop()
        let owner = Owner(link: pair.central, loop: loop)
        owner.perform(try owner.link.disconnect(channel: cid, now: loop.now))
        #expect(loop.pendingWorkDescription == "0 jobs, 1 timer (next at 5.000000s)")
        loop.advance(by: .seconds(4))
        #expect(owner.events.isEmpty)
        loop.advance(by: .seconds(1))
        #expect(owner.events == [.channelClosed(cid, .signalingTimeout), .disconnectLink(.signalingTimeout)])
        #expect(owner.link.isIdle)
        #expect(loop.pendingWorkDescription == "nothing")
    }

    // MARK: Connection Parameter Update

    @Test func connectionParameterUpdateAcceptedAndRejected() throws {
        var pair = LinkPair()
        let parameters = L2CAPConnectionParameterUpdateRequest(
            intervalMin: 6, intervalMax: 12, peripheralLatency: 0, timeoutMultiplier: 200)
        let request = try pair.peripheral.requestConnectionParameterUpdate(parameters, now: .zero)
        #expect(request == [.send(signalingFrame("1201 0800 0600 0C00 0000 C800"))])
        pair.run(request, from: .peripheral)
        #expect(pair.takeEvents(.central) == [.connectionParameterUpdateRequested(identifier: 1, parameters)])
        #expect(pair.central.unansweredParameterUpdateCount == 1)
        let accept = try pair.central.respondToConnectionParameterUpdate(identifier: 1, accepted: true)
        #expect(accept == [.send(signalingFrame("1301 0200 0000"))])
        pair.run(accept, from: .central)
        #expect(pair.takeEvents(.peripheral) == [.connectionParameterUpdateResponse(accepted: true)])
        #expect(throws: L2CAPLinkError.self) {
            try pair.central.respondToConnectionParameterUpdate(identifier: 1, accepted: true)
        }

        pair.run(try pair.peripheral.requestConnectionParameterUpdate(parameters, now: .zero), from: .peripheral)
        #expect(pair.takeEvents(.central) == [.connectionParameterUpdateRequested(identifier: 2, parameters)])
        let reject = try pair.central.respondToConnectionParameterUpdate(identifier: 2, accepted: false)
        #expect(reject == [.send(signalingFrame("1302 0200 0100"))])
        pair.run(reject, from: .central)
        #expect(pair.takeEvents(.peripheral) == [.connectionParameterUpdateResponse(accepted: false)])
        #expect(pair.bothIdle)
    }

    @Test func connectionParameterUpdateRoleRules() throws {
        var central = L2CAPLink(role: .central)
        var peripheral = L2CAPLink(role: .peripheral)
        let valid = L2CAPConnectionParameterUpdateRequest(
            intervalMin: 24, intervalMax: 40, peripheralLatency: 4, timeoutMultiplier: 400)
        #expect(throws: L2CAPLinkError.self) { try central.requestConnectionParameterUpdate(valid, now: .zero) }
        #expect(throws: L2CAPLinkError.self) {
            try peripheral.respondToConnectionParameterUpdate(identifier: 1, accepted: true)
        }
        var invalid = valid
        invalid.intervalMin = 5
        #expect(throws: L2CAPLinkError.self) { try peripheral.requestConnectionParameterUpdate(invalid, now: .zero) }
        // A Peripheral receiving the request answers Command Reject "not understood".
        #expect(peripheral.receive(frame: signalingFrame("1207 0800 1800 2800 0400 9001"), now: .zero) == [
            .send(signalingFrame("0107 0200 0000"))
        ])
        #expect(peripheral.isIdle && central.isIdle)
    }

    @Test(arguments: [
        "0500 0C00 0000 C800",  // Interval Min 5
        "0600 810C 0000 C800",  // Interval Max 3201
        "0C00 0600 0000 C800",  // Min above Max
        "0600 0C00 F401 C80C",  // latency 500
        "0600 0C00 0000 0900",  // timeout 9 (90 ms)
        "0600 0C00 0000 810C",  // timeout 3201
        "0600 0C00 6300 0A00",  // latency 99 needs (1 + 99) × 12 × 2.5 ms = 3 s > 100 ms
    ])
    func invalidConnectionParametersAreRejected(parameters: String) {
        var central = L2CAPLink(role: .central)
        #expect(central.receive(frame: signalingFrame("1241 0800 " + parameters), now: .zero) == [
            .send(signalingFrame("1341 0200 0100"))
        ])
        #expect(central.isIdle)
    }

    @Test func connectionParameterUpdateTimeoutAndReject() throws {
        var peripheral = L2CAPLink(role: .peripheral)
        let parameters = L2CAPConnectionParameterUpdateRequest(
            intervalMin: 6, intervalMax: 6, peripheralLatency: 0, timeoutMultiplier: 10)
        _ = try peripheral.requestConnectionParameterUpdate(parameters, now: .zero)
        #expect(peripheral.handleTimeout(now: .zero + .seconds(30)) == [.connectionParameterUpdateResponse(accepted: false)])
        _ = try peripheral.requestConnectionParameterUpdate(parameters, now: .zero)
        // An old Central rejects the command: the update is refused.
        #expect(peripheral.receive(frame: signalingFrame("0102 0200 0000"), now: .zero) == [
            .connectionParameterUpdateResponse(accepted: false)
        ])
        _ = try peripheral.requestConnectionParameterUpdate(parameters, now: .zero)
        #expect(peripheral.linkDisconnected() == [.connectionParameterUpdateResponse(accepted: false)])
        #expect(peripheral.isIdle)
    }

    // MARK: Identifiers

    @Test func identifiersCycleSkippingZero() throws {
        var pair = LinkPair()
        let (_, peripheralCID) = try pair.open(serverPolicy: .manual)
        var identifiers: [UInt8] = []
        for _ in 0..<300 {
            let frames = sentFrames(try pair.peripheral.giveCredits(1, on: peripheralCID))
            identifiers.append(frames[0][5])
        }
        #expect(identifiers == Array(1...255) + Array(1...45))
    }

    @Test func identifiersAwaitingResponsesAreSkipped() throws {
        var peripheral = L2CAPLink(role: .peripheral)
        let parameters = L2CAPConnectionParameterUpdateRequest(
            intervalMin: 6, intervalMax: 6, peripheralLatency: 0, timeoutMultiplier: 10)
        var identifiers: [UInt8] = []
        for _ in 0..<255 {
            identifiers.append(sentFrames(try peripheral.requestConnectionParameterUpdate(parameters, now: .zero))[0][5])
        }
        #expect(identifiers == Array(1...255))
        #expect(throws: L2CAPLinkError.self) { try peripheral.requestConnectionParameterUpdate(parameters, now: .zero) }
        #expect(peripheral.receive(frame: signalingFrame("1307 0200 0000"), now: .zero) == [
            .connectionParameterUpdateResponse(accepted: true)
        ])
        #expect(sentFrames(try peripheral.requestConnectionParameterUpdate(parameters, now: .zero))[0][5] == 7)
        #expect(peripheral.outstandingRequestCount == 255)
        #expect(peripheral.handleTimeout(now: .zero + .seconds(30)).count == 255)
        #expect(peripheral.isIdle)
    }
}
