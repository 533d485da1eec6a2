import BlueZ
import BlueZTestSupport
import BluetoothCore
@testable import BluetoothLE
import BluetoothRuntime
import DBus
import Foundation
import GATT
import TestSupport
import Testing

/// The async API on bluetoothd (``BluetoothStack/init(bluez:)``, issue 16) against the bluetoothd stand-in on a real
/// dbus-daemon: each operation becomes the D-Bus call BlueZ documents, each signal the event our host would give.
/// The real bluetoothd is in the VM scenario `bluez-async-api`.
@Suite(.timeLimit(.minutes(3)))
struct BlueZEngineTests {
    static let service = try! BluetoothUUID(string: FakeBluetoothd.serviceUUID)
    static let characteristic = try! BluetoothUUID(string: FakeBluetoothd.standardCharacteristics[0].uuid)
    static let refused = try! BluetoothUUID(string: FakeBluetoothd.standardCharacteristics[1].uuid)

    /// Runs `body` with a started stack on the stand-in; nothing when dbus-daemon is missing (a failure when the
    /// interop tools are required).
    private func withStack(_ body: (BluetoothStack, FakeBluetoothd) async throws -> Void) async throws {
        let ran = try await FakeBluetoothd.run { bluetoothd, bus in
            let stack = BluetoothStack(engine: BlueZEngine(adapter: "hci0", busAddress: bus.address))
            do {
                try await stack.start()
                try await body(stack, bluetoothd)
            } catch {
                await stack.shutdown()
                throw error
            }
            await stack.shutdown()
        }
        if !ran, TestDBusDaemon.required { Issue.record("OCB_REQUIRE_INTEROP=1 but dbus-daemon is not installed") }
    }

    @Test func aCentralThroughBluetoothd() async throws {
        try await withStack { stack, bluetoothd in
            // The adapter's Address property.
            #expect(await stack.localAddress().description == "00:AA:01:00:00:23")
            var found: Advertisement?
            for try await advertisement in stack.scan(services: [Self.service]) {
                found = advertisement
                break
            }
            let advertisement = try #require(found)
            #expect(advertisement.localName == "Fake" && advertisement.address.description == FakeBluetoothd.deviceAddress)
            #expect(advertisement.manufacturerData?.company.rawValue == 0x004C)

            let peripheral = try await stack.connect(to: advertisement, timeout: .seconds(20))
            #expect(peripheral.connection.role == .central && peripheral.isConnected)
            let services = try await peripheral.discoverServices()
            #expect(services.map(\.uuid) == [Self.service])
            let characteristics = try await peripheral.discoverCharacteristics(of: services[0])
            #expect(characteristics.map(\.uuid) == [Self.characteristic, Self.refused])
            #expect(characteristics[0].valueHandle == 0x0012)
            // bluetoothd's MTU property, known once the services were resolved.
            #expect(await eventually { peripheral.mtu == Int(FakeBluetoothd.mtu) }, "\(peripheral.mtu)")
            #expect(try await peripheral.read(characteristics[0]) == [1, 2, 3])

            // bluetoothd's refusal is the ATT error it stands for.
            await #expect(throws: BluetoothLEError.self) { _ = try await peripheral.read(characteristics[1]) }

            // Notifications: StartNotify, then the Value signals, in order.
            let values = try await peripheral.notifications(for: characteristics[0])
            var received: [[UInt8]] = []
            for await value in values {
                received.append(value)
                if received.count == FakeBluetoothd.notifications.count { break }
            }
            #expect(received == FakeBluetoothd.notifications)

            try await peripheral.write(characteristics[0], value: [7])
            try await peripheral.write(characteristics[0], value: [8], type: .withoutResponse)
            // A Write Command returns once handed to bluetoothd; its call arrives a moment later.
            #expect(await eventually { bluetoothd.calls.contains(#"WriteValue [8] ["type": <"command">]"#) }, "\(bluetoothd.calls)")
            let calls = bluetoothd.calls
            #expect(calls.contains(#"WriteValue [7] ["type": <"request">]"#), "\(calls)")
            // The stream's end unsubscribed.
            #expect(calls.contains("StartNotify ") && calls.contains("StopNotify "))

            // What bluetoothd's API has no call for is refused, not faked.
            await #expect(throws: BluetoothLEError.self) {
                _ = try await peripheral.perform(.readMultipleCharacteristicValues(handles: [0x0012, 0x0015]))
            }
            // pair(): Device1.Pair with our agent; its Numeric Comparison prompt reaches the stack's delegate. Refused
            // first (bluetoothd's AuthenticationRejected), then confirmed.
            let delegate = ComparisonDelegate()
            stack.setPairingDelegate(delegate)
            delegate.accept.store(false)
            await #expect(throws: PairingError.self) { _ = try await peripheral.pair() }
            delegate.accept.store(true)
            let outcome = try await peripheral.pair()
            #expect(outcome.method == .numericComparison && outcome.authenticated == true && outcome.bonded, "\(outcome); bluetoothd saw \(bluetoothd.calls)")
            #expect(delegate.values.load() == [FakeBluetoothd.comparisonValue, FakeBluetoothd.comparisonValue])
            #expect(bluetoothd.agentCapability == "KeyboardDisplay")
            #expect(bluetoothd.calls.filter { $0 == "Pair " }.count == 2)

            // bluetoothd does not say who initiated a link: the device we connected to must not also appear as a
            // central connected to us.
            #expect(await stack.resources().links == 1)

            try await peripheral.disconnect()
            #expect(!peripheral.isConnected)
            #expect(bluetoothd.calls.last == "Disconnect ")
            let quiet = await eventually { await stack.resources().isQuiescent }
            let held = await stack.resources()
            #expect(quiet, "\(held)")
        }
    }

    @Test func aServerThroughBluetoothd() async throws {
        try await withStack { stack, bluetoothd in
            let writes = Recorded<[UInt8]>()
            let level = Characteristic(BluetoothUUID(0x2A19), properties: [.read, .write, .notify], value: [5])
                .onWrite { write in writes.append(write.value) }
            let answered = Characteristic(BluetoothUUID(0xFFF1), properties: [.read], value: [])
                .onRead { read in Array("asked at \(read.offset)".utf8) }
            try await stack.publish {
                Service(BluetoothUUID(0x180F)) {
                    level
                    answered
                }
            }
            let centrals = stack.connections()
            let advertising = try await stack.advertise(name: "LE over bluez", services: [BluetoothUUID(0x180F)])
            #expect(bluetoothd.isServing)
            // bluetoothd advertises a name, service UUIDs and manufacturer data, connectable: anything else is refused,
            // not dropped.
            await #expect(throws: BluetoothLEError.self) { _ = try await stack.advertise(name: "x", connectable: false) }
            #expect(bluetoothd.isServing)

            bluetoothd.centralConnects()
            var iterator = centrals.makeAsyncIterator()
            let central = try #require(await iterator.next())
            #expect(central.address.description == FakeBluetoothd.deviceAddress && central.connection.role == .peripheral)

            let levelPath = try #require(try await bluetoothd.applicationCharacteristic("00002a19-0000-1000-8000-00805f9b34fb"))
            let answeredPath = try #require(try await bluetoothd.applicationCharacteristic("0000fff1-0000-1000-8000-00805f9b34fb"))
            let read = try await bluetoothd.callApplication(levelPath, "ReadValue", [FakeBluetoothd.options()])
            #expect(read.body.first?.bytesValue == [5])
            let deferred = try await bluetoothd.callApplication(answeredPath, "ReadValue", [FakeBluetoothd.options(["offset": .uint16(3)])])
            #expect(deferred.body.first?.bytesValue == Array("ed at 3".utf8))

            _ = try await bluetoothd.callApplication(levelPath, "WriteValue", [.bytes([6]), FakeBluetoothd.options()])
            #expect(await eventually { writes.values == [[6]] })
            #expect(level.value == [6])
            // Longer than the value may be: Invalid Attribute Value Length, as bluetoothd's error.
            let tooLong = try? await bluetoothd.callApplication(
                levelPath, "WriteValue", [.bytes([UInt8](repeating: 1, count: 513)), FakeBluetoothd.options()])
            #expect(tooLong == nil || tooLong?.errorName == "org.bluez.Error.InvalidValueLength")

            try await bluetoothd.watchApplicationSignals()
            _ = try await bluetoothd.callApplication(levelPath, "StartNotify", [])
            #expect(await eventually { level.subscribedConnections == [central.connectionHandle] })
            try await stack.notify(level, value: [42])
            #expect(await eventually { bluetoothd.signalled(levelPath).contains([42]) }, "\(bluetoothd.signalled(levelPath))")

            await advertising.stop()
            // An L2CAP server is a kernel socket bound to the adapter's address and the PSM: here (no such adapter
            // in the kernel) the kernel refuses it, and the refusal reaches the caller.
            await #expect(throws: BluetoothLEError.self) { _ = try await stack.publishL2CAPChannel(psm: 0x0081) }
            // A Security Request has no D-Bus call: refused with the reason.
            await #expect(throws: PairingError.self) { _ = try await central.requestSecurity() }
            _ = central
        }
    }

    @Test func noBluetoothdIsOneClearFailure() async throws {
        let stack = BluetoothStack(engine: BlueZEngine(adapter: "hci0", busAddress: "unix:path=/nonexistent/bus"))
        await #expect(throws: BluetoothLEError.self) { try await stack.start() }
        await stack.shutdown()
        #expect(await stack.resources().isQuiescent)
    }
}

/// Answers Numeric Comparison as told and records the values shown.
private final class ComparisonDelegate: PairingDelegate {
    let accept = LockedValue(true)
    let values = LockedValue<[UInt32]>([])
    func confirmNumericValue(_ value: UInt32, peer: BluetoothAddress) async -> Bool {
        values.withLock { $0.append(value) }
        return accept.load()
    }
    func enterPasskey(peer: BluetoothAddress) async -> UInt32? { nil }
    func displayPasskey(_ passkey: UInt32, peer: BluetoothAddress) async {}
    func acceptJustWorks(peer: BluetoothAddress) async -> Bool { true }
}
