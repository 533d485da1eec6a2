import BlueZTestSupport
import DBus
import Foundation
import TestSupport
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let fakeServiceUUID = CBUUID(string: FakeBluetoothd.serviceUUID)
private nonisolated(unsafe) let fakeCharacteristicUUID = CBUUID(string: FakeBluetoothd.standardCharacteristics[0].uuid)

/// The BlueZ backend's central role through CoreBluetooth's API, against a bluetoothd stand-in on a real dbus-daemon:
/// scan, connect, discover, read, notify, write, disconnect, each mapped to the D-Bus calls BlueZ documents.
@Suite(.timeLimit(.minutes(1)))
struct BlueZCentralBackendTests {
    @Test func aCentralOnBluetoothd() async throws {
        guard let bus = try await TestDBusDaemon.start() else {
            if TestDBusDaemon.required { Issue.record("OCB_REQUIRE_INTEROP=1 but dbus-daemon is not installed") }
            return
        }
        defer { Task { await bus.stop() } }
        let bluetoothd = try await FakeBluetoothd(bus: bus)
        defer { bluetoothd.connection.close() }
        let provider = CBBackendProvider(makeCentral: { BlueZCentralBackend(adapter: "hci0", busAddress: bus.address) },
                                         makePeripheral: { nil })
        let log = CallLog(label: "bluez.central")
        let app = CentralRecorder(log: log)
        let kept = LockedBox<CBPeripheral?>(nil)
        app.onState = { central in if central.state == .poweredOn { central.scanForPeripherals(withServices: [fakeServiceUUID]) } }
        app.onDiscover = { central, peripheral, data, _ in
            guard kept.value == nil else { return }
            kept.value = peripheral
            central.stopScan()
            central.connect(peripheral)
        }
        app.onConnect = { peripheral in
            peripheral.delegate = app
            peripheral.discoverServices([fakeServiceUUID])
        }
        app.onServices = { peripheral in
            if let service = peripheral.services?.first { peripheral.discoverCharacteristics(nil, for: service) }
        }
        let writeLength = LockedBox<Int?>(nil)
        app.onCharacteristics = { peripheral, service in
            guard let characteristic = service.characteristics?.first else { return }
            // bluetoothd's MTU property (185), known once the services were resolved.
            writeLength.value = peripheral.maximumWriteValueLength(for: .withoutResponse)
            peripheral.readValue(for: characteristic)
        }
        app.onValue = { peripheral, characteristic, _ in
            if characteristic.value == Data([1, 2, 3]) { peripheral.setNotifyValue(true, for: characteristic) }
            if characteristic.value == Data([9]) { peripheral.writeValue(Data([7]), for: characteristic, type: .withResponse) }
        }
        let managerBox = LockedBox<CBCentralManager?>(nil)
        app.onWrite = { peripheral, _, _ in managerBox.value?.cancelPeripheralConnection(peripheral) }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider) { CBCentralManager(delegate: app, queue: log.queue) }
        managerBox.value = manager
        try await waitFor("the exchange through bluetoothd", on: log.queue, until: { log.entries.contains("disconnect nil") },
                          seen: { "\(log.entries); bluetoothd saw \(bluetoothd.calls)" })
        let characteristicLine = "characteristics \(fakeCharacteristicUUID.uuidString),\(FakeBluetoothd.standardCharacteristics[1].uuid.uppercased())"
        #expect(log.entries.contains("discover Fake"))
        #expect(log.entries.contains(characteristicLine))
        #expect(log.entries.contains("value \(fakeCharacteristicUUID.uuidString) [1, 2, 3]"))
        #expect(log.entries.contains("value \(fakeCharacteristicUUID.uuidString) [9]"))
        #expect(log.entries.contains("wrote \(fakeCharacteristicUUID.uuidString)"))
        let calls = bluetoothd.calls
        #expect(calls.first == #"SetDiscoveryFilter ["DuplicateData": <false>, "Transport": <"le">, "UUIDs": <["\#(fakeServiceUUID.bluetoothUUID.fullString.lowercased())"]>]"#)
        #expect(calls.contains("StartDiscovery ") && calls.contains("StopDiscovery ") && calls.contains("Connect "))
        #expect(calls.contains("ReadValue []") && calls.contains("StartNotify "))
        #expect(calls.contains(#"WriteValue [7] ["type": <"request">]"#))
        #expect(calls.last == "Disconnect ")
        #expect(writeLength.value == 182)
        withExtendedLifetime(manager) {}
    }
}
