import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let sharedServiceUUID = CBUUID(string: "5E570000-0000-4000-8000-00000000DEAD")

/// A peripheral-manager delegate that advertises `name` and the shared service at power-on.
private final class NamedAdvertiser: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    let name: String

    init(log: CallLog, name: String) {
        self.log = log
        self.name = name
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: sharedServiceUUID, primary: true)
        service.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "2A19"), properties: [.read], value: Data([7]),
                                                           permissions: [.readable])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [sharedServiceUUID]])
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        log.add("advertising\(error.map { " \($0)" } ?? "")")
    }
}

@Suite(.serialized) struct ReleasedManagerTests {
    /// A released `CBPeripheralManager` leaves the air, as a device whose program ended: its connected central sees
    /// the link time out (`CBError.connectionTimeout`, supervision timeout) and a new scan hears only the device
    /// that replaced it. Before the fix the released manager's controller stayed on the in-process air, still
    /// advertising the same service and accepting connections with no host behind it: a restored manager's central
    /// connected to that ghost and its discovery never completed.
    @Test func aReleasedPeripheralManagerLeavesTheAir() async throws {
        let provider = HostBackend.privateAirProvider(seed: 76)
        let leavingLog = CallLog(label: "released.leaving")
        let leavingApp = NamedAdvertiser(log: leavingLog, name: "Leaving")
        let leaving = LockedBox<CBPeripheralManager?>(CBBackendRegistry.$taskProvider.withValue(provider) {
            CBPeripheralManager(delegate: leavingApp, queue: leavingLog.queue)
        })
        try await waitFor("the leaving device advertising", on: leavingLog.queue, until: { leavingLog.entries.contains("advertising") },
                          seen: { "\(leavingLog.entries)" })

        let centralLog = CallLog(label: "released.central")
        let recorder = CentralRecorder(log: centralLog)
        let connected = LockedBox<CBPeripheral?>(nil)
        recorder.onState = { central in
            if central.state == .poweredOn { central.scanForPeripherals(withServices: [sharedServiceUUID]) }
        }
        recorder.onDiscover = { central, peripheral, _, _ in
            guard peripheral.name == "Leaving", connected.value == nil else { return }
            connected.value = peripheral
            central.stopScan()
            central.connect(peripheral)
        }
        let central = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBCentralManager(delegate: recorder, queue: centralLog.queue)
        }
        try await waitFor("the connection to the leaving device", on: centralLog.queue,
                          until: { centralLog.entries.contains("connect Leaving") }, seen: { "\(centralLog.entries)" })

        // The app holding the peripheral manager ends: its device goes silent and the link times out.
        leavingLog.queue.sync { leaving.value = nil }
        try await waitFor("the link's timeout after the release", on: centralLog.queue,
                          until: { centralLog.entries.contains("disconnect error") }, seen: { "\(centralLog.entries)" })
        let error = centralLog.queue.sync { recorder.lastError as? CBError }
        #expect(error?.code == .connectionTimeout, "\(String(describing: recorder.lastError))")

        // Another device advertises the same service: a scan with duplicates hears it again and again, and never
        // the released one.
        let stayingLog = CallLog(label: "released.staying")
        let stayingApp = NamedAdvertiser(log: stayingLog, name: "Staying")
        let staying = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBPeripheralManager(delegate: stayingApp, queue: stayingLog.queue)
        }
        try await waitFor("the staying device advertising", on: stayingLog.queue, until: { stayingLog.entries.contains("advertising") },
                          seen: { "\(stayingLog.entries)" })
        let before = centralLog.entries.count
        centralLog.queue.sync {
            central.scanForPeripherals(withServices: [sharedServiceUUID], options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        }
        try await waitFor("five discoveries of the staying device", on: centralLog.queue,
                          until: { centralLog.entries.dropFirst(before).filter { $0 == "discover Staying" }.count >= 5 },
                          seen: { "\(centralLog.entries.dropFirst(before))" })
        centralLog.queue.sync { central.stopScan() }
        #expect(!centralLog.entries.dropFirst(before).contains("discover Leaving"), "\(centralLog.entries.dropFirst(before))")
        #expect(central.misuseLog == [] && staying.misuseLog == [])
        withExtendedLifetime((central, staying)) {}
    }
}
