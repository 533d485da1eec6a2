import BlueZ
import BlueZTestSupport
import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import GATT
import DBus
import Foundation
import TestSupport
import Testing
@testable import OpenCoreBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// bluetoothd's engine as a GATT server against a bluetoothd stand-in on a real dbus-daemon: notifications through
/// the socket bluetoothd acquires (AcquireNotify), whose full buffer is `updateValue`'s back-pressure.
@Suite(.timeLimit(.minutes(3)))
struct BluetoothdNotifySocketTests {
    @Test func updateValueWaitsForBluetoothdToReadTheSocket() async throws {
        guard let (bus, bluetoothd) = try await startBluetoothd() else { return }
        defer { bluetoothd.connection.close(); Task { await bus.stop() } }
        let events = LockedValue<[String]>([])
        let engine = BlueZEngine(adapter: "hci0", busAddress: bus.address)
        engine.addEventHandler { event in
            let text: String
            switch event {
            case .gattServer(.subscriptionChanged(_, let handle, let configuration)):
                text = configuration.isEmpty ? "unsubscribed \(handle)" : "subscribed \(handle)"
            case .readyToSend: text = "ready"
            default: return
            }
            events.withLock { $0.append(text) }
        }
        defer { engine.shutdown() }
        let started = LockedValue<Result<ControllerInfo, HostError>?>(nil)
        engine.start { started.store($0) }
        #expect(await poll(within: .seconds(60)) { started.load() != nil })
        _ = try #require(started.load()).get()
        let uuid = try BluetoothUUID(string: "5E570010-0000-4000-8000-0000000B1E2E")
        let service = GATTServiceDefinition(uuid: try BluetoothUUID(string: "5E570000-0000-4000-8000-0000000B1E2E"), characteristics: [
            GATTCharacteristicDefinition(uuid: uuid, properties: [.notify], value: .stored([0]), maximumLength: 512),
        ])
        let published = LockedValue<Result<[GATTServiceHandles], HostError>?>(nil)
        engine.publish(deviceName: "test", [service]) { published.store($0) }
        #expect(await poll(within: .seconds(60)) { published.load() != nil })
        let handles = try #require(published.load()).get()
        let valueHandle = try #require(handles.first?.characteristics.first?.value)
        let path = try #require(try await bluetoothd.applicationCharacteristic(uuid.fullString.lowercased()))

        let acquired = try await bluetoothd.acquireNotify(path, mtu: 100)
        #expect(await poll(within: .seconds(60)) { events.load().contains("subscribed \(valueHandle)") })
        func update(_ value: [UInt8]) async -> Result<[UInt16], HostError>? {
            let result = LockedValue<Result<[UInt16], HostError>?>(nil)
            engine.updateValue(value, handle: valueHandle, to: nil, requireReady: true) { result.store($0) }
            _ = await poll(within: .seconds(60)) { result.load() != nil }
            return result.load()
        }
        // Values longer than the MTU allows are cut to MTU - 3 (one notification each).
        #expect((try? await update([UInt8](repeating: 0xAB, count: 200))?.get())?.count == 1)
        var buffer = [UInt8](repeating: 0, count: 1024)
        #expect(recv(acquired.fd, &buffer, buffer.count, 0) == 97)

        // Nobody reads: the socket fills, updateValue says busy (queueing nothing)…
        var accepted = 0
        while case .success? = await update([UInt8](repeating: UInt8(truncatingIfNeeded: accepted), count: 20)) {
            accepted += 1
            if accepted > 1_000_000 { break }
        }
        #expect(accepted > 0 && accepted < 1_000_000)
        #expect(!events.load().contains("ready"))
        // …until bluetoothd reads: then the engine says it is ready again, once per central.
        var drained = 0
        while recv(acquired.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { drained += 1 }
        #expect(drained == accepted)
        #expect(await poll(within: .seconds(60)) { events.load().contains("ready") })
        #expect(events.load().filter { $0 == "ready" }.count == 1)

        // bluetoothd closes its end when the last central unsubscribes.
        close(acquired.fd)
        #expect(await poll(within: .seconds(60)) { events.load().contains("unsubscribed \(valueHandle)") })
    }
}

/// A dbus-daemon of the test's own with the bluetoothd stand-in on it; nil (an issue when the interop tools are
/// required) when dbus-daemon is not installed. The caller stops both.
func startBluetoothd() async throws -> (TestDBusDaemon, FakeBluetoothd)? {
    guard let started = try await FakeBluetoothd.start() else {
        if TestDBusDaemon.required { Issue.record("OCB_REQUIRE_INTEROP=1 but dbus-daemon is not installed") }
        return nil
    }
    return started
}
