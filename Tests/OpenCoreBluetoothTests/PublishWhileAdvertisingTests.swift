import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private nonisolated(unsafe) let mainServiceUUID = CBUUID(string: "5E570000-0000-4000-8000-0000000AD0E5")
private nonisolated(unsafe) let staticCharacteristicUUID = CBUUID(string: "5E570001-0000-4000-8000-0000000AD0E5")
private nonisolated(unsafe) let dynamicCharacteristicUUID = CBUUID(string: "5E570002-0000-4000-8000-0000000AD0E5")
private nonisolated(unsafe) let includedServiceUUID = CBUUID(string: "180F")
private let staticValue = Data("served at once".utf8)

/// A peripheral-manager delegate that publishes at power-on and logs its callbacks.
private final class EagerPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: CallLog
    var onState: ((CBPeripheralManager) -> Void)?

    init(log: CallLog) { self.log = log }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        log.add("state \(peripheral.state.rawValue)")
        onState?(peripheral)
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        log.add("added \(service.uuid.uuidString)\(error.map { " \($0)" } ?? "")")
    }
    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: (any Error)?) {
        log.add("advertising\(error.map { " \($0)" } ?? "")")
    }
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        log.add("read request")
        request.value = Data([0x2A])
        peripheral.respond(to: request, withResult: .success)
    }
}

/// A secondary service included by a primary one holding a static characteristic (with a user description) and a
/// dynamic one: the shape state restoration republishes.
private func makeServices() -> [CBMutableService] {
    let included = CBMutableService(type: includedServiceUUID, primary: false)
    let service = CBMutableService(type: mainServiceUUID, primary: true)
    let fixed = CBMutableCharacteristic(type: staticCharacteristicUUID, properties: [.read], value: staticValue,
                                        permissions: [.readable])
    fixed.descriptors = [CBMutableDescriptor(type: CBUUID(string: CBUUIDCharacteristicUserDescriptionString), value: "Fixed")]
    let dynamic = CBMutableCharacteristic(type: dynamicCharacteristicUUID, properties: [.read, .write, .notify],
                                          value: nil, permissions: [.readable, .writeable])
    service.characteristics = [fixed, dynamic]
    service.includedServices = [included]
    return [included, service]
}

@Suite(.serialized) struct PublishWhileAdvertisingTests {
    /// A peripheral manager that publishes two services and starts advertising in the same breath (no wait for
    /// `didAdd`), as a restored manager does at power-on: a central that connects discovers the services and
    /// their characteristics and reads both values (the static one from the database, the dynamic one from the
    /// app), and neither side is left with a request outstanding.
    @Test func servicesPublishedWhileAdvertisingAreDiscoveredAndRead() async throws {
        let provider = HostBackend.privateAirProvider(seed: 75)
        let peripheralLog = CallLog(label: "eager.peripheral")
        let app = EagerPeripheral(log: peripheralLog)
        app.onState = { manager in
            guard manager.state == .poweredOn else { return }
            makeServices().forEach(manager.add)
            manager.startAdvertising([CBAdvertisementDataLocalNameKey: "Eager",
                                      CBAdvertisementDataServiceUUIDsKey: [mainServiceUUID]])
        }
        let manager = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBPeripheralManager(delegate: app, queue: peripheralLog.queue)
        }

        let centralLog = CallLog(label: "eager.central")
        let reader = CentralRecorder(log: centralLog)
        reader.onState = { central in
            if central.state == .poweredOn { central.scanForPeripherals(withServices: [mainServiceUUID]) }
        }
        let target = LockedBox<CBPeripheral?>(nil)
        reader.onDiscover = { central, peripheral, _, _ in
            guard target.value == nil else { return }
            target.value = peripheral
            central.stopScan()
            central.connect(peripheral)
        }
        reader.onConnect = { peripheral in
            peripheral.delegate = reader
            peripheral.discoverServices([mainServiceUUID])
        }
        reader.onServices = { peripheral in
            if let service = peripheral.services?.first { peripheral.discoverCharacteristics(nil, for: service) }
        }
        reader.onCharacteristics = { peripheral, service in
            for characteristic in service.characteristics ?? [] { peripheral.readValue(for: characteristic) }
        }
        let central = CBBackendRegistry.$taskProvider.withValue(provider) {
            CBCentralManager(delegate: reader, queue: centralLog.queue)
        }
        let staticRead = "value \(staticCharacteristicUUID.uuidString) \([UInt8](staticValue))"
        let dynamicRead = "value \(dynamicCharacteristicUUID.uuidString) [42]"
        try await waitFor("both reads", on: centralLog.queue,
                          until: { centralLog.entries.contains(staticRead) && centralLog.entries.contains(dynamicRead) },
                          seen: { "central \(centralLog.entries), peripheral \(peripheralLog.entries)" })
        #expect(centralLog.entries.contains("services \(mainServiceUUID.uuidString)"))
        #expect(centralLog.entries.contains("characteristics \(staticCharacteristicUUID.uuidString),\(dynamicCharacteristicUUID.uuidString)"))
        #expect(peripheralLog.entries.filter { $0.hasPrefix("added") } == ["added \(includedServiceUUID.uuidString)", "added \(mainServiceUUID.uuidString)"])
        #expect(peripheralLog.entries.contains("advertising"))
        #expect(peripheralLog.entries.filter { $0 == "read request" }.count == 1)
        #expect(manager.misuseLog == [] && central.misuseLog == [])
        withExtendedLifetime((manager, central)) {}
    }
}
