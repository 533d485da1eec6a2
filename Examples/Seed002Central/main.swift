// Seed 002, the central (Apple's BTLE Transfer sample as the iOS 7 "Core Bluetooth - Lección práctica" tutorial
// teaches it), with `import OpenCoreBluetooth` in place of `import CoreBluetooth`. It scans for the transfer
// service, connects, discovers the transfer characteristic, subscribes, and collects the chunks until "EOM";
// then it unsubscribes and disconnects.
//
// Usage: Seed002Central [--timeout SECONDS]
// Prints the received text on standard output (the log goes to standard error). Exits 0 once the text is
// received and the connection closed, 1 on timeout.
// Runs on the shared air (the `blue air` hub, started on demand), where it meets a peripheral in another process.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("Seed002Central")

enum TransferService {
    nonisolated(unsafe) static let serviceUUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
    nonisolated(unsafe) static let characteristicUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
}

final class CentralViewController: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var centralManager: CBCentralManager!
    var discoveredPeripheral: CBPeripheral?
    var transferCharacteristic: CBCharacteristic?
    var data = Data()
    var receivedText: String?

    override init() {
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil, options: [CBCentralManagerOptionShowPowerAlertKey: true])
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        switch central.state {
        case .poweredOn:
            log("CBManager is powered on")
            retrievePeripheral()
        case .unsupported:
            fail("Bluetooth is not supported here")
        default:
            log("CBManager state \(central.state.rawValue)")
        }
    }

    private func retrievePeripheral() {
        let connected = centralManager.retrieveConnectedPeripherals(withServices: [TransferService.serviceUUID])
        if let connectedPeripheral = connected.last {
            discoveredPeripheral = connectedPeripheral
            centralManager.connect(connectedPeripheral, options: nil)
        } else {
            centralManager.scanForPeripherals(withServices: [TransferService.serviceUUID],
                                              options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard RSSI.intValue >= -90 else { return }
        log("Discovered \(peripheral.name ?? "a peripheral") at \(RSSI.intValue)")
        if discoveredPeripheral != peripheral {
            discoveredPeripheral = peripheral
            log("Connecting to perhiperal \(peripheral.identifier)")
            centralManager.connect(peripheral, options: nil)
        }
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        log("Failed to connect to \(peripheral). \(String(describing: error))")
        cleanup()
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log("Peripheral Connected")
        centralManager.stopScan()
        data.removeAll(keepingCapacity: false)
        peripheral.delegate = self
        peripheral.discoverServices([TransferService.serviceUUID])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        log("Perhiperal Disconnected")
        discoveredPeripheral = nil
        if let receivedText {
            FileHandle.standardOutput.write(Data(receivedText.utf8))
            exit(0)
        }
        retrievePeripheral()
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        if let error {
            log("Error discovering services: \(error.localizedDescription)")
            cleanup()
            return
        }
        guard let peripheralServices = peripheral.services else { return }
        for service in peripheralServices {
            peripheral.discoverCharacteristics([TransferService.characteristicUUID], for: service)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        if let error {
            log("Error discovering characteristics: \(error.localizedDescription)")
            cleanup()
            return
        }
        guard let serviceCharacteristics = service.characteristics else { return }
        for characteristic in serviceCharacteristics where characteristic.uuid == TransferService.characteristicUUID {
            transferCharacteristic = characteristic
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            log("Error discovering characteristics: \(error.localizedDescription)")
            cleanup()
            return
        }
        guard let characteristicData = characteristic.value else { return }
        if characteristicData == Data("EOM".utf8) {
            // End-of-message case: keep the text, then unsubscribe and disconnect.
            receivedText = String(data: data, encoding: .utf8) ?? ""
            log("Received \(data.count) bytes and EOM")
            peripheral.setNotifyValue(false, for: characteristic)
        } else {
            data.append(characteristicData)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            log("Error changing notification state: \(error.localizedDescription)")
            return
        }
        guard characteristic.uuid == TransferService.characteristicUUID else { return }
        if characteristic.isNotifying {
            log("Notification began on \(characteristic.uuid)")
        } else {
            log("Notification stopped on \(characteristic.uuid). Disconnecting")
            cleanup()
        }
    }

    /// Cancels the subscription if there is one, then the connection.
    private func cleanup() {
        guard let discoveredPeripheral, case .connected = discoveredPeripheral.state else { return }
        for service in discoveredPeripheral.services ?? [] {
            for characteristic in service.characteristics ?? [] where characteristic.uuid == TransferService.characteristicUUID {
                if characteristic.isNotifying {
                    discoveredPeripheral.setNotifyValue(false, for: characteristic)
                }
            }
        }
        centralManager.cancelPeripheralConnection(discoveredPeripheral)
    }
}

func log(_ text: String) { example.log(text) }
func fail(_ text: String) -> Never { example.fail(text) }

let timeout = example.timeout(default: 20)
let controller = CentralViewController()
example.run(keeping: controller, timeout: timeout) {
    let stage = controller.receivedText != nil ? "the text arrived but the connection did not close"
        : controller.transferCharacteristic != nil ? "subscribed, but \"EOM\" did not arrive (\(controller.data.count) bytes so far)"
        : controller.discoveredPeripheral != nil ? "the transfer characteristic was not found"
        : "no peripheral advertising the transfer service"
    fail("timed out after \(timeout) s: \(stage)")
}
