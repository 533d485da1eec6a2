import BluetoothCore
import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let sensorServiceUUID = CBUUID(string: "70E00000-0000-4000-8000-00000000C032")

/// Issue 32 item 1, through CoreBluetooth: a connect to a door lock that never appears (retrieved from the known
/// peers, as the seeds keep it; "never times out") does not hold up the manager's later connects. Two sensors that
/// do advertise are connected as they are heard, while the lock's connect stays pending; cancelling it ends it
/// with `didDisconnectPeripheral` and no error, as iOS does.
@Suite struct PendingConnectionTests {
    @Test func aLockThatNeverAppearsDoesNotHoldUpTwoSensorsThatDo() async throws {
        let directory = NSTemporaryDirectory() + "ocb-pending-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/known-peers.json"
        let lockAddress = BluetoothAddress(0x00_1B_DC_07_10_CC, type: .public)
        try KnownPeersStore.write([KnownPeersStore.Entry(address: lockAddress, name: "Front door", connected: true)], to: path)
        let lockIdentifier = CBPeerIdentifier.identifier(for: lockAddress)
        let provider = HostBackend.privateAirProvider(seed: 32)

        func sensor(_ name: String) -> (PeripheralRecorder, CallLog) {
            let log = CallLog(label: "pending.\(name)")
            let app = PeripheralRecorder(log: log)
            app.onState = { manager in
                guard manager.state == .poweredOn else { return }
                manager.add(CBMutableService(type: sensorServiceUUID, primary: true))
            }
            app.onAdd = { manager, _, _ in
                manager.startAdvertising([CBAdvertisementDataLocalNameKey: name,
                                          CBAdvertisementDataServiceUUIDsKey: [sensorServiceUUID]])
            }
            return (app, log)
        }
        let (heartRate, heartRateLog) = sensor("Heart rate")
        let (thermometer, thermometerLog) = sensor("Thermometer")

        let log = CallLog(label: "pending.central")
        let central = CentralRecorder(log: log)
        let lock = LockedBox<CBPeripheral?>(nil)
        let sensors = LockedBox<[CBPeripheral]>([])
        central.onState = { manager in
            guard manager.state == .poweredOn else { return }
            // The lock first: with one connect at a time, nothing after it would ever connect.
            lock.value = manager.retrievePeripherals(withIdentifiers: [lockIdentifier]).first
            if let peripheral = lock.value { manager.connect(peripheral) }
            manager.scanForPeripherals(withServices: [sensorServiceUUID])
        }
        central.onDiscover = { manager, peripheral, _, _ in
            guard !sensors.value.contains(where: { $0 === peripheral }) else { return }
            sensors.value.append(peripheral)
            if sensors.value.count == 2 { manager.stopScan() }
            manager.connect(peripheral)
        }
        let managers = CBBackendRegistry.$taskProvider.withValue(provider) {
            KnownPeersStore.$taskLocation.withValue(.file(path)) {
                Box(value: (CBPeripheralManager(delegate: heartRate, queue: heartRateLog.queue),
                            CBPeripheralManager(delegate: thermometer, queue: thermometerLog.queue),
                            CBCentralManager(delegate: central, queue: log.queue)))
            }
        }
        try await waitFor("both sensors connected while the lock's connect is pending", within: .seconds(60), on: log.queue,
                          until: { log.entries.filter { $0.hasPrefix("connect") }.count == 2 },
                          seen: { "central \(log.entries)" })
        let states = log.queue.sync { (lock.value?.state, sensors.value.map(\.state), lock.value?.name) }
        #expect(states.0 == .connecting)
        #expect(states.1 == [.connected, .connected])
        #expect(states.2 == "Front door")
        #expect(Set(log.entries.filter { $0.hasPrefix("connect") }) == ["connect Heart rate", "connect Thermometer"])
        #expect(!log.entries.contains("fail"))

        // Still pending a while later (no time limit), then cancelled: didDisconnectPeripheral, no error.
        try await Task.sleep(for: .milliseconds(500))
        #expect(log.queue.sync { lock.value?.state } == .connecting)
        log.queue.sync { if let peripheral = lock.value { managers.value.2.cancelPeripheralConnection(peripheral) } }
        try await waitFor("the lock's connect cancelled", on: log.queue, until: { log.entries.contains("disconnect nil") },
                          seen: { "central \(log.entries)" })
        #expect(log.queue.sync { lock.value?.state } == .disconnected)
        #expect(log.queue.sync { sensors.value.map(\.state) } == [.connected, .connected])
        log.queue.sync { for peripheral in sensors.value { managers.value.2.cancelPeripheralConnection(peripheral) } }
        try await waitFor("both sensors disconnected", on: log.queue,
                          until: { log.entries.filter { $0 == "disconnect nil" }.count == 3 }, seen: { "central \(log.entries)" })
    }
}
