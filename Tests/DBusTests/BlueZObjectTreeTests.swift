import BlueZ
import DBus
import Foundation
import TestSupport
import Testing

/// The BlueZ client's view of bluetoothd's objects, against a stand-in that owns `org.bluez` on a real dbus-daemon
/// and speaks the freedesktop ObjectManager and Properties interfaces as bluetoothd does (the real bluetoothd is in
/// the VM scenarios: Scripts/vm/scenarios/bluez-seed001-central.sh).
@Suite(.timeLimit(.minutes(1)))
struct BlueZObjectTreeTests {
    static let device = "/org/bluez/hci0/dev_0A_1B_00_00_00_01"

    @Test func theTreeFollowsTheObjectManagerAndPropertiesSignals() async throws {
        guard let bus = try await startTestBus() else { return }
        defer { Task { await bus.stop() } }
        let bluetoothd = try await DBusConnection.connect(address: bus.address)
        defer { bluetoothd.close() }
        let owned = try await bluetoothd.call(.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                   interface: "org.freedesktop.DBus", member: "RequestName",
                                                   body: [.string("org.bluez"), .uint32(4)]))
        #expect(owned.body == [.uint32(1)])
        let adapter: DBusValue = .dictionary(key: .string, value: .array(.dictEntry(key: .string, value: .variant)), [
            (.string("org.bluez.Adapter1"), .properties(["Address": .string("00:AA:01:00:00:23"), "Powered": .boolean(true)])),
        ])
        bluetoothd.export(path: "/") { call in
            guard call.member == "GetManagedObjects" else { return call.errorReply(name: "org.bluez.Error.Failed", message: "no") }
            return call.methodReturn([.dictionary(key: .objectPath, value: adapter.type, [(.objectPath("/org/bluez/hci0"), adapter)])])
        }

        let client = try await DBusConnection.connect(address: bus.address)
        defer { client.close() }
        let tree = try await BlueZObjectTree.load(on: client)
        #expect(tree.properties("/org/bluez/hci0", "org.bluez.Adapter1")?["Powered"] == .boolean(true))
        let changes = LockedBoxDB<[String]>([])
        tree.observe { change in
            switch change {
            case .added(let path, let interface, _): changes.value.append("added \(path) \(interface)")
            case .changed(let path, let interface, let properties):
                changes.value.append("changed \(path) \(interface) \(properties.keys.sorted())")
            case .removed(let path, let interface): changes.value.append("removed \(path) \(interface)")
            }
        }

        func signal(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue]) throws {
            try bluetoothd.send(DBusMessage(kind: .signal, path: path, interface: interface, member: member, body: body))
        }
        let deviceProperties: DBusValue = .properties([
            "Address": .string("0A:1B:00:00:00:01"), "AddressType": .string("public"), "Name": .string("Peripheral - iOS"),
            "RSSI": .int16(-51), "UUIDs": .array(.string, [.string("0cdbe648-eed0-11e6-bc64-92361f002671")]),
        ])
        try signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", [
            .objectPath(Self.device),
            .dictionary(key: .string, value: deviceProperties.type, [(.string("org.bluez.Device1"), deviceProperties)]),
        ])
        try signal(Self.device, "org.freedesktop.DBus.Properties", "PropertiesChanged", [
            .string("org.bluez.Device1"), .properties(["RSSI": .int16(-40), "Connected": .boolean(true)]), .array(.string, [.string("Name")]),
        ])
        try signal("/", "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", [
            .objectPath(Self.device), .array(.string, [.string("org.bluez.Device1")]),
        ])
        #expect(await poll(within: .seconds(10)) { changes.value.count == 3 }, "\(changes.value)")
        #expect(changes.value == [
            "added \(Self.device) org.bluez.Device1",
            "changed \(Self.device) org.bluez.Device1 [\"Connected\", \"RSSI\"]",
            "removed \(Self.device) org.bluez.Device1",
        ])
        #expect(tree.properties(Self.device, "org.bluez.Device1") == nil)
        #expect(tree.objects(with: "org.bluez.Adapter1").map(\.path) == ["/org/bluez/hci0"])
    }

    @Test func pathsAndErrors() {
        #expect(BlueZPaths.device(adapter: "/org/bluez/hci1", address: "0a:1b:00:00:00:01") == "/org/bluez/hci1/dev_0A_1B_00_00_00_01")
        #expect(BlueZPaths.handle(of: Self.device + "/service000a/char000b") == 0x0B)
        #expect(BlueZPaths.handle(of: Self.device + "/service000a") == 0x0A)
        #expect(BlueZPaths.handle(of: Self.device + "/service000a/char000b/desc000d") == 0x0D)
        #expect(BlueZPaths.handle(of: Self.device) == nil)
        #expect(BlueZPaths.isUnder(Self.device + "/service000a", Self.device))
        #expect(!BlueZPaths.isUnder("/org/bluez/hci0/dev_0A_1B_00_00_00_010", Self.device))
        let attError = DBusError(.errorReply, "Operation failed with ATT error: 0x0e", name: "org.bluez.Error.Failed")
        #expect(BlueZErrors.attErrorCode(attError, reading: true) == 0x0E)
        #expect(BlueZErrors.attErrorCode(DBusError(.errorReply, "Not permitted", name: "org.bluez.Error.NotPermitted"), reading: true) == 0x02)
        #expect(BlueZErrors.attErrorCode(DBusError(.errorReply, "Not permitted", name: "org.bluez.Error.NotPermitted"), reading: false) == 0x03)
        #expect(BlueZErrors.attErrorCode(DBusError(.errorReply, "x", name: "org.bluez.Error.Failed"), reading: true) == nil)
        #expect(BlueZErrors.attErrorCode(DBusError(.timedOut, "x"), reading: true) == nil)
    }
}
