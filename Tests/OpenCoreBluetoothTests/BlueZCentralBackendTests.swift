import DBus
import Foundation
import TestSupport
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let fakeServiceUUID = CBUUID(string: "5E570000-0000-4000-8000-0000000B1E2E")
private nonisolated(unsafe) let fakeCharacteristicUUID = CBUUID(string: "5E570001-0000-4000-8000-0000000B1E2E")

/// A stand-in for bluetoothd on a test bus: it owns `org.bluez`, has adapter hci0 (powered), makes a device appear
/// when discovery starts, and answers Connect, ReadValue, WriteValue, StartNotify and Disconnect with the signals
/// bluetoothd sends (BlueZ's doc/org.bluez.*.rst). It checks the backend's calls; the real bluetoothd is in the VM
/// scenarios.
private final class FakeBluetoothd: @unchecked Sendable {
    static let adapter = "/org/bluez/hci0"
    static let device = "/org/bluez/hci0/dev_0A_1B_00_00_00_77"
    static let service = device + "/service0010"
    static let characteristic = service + "/char0011"

    let connection: DBusConnection
    private let lock = NSLock()
    private var _calls: [String] = []
    var calls: [String] { lock.withLock { _calls } }

    init(bus: TestDBusDaemon) async throws {
        connection = try await DBusConnection.connect(address: bus.address)
        _ = try await connection.call(.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                            interface: "org.freedesktop.DBus", member: "RequestName",
                                            body: [.string("org.bluez"), .uint32(4)]))
        connection.export(path: "/") { call in
            call.methodReturn([Self.managed([(Self.adapter, "org.bluez.Adapter1", ["Address": .string("00:AA:01:00:00:23"), "Powered": .boolean(true)])])])
        }
        for path in [Self.adapter, Self.device, Self.characteristic] {
            connection.export(path: path) { [weak self] call in self?.answer(call) }
        }
    }

    /// `a{oa{sa{sv}}}` from (path, interface, properties).
    static func managed(_ objects: [(String, String, [String: DBusValue])]) -> DBusValue {
        let properties = DBusType.array(.dictEntry(key: .string, value: .variant))
        let interfaces = DBusType.array(.dictEntry(key: .string, value: properties))
        return .dictionary(key: .objectPath, value: interfaces, objects.map { path, interface, values in
            (.objectPath(path), .dictionary(key: .string, value: properties, [(.string(interface), .properties(values))]))
        })
    }

    private func added(_ path: String, _ interface: String, _ properties: [String: DBusValue]) {
        let properties = DBusValue.properties(properties)
        _ = try? connection.send(DBusMessage(kind: .signal, path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                             member: "InterfacesAdded",
                                             body: [.objectPath(path), .dictionary(key: .string, value: properties.type, [(.string(interface), properties)])]))
    }

    private func changed(_ path: String, _ interface: String, _ properties: [String: DBusValue]) {
        _ = try? connection.send(DBusMessage(kind: .signal, path: path, interface: "org.freedesktop.DBus.Properties",
                                             member: "PropertiesChanged",
                                             body: [.string(interface), .properties(properties), .array(.string, [])]))
    }

    private func answer(_ call: DBusMessage) -> DBusMessage? {
        let member = call.member ?? "?"
        lock.withLock { _calls.append("\(member) \(call.body.map(\.description).joined(separator: " "))") }
        switch member {
        case "SetDiscoveryFilter", "StopDiscovery":
            return call.methodReturn()
        case "StartDiscovery":
            let reply = call.methodReturn()
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { [self] in
                added(Self.device, "org.bluez.Device1", [
                    "Address": .string("0A:1B:00:00:00:77"), "AddressType": .string("public"), "Name": .string("Fake"),
                    "RSSI": .int16(-50), "UUIDs": .array(.string, [.string(fakeServiceUUID.bluetoothUUID.fullString.lowercased())]),
                    "Connected": .boolean(false), "ServicesResolved": .boolean(false),
                ])
            }
            return reply
        case "Connect":
            _ = try? connection.send(call.methodReturn())
            changed(Self.device, "org.bluez.Device1", ["Connected": .boolean(true)])
            added(Self.service, "org.bluez.GattService1", ["UUID": .string(fakeServiceUUID.bluetoothUUID.fullString.lowercased()),
                                                          "Primary": .boolean(true), "Device": .objectPath(Self.device)])
            added(Self.characteristic, "org.bluez.GattCharacteristic1", [
                "UUID": .string(fakeCharacteristicUUID.bluetoothUUID.fullString.lowercased()), "Service": .objectPath(Self.service),
                "Flags": .array(.string, [.string("read"), .string("write"), .string("notify")]), "MTU": .uint16(185),
            ])
            changed(Self.device, "org.bluez.Device1", ["ServicesResolved": .boolean(true)])
            return nil
        case "ReadValue":
            return call.methodReturn([.bytes([1, 2, 3])])
        case "WriteValue":
            return call.methodReturn()
        case "StartNotify":
            _ = try? connection.send(call.methodReturn())
            changed(Self.characteristic, "org.bluez.GattCharacteristic1", ["Notifying": .boolean(true), "Value": .bytes([9])])
            return nil
        case "Disconnect":
            _ = try? connection.send(call.methodReturn())
            changed(Self.device, "org.bluez.Device1", ["Connected": .boolean(false), "ServicesResolved": .boolean(false)])
            return nil
        default:
            return call.errorReply(name: "org.bluez.Error.NotSupported", message: member)
        }
    }
}

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
        let characteristicLine = "characteristics \(fakeCharacteristicUUID.uuidString)"
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
