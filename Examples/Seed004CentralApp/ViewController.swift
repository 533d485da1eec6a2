// Seed 004 (the Chinese "iOS App 通過CoreBluetooth和Android交互" article), the central's view controller, with
// `import OpenCoreBluetooth` in place of `import CoreBluetooth`: scan for all peripherals (allow duplicates: false),
// list the named ones with their RSSI (skipping "xxb"), connect to the chosen one, discover all services and
// characteristics, subscribe to each, classify each characteristic by its property bits (the seed's switch, with
// the bitwise test for combined properties in `default`), write UTF-8 text with response to the writable one and
// receive the data the peripheral sends back. The seed's code as it is; its `print`, `exit` and `fail` are the
// module's own (CentralApp.swift), so a program or a test decides where they go.
import Foundation
import OpenCoreBluetooth

final class ViewController: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var central: CBCentralManager!
    var deviceList: [CBPeripheral] = []
    var peripheralSelected: CBPeripheral?
    var tempCBCharacteristic: CBCharacteristic?
    let wantedName: String
    let inputText: String
    var wrote = false
    var stage = "scanning"

    init(name: String, text: String) {
        wantedName = name
        inputText = text
        super.init()
        central = CBCentralManager(delegate: self, queue: nil)
    }

    func addInputString(str: String) {
        print(str)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        addInputString(str: "初始化對象後,來到centralManagerDidUpdateState")
        switch central.state {
        case .unknown: print("CBCentralManager state:", "unknown")
        case .resetting: print("CBCentralManager state:", "resetting")
        case .unsupported:
            print("CBCentralManager state:", "unsupported")
            fail("Bluetooth is not supported here")
        case .unauthorized: print("CBCentralManager state:", "unauthorized")
        case .poweredOff: print("CBCentralManager state:", "poweredOff")
        case .poweredOn:
            print("CBCentralManager state:", "poweredOn")
            addInputString(str: "開始掃描設備")
            central.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: NSNumber(value: false)])
        @unknown default: break
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        print("=============================start")
        if let name = peripheral.name ?? advertisementData[CBAdvertisementDataLocalNameKey] as? String, name != "xxb" {
            print("peripheral.name = \(name)")
            print("RSSI = \(RSSI)")
            if !deviceList.contains(peripheral) { deviceList.append(peripheral) }
            print("deviceList: \(deviceList.map { "\($0.name ?? "~~") \($0.identifier)" })")
            if name == wantedName, peripheralSelected == nil {
                // The user's tap on the list row.
                addInputString(str: "鏈接設備")
                stage = "connecting"
                central.stopScan()
                central.cancelPeripheralConnection(peripheral)
                central.connect(peripheral, options: nil)
                peripheralSelected = peripheral
            }
        }
        print("=============================end")
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        addInputString(str: "鏈接成功=====>\(peripheral.name ?? "~~")")
        stage = "discovering"
        peripheralSelected = peripheral
        peripheralSelected?.delegate = self
        peripheralSelected?.discoverServices(nil)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {
        addInputString(str: "鏈接失敗=====>\(peripheral.name ?? "~~")")
        fail("could not connect to \(peripheral.name ?? "~~")")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        if error != nil {
            addInputString(str: "didDiscoverServices error ====> \(error.debugDescription) ")
            return
        }
        guard let serArr = peripheral.services else {
            addInputString(str: "Peripheral services is nil ")
            return
        }
        for ser in serArr {
            addInputString(str: "服務的UUID \(ser.uuid)")
            peripheralSelected?.discoverCharacteristics(nil, for: ser)
        }
        addInputString(str: "Peripheral 開始尋找特征 ")
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        if error != nil { addInputString(str: "服務的回調error \(error.debugDescription)"); return }
        guard let serviceCharacters = service.characteristics else {
            addInputString(str: "service.characteristics 為空")
            return
        }
        for characteristic in serviceCharacters {
            addInputString(str: "--------------------------characteristic")
            addInputString(str: "特征UUID \(characteristic.uuid)")
            addInputString(str: "uuidString \(characteristic.uuid.uuidString)")
            peripheralSelected?.setNotifyValue(true, for: characteristic)
            addInputString(str: "characteristic.properties --> \(characteristic.properties.rawValue)")
            switch characteristic.properties {
            case CBCharacteristicProperties.write:
                addInputString(str: "characteristic ===> write")
                tempCBCharacteristic = characteristic
                continue
            case CBCharacteristicProperties.writeWithoutResponse:
                addInputString(str: "characteristic ===> writeWithoutResponse")
                continue
            case CBCharacteristicProperties.read:
                addInputString(str: "characteristic ===> read")
                continue
            case CBCharacteristicProperties.notify:
                addInputString(str: "characteristic ===> notify")
                continue
            case CBCharacteristicProperties.indicate:
                addInputString(str: "characteristic ===> indicate")
                continue
            case CBCharacteristicProperties.authenticatedSignedWrites:
                addInputString(str: "characteristic ===> authenticatedSignedWrites")
                continue
            case CBCharacteristicProperties.extendedProperties:
                addInputString(str: "characteristic ===> extendedProperties")
                continue
            case CBCharacteristicProperties.notifyEncryptionRequired:
                addInputString(str: "characteristic ===> notifyEncryptionRequired")
                continue
            case CBCharacteristicProperties.indicateEncryptionRequired:
                addInputString(str: "characteristic ===> indicateEncryptionRequired")
            default:
                addInputString(str: "characteristic ===> default")
                let f = UInt8(characteristic.properties.rawValue & 0xFF) & UInt8(CBCharacteristicProperties.write.rawValue)
                if f == CBCharacteristicProperties.write.rawValue {
                    addInputString(str: "characteristic ===> default --test-- write")
                    tempCBCharacteristic = characteristic
                    addInputString(str: "連接成功,設置全局characteristic設置成功,可以發送數據")
                }
            }
        }
    }

    func writeValue(_ characteristic: CBCharacteristic) {
        let data = inputText.data(using: .utf8)
        addInputString(str: "寫入測試數據 ==> \(inputText)")
        wrote = true
        stage = "writing"
        peripheralSelected?.writeValue(data ?? Data(), for: characteristic, type: CBCharacteristicWriteType.withResponse)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error { fail("write failed: \(error.localizedDescription)") }
        addInputString(str: "寫入成功 \(characteristic.uuid)")
        stage = "waiting for the peripheral's data"
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        print("接到服務端發送的數據")
        if let value = characteristic.value {
            print("開始解析數據")
            let str = String(data: value, encoding: .utf8)
            print(str ?? "~")
            if wrote, str?.hasPrefix("echo: ") == true {
                print("Received: \(str ?? "")")
                exit(0)
            }
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        print("接收characteristic信息 \(characteristic.uuid) notifying: \(characteristic.isNotifying)\(error.map { " error: \($0.localizedDescription)" } ?? "")")
        // Write once the write characteristic's subscription is in place, so its reply is not missed.
        if characteristic.isNotifying, let tempCBCharacteristic, tempCBCharacteristic.uuid == characteristic.uuid, !wrote {
            writeValue(tempCBCharacteristic)
        }
    }
}
