import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

private let secureServiceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000E5C0")
private let secureCharacteristicUUID = CBUUID(string: "5E1F0001-0000-4000-8000-00000000E5C0")

/// Serves a value that needs an encrypted link to be read.
private final class SecurePeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!
    var reads = 0

    override init() {
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: secureServiceUUID, primary: true)
        service.characteristics = [CBMutableCharacteristic(type: secureCharacteristicUUID, properties: [.read], value: nil,
                                                           permissions: [.readEncryptionRequired])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [secureServiceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        reads += 1
        request.value = Data("secret".utf8)
        peripheral.respond(to: request, withResult: .success)
    }
}

private final class SecureCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    var log: [String] = []

    override init() {
        super.init()
        manager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [secureServiceUUID]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([secureServiceUUID])
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first else { return }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return }
        peripheral.readValue(for: characteristic)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            log.append("error \(error)")
        } else {
            log.append("read " + (characteristic.value.map { String(decoding: $0, as: UTF8.self) } ?? "nil"))
        }
    }
}

private let secureWriteUUID = CBUUID(string: "5E1F0002-0000-4000-8000-00000000E5C0")

/// Takes writes only on an encrypted link.
private final class SecureWritePeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!
    var written: [String] = []

    override init() {
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let service = CBMutableService(type: secureServiceUUID, primary: true)
        service.characteristics = [CBMutableCharacteristic(type: secureWriteUUID, properties: [.write], value: nil,
                                                           permissions: [.writeEncryptionRequired])]
        peripheral.add(service)
        peripheral.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [secureServiceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests { written.append(request.value.map { String(decoding: $0, as: UTF8.self) } ?? "nil") }
        if let first = requests.first { peripheral.respond(to: first, withResult: .success) }
    }
}

/// Writes "hello" with response to the first characteristic found.
private final class SecureWriteCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    var log: [String] = []

    override init() {
        super.init()
        manager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [secureServiceUUID]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([secureServiceUUID])
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first else { return }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard let characteristic = service.characteristics?.first else { return }
        peripheral.writeValue(Data("hello".utf8), for: characteristic, type: .withResponse)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        log.append(error.map { "error \($0)" } ?? "written")
    }
}

private struct Box<T>: @unchecked Sendable { let value: T }

private func onMain<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        DispatchQueue.main.async { continuation.resume(returning: body()) }
    }
}

@Suite struct HostBackendSecurityTests {
    /// A value with `readEncryptionRequired`: the first Read is refused with Insufficient Authentication by the
    /// peripheral's GATT server (before the app hears of it), the central's host pairs (Just Works) and sends
    /// the Read again, and the app's answer arrives — as CoreBluetooth pairs on demand.
    @Test func readNeedingEncryptionPairsOnDemand() async throws {
        let provider = HostBackend.privateAirProvider(seed: 99)
        let apps = await onMain {
            CBBackendRegistry.$taskProvider.withValue(provider) { Box(value: (SecurePeripheral(), SecureCentral())) }
        }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, await onMain({ apps.value.1.log.isEmpty }) { try? await Task.sleep(for: .milliseconds(20)) }
        #expect(await onMain { apps.value.1.log } == ["read secret"])
        #expect(await onMain { apps.value.0.reads } == 1)
    }

    /// A value with `writeEncryptionRequired`: the Write Request is refused with Insufficient Authentication, the
    /// central pairs (Just Works) and writes again; the app hears one write and one success, no error.
    @Test func writeNeedingEncryptionPairsOnDemand() async throws {
        let provider = HostBackend.privateAirProvider(seed: 98)
        let apps = await onMain {
            CBBackendRegistry.$taskProvider.withValue(provider) { Box(value: (SecureWritePeripheral(), SecureWriteCentral())) }
        }
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, await onMain({ apps.value.1.log.isEmpty }) { try? await Task.sleep(for: .milliseconds(20)) }
        #expect(await onMain { apps.value.1.log } == ["written"])
        #expect(await onMain { apps.value.0.written } == ["hello"])
    }
}
