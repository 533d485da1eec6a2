import Foundation
@testable import OpenCoreBluetooth

// The CoreBluetooth apps the real-stack tests share: what every one of them does the same way (a manager on the
// main queue, scanning for one service and connecting the first peripheral found, publishing a value that needs
// encryption), written once. A test's app subclasses one and overrides the callbacks it acts on.
//
// Each class implements every delegate method its subclasses override: Swift binds a protocol's requirement to the
// conforming class's own method (dispatched through the class, so an override is the one called), and to the
// protocol extension's empty default when the class has none — a method only a subclass declared would never run.

/// A peripheral app on the main queue (a `CBPeripheralManager` made with `queue: nil`), Core 5.4 Vol 3 Part G
/// (the GATT server its manager runs). Does nothing by itself.
class MainQueuePeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var manager: CBPeripheralManager!

    override init() {
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: nil)
    }

    /// Publishes a primary service of `characteristics` and advertises its UUID.
    func publishAndAdvertise(_ service: CBUUID, _ characteristics: [CBMutableCharacteristic]) {
        let published = CBMutableService(type: service, primary: true)
        published.characteristics = characteristics
        manager.add(published)
        manager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [service]])
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {}
    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {}
}

/// Serves "secret" from a characteristic that needs an encrypted link to be read (`readEncryptionRequired`: ATT
/// Insufficient Authentication or Encryption until the link is, Core 5.4 Vol 3 Part F §3.4.1.1), answered by the
/// app on each read; counts the reads.
class SecretPeripheral: MainQueuePeripheral, @unchecked Sendable {
    let service: CBUUID
    let characteristic: CBUUID
    var reads = 0

    init(service: CBUUID, characteristic: CBUUID) {
        self.service = service
        self.characteristic = characteristic
        super.init()
    }

    override func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        publishAndAdvertise(service, [CBMutableCharacteristic(type: characteristic, properties: [.read], value: nil,
                                                              permissions: [.readEncryptionRequired])])
    }

    override func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        reads += 1
        request.value = Data("secret".utf8)
        peripheral.respond(to: request, withResult: .success)
    }
}

/// A central app on the main queue (a `CBCentralManager` made with `queue: nil`), as the seeds are written: at
/// power-on it scans for `service`; it keeps the first peripheral found (CoreBluetooth cancels the connection of
/// one nobody references), stops scanning and connects; connected, it becomes the peripheral's delegate and
/// discovers `service`, then the characteristics of the first service found (Core 5.4 Vol 3 Part G §4.4, §4.6).
/// What it does with them is the subclass's.
class ConnectingCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let service: CBUUID
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    /// What the app heard, in order, in the subclass's words.
    var log: [String] = []

    init(service: CBUUID) {
        self.service = service
        super.init()
        manager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [service]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([service])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {}

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first else { return }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {}
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}
