import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import HCI
@testable import Host
import L2CAP
import Testing
import VirtualController
import BluetoothEngine

@Suite("L2CAP channels, parameter updates, disconnection and timeouts between two stacks")
struct WiringLinkTests {
    @Test("L2CAP CoC: open to a PSM, 10 kB SDU each way, close")
    func creditBasedChannel() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        let registered = Recorder<Bool>()
        stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(psm: 0x0080, mtu: 12_000, mps: 247, initialCredits: 8)) {
            registered.append((try? $0.get()) != nil)
        }
        stacks.loop.run()
        #expect(registered.values == [true])
        let opened = Recorder<L2CAPChannelInfo>()
        stacks.central.openL2CAPChannel(connectionHandle: stacks.centralHandle, psm: 0x0080, mtu: 12_000, mps: 200, initialCredits: 4) {
            if let info = try? $0.get() { opened.append(info) }
        }
        #expect(stacks.run(until: { opened.count == 1 }))
        let centralChannel = try #require(opened.last)
        #expect(centralChannel.remoteMTU == 12_000 && centralChannel.remoteMPS == 247 && centralChannel.isInitiator)
        let incoming = stacks.peripheralEvents.values.compactMap { event -> L2CAPChannelInfo? in
            if case .l2capChannelOpened(_, let info) = event { return info } else { return nil }
        }
        let peripheralChannel = try #require(incoming.first)
        #expect(peripheralChannel.remoteCID == centralChannel.localCID && peripheralChannel.localCID == centralChannel.remoteCID)

        let up = (0..<10_240).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 5) }
        let down = (0..<10_240).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        stacks.central.sendL2CAPSDU(connectionHandle: stacks.centralHandle, channel: centralChannel.localCID, up)
        stacks.peripheral.sendL2CAPSDU(connectionHandle: stacks.peripheralHandle, channel: peripheralChannel.localCID, down)
        func sdus(_ events: Recorder<HostEvent>) -> [[UInt8]] {
            events.values.compactMap { if case .l2capSDU(_, _, let sdu) = $0 { sdu } else { nil } }
        }
        #expect(stacks.run(until: { sdus(stacks.peripheralEvents).count == 1 && sdus(stacks.centralEvents).count == 1 }))
        #expect(sdus(stacks.peripheralEvents) == [up])
        #expect(sdus(stacks.centralEvents) == [down])

        let closed = Recorder<Bool>()
        stacks.central.closeL2CAPChannel(connectionHandle: stacks.centralHandle, channel: centralChannel.localCID) {
            closed.append((try? $0.get()) != nil)
        }
        #expect(stacks.run(until: { closed.count == 1 }))
        #expect(closed.values == [true])
        #expect(stacks.peripheralEvents.values.contains {
            if case .l2capChannelClosed(_, peripheralChannel.localCID, .peerRequest) = $0 { true } else { false } })
        #expect(stacks.central.resources.l2capChannels == 0 && stacks.peripheral.resources.l2capChannels == 0)
        stacks.disconnectAndCheckLeaks()
    }

    @Test("an owner that shuts the host down from the channel-opened event gets the open's completion once, failed")
    func shutdownInsideChannelOpenedCompletesOnce() {
        // The session's actions are carried out while it is open, asked between actions: the shutdown happens inside
        // one (the event comes before the completion), and the closed session must have nothing left to complete.
        let stacks = TwoStacks()
        #expect(stacks.connect())
        stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(psm: 0x0080, mtu: 2048, mps: 247, initialCredits: 4)) { _ in }
        stacks.loop.run()
        let central = stacks.central
        let subscription = central.addEventHandler { event in
            if case .l2capChannelOpened = event { central.shutdown() }
        }
        let results = Recorder<Bool>()
        central.openL2CAPChannel(connectionHandle: stacks.centralHandle, psm: 0x0080) { results.append((try? $0.get()) != nil) }
        #expect(stacks.run(until: { !results.values.isEmpty }))
        stacks.loop.run()
        #expect(results.values == [false])
        #expect(stacks.centralEvents.values.contains { if case .l2capChannelOpened = $0 { true } else { false } })
        withExtendedLifetime(subscription) {}
    }

    @Test("an SDU's send completes once the peer's credits took its K-frames; one still queued fails when the channel closes")
    func sendCompletionFollowsCredits() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        // The peripheral grants 1 credit and returns more only when told (manual policy).
        stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(psm: 0x0080, mtu: 2048, mps: 247, initialCredits: 1,
                                                                 creditPolicy: .manual))
        stacks.loop.run()
        let opened = Recorder<L2CAPChannelInfo>()
        stacks.central.openL2CAPChannel(connectionHandle: stacks.centralHandle, psm: 0x0080) {
            if let info = try? $0.get() { opened.append(info) }
        }
        #expect(stacks.run(until: { opened.count == 1 }))
        let channel = try #require(opened.last)
        let peripheralChannel = try #require(stacks.peripheralEvents.values.lazy.compactMap { event -> L2CAPChannelInfo? in
            if case .l2capChannelOpened(_, let info) = event { info } else { nil } }.first)

        // 600 octets and the 2-octet SDU length: 3 K-frames of at most 247, 1 credit.
        let sent = Recorder<Result<Void, HostError>>()
        stacks.central.sendL2CAPSDU(connectionHandle: stacks.centralHandle, channel: channel.localCID,
                                    [UInt8](repeating: 7, count: 600)) { sent.append($0) }
        stacks.loop.run()
        #expect(sent.count == 0, "two K-frames still wait for credits")
        stacks.peripheral.giveL2CAPCredits(connectionHandle: stacks.peripheralHandle, channel: peripheralChannel.localCID, 2)
        #expect(stacks.run(until: { sent.count == 1 }))
        #expect((try? sent.values.first?.get()) != nil)

        // No credits left: the next SDU waits whole, and fails when its channel closes under it.
        stacks.central.sendL2CAPSDU(connectionHandle: stacks.centralHandle, channel: channel.localCID, [1, 2, 3]) { sent.append($0) }
        stacks.loop.run()
        #expect(sent.count == 1)
        #expect(stacks.central.resources.pendingOperations == 1)
        stacks.central.closeL2CAPChannel(connectionHandle: stacks.centralHandle, channel: channel.localCID)
        #expect(stacks.run(until: { sent.count == 2 }))
        guard case .failure(let error)? = sent.values.last else { Issue.record("the queued SDU did not fail"); return }
        #expect(error.reason.contains("closed"), "\(error)")
        #expect(stacks.central.resources.pendingOperations == 0)
        stacks.disconnectAndCheckLeaks()
    }

    @Test("disconnection fails pending GATT operations, channel operations and MTU exchange with the reason")
    func disconnectFailsPending() throws {
        let stacks = TwoStacks(central: {
            var configuration = HostConfiguration(address: .randomStatic(seed: 2))
            configuration.exchangesMTUOnConnect = false
            return configuration
        }())
        #expect(stacks.connect())
        stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(psm: 0x0081, mtu: 100, mps: 100, initialCredits: 2))
        stacks.loop.run()
        // The peer's server never answers: everything stays pending until the link goes.
        stacks.peripheral.ignoreATTRequests(connectionHandle: stacks.peripheralHandle)
        let results = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        for procedure in [GATTProcedure.discoverAllPrimaryServices, .readCharacteristicValue(handle: 3), .writeCharacteristicValue(handle: 3, value: [1])] {
            stacks.central.gatt(connectionHandle: stacks.centralHandle, procedure) { results.append($0) }
        }
        let mtu = Recorder<Result<Int, HostError>>()
        stacks.central.exchangeMTU(connectionHandle: stacks.centralHandle) { mtu.append($0) }
        stacks.loop.run()
        #expect(stacks.central.resources.pendingATTTransactions > 0)
        #expect(stacks.central.resources.pendingOperations == 4)
        let disconnected = Recorder<HCIStatus>()
        stacks.central.disconnect(connectionHandle: stacks.centralHandle) { if let reason = try? $0.get() { disconnected.append(reason) } }
        #expect(stacks.run(until: { disconnected.count == 1 && stacks.peripheral.openConnections.isEmpty }))
        #expect(disconnected.values == [.connectionTerminatedByLocalHost])
        #expect(results.count == 3)
        for result in results.values {
            #expect(result == .failure(.bearerFailed(.disconnected(reason: HCIStatus.connectionTerminatedByLocalHost.rawValue))))
        }
        #expect(mtu.values.map { (try? $0.get()) == nil } == [true])
        #expect(stacks.peripheralEvents.values.contains {
            if case .disconnected(_, .remoteUserTerminatedConnection) = $0 { true } else { false } })
        // After the end: operations on the old handle fail at once.
        let late = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        stacks.central.gatt(connectionHandle: stacks.centralHandle, .discoverAllPrimaryServices) { late.append($0) }
        stacks.loop.run()
        #expect(late.values == [.failure(.bearerFailed(.disconnected(reason: nil)))])
        stacks.expectQuiescent()
    }

    @Test("peripheral-initiated connection parameter update over L2CAP, accepted by the central")
    func parameterUpdate() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        let answer = Recorder<Result<Bool, HostError>>()
        let request = L2CAPConnectionParameterUpdateRequest(intervalMin: 0x0030, intervalMax: 0x0030, peripheralLatency: 2, timeoutMultiplier: 0x0200)
        stacks.peripheral.requestConnectionParameterUpdate(connectionHandle: stacks.peripheralHandle, request) { answer.append($0) }
        #expect(stacks.run(until: { answer.count == 1 }))
        #expect(answer.values.map { try? $0.get() } == [true])
        let updated = { (events: Recorder<HostEvent>) in
            events.values.contains { event in
                if case .connectionUpdated(let connection) = event {
                    connection.parameters == ConnectionParameters(interval: 0x0030, latency: 2, supervisionTimeout: 0x0200)
                } else { false }
            }
        }
        #expect(stacks.run(until: { updated(stacks.centralEvents) && updated(stacks.peripheralEvents) }))
        // The central may not send one.
        let wrongRole = Recorder<Result<Bool, HostError>>()
        stacks.central.requestConnectionParameterUpdate(connectionHandle: stacks.centralHandle, request) { wrongRole.append($0) }
        stacks.loop.run()
        #expect(wrongRole.values.map { (try? $0.get()) == nil } == [true])
        stacks.disconnectAndCheckLeaks()
    }

    @Test("a central that refuses: the peripheral hears rejected and nothing changes")
    func parameterUpdateRejected() throws {
        var refusing = HostConfiguration(address: .randomStatic(seed: 2))
        refusing.acceptsConnectionParameterRequests = false
        let stacks = TwoStacks(central: refusing)
        #expect(stacks.connect())
        let answer = Recorder<Result<Bool, HostError>>()
        let request = L2CAPConnectionParameterUpdateRequest(intervalMin: 0x0030, intervalMax: 0x0030, peripheralLatency: 0, timeoutMultiplier: 0x0200)
        stacks.peripheral.requestConnectionParameterUpdate(connectionHandle: stacks.peripheralHandle, request) { answer.append($0) }
        #expect(stacks.run(until: { answer.count == 1 }))
        #expect(answer.values.map { try? $0.get() } == [false])
        #expect(!stacks.centralEvents.values.contains { if case .connectionUpdated = $0 { true } else { false } })
        stacks.disconnectAndCheckLeaks()
    }

    @Test("ATT transaction timeout: 30 s without a response tears the link down (local host terminated)")
    func attTimeout() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        #expect(stacks.run(until: { stacks.mtus.central == 517 }))
        stacks.peripheral.ignoreATTRequests(connectionHandle: stacks.peripheralHandle)
        let result = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        let queued = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        let start = stacks.loop.now
        stacks.central.gatt(connectionHandle: stacks.centralHandle, .readCharacteristicValue(handle: 3)) { result.append($0) }
        stacks.central.gatt(connectionHandle: stacks.centralHandle, .readCharacteristicValue(handle: 5)) { queued.append($0) }
        #expect(stacks.run(until: { result.count == 1 }, limit: .seconds(40)))
        let elapsed = stacks.loop.now - start
        #expect(elapsed >= .seconds(30) && elapsed < .seconds(31))
        #expect(result.values == [.failure(.bearerFailed(.transactionTimeout))])
        #expect(queued.values == [.failure(.bearerFailed(.transactionTimeout))])
        #expect(stacks.run(until: { stacks.central.openConnections.isEmpty && stacks.peripheral.openConnections.isEmpty }))
        #expect(stacks.centralEvents.values.contains {
            if case .disconnected(_, .connectionTerminatedByLocalHost) = $0 { true } else { false } })
        stacks.expectQuiescent()
    }

    @Test("both stacks are client and server; read by UUID and read multiple; an appended service keeps CCCDs and is indicated")
    func bothDirectionsAndDatabaseChange() throws {
        let stacks = TwoStacks()
        var centralDatabase = GATTDatabase()
        _ = try centralDatabase.addGAPService(deviceName: "central side")
        stacks.central.setGATTDatabase(centralDatabase)
        #expect(stacks.connect())
        #expect(stacks.run(until: { stacks.mtus.central == 517 }))

        // The peripheral reads the central's Device Name (handle 3) with its own client.
        let name = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        stacks.peripheral.gatt(connectionHandle: stacks.peripheralHandle, .readUsingCharacteristicUUID(
            uuid: BluetoothUUID(0x2A00), range: ATTHandleRange(start: 1, end: 0xFFFF))) { name.append($0) }
        #expect(stacks.run(until: { name.count == 1 }))
        #expect(name.values == [.success(.handleValues([ATTHandleValue(handle: 3, value: Array("central side".utf8))]))])

        let small = TwoStacks.smallDatabase()
        let handles = small.service.characteristics.map(\.value)
        #expect(try stacks.gatt(.readMultipleCharacteristicValues(handles: [handles[0], handles[2]]))?.get() == .value([1, 2, 3, 0]))

        // Subscribe to Service Changed (indications) and to the notifying characteristic.
        guard case .characteristics(let gattCharacteristics) = try #require(stacks.gatt(.discoverCharacteristics(
            range: ATTHandleRange(start: 1, end: 0xFFFF), uuid: BluetoothUUID(0x2A05)))).get(),
              let serviceChanged = gattCharacteristics.first else { Issue.record("no Service Changed"); return }
        #expect(try stacks.gatt(.subscribe(cccdHandle: serviceChanged.valueHandle + 1, configuration: .indications))?.get() == .written)
        let notifying = try #require(small.service.characteristics.last?.clientConfiguration)
        #expect(try stacks.gatt(.subscribe(cccdHandle: notifying, configuration: .notifications))?.get() == .written)

        let added = Recorder<GATTServiceHandles>()
        stacks.peripheral.modifyGATTDatabase({ (database: inout GATTDatabase) throws(GATTDatabaseError) -> GATTServiceHandles in
            try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: .read, value: .stored([0x77])),
            ]))
        }) { if let handles = try? $0.get() { added.append(handles) } }
        stacks.loop.run()
        let service = try #require(added.last)
        stacks.peripheral.indicateServiceChanged(ATTHandleRange(start: service.start, end: service.end))
        #expect(stacks.run(until: { stacks.centralEvents.values.contains {
            if case .gattIndication(_, serviceChanged.valueHandle, let value) = $0 {
                value == [UInt8(service.start & 0xFF), UInt8(service.start >> 8), UInt8(service.end & 0xFF), UInt8(service.end >> 8)]
            } else { false } } }))
        // The CCCD written before the change still holds.
        stacks.peripheral.updateValue([5], handle: handles[2])
        #expect(stacks.run(until: { stacks.centralEvents.values.contains {
            if case .gattNotification(_, handles[2], [5]) = $0 { true } else { false } } }))
        #expect(try stacks.gatt(.readCharacteristicValue(handle: service.characteristics[0].value))?.get() == .value([0x77]))
        stacks.disconnectAndCheckLeaks()
    }

    @Test("L2CAP CoC refused: unknown PSM and a server that refuses")
    func channelRefused() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(
            psm: 0x0082, mtu: 100, mps: 100, initialCredits: 1, acceptPolicy: .refuseAll(.allConnectionsRefusedInsufficientAuthentication)))
        let results = Recorder<Result<L2CAPChannelInfo, HostError>>()
        stacks.central.openL2CAPChannel(connectionHandle: stacks.centralHandle, psm: 0x0090) { results.append($0) }
        stacks.central.openL2CAPChannel(connectionHandle: stacks.centralHandle, psm: 0x0082) { results.append($0) }
        #expect(stacks.run(until: { results.count == 2 }))
        let reasons = results.values.map { result -> String in
            if case .failure(let error) = result { error.reason } else { "opened" }
        }
        #expect(reasons.count == 2 && reasons[0].contains("0x0002") && reasons[1].contains("0x0005"), "\(reasons)")
        let second = Recorder<Result<Void, L2CAPLinkError>>()
        stacks.peripheral.registerL2CAPServer(L2CAPChannelServer(psm: 0x0082, mtu: 100, mps: 100, initialCredits: 1)) { second.append($0) }
        stacks.loop.run()
        #expect(second.values.map { (try? $0.get()) == nil } == [true])
        stacks.disconnectAndCheckLeaks()
    }
}
