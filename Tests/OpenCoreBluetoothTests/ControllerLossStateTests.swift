import Foundation
import StackLauncher
import Testing
import TestSupport
import VirtualController
@testable import OpenCoreBluetooth
#if canImport(Glibc)
import Glibc
#endif
import SharedAir

/// A manager whose Bluetooth service goes away (its `blue air` hub killed with SIGKILL) shows what iOS shows when
/// its Bluetooth daemon restarts (issue 32 item 5): `.resetting` at once (peripherals invalidated, scanning
/// stopped, no call waiting forever on a stack that is gone), then `.poweredOn` on the hub started again on demand,
/// or `.poweredOff` when none can be (as when Bluetooth is turned off).
@Suite(.serialized) struct ControllerLossStateTests {
    static let on = "state \(CBManagerState.poweredOn)", off = "state \(CBManagerState.poweredOff)"
    static let resetting = "state \(CBManagerState.resetting)"

    /// A hub at `socket` (started by the test) and both managers on it, powered on, the central scanning.
    static func managersOnAHub(at socket: String) async throws -> LossWorld {
        let blue = try #require(HostBackend.hubExecutable(), "no blue executable beside the tests (the test target builds it)")
        let hub = Process()
        hub.executableURL = URL(fileURLWithPath: blue)
        hub.arguments = ["air", "--socket", socket, "--stats-interval", "0"]
        hub.standardOutput = FileHandle.nullDevice
        hub.standardError = FileHandle.nullDevice
        try hub.run()
        #expect(await poll(within: .seconds(30)) { AirHub.isRunning(at: socket) }, "the hub did not listen")
        let provider = HostBackend.provider(.hub(socketPath: socket))

        let centralLog = CallLog(label: "loss.central")
        let recorder = CentralRecorder(log: centralLog)
        recorder.onState = { central in
            if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
        }
        let central = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBCentralManager(delegate: recorder, queue: centralLog.queue)
        }
        let peripheralLog = CallLog(label: "loss.peripheral")
        let advertiser = StateRecorder(log: peripheralLog)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBPeripheralManager(delegate: advertiser, queue: peripheralLog.queue)
        }
        try await waitFor("both managers powered on", within: .seconds(60), on: centralLog.queue,
                          until: { centralLog.entries.contains(on) && peripheralLog.entries.contains(on) },
                          seen: { "central \(centralLog.entries), peripheral \(peripheralLog.entries)" })
        #expect(central.isScanning)
        return LossWorld(hub: hub, central: central, centralLog: centralLog, peripheral: manager, peripheralLog: peripheralLog,
                         delegates: [recorder, advertiser])
    }

    @Test func bothManagersResetWhenTheirHubIsKilledAndComeBackOnTheHubStartedAgain() async throws {
        let directory = try makeTestDirectory("loss")
        let socket = directory + "/air.sock"
        defer {
            HubProcesses.stop(socket)
            try? FileManager.default.removeItem(atPath: directory)
        }
        let before = HostBackend.hubsStarted.count
        let world = try await Self.managersOnAHub(at: socket)
        defer { world.close() }
        kill(world.hub.processIdentifier, SIGKILL)
        try await waitFor("both managers back on", within: .seconds(60), on: world.centralLog.queue, until: {
            world.centralLog.entries.filter { $0 == Self.on }.count == 2 && world.peripheralLog.entries.filter { $0 == Self.on }.count == 2
        }, seen: { "central \(world.centralLog.entries), peripheral \(world.peripheralLog.entries)" })
        // A hub was started again by a manager that reopened, and listens where the first one did.
        #expect(HostBackend.hubsStarted.count > before)
        #expect(AirHub.isRunning(at: socket))
        #expect(world.centralLog.entries.filter { $0.hasPrefix("state") } == [Self.on, Self.resetting, Self.on])
        #expect(world.peripheralLog.entries == [Self.on, Self.resetting, Self.on])
        // The scan ended with the reset; the app scans again on poweredOn (the recorder does).
        #expect(await onQueue(world.centralLog.queue) { world.central.isScanning })
        withExtendedLifetime(world) {}
    }

    @Test func bothManagersGoFromResettingToPoweredOffWhenNoHubCanCome() async throws {
        let directory = try makeTestDirectory("loss")
        let before = HostBackend.hubsStarted.count
        let world = try await Self.managersOnAHub(at: directory + "/air.sock")
        defer { world.close() }
        // Without its directory no hub can be started there again (as with nobody to restart the service).
        try FileManager.default.removeItem(atPath: directory)
        kill(world.hub.processIdentifier, SIGKILL)
        try await waitFor("both managers powered off", within: .seconds(60), on: world.centralLog.queue,
                          until: { world.centralLog.entries.contains(Self.off) && world.peripheralLog.entries.contains(Self.off) },
                          seen: { "central \(world.centralLog.entries), peripheral \(world.peripheralLog.entries)" })
        #expect(world.centralLog.entries.filter { $0.hasPrefix("state") } == [Self.on, Self.resetting, Self.off])
        #expect(world.peripheralLog.entries == [Self.on, Self.resetting, Self.off])
        #expect(HostBackend.hubsStarted.count == before)
        let scanning = await onQueue(world.centralLog.queue) { world.central.isScanning }
        #expect(!scanning, "scanning stops with the controller")
        withExtendedLifetime(world) {}
    }
}

/// The hub and the managers of one test.
final class LossWorld: @unchecked Sendable {
    let hub: Process
    let central: CBCentralManager
    let centralLog: CallLog
    let peripheral: CBPeripheralManager
    let peripheralLog: CallLog
    let delegates: [AnyObject]

    init(hub: Process, central: CBCentralManager, centralLog: CallLog, peripheral: CBPeripheralManager, peripheralLog: CallLog,
         delegates: [AnyObject]) {
        self.hub = hub
        self.central = central
        self.centralLog = centralLog
        self.peripheral = peripheral
        self.peripheralLog = peripheralLog
        self.delegates = delegates
    }

    /// Ends both managers' backends (no reopening after this), then the hub the test started.
    func close() {
        central.backend?.shutdown()
        peripheral.backend?.shutdown()
        kill(hub.processIdentifier, SIGKILL)
    }

    deinit { close() }
}

/// A peripheral manager's delegate that only records its states.
private final class StateRecorder: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    init(log: CallLog) { self.log = log }
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.add("state \(peripheral.state)")
    }
}
