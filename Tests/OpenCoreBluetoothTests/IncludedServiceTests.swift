import Foundation
import StackLauncher
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let outerServiceUUID = CBUUID(string: "1C1D0000-0000-4000-8000-0000000A0032")
private nonisolated(unsafe) let innerServiceUUID = CBUUID(string: "1C1D0001-0000-4000-8000-0000000A0032")
private nonisolated(unsafe) let innerCharacteristicUUID = CBUUID(string: "1C1D0002-0000-4000-8000-0000000A0032")

/// A peripheral manager that publishes a secondary service and a primary one that includes it.
private final class IncludingPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log = CallLog(label: "included.peripheral")

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let inner = CBMutableService(type: innerServiceUUID, primary: false)
        inner.characteristics = [CBMutableCharacteristic(type: innerCharacteristicUUID, properties: [.read],
                                                         value: Data("inside".utf8), permissions: [.readable])]
        let outer = CBMutableService(type: outerServiceUUID, primary: true)
        outer.includedServices = [inner]
        // The included service first, as iOS requires.
        peripheral.add(inner)
        peripheral.add(outer)
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        log.add("added \(service.uuid.uuidString)\(error.map { " \($0)" } ?? "")")
        if service.uuid == outerServiceUUID {
            peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: "Including", CBAdvertisementDataServiceUUIDsKey: [outerServiceUUID]])
        }
    }
}

/// Discovers the primary services, the included service of the outer one, its characteristic, and reads it.
private final class IncludedReader: FirstDeviceCentral, @unchecked Sendable {
    init() { super.init(log: CallLog(label: "included.central"), services: [outerServiceUUID]) }

    override func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.discoverServices(nil)
    }
    override func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        let custom = (peripheral.services ?? []).filter { $0.uuid == outerServiceUUID || $0.uuid == innerServiceUUID }
        log.add("services \(custom.map(\.uuid.uuidString))")
        guard let outer = custom.first(where: { $0.uuid == outerServiceUUID }) else { return }
        peripheral.discoverIncludedServices(nil, for: outer)
    }
    override func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?) {
        let included = service.includedServices ?? []
        log.add("included \(included.map { "\($0.uuid.uuidString) primary \($0.isPrimary)" })\(error.map { " \($0)" } ?? "")")
        guard let inner = included.first else { return }
        peripheral.discoverCharacteristics([innerCharacteristicUUID], for: inner)
    }
    override func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return log.add("no characteristic") }
        peripheral.readValue(for: characteristic)
    }
    override func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.add("read \(String(decoding: characteristic.value ?? Data(), as: UTF8.self))")
    }
}

/// Issue 32 item 8: included services through OpenCoreBluetooth on both sides, over two host stacks (Core 5.4 Vol 3
/// Part G §3.2 Include declaration, §4.5.1 Find Included Services): a secondary service included by a primary one
/// is not among the primary services discovered, is found by `discoverIncludedServices`, marked not primary, and
/// its characteristic is read.
@Suite struct IncludedServiceTests {
    @Test func aSecondaryServiceIsFoundThroughTheServiceThatIncludesIt() async throws {
        let air = InProcessAir(seed: 3208, label: "included.air")
        defer { air.shutdown() }
        let provider = HostBackend.provider(.inProcess(air), application: OCBApplication())
        let peripheral = IncludingPeripheral(), central = IncludedReader()
        let managers = CBBackendRegistry.$taskProvider.withValue(provider) {
            Box(value: (CBPeripheralManager(delegate: peripheral, queue: peripheral.log.queue),
                        CBCentralManager(delegate: central, queue: central.log.queue)))
        }
        try await waitFor("the included characteristic read", on: central.log.queue,
                          until: { central.log.entries.contains { $0.hasPrefix("read") } },
                          seen: { "central \(central.log.entries), peripheral \(peripheral.log.entries)" })
        #expect(peripheral.log.entries == ["added \(innerServiceUUID.uuidString)", "added \(outerServiceUUID.uuidString)"])
        #expect(central.log.entries == [
            "services [\"\(outerServiceUUID.uuidString)\"]",
            "included [\"\(innerServiceUUID.uuidString) primary false\"]",
            "read inside",
        ])
        withExtendedLifetime(managers) {}
    }
}
