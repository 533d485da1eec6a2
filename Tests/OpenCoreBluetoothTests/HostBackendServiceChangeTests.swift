import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let firstServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-0000000005C1")
private nonisolated(unsafe) let secondServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-0000000005C2")

/// Publishes the first service; `addSecondService()` publishes another while connected.
private final class ChangingPeripheral: MainQueuePeripheral, @unchecked Sendable {
    override func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        publishAndAdvertise(firstServiceUUID, [CBMutableCharacteristic(type: CBUUID(string: "2A19"), properties: [.read],
                                                                       value: Data([99]), permissions: [.readable])])
    }

    func addSecondService() {
        manager.add(CBMutableService(type: secondServiceUUID, primary: true))
    }
}

/// Discovers both services (only the first exists at first), logs what it finds and each invalidation, and
/// discovers again after one.
private final class WatchingCentral: ConnectingCentral, @unchecked Sendable {
    init() { super.init(service: firstServiceUUID) }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([firstServiceUUID, secondServiceUUID])
    }

    override func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        log.append("services " + (peripheral.services ?? []).map { $0.uuid == firstServiceUUID ? "first" : "second" }.joined(separator: ","))
    }

    override func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {
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
        let backend = try #require(await onMain { apps.value.1.manager.backend as? EngineCentralBackend })
        try await waitFor("the Service Changed subscription", until: { backend.peersWatchingServiceChanged > 0 },
                          seen: { "\(backend.peersWatchingServiceChanged) peers watching, central \(apps.value.1.log)" })
        #expect(backend.peersWatchingServiceChanged == 1)
        await onMain { apps.value.0.addSecondService() }
        try await waitFor("the modified services and their rediscovery", until: { apps.value.1.log.count >= 3 },
                          seen: { "central \(apps.value.1.log)" })
        #expect(await onMain { apps.value.1.log } == ["services first", "modified first", "services first,second"])
    }
}
