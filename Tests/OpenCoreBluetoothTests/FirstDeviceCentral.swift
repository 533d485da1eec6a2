import Foundation
@testable import OpenCoreBluetooth

/// A test central that scans once powered on (for `services`, or everything) and connects to the first device
/// heard (advertising the local name `name` when given), keeping it, itself its delegate. Subclasses override the
/// callbacks they follow: every one is declared here, since Swift on Linux calls only the delegate methods the
/// adopting class declares (README, porting: "Delegate methods declared only in a subclass").
class FirstDeviceCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    let log: CallLog
    let services: [CBUUID]?
    let name: String?
    var peripheral: CBPeripheral?

    init(log: CallLog, services: [CBUUID]? = nil, name: String? = nil) {
        self.log = log
        self.services = services
        self.name = name
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: services) }
    }
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        if let name, advertisementData[CBAdvertisementDataLocalNameKey] as? String != name { return }
        self.peripheral = peripheral
        peripheral.delegate = self
        central.stopScan()
        central.connect(peripheral)
        discovered(advertisementData)
    }
    /// The device chosen, before the connect.
    func discovered(_ advertisementData: [String: Any]) {}
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {}
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {}
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {}
    func peripheralDidUpdateName(_ peripheral: CBPeripheral) {}
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {}
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
}
