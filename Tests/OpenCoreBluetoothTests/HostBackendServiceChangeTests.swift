import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private let firstServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-0000000005C1")
private let secondServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-0000000005C2")

private final class ChangingPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!

    override init() {
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: firstServiceUUID, primary: true)
        service.characteristics = [CBMutableCharacteristic(type: CBUUID(string: "2A19"), properties: [.read], value: Data([99]), permissions: [.readable])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [firstServiceUUID]])
    }

    func addSecondService() {
        manager.add(CBMutableService(type: secondServiceUUID, primary: true))
    }
}

private final class WatchingCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    var log: [String] = []

    override init() {
        super.init()
        manager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [firstServiceUUID]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([firstServiceUUID, secondServiceUUID])
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        log.append("services " + (peripheral.services ?? []).map { $0.uuid == firstServiceUUID ? "first" : "second" }.joined(separator: ","))
    }

    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {
        log.append("modified " + invalidatedServices.map { $0.uuid == firstServiceUUID ? "first" : "second" }.joined(separator: ","))
        peripheral.discoverServices([firstServiceUUID, secondServiceUUID])
    }
}

@Suite struct HostBackendServiceChangeTests {
    /// The central subscribes to the peer's Service Changed indications by itself (as CoreBluetooth does); a
    /// service published while it is connected invalidates its services (`didModifyServices`), and discovering
    /// again finds both.
    @Test func servicePublishedWhileConnectedReachesTheCentralAsModifiedServices() async throws {
        let apps = await makeOnMain(with: HostBackend.privateAirProvider(seed: 42)) { (ChangingPeripheral(), WatchingCentral()) }
        try await waitFor("the first service discovery", until: { !apps.value.1.log.isEmpty }, seen: { "central \(apps.value.1.log)" })
        #expect(await onMain { apps.value.1.log } == ["services first"])
        // The backend enabled the peer's Service Changed indications by itself.
        let backend = try #require(await onMain { apps.value.1.manager.backend as? HostCentralBackend })
        try await waitFor("the Service Changed subscription", until: { backend.peersWatchingServiceChanged > 0 },
                          seen: { "\(backend.peersWatchingServiceChanged) peers watching, central \(apps.value.1.log)" })
        #expect(backend.peersWatchingServiceChanged == 1)
        await onMain { apps.value.0.addSecondService() }
        try await waitFor("the modified services and their rediscovery", until: { apps.value.1.log.count >= 3 },
                          seen: { "central \(apps.value.1.log)" })
        #expect(await onMain { apps.value.1.log } == ["services first", "modified first", "services first,second"])
    }
}
