import Foundation
import StackLauncher
import Testing
import VirtualController
@testable import OpenCoreBluetooth

import TestSupport
#if canImport(Glibc)
import Glibc
#endif
import SharedAir

private nonisolated(unsafe) let hubServiceUUID = CBUUID(string: "5E570000-0000-4000-8000-000000000A1B")
private nonisolated(unsafe) let hubCharacteristicUUID = CBUUID(string: "5E570001-0000-4000-8000-000000000A1B")

/// A peripheral manager's delegate that publishes one static value and advertises it.
private final class HubPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    init(log: CallLog) { self.log = log }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.add("state \(peripheral.state.rawValue)")
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: hubServiceUUID, primary: true)
        service.characteristics = [CBMutableCharacteristic(type: hubCharacteristicUUID, properties: [.read],
                                                           value: Data("over the hub".utf8), permissions: [.readable])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "Hub", CBAdvertisementDataServiceUUIDsKey: [hubServiceUUID]])
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        log.add("advertising\(error.map { " \($0)" } ?? "")")
    }
}

/// The peripheral the central connects to (kept: CoreBluetooth cancels connections of unreferenced peripherals).
private final class Found: @unchecked Sendable {
    private let lock = NSLock()
    private var peripheral: CBPeripheral?

    /// Keeps the first one; false for any later.
    func keep(_ candidate: CBPeripheral) -> Bool {
        lock.withLock {
            guard peripheral == nil else { return false }
            peripheral = candidate
            return true
        }
    }
}

/// Stops the hubs this process started (SIGTERM, then reaps them) and removes `directory`.
private func stopHubs(_ pids: [Int32], socket: String, directory: String) async {
    for pid in pids {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<250 where waitpid(pid, &status, WNOHANG) == 0 { try? await Task.sleep(for: .milliseconds(20)) }
        if waitpid(pid, &status, WNOHANG) == 0 {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
        }
    }
    try? FileManager.default.removeItem(atPath: directory)
}

@Suite(.serialized) struct HubOnDemandTests {
    /// No hub listens at a fresh socket; a peripheral manager and a central manager on `air:SOCKET` start one
    /// (`blue air --socket SOCKET`, found beside the test binary, logging next to the socket) and meet on it: the
    /// central finds the peripheral by its service, connects and reads its value, through the hub's air in
    /// another process. Exactly one hub was started for both, and it is stopped at the end.
    @Test func managersStartTheHubOnDemandAndMeetOnIt() async throws {
        let directory = testTemporaryPath("ocb-hub-\(UUID().uuidString.prefix(8))")
        #expect(mkdir(directory, 0o700) == 0)
        let socket = directory + "/air.sock"
        let before = HostBackend.hubsStarted
        defer { withExtendedLifetime(before) {} }
        #expect(!AirHub.isRunning(at: socket))
        _ = try #require(HostBackend.hubExecutable(), "no blue executable beside the tests (the test target builds it)")
        guard case .hub(let path) = HostBackend.transport(named: "air:\(socket)"), path == socket else {
            Issue.record("air:PATH is not the hub at PATH")
            return
        }
        let provider = HostBackend.provider(.hub(socketPath: socket))

        let peripheralLog = CallLog(label: "hub.peripheral")
        let app = HubPeripheral(log: peripheralLog)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBPeripheralManager(delegate: app, queue: peripheralLog.queue)
        }
        let centralLog = CallLog(label: "hub.central")
        let reader = CentralRecorder(log: centralLog)
        reader.onState = { central in
            if central.state == .poweredOn { central.scanForPeripherals(withServices: [hubServiceUUID]) }
        }
        let target = Found()
        reader.onDiscover = { central, peripheral, _, _ in
            guard target.keep(peripheral) else { return }
            central.stopScan()
            central.connect(peripheral)
        }
        reader.onConnect = { peripheral in
            peripheral.delegate = reader
            peripheral.discoverServices([hubServiceUUID])
        }
        reader.onServices = { peripheral in
            if let service = peripheral.services?.first { peripheral.discoverCharacteristics([hubCharacteristicUUID], for: service) }
        }
        reader.onCharacteristics = { peripheral, service in
            if let characteristic = service.characteristics?.first { peripheral.readValue(for: characteristic) }
        }
        let central = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBCentralManager(delegate: reader, queue: centralLog.queue)
        }
        let expected = "value \(hubCharacteristicUUID.uuidString) \([UInt8]("over the hub".utf8))"
        // Not a throwing wait: the hubs started must be stopped whatever happened.
        // 60 s: a hub process to spawn and two stacks to start before the exchange; a busy 2-core machine (CI) can be slow.
        await expectStep("the read through the hub", within: .seconds(60), on: centralLog.queue,
                         until: { centralLog.entries.contains(expected) },
                         seen: { "central \(centralLog.entries), peripheral \(peripheralLog.entries)" })
        // Another suite's manager may start a hub meanwhile (its own, after a reset): ours are those at our socket.
        let started = Array(HostBackend.hubsStarted.dropFirst(before.count)).filter { HubProcesses.serves($0, socket) }
        #expect(started.count == 1, "hubs started: \(started)")
        #expect(AirHub.isRunning(at: socket))
        #expect(FileManager.default.fileExists(atPath: AirHubLauncher.logPath(forSocket: socket)))
        #expect(peripheralLog.entries.prefix(2) == ["state \(CBManagerState.poweredOn.rawValue)", "advertising"])
        #expect(manager.misuseLog == [] && central.misuseLog == [], "\(manager.misuseLog) \(central.misuseLog)")
        // The managers end first: a manager whose hub goes away opens it again (`.resetting`), starting a new one.
        manager.backend?.shutdown()
        central.backend?.shutdown()
        withExtendedLifetime((manager, central)) {}
        await stopHubs(started, socket: socket, directory: directory)
        #expect(!AirHub.isRunning(at: socket))
    }

    /// A socket whose directory does not exist is not a place to start a hub: the manager reports `.unsupported`
    /// and no hub is started.
    @Test func noHubIsStartedWhereTheDirectoryDoesNotExist() async throws {
        let socket = testTemporaryPath("ocb-hub-missing-\(UUID().uuidString.prefix(8))/air.sock")
        let before = HostBackend.hubsStarted.count
        let log = CallLog(label: "hub.missing")
        let app = HubPeripheral(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.hub(socketPath: socket))) {
            CBPeripheralManager(delegate: app, queue: log.queue)
        }
        try await waitFor("the unsupported state", within: .seconds(30), on: log.queue,
                          until: { log.entries.contains("state \(CBManagerState.unsupported.rawValue)") }, seen: { "\(log.entries)" })
        #expect(HostBackend.hubsStarted.count == before)
        #expect(!FileManager.default.fileExists(atPath: (socket as NSString).deletingLastPathComponent))
        withExtendedLifetime(manager) {}
    }

    /// Which `blue` starts the hub: `$OCB_BLUE`, else the one beside the program, else the first on `$PATH`; none.
    @Test func theHubExecutableIsFoundInOrder() {
        let executables: Set<String> = ["/build/debug/blue", "/usr/local/bin/blue", "/opt/bin/blue"]
        let isExecutable: (String) -> Bool = { executables.contains($0) }
        #expect(HostBackend.hubExecutable(environment: ["OCB_BLUE": "/elsewhere/blue", "PATH": "/usr/local/bin"],
                                          programPath: "/build/debug/Seed001Peripheral", isExecutable: isExecutable) == "/elsewhere/blue")
        #expect(HostBackend.hubExecutable(environment: ["PATH": "/usr/local/bin"], programPath: "/build/debug/Seed001Peripheral",
                                          isExecutable: isExecutable) == "/build/debug/blue")
        #expect(HostBackend.hubExecutable(environment: ["PATH": "/usr/bin::/opt/bin:/usr/local/bin"], programPath: "/srv/app",
                                          isExecutable: isExecutable) == "/opt/bin/blue")
        #expect(HostBackend.hubExecutable(environment: [:], programPath: "/srv/app", isExecutable: isExecutable) == nil)
        #expect(HostBackend.hubExecutable(environment: ["OCB_BLUE": ""], programPath: "app", isExecutable: isExecutable) == nil)
    }

    /// `OCB_HCI` names: unset, `virtual` (and its former name `virtual-hub`) are the shared air, the hub at the
    /// default socket; `air:PATH` the hub at PATH; `in-process` the process's own air; the rest stays a `--hci`
    /// specification.
    @Test func transportNames() {
        for name in ["", "virtual", "virtual-hub", " virtual "] {
            if case .hub(let path) = HostBackend.transport(named: name) {
                #expect(path == StackLaunchOptions.defaultHubSocketPath)
            } else {
                Issue.record("\"\(name)\" is not the shared air")
            }
        }
        if case .hub(let path) = HostBackend.transport(named: " air:/run/x.sock ") { #expect(path == "/run/x.sock") } else {
            Issue.record("air:PATH is not the hub")
        }
        if case .specification(let text) = HostBackend.transport(named: "air:") { #expect(text == "air:") } else {
            Issue.record("air: without a path is not left to the launcher (which reports it)")
        }
        if case .specification(let text) = HostBackend.transport(named: "tcp:127.0.0.1:9000") { #expect(text == "tcp:127.0.0.1:9000") } else {
            Issue.record("tcp is not a specification")
        }
        if case .inProcess(let air) = HostBackend.transport(named: "in-process") {
            #expect(air === HostBackend.sharedAir)
        } else {
            Issue.record("in-process is not the process's own air")
        }
    }
}
