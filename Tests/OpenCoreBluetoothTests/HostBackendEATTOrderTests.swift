import Dispatch
import Foundation
import BluetoothRuntime
import Host
import L2CAP
import StackLauncher
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let orderServiceUUID = CBUUID(string: "0EA70000-0000-4000-8000-00000000EA77")
private nonisolated(unsafe) let slowWriteUUID = CBUUID(string: "0EA70001-0000-4000-8000-00000000EA77")
private nonisolated(unsafe) let quickReadUUID = CBUUID(string: "0EA70002-0000-4000-8000-00000000EA77")

/// Needs encryption to be written (so the link is paired and its Enhanced ATT bearers open), answers each write
/// only `delay` later, and answers reads at once.
private final class SlowWritePeripheral: MainQueuePeripheral, @unchecked Sendable {
    static let delay = 0.3
    var written: [String] = []

    override func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        publishAndAdvertise(orderServiceUUID, [
            CBMutableCharacteristic(type: slowWriteUUID, properties: [.write], value: nil, permissions: [.writeEncryptionRequired]),
            CBMutableCharacteristic(type: quickReadUUID, properties: [.read], value: nil, permissions: [.readable]),
        ])
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests { written.append(request.value.map { String(decoding: $0, as: UTF8.self) } ?? "nil") }
        guard let first = requests.first else { return }
        DispatchQueue.main.asyncAfter(deadline: .now() + Self.delay) { peripheral.respond(to: first, withResult: .success) }
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        request.value = Data("quick".utf8)
        peripheral.respond(to: request, withResult: .success)
    }
}

/// Writes once (pairing on demand), waits for the host's Enhanced ATT bearers, then writes the slow
/// characteristic and at once reads the quick one; logs the callbacks in the order they come.
private final class OrderingCentral: ConnectingCentral, @unchecked Sendable {
    let bearers = LockedValue(0)
    var subscription: LaunchedStack.EventSubscription?
    var characteristics: [CBCharacteristic] = []

    init() { super.init(service: orderServiceUUID) }

    override func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn, subscription == nil, let stack = (manager.backend as? EngineCentralBackend)?.launchedStack {
            let bearers = self.bearers
            subscription = stack.addEventHandler { event in
                if case .enhancedATTBearerOpened = event { bearers.withLock { $0 += 1 } }
            }
        }
        super.centralManagerDidUpdateState(central)
    }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        characteristics = service.characteristics ?? []
        guard let slow = characteristics.first(where: { $0.uuid == slowWriteUUID }) else { return }
        peripheral.writeValue(Data("pair".utf8), for: slow, type: .withResponse)
    }

    /// The app's two operations, one right after the other.
    func writeThenRead() {
        guard let peripheral, let slow = characteristics.first(where: { $0.uuid == slowWriteUUID }),
              let quick = characteristics.first(where: { $0.uuid == quickReadUUID }) else { return }
        peripheral.writeValue(Data("ordered".utf8), for: slow, type: .withResponse)
        peripheral.readValue(for: quick)
    }

    override func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append(error.map { "write error \($0)" } ?? "written")
    }

    override func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append(error.map { "read error \($0)" } ?? "read " + (characteristic.value.map { String(decoding: $0, as: UTF8.self) } ?? "nil"))
    }
}

/// With Enhanced ATT (Core 5.4 Vol 3 Part F §3.2.11) a connection has several bearers, and requests on different
/// bearers complete in any order; CoreBluetooth keeps an app's operations on one bearer, so the app hears them
/// in the order it asked. A write the server answers late is followed at once by a read the server answers at
/// once: the read must not overtake it.
@Suite struct HostBackendEATTOrderTests {
    @Test func operationsCompleteInCallOrderOverEnhancedATT() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 71)) { (SlowWritePeripheral(), OrderingCentral()) }
        try await waitFor("the first write, after pairing on demand", until: { apps.value.1.log == ["written"] },
                          seen: { "central \(apps.value.1.log), peripheral written \(apps.value.0.written)" })
        try await waitFor("the central's Enhanced ATT bearers", until: { apps.value.1.bearers.load() >= 3 },
                          seen: { "\(apps.value.1.bearers.load()) bearers opened" })
        await onMain { apps.value.1.writeThenRead() }
        try await waitFor("the write and the read", until: { apps.value.1.log.count == 3 },
                          seen: { "central \(apps.value.1.log), peripheral written \(apps.value.0.written)" })
        let log = await onMain { apps.value.1.log }
        let written = await onMain { apps.value.0.written }
        #expect(log == ["written", "written", "read quick"], "\(log)")
        #expect(written == ["pair", "ordered"], "\(written)")
    }
}
