import ATT
import BluetoothCore
import BluetoothRuntime
import Foundation
import GATT
import HCITransport
import Host
import StackLauncher
import Testing
import VirtualController
import SharedAir
import BluetoothEngine

/// Collects values from any thread.
final class Collected<Value: Sendable>: Sendable {
    private let storage = LockedValue<[Value]>([])
    func append(_ value: Value) { storage.withLock { $0.append(value) } }
    var values: [Value] { storage.load() }
}

/// Polls `condition` every 10 ms for at most `limit` (real time: these stacks run on DispatchEventLoops).
func eventually(_ limit: Duration = .seconds(5), _ condition: () -> Bool) async -> Bool {
    let end = ContinuousClock.now + limit
    while ContinuousClock.now < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

func temporaryPath(_ name: String) -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-launcher-\(UUID().uuidString.prefix(8))")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder.appendingPathComponent(name).path
}

/// Options that never meet a hub of the machine (a socket path nobody listens on, and no hub started there).
func isolatedOptions(snoop: String? = nil) -> StackLaunchOptions {
    StackLaunchOptions(snoopPath: snoop, hubSocketPath: temporaryPath("none.sock"), hubStarter: .never,
                       startTimeout: .seconds(5))
}

func launchError(_ text: String, options: StackLaunchOptions = isolatedOptions()) async -> StackLaunchError? {
    do {
        let stack = try await StackLauncher.open(text, options: options)
        stack.shutdown()
        return nil
    } catch {
        return error
    }
}

@Suite struct StackLauncherSpecTests {
    @Test func invalidSpecificationsSayWhatIsExpected() async {
        let error = await launchError("bluetooth0")
        #expect(error?.code == .invalidSpecification)
        #expect(error?.reason == "unknown HCI transport \"bluetooth0\"; expected \(HCITransportSpec.expectedForms)")
        let port = await launchError("tcp:127.0.0.1:99999")
        #expect(port?.code == .invalidSpecification)
        #expect(port?.reason.contains("invalid TCP port \"99999\"") == true)
    }

    @Test func unreachableTransportsAreOneLine() async {
        let missing = temporaryPath("missing.sock")
        let unix = await launchError("unix:\(missing)")
        #expect(unix?.code == .unreachable)
        #expect(unix?.reason.hasPrefix("cannot open the HCI transport unix:\(missing): connect failed") == true)
        let air = await launchError("air:\(missing)")
        #expect(air?.code == .unreachable)
        #expect(air?.reason.hasPrefix("no air hub at \(missing) (start one with `blue air --socket \(missing)`)") == true)
        let tcp = await launchError("tcp:127.0.0.1:1")
        #expect(tcp?.code == .unreachable)
        #expect(tcp?.reason.contains("tcp:127.0.0.1:1: connect failed") == true)
        let serial = await launchError("serial:/dev/nonexistent-tty")
        #expect(serial?.code == .unreachable)
        for error in [unix, air, tcp, serial] {
            #expect(error?.reason.contains("\n") == false)
        }
    }

    @Test func snoopFileThatCannotBeCreatedFailsBeforeStarting() async {
        let error = await launchError("in-process", options: isolatedOptions(snoop: "/nonexistent-dir/capture.btsnoop"))
        #expect(error?.code == .snoopFailed)
        #expect(error?.reason.hasPrefix("cannot create the snoop file /nonexistent-dir/capture.btsnoop") == true)
    }

    @Test func silentPeerFailsWithinTheStartTimeout() async throws {
        // A UNIX socket that accepts and never answers: initialisation must give up, not hang.
        let path = temporaryPath("silent.sock")
        let accepted = Collected<SocketH4Transport>()
        let listener = try H4Listener.listen(unixPath: path) { transport in accepted.append(transport) }
        defer {
            listener.close()
            for transport in accepted.values { transport.close() }
        }
        var options = isolatedOptions()
        options.startTimeout = .milliseconds(500)
        options.host.commandTimeout = .seconds(5)
        let error = await launchError("unix:\(path)", options: options)
        #expect(error?.code == .controllerFailed)
        #expect(error?.reason.hasPrefix("the controller on unix:\(path) did not start") == true)
    }
}

@Suite struct StackLauncherVirtualTests {
    @Test func inProcessIsAnAirOfItsOwnAndTapsTheSnoop() async throws {
        let snoop = temporaryPath("virtual.btsnoop")
        let stack = try await StackLauncher.open("in-process", options: isolatedOptions(snoop: snoop))
        #expect(stack.spec == .inProcess)
        #expect(stack.transportDescription.hasPrefix("in-process air (0A:1C:00:00:00:01)"))
        #expect(stack.controllerInfo.publicAddress == InProcessAir.address(forDevice: 1))
        #expect(stack.controllerInfo.ownAddress.isValidRandomStatic)
        stack.shutdown()
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: snoop)))
        // btsnoop header (identification "btsnoop\0", version 1, datalink 1002 H4), then the Reset command sent.
        #expect(Array(bytes.prefix(16)) == Array("btsnoop".utf8) + [0, 0, 0, 0, 1, 0, 0, 0x03, 0xEA])
        #expect(bytes.count > 16 + 24)
        let firstRecordFlags = Array(bytes[16 + 8..<16 + 12])
        #expect(firstRecordFlags == [0, 0, 0, 2])  // sent, command
        #expect(Array(bytes[16 + 24..<16 + 28]) == [0x01, 0x03, 0x0C, 0x00])  // H4 command HCI_Reset
    }

    @Test func stacksOnOneInProcessAirSeeAndConnectToEachOther() async throws {
        let air = InProcessAir(seed: 7)
        let stacks = try await air.makeStacks(2, options: isolatedOptions())
        #expect(stacks.count == 2)
        let peripheral = stacks[0], central = stacks[1]
        defer {
            central.shutdown()
            peripheral.shutdown()
            air.shutdown()
        }
        #expect(peripheral.controllerInfo.publicAddress == InProcessAir.address(forDevice: 1))
        #expect(central.controllerInfo.publicAddress == InProcessAir.address(forDevice: 2))
        var database = GATTDatabase()
        try database.addGAPService(deviceName: "launcher")
        try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A19), properties: [.read], value: .stored([0x42])),
        ]))
        peripheral.host.setGATTDatabase(database)
        let advertising = Collected<Bool>()
        peripheral.host.startAdvertising(AdvertisingContent(localName: "launcher", serviceUUIDs: [BluetoothUUID(0x180F)])) {
            advertising.append((try? $0.get()) != nil)
        }
        #expect(await eventually { advertising.values == [true] })
        let reports = Collected<ScanReport>()
        central.addEventHandler { event in
            if case .advertisingReport(let report) = event { reports.append(report) }
        }
        central.host.startScanning { _ in }
        #expect(await eventually { reports.values.contains { $0.localName == "launcher" } })
        central.host.stopScanning()
        let report = try #require(reports.values.first { $0.localName == "launcher" })
        #expect(report.address == peripheral.controllerInfo.ownAddress)
        #expect(report.advertisingData.serviceUUIDs == [BluetoothUUID(0x180F)])
        let connected = Collected<Connection>()
        central.host.connect(to: report.address) { if let connection = try? $0.get() { connected.append(connection) } }
        #expect(await eventually { connected.values.count == 1 })
        let handle = try #require(connected.values.first).handle
        let read = Collected<Result<GATTProcedureResult, GATTClientError>>()
        central.host.gatt(connectionHandle: handle, .readUsingCharacteristicUUID(uuid: BluetoothUUID(0x2A19),
                                                                               range: ATTHandleRange(start: 1, end: 0xFFFF))) {
            read.append($0)
        }
        #expect(await eventually { read.values.count == 1 })
        if case .success(.handleValues(let values))? = read.values.first {
            #expect(values.map(\.value) == [[0x42]])
        } else {
            Issue.record("read by UUID: \(String(describing: read.values.first))")
        }
        let ended = Collected<UInt16>()
        peripheral.addEventHandler { event in
            if case .disconnected(let handle, _) = event { ended.append(handle) }
        }
        central.host.disconnect(connectionHandle: handle)
        #expect(await eventually { ended.values.count == 1 })
    }

    /// `virtual` is the shared air and nothing else: with no hub and nobody allowed to start one, it fails with one
    /// line naming the socket (it never falls back to an air of its own).
    @Test func virtualWithoutAHubAndNoStarterFails() async {
        let options = isolatedOptions()
        let error = await launchError("virtual", options: options)
        #expect(error?.code == .unreachable)
        #expect(error?.reason == "no air hub at \(options.hubSocketPath) (start one with `blue air --socket \(options.hubSocketPath)`)")
        #expect(!AirHub.isRunning(at: options.hubSocketPath))
    }

    /// With no `blue` to spawn, a program hosts the shared air itself: the first `virtual` stack starts a hub in
    /// this process, the next ones (of this process, or of another joining the socket) meet it there.
    @Test func virtualHostsTheSharedAirInThisProcessWhenAsked() async throws {
        var options = isolatedOptions()
        options.hubStarter = .inThisProcess
        #expect(!AirHub.isRunning(at: options.hubSocketPath))
        let first = try await StackLauncher.open("virtual", options: options)
        defer { first.shutdown() }
        #expect(first.transportDescription == "air:\(options.hubSocketPath) (shared air hub, hosted by this process)")
        #expect(AirHub.isRunning(at: options.hubSocketPath))
        #expect(try await SharedAirHub.ensure(at: options.hubSocketPath, starter: .never) == .running)
        let second = try await StackLauncher.open("virtual-hub", options: options)
        defer { second.shutdown() }
        #expect(second.transportDescription == "air:\(options.hubSocketPath) (shared air hub)")
        // The two see each other: one advertises, the other's scan reports it.
        let advertising = Collected<Bool>()
        first.host.startAdvertising(AdvertisingContent(localName: "hosted", serviceUUIDs: [])) {
            advertising.append((try? $0.get()) != nil)
        }
        #expect(await eventually { advertising.values == [true] })
        let reports = Collected<String>()
        second.addEventHandler { event in
            if case .advertisingReport(let report) = event, let name = report.localName { reports.append(name) }
        }
        second.host.startScanning { _ in }
        #expect(await eventually(.seconds(10)) { reports.values.contains("hosted") })
        second.host.stopScanning()
    }

    @Test func virtualJoinsARunningHubAndAirPathToo() async throws {
        let path = temporaryPath("air.sock")
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: path, statisticsInterval: nil),
                         eventLoop: DispatchEventLoop(label: "test.hub"))
        try hub.start()
        defer { hub.stop() }
        var options = isolatedOptions()
        options.hubSocketPath = path
        let first = try await StackLauncher.open(spec: .virtual, options: options)
        let second = try await StackLauncher.open("air:\(path)", options: options)
        defer {
            first.shutdown()
            second.shutdown()
        }
        #expect(first.spec == .air(path: path))
        #expect(first.transportDescription == "air:\(path) (shared air hub)")
        #expect(second.transportDescription == "air:\(path) (air hub)")
        #expect(await eventually { hub.devices.count == 2 })
        #expect(Set([first.controllerInfo.publicAddress, second.controllerInfo.publicAddress])
                == Set([AirHub.address(forDevice: 1), AirHub.address(forDevice: 2)]))
    }

    @Test func eventHandlersCanBeRemoved() async throws {
        let stack = try await StackLauncher.open("in-process", options: isolatedOptions())
        defer { stack.shutdown() }
        let seen = Collected<Int>()
        let subscription = stack.addEventHandler { _ in seen.append(1) }
        subscription.cancel()
        let kept = Collected<Int>()
        stack.addEventHandler { event in
            if case .controllerError = event { kept.append(1) }
        }
        stack.host.startScanning { _ in }
        stack.host.stopScanning()
        stack.eventLoop.sync {}
        #expect(seen.values.isEmpty)
    }
}
