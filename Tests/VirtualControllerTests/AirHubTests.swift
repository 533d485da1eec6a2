import BluetoothCore
import BluetoothRuntime
import Dispatch
import Foundation
import HCI
import HCITransport
import TestSupport
import Testing
@testable import VirtualController
@testable import SharedAir

/// Records what a hub reports, and lets a test wait (bounded, suspending) for an event.
private final class HubEvents: Sendable {
    private let seen = LockedValue<[AirHubEvent]>([])

    var handler: @Sendable (AirHubEvent) -> Void {
        { [seen] event in seen.withLock { $0.append(event) } }
    }

    var all: [AirHubEvent] { seen.withLock { $0 } }

    @discardableResult
    func wait(seconds: Double = 10, until condition: ([AirHubEvent]) -> Bool) async -> Bool {
        await poll(within: .seconds(seconds), every: .milliseconds(5)) { condition(all) }
    }
}

/// A host on a socket: collects frames, waits (bounded, suspending) for one that matches.
private final class SocketHost: Sendable {
    let transport: SocketH4Transport
    private let frames = LockedValue<[H4Frame]>([])
    private let closed = LockedValue(false)

    init(path: String) throws {
        transport = try SocketH4Transport.connect(path: path)
        try transport.start(
            onFrame: { [frames] frame in frames.withLock { $0.append(frame) } },
            onClose: { [closed] _ in closed.withLock { $0 = true } })
    }

    func send(_ command: HCICommand) throws {
        try transport.send(H4Frame(type: .command, packet: command.encode()))
    }

    var events: [HCIEvent] {
        frames.withLock { $0 }.filter { $0.type == .event }.compactMap { try? HCIEvent(decoding: $0.packet) }
    }

    @discardableResult
    func wait(seconds: Double = 10, until condition: ([HCIEvent]) -> Bool) async -> Bool {
        await poll(within: .seconds(seconds), every: .milliseconds(5)) { condition(events) }
    }

    /// Sends `command` and waits for its Command Complete / Status; returns the status.
    @discardableResult
    func run(_ command: HCICommand) async throws -> HCIStatus? {
        let before = events.count
        try send(command)
        var status: HCIStatus?
        await wait { events in
            for event in events.dropFirst(before) {
                if let response = event.commandResponse, response.opcode == command.opcode {
                    status = response.status
                    return true
                }
            }
            return false
        }
        return status
    }
}

/// A unique short directory for sockets and captures (UNIX socket paths are limited to 107 octets).
private func temporaryDirectory() -> String {
    let path = testTemporaryPath("airhub-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    mkdir(path, 0o700)
    return path
}

private func removeTree(_ path: String) {
    try? FileManager.default.removeItem(atPath: path)
}

@Suite("AirHub")
struct AirHubTests {
    @Test("two hosts join through the UNIX socket, one advertises, the other sees the report; leave and stop")
    func joinAdvertiseScanLeave() async throws {
        let directory = temporaryDirectory()
        defer { removeTree(directory) }
        let socket = directory + "/air.sock"
        let snoop = directory + "/snoop"
        let hub = AirHub(
            configuration: AirHubConfiguration(socketPath: socket, snoopDirectory: snoop, seed: 7, statisticsInterval: nil),
            eventLoop: DispatchEventLoop(label: "airhub-test"))
        let events = HubEvents()
        hub.onEvent = events.handler
        try hub.start()
        defer { hub.stop() }
        #expect(hub.endpoints == ["unix:\(socket)"])
        #expect(AirHub.isRunning(at: socket))
        #expect(hub.devices.isEmpty, "a probe that says nothing is not a device")

        let advertiser = try SocketHost(path: socket)
        defer { advertiser.transport.close() }
        #expect(try await advertiser.run(.reset) == .success)
        #expect(try await advertiser.run(.setEventMask(0x3FFF_FFFF_FFFF_FFFF)) == .success)
        let scanner = try SocketHost(path: socket)
        defer { scanner.transport.close() }
        #expect(try await scanner.run(.reset) == .success)
        #expect(try await scanner.run(.setEventMask(0x3FFF_FFFF_FFFF_FFFF)) == .success)  // LE Meta (bit 61) on
        #expect(await events.wait { $0.filter { if case .joined = $0 { true } else { false } }.count == 2 })
        let devices = hub.devices
        #expect(devices.map(\.number) == [1, 2])
        #expect(devices.map(\.address) == [AirHub.address(forDevice: 1), AirHub.address(forDevice: 2)])
        #expect(devices[0].address.string == "0A:1B:00:00:00:01")
        #expect(devices[1].position == AirPosition(x: 2))
        // Each capture is named after its device and the process that connected it (this test's).
        let expectedName = "dev1-" + (ProcessInfo.processInfo.arguments.first.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "")
            .map { $0.isLetter || $0.isNumber ? String($0) : "-" }.joined()
        #expect(devices[0].snoopPath?.hasPrefix(snoop + "/" + expectedName) == true, "\(devices[0].snoopPath ?? "none")")
        #expect(devices[0].snoopPath?.hasSuffix(".btsnoop") == true)
        let capturePaths = devices.compactMap(\.snoopPath)
        #expect(capturePaths.count == 2)

        // dev1 advertises a name; dev2 scans passively.
        let data: [UInt8] = [0x02, 0x01, 0x06, 0x04, 0x09, 0x48, 0x75, 0x62]  // flags, "Hub"
        #expect(try await advertiser.run(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20))) == .success)
        #expect(try await advertiser.run(.leSetAdvertisingData(data)) == .success)
        #expect(try await advertiser.run(.leSetAdvertisingEnable(true)) == .success)
        #expect(try await scanner.run(.leSetScanParameters(LEScanParameters(scanType: 0x00))) == .success)
        #expect(try await scanner.run(.leSetScanEnable(enable: true, filterDuplicates: true)) == .success)
        var report: LEAdvertisingReport?
        await scanner.wait { events in
            for case .leMeta(.advertisingReport(let reports)) in events {
                if let match = reports.first(where: { $0.address == AirHub.address(forDevice: 1) }) {
                    report = match
                    return true
                }
            }
            return false
        }
        let seen = try #require(report)
        #expect(seen.data == data)
        #expect(seen.eventType == .advInd)
        // 2 m at 0 dBm: 0 - (40 + 20 log10 2) = -46 dBm.
        #expect(seen.rssi == -46)

        // dev1's host goes away: the hub reports it and powers its controller off.
        advertiser.transport.close()
        #expect(await events.wait { events in
            events.contains { if case .left(let device, _) = $0 { device.number == 1 } else { false } }
        })
        #expect(hub.devices.map(\.number) == [2])

        let final = hub.stop()
        #expect(access(socket, F_OK) != 0, "the socket file is removed")
        #expect(!AirHub.isRunning(at: socket))
        #expect(final.devicesJoined == 2)
        #expect(final.devices == 0)
        #expect(final.traffic.commands == 9)
        #expect(final.advertisingPackets > 0)
        #expect(events.all.contains { if case .stopped = $0 { true } else { false } })
        #expect(events.all.contains { if case .left(let device, "hub stopped") = $0 { device.number == 2 } else { false } })

        // Each controller's capture: btsnoop, the host's Reset first (sent), its Command Complete next (received).
        for path in capturePaths {
            let bytes = try #require(FileManager.default.contents(atPath: path))
            let capture = try BTSnoopReader.readAll(Array(bytes))
            #expect(capture.error == nil)
            #expect(capture.records.count >= 2)
            #expect(capture.records.first?.direction == .sent)
            #expect(capture.records.first?.data == [0x01, 0x03, 0x0C, 0x00])
            #expect(capture.records.dropFirst().first?.direction == .received)
        }
    }

    @Test("a second hub on the same socket fails at once; the first keeps running")
    func secondHubFails() throws {
        let directory = temporaryDirectory()
        defer { removeTree(directory) }
        let socket = directory + "/air.sock"
        let first = AirHub(configuration: AirHubConfiguration(socketPath: socket, statisticsInterval: nil),
                           eventLoop: DispatchEventLoop(label: "airhub-first"))
        try first.start()
        defer { first.stop() }
        let second = AirHub(configuration: AirHubConfiguration(socketPath: socket, statisticsInterval: nil),
                            eventLoop: DispatchEventLoop(label: "airhub-second"))
        #expect(throws: AirHubError(.alreadyRunning, "another blue air is already running on \(socket)")) {
            try second.start()
        }
        #expect(AirHub.isRunning(at: socket))
        first.stop()
        #expect(!AirHub.isRunning(at: socket))
        #expect(access(socket, F_OK) != 0)
    }

    @Test("connections are reported at both ends with the peer device named; counts and JSON")
    func connectionReports() throws {
        let loop = ManualEventLoop()
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: nil, seed: 3, statisticsInterval: .seconds(5)),
                         eventLoop: loop)
        let events = LockedValue<[AirHubEvent]>([])
        hub.onEvent = { event in events.withLock { $0.append(event) } }
        try hub.start()
        let peripheralHost = ManualTransport(), centralHost = ManualTransport()
        hub.adopt(peripheralHost, origin: "test:peripheral")
        hub.adopt(centralHost, origin: "test:central")
        let randomAddress = try BluetoothAddress(string: "C0:11:22:33:44:55", type: .random)
        peripheralHost.deliver(.reset)
        peripheralHost.deliver(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
        peripheralHost.deliver(.leSetRandomAddress(randomAddress))
        peripheralHost.deliver(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20,
                                                                                   ownAddressType: .random)))
        peripheralHost.deliver(.leSetAdvertisingEnable(true))
        centralHost.deliver(.reset)
        centralHost.deliver(.setEventMask(0x3FFF_FFFF_FFFF_FFFF))
        centralHost.deliver(.leCreateConnection(LECreateConnectionParameters(peerAddressType: .random, peerAddress: randomAddress)))
        loop.advance(by: .milliseconds(200))
        let connected = events.withLock { $0 }.compactMap { event -> (Int, String, Int?)? in
            if case .connected(let device, _, let role, _, let peerDevice) = event { return (device, role, peerDevice) }
            return nil
        }
        #expect(connected.count == 2)
        #expect(connected.contains { $0 == (1, "peripheral", 2) })
        #expect(connected.contains { $0 == (2, "central", 1) })
        #expect(hub.statistics.connections == 1)
        #expect(hub.statistics.connectionsMade == 1)
        #expect(hub.statistics.connectRequests == 1)

        // The periodic summary.
        loop.advance(by: .seconds(5))
        #expect(events.withLock { $0 }.contains { if case .statistics(let s) = $0 { s.connections == 1 } else { false } })
        // The hub's heap in use, for a soak to tell what it holds from what its allocator keeps (none under a
        // sanitizer's allocator, which keeps no mallinfo2 figures).
        if ProcessInfo.processInfo.environment["OCB_SANITIZER"] == nil {
            let statistics = hub.statistics
            let heap = try #require(statistics.heapBytesInUse)
            #expect(heap > 0)
            #expect(AirHubEvent.statistics(statistics).text.hasSuffix("; heap \(heap / 1024) KiB in use"))
            #expect(AirHubEvent.statistics(statistics).json.contains("\"heapBytesInUse\":\(heap)"))
        }

        // The central disconnects: both ends report it.
        centralHost.deliver(.disconnect(handle: 0x0001, reason: .remoteUserTerminatedConnection))
        loop.advance(by: .seconds(1))
        let disconnected = events.withLock { $0 }.compactMap { event -> Int? in
            if case .disconnected(let device, _, _) = event { return device }
            return nil
        }
        #expect(disconnected.sorted() == [1, 2])
        #expect(hub.statistics.connections == 0)

        // A host leaving powers its controller off.
        peripheralHost.closeFromPeer()
        #expect(hub.devices.map(\.number) == [2])
        let final = hub.stop()
        #expect(final.devicesJoined == 2)
        #expect(centralHost.closed)
        _ = loop.run()
        #expect(hub.air.linkCount == 0)
        #expect(hub.air.scheduledTaskCount == 0)
        #expect(loop.pendingWorkDescription == "nothing")

        let texts = events.withLock { $0 }.map(\.text)
        #expect(texts.contains("connected: dev2 handle 0x0001 as central to dev1 C0:11:22:33:44:55 (random static)"))
        let json = events.withLock { $0 }.map(\.json)
        #expect(json.contains(#"{"event":"joined","device":1,"address":"0A:1B:00:00:00:01","origin":"test:peripheral","x":0.0,"y":0.0,"z":0.0}"#))
        #expect(json.contains { $0.hasPrefix(#"{"event":"disconnected","device":2,"handle":1,"reason":22,"#) })
    }

    @Test("addresses, positions, endpoints and the default socket path")
    func naming() throws {
        #expect(AirHub.address(forDevice: 1).string == "0A:1B:00:00:00:01")
        #expect(AirHub.address(forDevice: 300).string == "0A:1B:00:00:01:2C")
        #expect(AirHub.position(forDevice: 1, spacing: 2) == AirPosition())
        #expect(AirHub.position(forDevice: 6, spacing: 2) == AirPosition(x: 2, y: 2))
        #expect(try AirHubTCPEndpoint(parsing: "127.0.0.1:9000") == AirHubTCPEndpoint(host: "127.0.0.1", port: 9000))
        #expect(try AirHubTCPEndpoint(parsing: "9001") == AirHubTCPEndpoint(port: 9001))
        for bad in ["127.0.0.1:", ":9000", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:9x"] {
            #expect(throws: AirHubError.self) { try AirHubTCPEndpoint(parsing: bad) }
        }
        let path = AirHub.defaultSocketPath
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            #expect(path == runtime + "/opencorebluetooth/air.sock")
        } else {
            #expect(path == "/tmp/opencorebluetooth-\(getuid())/air.sock")
        }
        #expect(JSONObject.quote("a\"b\\c\n\u{1}") == #""a\"b\\c\n\u0001""#)
    }
}

/// A transport driven by the test: `deliver` hands a command to the hub synchronously; what the hub sends is kept.
private final class ManualTransport: HCITransport {
    private struct State {
        var onFrame: (@Sendable (H4Frame) -> Void)?
        var onClose: (@Sendable (HCITransportError?) -> Void)?
        var sent: [H4Frame] = []
        var closed = false
    }

    private let state = LockedValue(State())
    var name: String { "manual" }

    func start(onFrame: @escaping @Sendable (H4Frame) -> Void,
               onClose: @escaping @Sendable (HCITransportError?) -> Void) throws(HCITransportError) {
        state.withLock { $0.onFrame = onFrame; $0.onClose = onClose }
    }

    func send(_ frame: H4Frame) throws(HCITransportError) {
        let accepted = state.withLock { state in
            guard !state.closed else { return false }
            state.sent.append(frame)
            return true
        }
        if !accepted { throw HCITransportError(.closed, "closed") }
    }

    func close() { state.withLock { $0.closed = true } }

    var closed: Bool { state.withLock { $0.closed } }

    func deliver(_ command: HCICommand) {
        let handler = state.withLock { $0.onFrame }
        handler?(H4Frame(type: .command, packet: command.encode()))
    }

    func closeFromPeer() {
        let handler = state.withLock { state in
            state.closed = true
            return state.onClose
        }
        handler?(HCITransportError(.closedByPeer, "peer closed"))
    }
}
