// Seed 003 (the Vietnamese translation of Apple's Core Bluetooth Programming Guide, "performing common central
// role tasks"), with `import OpenCoreBluetooth` in place of `import CoreBluetooth`: create a central manager,
// scan for all peripherals (printing each with its RSSI), keep a strong reference to the one to use, stop
// scanning, connect, set the delegate, discover all services and all characteristics, read the readable ones,
// subscribe to the notifying ones, write UTF-8 text with response to the writable one, and receive the
// notification that follows.
//
// Usage: Seed003Central [--name NAME] [--text TEXT] [--timeout SECONDS]   (NAME "Chat": run ChatPeripheral or
// `blue serve --profile chat --name Chat` beside it on the shared air)
// Exits 0 once the write succeeded and a notification arrived, 1 on timeout.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("Seed003Central")

final class Central: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var myCentralManager: CBCentralManager!
    var peripheral: CBPeripheral?
    let wantedName: String
    let text: String
    var seen: [UUID: (name: String, rssi: Int)] = [:]
    var wrote = false
    var notified = false
    var stage = "scanning"

    init(name: String, text: String) {
        wantedName = name
        self.text = text
        super.init()
        myCentralManager = CBCentralManager(delegate: self, queue: nil)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .unsupported { fail("Bluetooth is not supported here") }
        guard central.state == .poweredOn else { return }
        central.scanForPeripherals(withServices: nil, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        let name = (advertisementData[CBAdvertisementDataLocalNameKey] as? String) ?? peripheral.name ?? "Unknown Name"
        if seen[peripheral.identifier] == nil {
            seen[peripheral.identifier] = (name, RSSI.intValue)
            print("RSSI list:")
            for (identifier, entry) in seen.sorted(by: { $0.value.rssi > $1.value.rssi }) {
                print("  \(entry.rssi) dBm  \(entry.name)  \(identifier)")
            }
        }
        guard self.peripheral == nil, name == wantedName else { return }
        self.peripheral = peripheral
        central.stopScan()
        stage = "connecting"
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        print("Connected to \(peripheral.name ?? "Unknown Name")")
        stage = "discovering"
        peripheral.delegate = self
        peripheral.discoverServices(nil)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        fail("could not connect: \(error?.localizedDescription ?? "unknown error")")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        for service in peripheral.services ?? [] {
            print("Discovered service \(service.uuid)")
            peripheral.discoverCharacteristics(nil, for: service)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] {
            print("Discovered characteristic \(characteristic.uuid) properties 0x\(String(characteristic.properties.rawValue, radix: 16))")
            if characteristic.properties.contains(.read) {
                peripheral.readValue(for: characteristic)
            }
            if characteristic.properties.contains(.notify) || characteristic.properties.contains(.indicate) {
                peripheral.setNotifyValue(true, for: characteristic)
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            print("Error changing notification state: \(error.localizedDescription)")
            return
        }
        print("Notifying on \(characteristic.uuid): \(characteristic.isNotifying)")
        guard characteristic.isNotifying, characteristic.properties.contains(.write), !wrote else { return }
        wrote = true
        stage = "writing"
        let dataToWrite = Data(text.utf8)
        peripheral.writeValue(dataToWrite, for: characteristic, type: .withResponse)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            fail("Error writing characteristic value \(error.localizedDescription)")
        }
        print("Wrote \"\(text)\" to \(characteristic.uuid)")
        stage = "waiting for the notification"
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error {
            print("Error reading \(characteristic.uuid): \(error.localizedDescription)")
            return
        }
        let value = characteristic.value.map { String(decoding: $0, as: UTF8.self) } ?? ""
        print("Value of \(characteristic.uuid): \(value)")
        if wrote, value.hasPrefix("echo: ") {
            print("Notification received: \(value)")
            fflush(nil)
            exit(0)
        }
    }
}

func fail(_ text: String) -> Never { example.fail(text) }

let timeout = example.timeout(default: 20)
let central = Central(name: example.option("--name") ?? "Chat", text: example.option("--text") ?? "Xin chào, Bluetooth!")
example.run(keeping: central, timeout: timeout) {
    fail("timed out after \(timeout) s while \(central.stage)")
}
