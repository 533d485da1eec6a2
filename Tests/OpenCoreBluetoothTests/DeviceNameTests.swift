import ATT
import BluetoothCore
import BluetoothEngine
import Dispatch
import Foundation
import GATT
import Host
import StackLauncher
import Testing
@testable import OpenCoreBluetooth

/// A central delegate that logs connections, names and name updates (`peripheralDidUpdateName`).
private final class NameRecorder: FirstDeviceCentral, @unchecked Sendable {
    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.add("connect \(peripheral.name ?? "-")")
    }
    override func peripheralDidUpdateName(_ peripheral: CBPeripheral) {
        log.add("name \(peripheral.name ?? "-")")
    }
}

/// Issue 32 item 3: once connected, the central reads the peer's GAP Device Name (one Read By Type request, as iOS
/// does); `CBPeripheral.name` is that name from then on, and `peripheral(_:didUpdateName:)` (here
/// `peripheralDidUpdateName`) is called when it differs from the advertised name, and again when the peer changes
/// it (Service Changed over its GAP service, Core 5.4 Vol 3 Part G §7.1). The peers are plain host stacks on the
/// air, with names of their own.
@Suite(.serialized) struct DeviceNameTests {
    /// A host stack advertising `advertised` with the GAP Device Name `deviceName`.
    static func peer(on air: InProcessAir, deviceName: String, advertised: String) async throws -> LaunchedStack {
        let stack = try await air.makeStack()
        stack.host.setGATTDatabase(try database(deviceName: deviceName))
        let started = LockedBox<Bool?>(nil)
        stack.host.startAdvertising(AdvertisingContent(localName: advertised)) { started.value = (try? $0.get()) != nil }
        try await waitFor("the peer advertising", until: { started.value != nil }, seen: { "\(String(describing: started.value))" })
        return stack
    }

    /// A central manager on `air` that connects to the device advertising `name`, and its log.
    private static func central(on air: InProcessAir, wanting name: String) -> (CallLog, NameRecorder, Box<CBCentralManager>) {
        let log = CallLog(label: "names.central")
        let recorder = NameRecorder(log: log, name: name)
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.inProcess(air), application: OCBApplication())) {
            Box(value: CBCentralManager(delegate: recorder, queue: log.queue))
        }
        return (log, recorder, manager)
    }

    static func database(deviceName: String) throws -> GATTDatabase {
        var database = GATTDatabase()
        try database.addGAPService(deviceName: deviceName)
        try database.addGATTService()
        return database
    }

    @Test func theNameReadAfterConnectingIsTheNameAndChangesWithThePeer() async throws {
        let air = InProcessAir(seed: 3201, label: "DeviceNameTests.air")
        defer { air.shutdown() }
        let peer = try await Self.peer(on: air, deviceName: "Thermostat (hall)", advertised: "Thermo")
        defer { peer.shutdown() }
        let (log, recorder, manager) = Self.central(on: air, wanting: "Thermo")
        try await waitFor("the GAP name read after connecting", on: log.queue, until: { log.entries.count >= 2 },
                          seen: { "central \(log.entries)" })
        #expect(log.entries == ["connect Thermo", "name Thermostat (hall)"])
        #expect(log.queue.sync { recorder.peripheral?.name } == "Thermostat (hall)")

        // The peer renames itself: its GAP service changed, Service Changed tells the central (which subscribed by
        // itself, as CoreBluetooth does), and the central reads the name again.
        let backend = try #require(manager.value.backend as? EngineCentralBackend)
        try await waitFor("the Service Changed subscription", until: { backend.peersWatchingServiceChanged > 0 },
                          seen: { "central \(log.entries)" })
        let gapRange = ATTHandleRange(start: 0x0001, end: 0x0005)
        peer.host.setGATTDatabase(try Self.database(deviceName: "Thermostat (kitchen)"), changedRange: gapRange)
        try await waitFor("the new name", on: log.queue, until: { log.entries.count >= 3 }, seen: { "central \(log.entries)" })
        #expect(log.entries.last == "name Thermostat (kitchen)")
        #expect(log.queue.sync { recorder.peripheral?.name } == "Thermostat (kitchen)")
        log.queue.sync { if let peripheral = recorder.peripheral { manager.value.cancelPeripheralConnection(peripheral) } }
    }

    @Test func aGAPNameLikeTheAdvertisedOneCallsNothing() async throws {
        let air = InProcessAir(seed: 3202, label: "DeviceNameTests.air2")
        defer { air.shutdown() }
        let peer = try await Self.peer(on: air, deviceName: "Same name", advertised: "Same name")
        defer { peer.shutdown() }
        let (log, recorder, manager) = Self.central(on: air, wanting: "Same name")
        try await waitFor("the connection", on: log.queue, until: { !log.entries.isEmpty }, seen: { "central \(log.entries)" })
        // The name is read before the Service Changed subscription is made (one bearer, requests in order).
        let backend = try #require(manager.value.backend as? EngineCentralBackend)
        try await waitFor("the Service Changed subscription", until: { backend.peersWatchingServiceChanged > 0 },
                          seen: { "central \(log.entries)" })
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.entries == ["connect Same name"])
        #expect(log.queue.sync { recorder.peripheral?.name } == "Same name")
        log.queue.sync { if let peripheral = recorder.peripheral { manager.value.cancelPeripheralConnection(peripheral) } }
    }
}
