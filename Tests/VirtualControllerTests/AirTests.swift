import BluetoothCore
import BluetoothRuntime
import HCI
import Testing
@testable import VirtualController

@Suite struct AirTests {
    @Test func advertisingAtTheIntervalAndScanResponseOnlyWhenActive() {
        let world = World(devices: 3)
        let advertiser = world.hosts[0], passive = world.hosts[1], active = world.hosts[2]
        advertiser.send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 160, intervalMax: 160)))  // 100 ms
        advertiser.send(.leSetAdvertisingData([0x02, 0x01, 0x06]))
        advertiser.send(.leSetScanResponseData([0x05, 0x09, 0x4E, 0x61, 0x6D, 0x65]))
        advertiser.send(.leSetAdvertisingEnable(true))
        passive.send(.leSetScanParameters(LEScanParameters(scanType: 0)))
        passive.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        active.send(.leSetScanParameters(LEScanParameters(scanType: 1)))
        active.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        world.advance(.seconds(10))
        let reports = passive.advertisingReports
        // 100 ms + 0...10 ms advDelay: between 10 s / 110 ms and 10 s / 100 ms + 1 events.
        #expect((90...101).contains(reports.count), "\(reports.count)")
        #expect(reports.allSatisfy { $0.eventType == .advInd && $0.data == [0x02, 0x01, 0x06] })
        #expect(reports.first?.rssi == -40)  // 0 dBm − 40 dB at 1 m
        let activeReports = active.advertisingReports
        let responses = activeReports.filter { $0.eventType == .scanResponse }
        #expect(responses.count == activeReports.count / 2)
        #expect(responses.allSatisfy { $0.data == [0x05, 0x09, 0x4E, 0x61, 0x6D, 0x65] })
        #expect(activeReports.first?.rssi == -46)  // 2 m: 40 + 20·log10(2) ≈ 46 dB
        for host in world.hosts { host.controller.powerOff() }
        world.loop.run()
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func duplicateFilteringAndFilterAcceptList() {
        let world = World(devices: 3)
        world.hosts[0].send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 160, intervalMax: 160, advertisingType: .scannableUndirected)))
        world.hosts[0].send(.leSetAdvertisingEnable(true))
        world.hosts[2].send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 160, intervalMax: 160, advertisingType: .nonConnectableUndirected)))
        world.hosts[2].send(.leSetAdvertisingEnable(true))
        let scanner = world.hosts[1]
        scanner.send(.leSetScanParameters(LEScanParameters(scanType: 1)))
        scanner.send(.leSetScanEnable(enable: true, filterDuplicates: true))
        world.advance(.seconds(3))
        let reports = scanner.advertisingReports
        #expect(reports.count == 3)  // ADV_SCAN_IND + SCAN_RSP from 0, ADV_NONCONN_IND from 2
        #expect(Set(reports.map(\.eventType)) == [.advScanInd, .scanResponse, .advNonconnInd])
        // Re-enabling resets the filter; with the filter accept list policy only host 2 is reported.
        scanner.send(.leSetScanEnable(enable: false, filterDuplicates: false))
        scanner.send(.leAddDeviceToFilterAcceptList(addressType: .public, address: world.hosts[2].controller.publicAddress))
        scanner.send(.leSetScanParameters(LEScanParameters(scanType: 0, filterPolicy: 1)))
        scanner.send(.leSetScanEnable(enable: true, filterDuplicates: true))
        scanner.send(.leClearFilterAcceptList)
        world.loop.run()
        #expect(scanner.status(.leClearFilterAcceptList) == .commandDisallowed)
        scanner.drain()
        world.advance(.seconds(3))
        #expect(scanner.advertisingReports.map(\.address) == [world.hosts[2].controller.publicAddress])
        for host in world.hosts { host.controller.powerOff() }
        world.loop.run()
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func connectBothWaysAndACLRoundTripWithFragmentation() throws {
        let world = World(devices: 3)
        let a = world.hosts[0], b = world.hosts[1]
        guard let (central, peripheral) = world.connect(central: 1, peripheral: 0) else {
            Issue.record("no connection")
            return
        }
        #expect(b.connectionCompletes.last?.role == .central)
        #expect(a.connectionCompletes.last?.role == .peripheral)
        #expect(a.connectionCompletes.last?.peerAddress == b.controller.publicAddress)
        #expect(a.connectionCompletes.last?.connectionInterval == 24)
        // Both roles at once: C advertises and A connects to it (a second link).
        guard let (central2, _) = world.connect(central: 0, peripheral: 2) else {
            Issue.record("no second connection")
            return
        }
        #expect(world.air.linkCount == 2)
        #expect(a.controller.connectionCount == 2)
        // A 600-octet L2CAP PDU in three host packets of 251/251/98; the LL carries 27-octet PDUs (no DLE).
        let pdu = (0..<600).map { UInt8(truncatingIfNeeded: $0) }
        let fragments = try ACLFragmenter(maximumDataLength: 251).fragment(pdu, handle: central)
        for fragment in fragments { b.sendACL(fragment) }
        world.advance(.seconds(1))
        let received = a.acl.filter { $0.handle == peripheral }
        #expect(received.flatMap(\.data) == pdu)
        #expect(received.first?.packetBoundary == .firstFlushable)
        #expect(received.dropFirst().allSatisfy { $0.packetBoundary == .continuing })
        #expect(received.allSatisfy { $0.data.count <= 27 })
        #expect(b.completedPackets == 3)
        // And back, after a data length update to 251.
        a.send(.leSetDataLength(handle: peripheral, txOctets: 251, txTime: 2120))
        b.send(.leSetDataLength(handle: central, txOctets: 251, txTime: 2120))
        world.advance(.milliseconds(500))
        let lengthChanges = a.events.filter { if case .leMeta(.dataLengthChange) = $0 { true } else { false } }
        #expect(!lengthChanges.isEmpty)
        for fragment in try ACLFragmenter(maximumDataLength: 251).fragment(pdu, handle: peripheral) { a.sendACL(fragment) }
        world.advance(.seconds(1))
        let back = b.acl.filter { $0.handle == central }
        #expect(back.flatMap(\.data) == pdu)
        #expect(back.map(\.data.count) == [251, 251, 98])
        #expect(a.completedPackets == 3)
        // Disconnect: local 0x16, remote gets the reason sent.
        b.send(.disconnect(handle: central, reason: .remoteUserTerminatedConnection))
        a.send(.disconnect(handle: central2, reason: .remoteDeviceTerminatedPowerOff))
        world.advance(.milliseconds(200))
        #expect(b.disconnections.map(\.reason) == [.connectionTerminatedByLocalHost])
        #expect(world.hosts[2].disconnections.map(\.reason) == [.remoteDeviceTerminatedPowerOff])
        #expect(a.disconnections.map(\.reason.rawValue).sorted() == [HCIStatus.remoteUserTerminatedConnection.rawValue, HCIStatus.connectionTerminatedByLocalHost.rawValue].sorted())
        #expect(world.air.linkCount == 0)
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func retransmissionUnderLossDeliversEverythingInOrder() throws {
        var configuration = AirConfiguration()
        configuration.packetLoss = 0.3
        let world = World(seed: 42, configuration: configuration)
        guard let (central, peripheral) = world.connect(central: 1, peripheral: 0, timeout: 500) else {
            Issue.record("no connection")
            return
        }
        let a = world.hosts[0], b = world.hosts[1]
        var expected: [UInt8] = []
        for round in 0..<40 {
            let pdu = (0..<100).map { UInt8(truncatingIfNeeded: $0 &+ round) }
            expected += pdu
            for fragment in try ACLFragmenter(maximumDataLength: 251).fragment(pdu, handle: central) { b.sendACL(fragment) }
            world.advance(.milliseconds(300))
        }
        world.advance(.seconds(2))
        let got = a.acl.filter { $0.handle == peripheral }.flatMap(\.data)
        #expect(got.count == expected.count)
        #expect(got == expected)
        #expect(b.completedPackets == 40)
        #expect(a.disconnections.isEmpty && b.disconnections.isEmpty)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing")
        #expect(settled.links == 0)
    }

    @Test func outOfRangeEndsInSupervisionTimeoutOnBothSides() {
        let world = World()
        guard world.connect(timeout: 100) != nil else {  // 1 s supervision timeout
            Issue.record("no connection")
            return
        }
        let a = world.hosts[0], b = world.hosts[1]
        world.advance(.seconds(2))
        #expect(a.disconnections.isEmpty)
        b.controller.position = AirPosition(x: 10_000, y: 0, z: 0)
        world.advance(.milliseconds(900))
        #expect(a.disconnections.isEmpty)
        world.advance(.milliseconds(200))
        #expect(a.disconnections.map(\.reason) == [.connectionTimeout])
        #expect(b.disconnections.map(\.reason) == [.connectionTimeout])
        #expect(world.air.linkCount == 0)
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func powerOffMakesThePeerTimeOut() {
        let world = World()
        guard world.connect(timeout: 100) != nil else {
            Issue.record("no connection")
            return
        }
        world.hosts[0].controller.powerOff()
        world.advance(.seconds(2))
        #expect(world.hosts[1].disconnections.map(\.reason) == [.connectionTimeout])
        #expect(world.hosts[0].disconnections.isEmpty)
        #expect(world.loop.pendingWorkDescription == "nothing")
    }

    @Test func sameSeedSameTrace() {
        func run(seed: UInt64) -> [String] {
            var configuration = AirConfiguration()
            configuration.packetLoss = 0.2
            configuration.rssiJitter = 3
            let world = World(seed: seed, configuration: configuration, devices: 3)
            let trace = LockedValue<[String]>([])
            world.air.observer = { packet in trace.withLock { $0.append(packet.description) } }
            world.hosts[2].send(.leSetScanParameters(LEScanParameters(scanType: 1)))
            world.hosts[2].send(.leSetScanEnable(enable: true, filterDuplicates: false))
            _ = world.connect()
            world.advance(.seconds(2))
            let events = world.hosts.flatMap { $0.allFrames.map { Hex.encode($0.encode()) } }
            return trace.withLock { $0 } + events
        }
        let first = run(seed: 9)
        let leakCheck = World(seed: 9)
        _ = leakCheck.connect()
        #expect(leakCheck.powerOffAllAndSettle() == ("nothing", 0))
        #expect(first.count > 50)
        #expect(first == run(seed: 9))
        #expect(first != run(seed: 10))
    }
}
