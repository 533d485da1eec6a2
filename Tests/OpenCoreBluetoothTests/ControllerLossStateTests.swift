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

/// A manager whose controller goes away (its `blue air` hub killed with SIGKILL) leaves `.poweredOn` for
/// `.poweredOff`, as an iOS app sees Bluetooth turned off, instead of staying `.poweredOn` on a stack that can do
/// nothing: scanning stops, no call can wait forever on a controller that is gone.
@Suite(.serialized) struct ControllerLossStateTests {
    @Test func bothManagersGoPoweredOffWhenTheirHubIsKilled() async throws {
        let directory = try makeTestDirectory("loss")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/air.sock"
        let blue = try #require(HostBackend.hubExecutable(), "no blue executable beside the tests (the test target builds it)")
        let hub = Process()
        hub.executableURL = URL(fileURLWithPath: blue)
        hub.arguments = ["air", "--socket", socket, "--stats-interval", "0"]
        hub.standardOutput = FileHandle.nullDevice
        hub.standardError = FileHandle.nullDevice
        try hub.run()
        defer { kill(hub.processIdentifier, SIGKILL) }
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
        let on = "state \(CBManagerState.poweredOn)", off = "state \(CBManagerState.poweredOff)"
        try await waitFor("both managers powered on", within: .seconds(30), on: centralLog.queue,
                          until: { centralLog.entries.contains(on) && peripheralLog.entries.contains(on) },
                          seen: { "central \(centralLog.entries), peripheral \(peripheralLog.entries)" })
        #expect(central.isScanning)

        kill(hub.processIdentifier, SIGKILL)
        try await waitFor("both managers powered off", within: .seconds(30), on: centralLog.queue,
                          until: { centralLog.entries.contains(off) && peripheralLog.entries.contains(off) },
                          seen: { "central \(centralLog.entries), peripheral \(peripheralLog.entries)" })
        #expect(centralLog.entries.filter { $0.hasPrefix("state") } == ["state \(CBManagerState.poweredOn)", off])
        #expect(peripheralLog.entries == ["state \(CBManagerState.poweredOn)", off])
        let scanning = await onQueue(centralLog.queue) { central.isScanning }
        #expect(!scanning, "scanning stops with the controller")
        withExtendedLifetime((central, manager)) {}
    }
}

/// A peripheral manager's delegate that only records its states.
private final class StateRecorder: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    init(log: CallLog) { self.log = log }
    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.add("state \(peripheral.state)")
    }
}
