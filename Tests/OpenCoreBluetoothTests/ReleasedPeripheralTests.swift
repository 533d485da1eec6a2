import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

/// A connected `CBPeripheral` the app lets go is disconnected (iOS's "API MISUSE: Cancelling connection for unused
/// peripheral"); asked for again at once, while that link is still ending, the peer gets a new connection rather
/// than the old link's end. Seed 001's central meets this after a restoration: its `willRestoreState` keeps no
/// peripheral, and it finds the same one again by scanning.
@Suite struct ReleasedPeripheralTests {
    @Test func aPeerAskedForWhileItsReleasedLinkEndsIsConnectedAgain() async throws {
        let ear = ReleaseEar()
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 77)) {
            let peripheral = PeripheralBluetoothManager(delegate: ear)
            let central = ReleasingCentral(ear: ear)
            return (peripheral, central)
        }
        try await waitFor("the first connection", until: { ear.events.contains("connected 1") }, seen: { "\(ear.events)" })
        // Let the connected peripheral go (its link is cancelled), and at once ask for the same peer again.
        await onMain { apps.value.1.releaseAndConnectAgain() }
        try await waitFor("the second connection", until: { ear.events.contains("connected 2") }, seen: { "\(ear.events)" })
        let misuse = await onMain { apps.value.1.manager?.misuseLog ?? [] }
        #expect(misuse.count == 1 && misuse.first?.contains("Cancelling connection for unused peripheral") == true, "\(misuse)")
        // The old link's end is nobody's: the new peripheral is not told of it.
        #expect(!ear.events.contains { $0.hasPrefix("disconnected") }, "\(ear.events)")
        #expect(await onMain { apps.value.1.peripheral?.state } == .connected)
    }
}

private final class ReleaseEar: PeripheralBlueEar, @unchecked Sendable {
    private let lock = NSLock()
    private var _events: [String] = []
    var events: [String] { lock.withLock { _events } }
    func add(_ event: String) { lock.withLock { _events.append(event) } }
    func didStartConfiguration() {}
    func didStartAdvertising() {}
    func didSendData() {}
    func didReceiveData() {}
}

/// Connects to seed 001's peripheral; told to, drops the connected peripheral and connects to the same peer
/// through a new object.
private final class ReleasingCentral: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    let ear: ReleaseEar
    var manager: CBCentralManager?
    var peripheral: CBPeripheral?
    private var connections = 0

    init(ear: ReleaseEar) {
        self.ear = ear
        super.init()
        manager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [CBUUID(string: "0cdbe648-eed0-11e6-bc64-92361f002671")]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil, connections == 0 else { return }
        central.stopScan()
        self.peripheral = peripheral
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connections += 1
        ear.add("connected \(connections)")
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        ear.add("disconnected \(String(describing: error))")
    }

    func releaseAndConnectAgain() {
        guard let manager, let identifier = peripheral?.identifier else { return }
        peripheral = nil
        guard let again = manager.retrievePeripherals(withIdentifiers: [identifier]).first else { return ear.add("not retrieved") }
        peripheral = again
        manager.connect(again)
    }
}
