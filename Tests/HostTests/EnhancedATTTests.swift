import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
@testable import Host
import L2CAP
import SMP
import Testing
import BluetoothEngine

/// Two stacks on the virtual air with Enhanced ATT (Core 5.4 Vol 3 Part F §3.2.11, Part G §7.2, §7.4): bearers
/// opened automatically after pairing when the server offers EATT, refused on an unencrypted link, requests in
/// parallel on two bearers, notifications/indications and Multiple Handle Value Notifications on an EATT bearer,
/// reconfiguration raising ATT_MTU, a bearer timeout closing only its channel.
final class EATTStacks: @unchecked Sendable {
    let stacks: TwoStacks
    let value: UInt16
    let slow: UInt16
    let notifying: UInt16
    let second: UInt16
    let authenticated: UInt16

    init(serverSupportsEATT: Bool = true, configure: (inout HostConfiguration, _ role: String) -> Void = { _, _ in }) {
        var database = GATTDatabase()
        var handles: [UInt16] = []
        do {
            try database.addGAPService(deviceName: "eatt")
            try database.addGATTService(serverSupportedFeatures: serverSupportsEATT ? .enhancedATT : [])
            let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFA0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFA1), properties: [.read, .write],
                                             value: .stored(Array(0..<200).map { UInt8($0) }), maximumLength: 512),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFA2), properties: [.read], value: .stored([0x51])),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFA3), properties: [.read, .notify, .indicate],
                                             value: .stored([0])),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFA4), properties: [.read, .notify], value: .stored([0])),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFA5), properties: [.read],
                                             permissions: GATTPermissions(readable: true, writable: false, read: .authenticated),
                                             value: .stored([0xA7])),
            ]))
            handles = service.characteristics.map(\.value)
        } catch {
            Issue.record("database: \(error)")
        }
        value = handles.count > 0 ? handles[0] : 0
        slow = handles.count > 1 ? handles[1] : 0
        notifying = handles.count > 2 ? handles[2] : 0
        second = handles.count > 3 ? handles[3] : 0
        authenticated = handles.count > 4 ? handles[4] : 0
        var c = HostConfiguration(address: .randomStatic(seed: 2))
        c.security = security()
        c.security.keySource = SeededSMPKeySource(SplitMixGenerator(state: 11))
        configure(&c, "central")
        var p = HostConfiguration(address: .randomStatic(seed: 1))
        p.security = security()
        p.security.keySource = SeededSMPKeySource(SplitMixGenerator(state: 22))
        configure(&p, "peripheral")
        stacks = TwoStacks(database: database, central: c, peripheral: p)
        let ce = stacks.centralEvents, pe = stacks.peripheralEvents
        for (host, recorder) in [(stacks.central, ce), (stacks.peripheral, pe)] {
            host.setEventHandler { [unowned host] event in
                recorder.append(event)
                if case .pairingInteraction(let handle, .confirmJustWorks) = event { host.answerPairing(connectionHandle: handle, .confirm(true)) }
                if case .pairingInteraction(let handle, .confirmNumericValue) = event { host.answerPairing(connectionHandle: handle, .confirm(true)) }
            }
        }
    }

    func pair() -> Bool {
        let result = Recorder<Result<PairingOutcome, HostError>>()
        stacks.central.pair(connectionHandle: stacks.centralHandle) { result.append($0) }
        stacks.run(until: { result.count == 1 }, limit: .seconds(60))
        stacks.loop.advance(by: .milliseconds(500))
        return (try? result.last?.get()) != nil
    }

    /// Connects, pairs and waits for the central's three EATT bearers.
    func connectPairAndOpenBearers() -> Bool {
        stacks.connect() && pair() && stacks.run(until: { self.centralBearers().count == 3 }, limit: .seconds(10))
    }

    /// The peripheral defers the reads of `slow`; the requests it holds, in arrival order.
    func deferSlowReads() -> Recorder<GATTPendingRequest> {
        let pending = Recorder<GATTPendingRequest>()
        stacks.peripheral.setGATTDeferral(GATTDeferral(handles: [slow]) { pending.append($0) })
        return pending
    }

    func opened(_ events: Recorder<HostEvent>) -> [(L2CAPChannelIdentifier, Int)] {
        events.values.compactMap { if case .enhancedATTBearerOpened(_, let cid, let mtu) = $0 { (cid, mtu) } else { nil } }
    }

    func centralBearers() -> [L2CAPChannelIdentifier: Int] {
        let result = Recorder<[L2CAPChannelIdentifier: Int]>()
        stacks.loop.execute { [self] in result.append(stacks.central.enhancedATTBearers(connectionHandle: stacks.centralHandle)) }
        stacks.loop.run()
        return result.last ?? [:]
    }
}

@Suite("Enhanced ATT between two host stacks")
struct EnhancedATTTests {
    @Test("after pairing the client reads Server Supported Features, writes its features and opens 3 bearers")
    func opensAutomaticallyAfterEncryption() throws {
        let s = EATTStacks()
        #expect(s.stacks.connect())
        #expect(s.centralBearers().isEmpty)
        #expect(s.pair())
        #expect(s.stacks.run(until: { s.opened(s.stacks.centralEvents).count == 3 }, limit: .seconds(10)))
        let central = s.opened(s.stacks.centralEvents)
        #expect(central.map(\.1) == [517, 517, 517])
        #expect(s.opened(s.stacks.peripheralEvents).count == 3)
        #expect(s.centralBearers().count == 3)
        // The server saw our Client Supported Features: EATT (bit 1) and Multiple Handle Value Notifications (bit 2).
        let features = s.stacks.peripheralEvents.values.compactMap { event -> UInt8? in
            if case .gattServer(.clientFeaturesChanged(_, let features)) = event { features } else { nil }
        }
        #expect(features == [0x06])
        // Not an ordinary L2CAP channel for the owner.
        #expect(!s.stacks.centralEvents.values.contains { if case .l2capChannelOpened = $0 { true } else { false } })
        // GATT procedures now run on the EATT bearers; a 200-octet value is read whole within one ATT_MTU of 517.
        let read = s.stacks.gatt(.readCharacteristicValue(handle: s.value))
        #expect(try read?.get() == .value(Array(0..<200).map { UInt8($0) }))
        #expect(s.stacks.peripheral.localGATTServer.enhancedBearers(for: GATTConnectionID(s.stacks.peripheralHandle)).count == 3)
        s.stacks.disconnectAndCheckLeaks()
        #expect(s.stacks.centralEvents.values.filter { if case .enhancedATTBearerClosed = $0 { true } else { false } }.count == 3)
    }

    @Test("no bearers when the server does not offer EATT, or EATT is off")
    func notWithoutServerSupport() throws {
        let s = EATTStacks(serverSupportsEATT: false)
        #expect(s.stacks.connect())
        #expect(s.pair())
        s.stacks.loop.advance(by: .seconds(2))
        #expect(s.opened(s.stacks.centralEvents).isEmpty && s.opened(s.stacks.peripheralEvents).isEmpty)
        s.stacks.disconnectAndCheckLeaks()

        let off = EATTStacks { configuration, role in if role == "central" { configuration.enhancedATTBearerCount = 0 } }
        #expect(off.stacks.connect())
        #expect(off.pair())
        off.stacks.loop.advance(by: .seconds(2))
        #expect(off.opened(off.stacks.centralEvents).isEmpty)
        off.stacks.disconnectAndCheckLeaks()
    }

    @Test("a server refuses EATT bearers on an unencrypted link: insufficient authentication (not bonded)")
    func refusedOnUnencryptedLink() throws {
        let s = EATTStacks()
        #expect(s.stacks.connect())
        let result = Recorder<Result<[L2CAPChannelIdentifier], HostError>>()
        s.stacks.central.openEnhancedATTBearers(connectionHandle: s.stacks.centralHandle, count: 2) { result.append($0) }
        #expect(s.stacks.run(until: { result.count == 1 }, limit: .seconds(5)))
        guard case .failure(let error)? = result.last else {
            Issue.record("expected a refusal, got \(String(describing: result.last))")
            return
        }
        #expect(error.l2capRefusal == .allConnectionsRefusedInsufficientAuthentication)
        #expect(s.opened(s.stacks.peripheralEvents).isEmpty && s.centralBearers().isEmpty)
        // Once paired, the same request succeeds (the automatic path opened 3 already; 2 more make 5).
        #expect(s.pair())
        #expect(s.stacks.run(until: { s.centralBearers().count == 3 }, limit: .seconds(10)))
        let again = Recorder<Result<[L2CAPChannelIdentifier], HostError>>()
        s.stacks.central.openEnhancedATTBearers(connectionHandle: s.stacks.centralHandle, count: 2) { again.append($0) }
        #expect(s.stacks.run(until: { again.count == 1 }, limit: .seconds(5)))
        #expect((try? again.last?.get())?.count == 2)
        #expect(s.centralBearers().count == 5)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("two requests are outstanding at once on two bearers (deferred reads answered later)")
    func parallelRequestsOnTwoBearers() throws {
        let s = EATTStacks()
        #expect(s.connectPairAndOpenBearers())
        let pending = s.deferSlowReads()
        let results = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        s.stacks.central.gatt(connectionHandle: s.stacks.centralHandle, .readCharacteristicValue(handle: s.slow)) { results.append($0) }
        s.stacks.central.gatt(connectionHandle: s.stacks.centralHandle, .readCharacteristicValue(handle: s.slow)) { results.append($0) }
        // Both reach the server before either is answered: on one bearer the second would wait for the first.
        #expect(s.stacks.run(until: { pending.count == 2 }, limit: .seconds(5)))
        #expect(results.count == 0)
        #expect(Set(pending.values.map(\.bearer)).count == 2 && pending.values.allSatisfy(\.bearer.isEnhanced))
        #expect(s.stacks.peripheral.localGATTServer.pendingDeferredRequestCount == 2)
        // Answered in the other order: each completes with its own answer.
        s.stacks.peripheral.respondToGATTRequest(connectionHandle: s.stacks.peripheralHandle, id: pending.values[1].id, result: .success([2]))
        s.stacks.peripheral.respondToGATTRequest(connectionHandle: s.stacks.peripheralHandle, id: pending.values[0].id, result: .success([1]))
        #expect(s.stacks.run(until: { results.count == 2 }, limit: .seconds(5)))
        #expect(results.values.compactMap { try? $0.get() } == [.value([2]), .value([1])])
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("a lane's procedures run in call order on one bearer while another lane runs beside them")
    func laneKeepsCallOrder() throws {
        let s = EATTStacks()
        #expect(s.connectPairAndOpenBearers())
        let pending = s.deferSlowReads()
        let order = Recorder<String>()
        let app = GATTClientLane(1), other = GATTClientLane(2)
        let host = s.stacks.central, handle = s.stacks.centralHandle
        host.gatt(connectionHandle: handle, .readCharacteristicValue(handle: s.slow), lane: app) { _ in order.append("app slow read") }
        host.gatt(connectionHandle: handle, .writeCharacteristicValue(handle: s.value, value: [9]), lane: app) { _ in order.append("app write") }
        host.gatt(connectionHandle: handle, .readCharacteristicValue(handle: s.value), lane: app) { result in
            order.append("app read \((try? result.get()).map { "\($0)" } ?? "failed")")
        }
        host.gatt(connectionHandle: handle, .readCharacteristicValue(handle: s.second), lane: other) { _ in order.append("other read") }
        // The other lane completes while the app's slow read holds its bearer; the app's write waits behind it.
        #expect(s.stacks.run(until: { order.count == 1 && pending.count == 1 }, limit: .seconds(5)))
        #expect(order.values == ["other read"])
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(order.values == ["other read"], "the app's write must not overtake its slow read")
        s.stacks.peripheral.respondToGATTRequest(connectionHandle: s.stacks.peripheralHandle, id: pending.values[0].id, result: .success([1]))
        #expect(s.stacks.run(until: { order.count == 4 }, limit: .seconds(5)))
        #expect(order.values == ["other read", "app slow read", "app write", "app read value([9])"])
        // Idle again: the lane left the connection's table.
        let lanes = Recorder<Int>()
        s.stacks.loop.execute { lanes.append(host.connections[handle]?.session?.lanes.count ?? -1) }
        s.stacks.loop.run()
        #expect(lanes.last == 0)
        // Without lanes the same calls run in parallel: the write completes before the slow read.
        order.removeAll()
        host.gatt(connectionHandle: handle, .readCharacteristicValue(handle: s.slow)) { _ in order.append("slow read") }
        host.gatt(connectionHandle: handle, .writeCharacteristicValue(handle: s.value, value: [8])) { _ in order.append("write") }
        #expect(s.stacks.run(until: { order.count == 1 && pending.count == 2 }, limit: .seconds(5)))
        #expect(order.values == ["write"])
        s.stacks.peripheral.respondToGATTRequest(connectionHandle: s.stacks.peripheralHandle, id: pending.values[1].id, result: .success([1]))
        #expect(s.stacks.run(until: { order.count == 2 }, limit: .seconds(5)))
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("notifications, indications and a Multiple Handle Value Notification arrive over an EATT bearer")
    func notificationsOnEATTBearer() throws {
        // Without an Exchange MTU the unenhanced bearer stays at 23: a 100-octet value fits only over EATT.
        let s = EATTStacks { configuration, _ in configuration.exchangesMTUOnConnect = false }
        #expect(s.connectPairAndOpenBearers())
        let cccd = s.notifying + 1, secondCCCD = s.second + 1
        #expect((try? s.stacks.gatt(.writeCharacteristicValue(handle: cccd, value: [0x01, 0x00]))?.get()) == .written)
        #expect((try? s.stacks.gatt(.writeCharacteristicValue(handle: secondCCCD, value: [0x01, 0x00]))?.get()) == .written)
        let outbound = s.stacks.peripheral.localGATTServer.notify(handle: s.notifying, value: [1])
        #expect(outbound.first?.bearer.isEnhanced == true)
        let big = Array(repeating: UInt8(0xEA), count: 100)
        s.stacks.peripheral.updateValue(big, handle: s.notifying)
        #expect(s.stacks.run(until: {
            s.stacks.centralEvents.values.contains { if case .gattNotification(_, s.notifying, big) = $0 { true } else { false } }
        }, limit: .seconds(5)))
        // Multiple Handle Value Notification (the client set bit 2).
        s.stacks.peripheral.notifyMultiple([(s.notifying, [7, 7]), (s.second, [8])], connectionHandle: s.stacks.peripheralHandle)
        #expect(s.stacks.run(until: {
            s.stacks.centralEvents.values.contains { if case .gattNotification(_, s.second, [8]) = $0 { true } else { false } }
        }, limit: .seconds(5)))
        #expect(s.stacks.centralEvents.values.contains { if case .gattNotification(_, s.notifying, [7, 7]) = $0 { true } else { false } })
        // Indications: confirmed over the same bearer.
        #expect((try? s.stacks.gatt(.writeCharacteristicValue(handle: cccd, value: [0x02, 0x00]))?.get()) == .written)
        s.stacks.peripheral.updateValue(big, handle: s.notifying)
        #expect(s.stacks.run(until: {
            s.stacks.peripheralEvents.values.contains { if case .gattIndicationConfirmed(_, s.notifying) = $0 { true } else { false } }
        }, limit: .seconds(5)))
        #expect(s.stacks.centralEvents.values.contains { if case .gattIndication(_, s.notifying, big) = $0 { true } else { false } })
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("an L2CAP reconfiguration raises the bearers' ATT_MTU on both sides")
    func reconfigureRaisesATTMTU() throws {
        let s = EATTStacks { configuration, role in if role == "central" { configuration.enhancedATTMTU = 100 } }
        #expect(s.connectPairAndOpenBearers())
        let bearers = s.centralBearers()
        #expect(bearers.values.allSatisfy { $0 == 100 })
        let channels = bearers.keys.sorted()
        let done = Recorder<Result<Void, HostError>>()
        s.stacks.central.reconfigureEnhancedATT(connectionHandle: s.stacks.centralHandle, channels: Array(channels.prefix(2)), mtu: 300) { done.append($0) }
        #expect(s.stacks.run(until: { done.count == 1 }, limit: .seconds(5)))
        #expect((try? done.last?.get()) != nil)
        let after = s.centralBearers()
        #expect(after[channels[0]] == 300 && after[channels[1]] == 300 && after[channels[2]] == 100)
        let server = s.stacks.peripheral.localGATTServer
        let id = GATTConnectionID(s.stacks.peripheralHandle)
        #expect(server.enhancedBearers(for: id).map { server.mtu(for: id, bearer: $0) }.sorted() == [100, 300, 300])
        // The MTU may not go down.
        let refused = Recorder<Result<Void, HostError>>()
        s.stacks.central.reconfigureEnhancedATT(connectionHandle: s.stacks.centralHandle, channels: [channels[0]], mtu: 200) { refused.append($0) }
        #expect(s.stacks.run(until: { refused.count == 1 }, limit: .seconds(5)))
        #expect((try? refused.last?.get()) == nil)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("a transaction timeout on an EATT bearer closes that channel, not the link")
    func bearerTimeoutClosesOnlyItsChannel() throws {
        let s = EATTStacks()
        #expect(s.connectPairAndOpenBearers())
        s.stacks.peripheral.ignoreATTRequests(connectionHandle: s.stacks.peripheralHandle)
        let result = s.stacks.gatt(.readCharacteristicValue(handle: s.value), limit: .seconds(40))
        guard case .failure(.bearerFailed)? = result else {
            Issue.record("expected the bearer to fail, got \(String(describing: result))")
            return
        }
        #expect(s.stacks.run(until: { s.centralBearers().count == 2 }, limit: .seconds(5)))
        #expect(s.stacks.central.openConnections.count == 1)
        s.stacks.peripheral.ignoreATTRequests(connectionHandle: s.stacks.peripheralHandle, false)
        #expect(try s.stacks.gatt(.readCharacteristicValue(handle: s.slow))?.get() == .value([0x51]))
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("PSM 0x0027 belongs to EATT: an application server cannot take it while EATT is on")
    func applicationCannotTakeTheEATTPSM() throws {
        let s = EATTStacks()
        #expect(s.stacks.connect())
        let result = Recorder<Result<Void, L2CAPLinkError>>()
        s.stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(psm: 0x27, mtu: 100, mps: 100, initialCredits: 1)) { result.append($0) }
        s.stacks.loop.run()
        guard case .failure(let error)? = result.last else {
            Issue.record("expected a refusal, got \(String(describing: result.last))")
            return
        }
        #expect(error.code == .psmInUse)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("Insufficient Authentication on an EATT bearer: the link is paired again with MITM and the request retried there")
    func securityRetryOnEATTBearer() throws {
        let s = EATTStacks { configuration, _ in configuration.security.ioCapability = .displayYesNo }
        #expect(s.stacks.connect())
        #expect(s.pair())  // Just Works: encrypted, not authenticated
        #expect(s.stacks.run(until: { s.centralBearers().count == 3 }, limit: .seconds(10)))
        // The application answers the value, so the server shows which bearer the (retried) request came on.
        let pending = Recorder<GATTPendingRequest>()
        s.stacks.peripheral.setGATTDeferral(GATTDeferral(handles: [s.authenticated]) { pending.append($0) })
        let results = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        s.stacks.central.gatt(connectionHandle: s.stacks.centralHandle, .readCharacteristicValue(handle: s.authenticated)) { results.append($0) }
        #expect(s.stacks.run(until: { pending.count == 1 }, limit: .seconds(60)))
        #expect(pending.values.first?.bearer.isEnhanced == true)
        // The second pairing was a numeric comparison (authenticated).
        #expect(s.stacks.centralEvents.values.contains { if case .pairingInteraction(_, .confirmNumericValue) = $0 { true } else { false } })
        if let request = pending.values.first {
            s.stacks.peripheral.respondToGATTRequest(connectionHandle: s.stacks.peripheralHandle, id: request.id, result: .success([0xA7]))
        }
        #expect(s.stacks.run(until: { results.count == 1 }, limit: .seconds(5)))
        #expect(try results.last?.get() == .value([0xA7]))
        #expect(!s.stacks.centralEvents.values.contains { if case .gattSecurityFailed = $0 { true } else { false } })
        #expect(s.centralBearers().count == 3)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("a bearer the peer closes fails its running procedure; those queued behind it move to the other bearers")
    func queuedProceduresMoveWhenABearerCloses() throws {
        let s = EATTStacks()
        #expect(s.connectPairAndOpenBearers())
        let pending = s.deferSlowReads()
        let results = Recorder<(Int, Result<GATTProcedureResult, GATTClientError>)>()
        for index in 0..<6 {
            s.stacks.central.gatt(connectionHandle: s.stacks.centralHandle, .readCharacteristicValue(handle: s.slow)) { results.append((index, $0)) }
        }
        // One running per bearer: three EATT bearers and the unenhanced one.
        #expect(s.stacks.run(until: { pending.count == 4 }, limit: .seconds(5)))
        s.stacks.loop.advance(by: .milliseconds(100))
        #expect(pending.count == 4 && results.count == 0)
        // The peripheral closes the bearer of the first request.
        guard let first = pending.values.first, first.bearer.isEnhanced else {
            Issue.record("the first request did not come on an EATT bearer")
            return
        }
        s.stacks.peripheral.closeL2CAPChannel(connectionHandle: s.stacks.peripheralHandle, channel: L2CAPChannelIdentifier(first.bearer.rawValue))
        #expect(s.stacks.run(until: { results.count == 1 }, limit: .seconds(5)))
        if case (0, .failure(.bearerFailed))? = results.values.first {} else { Issue.record("request 0 should fail: \(results.values)") }
        // Everything else completes, answered as the requests arrive.
        var answered = Set([first.id])
        #expect(s.stacks.run(until: {
            for request in pending.values where !answered.contains(request.id) {
                answered.insert(request.id)
                s.stacks.peripheral.respondToGATTRequest(connectionHandle: s.stacks.peripheralHandle, id: request.id, result: .success([0x51]))
            }
            return results.count == 6
        }, limit: .seconds(10)))
        #expect(results.values.dropFirst().allSatisfy { (try? $0.1.get()) == .value([0x51]) })
        #expect(s.centralBearers().count == 2)
        s.stacks.disconnectAndCheckLeaks()
    }
}
