import BlueZ
import BlueZTestSupport
import BluetoothCore
import BluetoothRuntime
import DBus
import Foundation
import TestSupport
import Testing
@testable import OpenCoreBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// The BlueZ module's peripheral (under bluetoothd's engine) against a bluetoothd stand-in on a real dbus-daemon: notifications through the
/// socket bluetoothd acquires (AcquireNotify), whose full buffer is `updateValue`'s back-pressure.
@Suite(.timeLimit(.minutes(3)))
struct BlueZPeripheralTests {
    @Test func updateValueWaitsForBluetoothdToReadTheSocket() async throws {
        guard let (bus, bluetoothd) = try await startBluetoothd() else { return }
        defer { bluetoothd.connection.close(); Task { await bus.stop() } }
        let events = LockedValue<[String]>([])
        let backend = BlueZPeripheral(adapter: "hci0", busAddress: bus.address, report: { _ in }, pairingAgent: nil)
        backend.start { event in
            let text: String
            switch event {
            case .stateChanged(let state): text = "state \(state)"
            case .subscribed(_, let id): text = "subscribed \(id)"
            case .unsubscribed(_, let id): text = "unsubscribed \(id)"
            case .readyToUpdateSubscribers: text = "ready"
            default: return
            }
            events.withLock { $0.append(text) }
        }
        defer { backend.shutdown() }
        #expect(await poll(within: .seconds(60)) { events.load().contains("state \(BlueZAdapterState.poweredOn)") })
        let uuid = try BluetoothUUID(string: "5E570010-0000-4000-8000-0000000B1E2E")
        let service = BlueZLocalService(id: 1, uuid: try BluetoothUUID(string: "5E570000-0000-4000-8000-0000000B1E2E"), isPrimary: true,
                                        includedServiceIDs: [], characteristics: [
            BlueZLocalCharacteristic(id: 7, uuid: uuid, properties: 0x10, staticValue: nil, descriptors: []),
        ])
        let added = LockedValue<Result<Void, BlueZCallError>?>(nil)
        backend.addService(service) { added.store($0) }
        #expect(await poll(within: .seconds(60)) { added.load() != nil })
        let path = try #require(try await bluetoothd.applicationCharacteristic(uuid.fullString.lowercased()))

        let acquired = try await bluetoothd.acquireNotify(path, mtu: 100)
        #expect(await poll(within: .seconds(60)) { events.load().contains("subscribed 7") })
        // Values longer than the MTU allows are cut to MTU - 3 (one notification each).
        #expect(backend.updateValue([UInt8](repeating: 0xAB, count: 200), characteristicID: 7))
        var buffer = [UInt8](repeating: 0, count: 1024)
        #expect(recv(acquired.fd, &buffer, buffer.count, 0) == 97)

        // Nobody reads: the socket fills, updateValue says no (queueing nothing)…
        var accepted = 0
        while backend.updateValue([UInt8](repeating: UInt8(truncatingIfNeeded: accepted), count: 20), characteristicID: 7) {
            accepted += 1
            if accepted > 1_000_000 { break }
        }
        #expect(accepted > 0 && accepted < 1_000_000)
        #expect(!events.load().contains("ready"))
        // …until bluetoothd reads: then the backend says it is ready again, once.
        var drained = 0
        while recv(acquired.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 { drained += 1 }
        #expect(drained == accepted)
        #expect(await poll(within: .seconds(60)) { events.load().contains("ready") })
        #expect(events.load().filter { $0 == "ready" }.count == 1)

        // bluetoothd closes its end when the last central unsubscribes.
        close(acquired.fd)
        #expect(await poll(within: .seconds(60)) { events.load().contains("unsubscribed 7") })
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
