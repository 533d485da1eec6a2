import BluetoothCore
import BluetoothRuntime
import Foundation
import Testing
@testable import OpenCoreBluetooth

/// A delegate implementing the iOS 17 disconnect callback as well as the old one.
private final class ModernDelegate: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    var kept: CBPeripheral?
    init(log: CallLog) { self.log = log }
    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
    }
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        kept = peripheral
        central.stopScan()
        central.connect(peripheral, options: [CBConnectPeripheralOptionEnableAutoReconnect: true])
    }
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) { log.add("connect") }
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log.add("old disconnect")
    }
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, timestamp: CFAbsoluteTime,
                        isReconnecting: Bool, error: (any Error)?) {
        log.add("disconnect reconnecting=\(isReconnecting) state=\(peripheral.state.rawValue) \(timestamp > 0)")
    }
}

private func connected(_ remote: FakeRemotePeripheral, backend: FakeCentralBackend, loop: ManualEventLoop, log: CallLog,
                       recorder: CentralRecorder) -> (CBCentralManager, CBPeripheral?, [CBCharacteristic]) {
    var kept: CBPeripheral?
    var characteristics: [CBCharacteristic] = []
    recorder.onState = { $0.state == .poweredOn ? $0.scanForPeripherals(withServices: nil) : () }
    recorder.onDiscover = { central, peripheral, _, _ in
        kept = peripheral
        peripheral.delegate = recorder
        central.stopScan()
        central.connect(peripheral)
    }
    recorder.onConnect = { $0.discoverServices(nil) }
    recorder.onServices = { $0.discoverCharacteristics(nil, for: $0.services![0]) }
    recorder.onCharacteristics = { _, service in characteristics = service.characteristics ?? [] }
    let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
        CBCentralManager(delegate: recorder, queue: log.queue)
    }
    settle(loop, log.queue)
    recorder.onState = nil
    recorder.onDiscover = nil
    recorder.onConnect = nil
    recorder.onServices = nil
    recorder.onCharacteristics = nil
    return (manager, kept, characteristics)
}

@Suite struct CentralEdgeTests {
    @Test func manyNotificationsArriveInOrderOnTheQueue() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = FakeRemotePeripheral(address: 0xA1, name: "N", services: [
            FakeService(uuid: BluetoothUUID(0xFFE0), characteristics: [FakeCharacteristic(uuid: BluetoothUUID(0xFFE1), properties: [.notify])]),
        ])
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let (manager, peripheral, characteristics) = connected(remote, backend: backend, loop: loop, log: log, recorder: recorder)
        let handle = try #require(remote.valueHandle(of: BluetoothUUID(0xFFE1)))
        try #require(peripheral != nil && characteristics.count == 1)
        peripheral?.setNotifyValue(true, for: characteristics[0])
        settle(loop, log.queue)
        for index in 0..<300 { backend.notify(remote, handle: handle, value: [UInt8(index & 0xFF), UInt8(index >> 8)]) }
        settle(loop, log.queue)
        let values = log.entries.filter { $0.hasPrefix("value FFE1") }
        #expect(values == (0..<300).map { "value FFE1 [\($0 & 0xFF), \($0 >> 8)]" })
        #expect(log.offQueue.isEmpty)
        #expect(loop.pendingWorkDescription == "nothing")
        #expect(manager.misuseLog.isEmpty)
    }

    @Test func notifyStateEdgeCases() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = FakeRemotePeripheral(address: 0xA2, name: "N", services: [
            FakeService(uuid: BluetoothUUID(0xFFE0), characteristics: [
                FakeCharacteristic(uuid: BluetoothUUID(0xFFE1), properties: [.indicate]),
                FakeCharacteristic(uuid: BluetoothUUID(0xFFE2), properties: [.read]),
            ]),
        ])
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let (manager, peripheral, characteristics) = connected(remote, backend: backend, loop: loop, log: log, recorder: recorder)
        let target = try #require(peripheral)
        // Already off: answered at once without asking the peer.
        target.setNotifyValue(false, for: characteristics[0])
        settle(loop, log.queue)
        #expect(log.entries.last == "notifying false")
        #expect(!backend.commands.contains { $0.hasPrefix("setNotifications") })
        // Indications are enabled through the same call.
        target.setNotifyValue(true, for: characteristics[0])
        settle(loop, log.queue)
        #expect(log.entries.last == "notifying true")
        #expect(characteristics[0].isNotifying)
        // A characteristic that can neither notify nor indicate.
        target.setNotifyValue(true, for: characteristics[1])
        settle(loop, log.queue)
        #expect(log.entries.last == "notifying false")
        #expect((recorder.lastError as? CBATTError)?.code == .requestNotSupported)
        #expect(manager.misuseLog.isEmpty)
    }

    @Test func commandsOnADisconnectedPeripheralAreMisuse() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = FakeRemotePeripheral(address: 0xA3, name: "D", services: [
            FakeService(uuid: BluetoothUUID(0xFFE0), characteristics: [FakeCharacteristic(uuid: BluetoothUUID(0xFFE1), properties: [.read])]),
        ])
        backend.add(remote)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let (manager, peripheral, characteristics) = connected(remote, backend: backend, loop: loop, log: log, recorder: recorder)
        let target = try #require(peripheral)
        manager.cancelPeripheralConnection(target)
        settle(loop, log.queue)
        #expect(target.state == .disconnected)
        #expect(target.services == nil)
        let before = backend.commands.count
        target.readValue(for: characteristics[0])
        target.discoverServices(nil)
        settle(loop, log.queue)
        #expect(backend.commands.count == before)
        #expect(manager.misuseLog.suffix(2).allSatisfy { $0.hasSuffix("can only accept commands while in the connected state") })
        #expect(log.entries.last == "disconnect nil")
    }

    @Test func cancellingAPendingConnectionReportsADisconnection() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let log = CallLog()
        let recorder = CentralRecorder(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: recorder, queue: log.queue)
        }
        settle(loop, log.queue)
        // A device known by identifier but not in range: connect waits forever.
        let absent = FakeRemotePeripheral(address: 0xA4, name: "Far", services: [])
        let peripheral = manager.peripheral(for: absent.peer)
        manager.connect(peripheral)
        settle(loop, log.queue)
        #expect(peripheral.state == .connecting)
        manager.cancelPeripheralConnection(peripheral)
        #expect(peripheral.state == .disconnected)
        settle(loop, log.queue)
        #expect(log.entries == ["state poweredOn", "disconnect nil"])
        #expect(backend.state.withLock { $0.pendingConnects.isEmpty })
    }

    @Test func modernDisconnectCallbackReplacesTheOldOneAndAutoReconnectReconnects() throws {
        let loop = ManualEventLoop()
        let backend = FakeCentralBackend(loop: loop)
        let remote = FakeRemotePeripheral(address: 0xA5, name: "R", services: [])
        backend.add(remote)
        let log = CallLog()
        let delegate = ModernDelegate(log: log)
        let manager = CBBackendRegistry.$taskProvider.withValue(provider(central: backend)) {
            CBCentralManager(delegate: delegate, queue: log.queue)
        }
        settle(loop, log.queue)
        #expect(log.entries == ["connect"])
        backend.dropLink(remote.peer)
        settle(loop, log.queue)
        #expect(log.entries == ["connect", "disconnect reconnecting=true state=1 true", "connect"])
        #expect(delegate.kept?.state == .connected)
        manager.cancelPeripheralConnection(try #require(delegate.kept))
        settle(loop, log.queue)
        #expect(log.entries.last == "disconnect reconnecting=false state=0 true")
        #expect(!log.entries.contains("old disconnect"))
    }
}
