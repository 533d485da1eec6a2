// Seed 002's central as the iOS 7 tutorial wrote it ("iOS 7 SDK: Core Bluetooth - Lección práctica",
// CBCentralManagerViewController), ported line for line with `import OpenCoreBluetooth`: scan for the transfer
// service with duplicates, connect to the first peripheral found, discover, subscribe, append each chunk until
// "EOM"; then unsubscribe and cancel the connection at once (the tutorial's order), and on the disconnection
// forget the peripheral and scan again. (Seed002Central is Apple's later form of the same sample.)
//
// Usage: Seed002TutorialCentral [--transfers N] [--timeout SECONDS]
// Prints each text received on standard output, one line "--- transfer N (BYTES bytes)" before each (the log,
// the tutorial's NSLog lines, goes to standard error). Exits 0 after N transfers (default 1) and the
// disconnection that follows, 1 on timeout.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("Seed002TutorialCentral")

// SERVICES.h
nonisolated(unsafe) let TRANSFER_SERVICE_UUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
nonisolated(unsafe) let TRANSFER_CHARACTERISTIC_UUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")

final class CBCentralManagerViewController: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var centralManager: CBCentralManager!
    var discoveredPeripheral: CBPeripheral?
    var data = Data()
    /// What the tutorial shows in its text view.
    var textviewText = ""
    let transfersWanted: Int
    var transfersDone = 0

    init(transfers: Int) {
        transfersWanted = transfers
        super.init()
        // viewDidLoad
        centralManager = CBCentralManager(delegate: self, queue: nil)
        data = Data()
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        // You should test all scenarios
        if central.state != .poweredOn { return }
        // Scan for devices
        centralManager.scanForPeripherals(withServices: [TRANSFER_SERVICE_UUID],
                                          options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
        NSLogTutorial("Scanning started")
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        NSLogTutorial("Discovered \(peripheral.name ?? "(null)") at \(RSSI)")
        if discoveredPeripheral != peripheral {
            // Save a local copy of the peripheral, so CoreBluetooth doesn't get rid of it
            discoveredPeripheral = peripheral
            // And connect
            NSLogTutorial("Connecting to peripheral \(peripheral)")
            centralManager.connect(peripheral, options: nil)
        }
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        NSLogTutorial("Failed to connect")
        cleanup()
    }

    func cleanup() {
        // See if we are subscribed to a characteristic on the peripheral
        guard let discoveredPeripheral, discoveredPeripheral.state == .connected else { return }
        if let services = discoveredPeripheral.services {
            for service in services {
                for characteristic in service.characteristics ?? [] where characteristic.uuid == TRANSFER_CHARACTERISTIC_UUID {
                    if characteristic.isNotifying {
                        discoveredPeripheral.setNotifyValue(false, for: characteristic)
                        return
                    }
                }
            }
        }
        centralManager.cancelPeripheralConnection(discoveredPeripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        NSLogTutorial("Connected")
        centralManager.stopScan()
        NSLogTutorial("Scanning stopped")
        data.count = 0
        peripheral.delegate = self
        peripheral.discoverServices([TRANSFER_SERVICE_UUID])
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        if error != nil {
            cleanup()
            return
        }
        for service in peripheral.services ?? [] {
            peripheral.discoverCharacteristics([TRANSFER_CHARACTERISTIC_UUID], for: service)
        }
        // Discover other characteristics
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        if error != nil {
            cleanup()
            return
        }
        for characteristic in service.characteristics ?? [] where characteristic.uuid == TRANSFER_CHARACTERISTIC_UUID {
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            NSLogTutorial("Error \(error)")
            return
        }
        let value = characteristic.value ?? Data()
        let stringFromData = String(data: value, encoding: .utf8)
        // Have we got everything we need?
        if stringFromData == "EOM" {
            textviewText = String(decoding: data, as: UTF8.self)
            transfersDone += 1
            FileHandle.standardOutput.write(Data("--- transfer \(transfersDone) (\(data.count) bytes)\n\(textviewText)\n".utf8))
            peripheral.setNotifyValue(false, for: characteristic)
            centralManager.cancelPeripheralConnection(peripheral)
        } else {
            data.append(value)
        }
        NSLogTutorial("Received: \(stringFromData ?? "(null)")")
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard characteristic.uuid == TRANSFER_CHARACTERISTIC_UUID else { return }
        if characteristic.isNotifying {
            NSLogTutorial("Notification began on \(characteristic)")
        } else {
            // Notification has stopped
            centralManager.cancelPeripheralConnection(peripheral)
        }
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        NSLogTutorial("Disconnected")
        discoveredPeripheral = nil
        if transfersDone >= transfersWanted { exit(0) }
        centralManager.scanForPeripherals(withServices: [TRANSFER_SERVICE_UUID],
                                          options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
    }
}

/// The tutorial's NSLog: to standard error, under the program's name.
func NSLogTutorial(_ text: String) { example.log(text) }

let transfers = Int(example.option("--transfers") ?? "1").flatMap { $0 > 0 ? $0 : nil } ?? { example.fail("--transfers needs a positive number") }()
let timeout = example.timeout(default: 30)
let controller = CBCentralManagerViewController(transfers: transfers)
example.run(keeping: controller, timeout: timeout) {
    example.fail("timed out after \(timeout) s with \(controller.transfersDone) of \(controller.transfersWanted) transfers")
}
