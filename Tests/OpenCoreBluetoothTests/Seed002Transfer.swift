// Seed 002 (the iOS 7 "Core Bluetooth - Lección práctica" tutorial: Apple's BTLE Transfer sample, a central and a
// peripheral that move the text of a text view) in Swift, as the sample reads today: the peripheral sends the
// text in chunks of the central's maximumUpdateValueLength, then "EOM"; when updateValue returns false it stops
// and resumes in peripheralManagerIsReady(toUpdateSubscribers:). The central collects the chunks until "EOM",
// then unsubscribes and disconnects; it also sends messages with writes without response, paced by
// canSendWriteWithoutResponse and peripheralIsReady(toSendWriteWithoutResponse:).
import Foundation
import OpenCoreBluetooth

enum TransferService {
    nonisolated(unsafe) static let serviceUUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
    nonisolated(unsafe) static let characteristicUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
}

final class TransferPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var peripheralManager: CBPeripheralManager!
    var transferCharacteristic: CBMutableCharacteristic?
    var connectedCentral: CBCentral?
    var dataToSend = Data()
    var sendDataIndex = 0
    var sendingEOM = false

    // What the test reads (on the main queue).
    var readyCallbacks = 0
    var refusedUpdates = 0
    var chunksSent = 0
    var messagesReceived: [String] = []

    init(text: String) {
        super.init()
        dataToSend = Data(text.utf8)
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil, options: [CBPeripheralManagerOptionShowPowerAlertKey: true])
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let characteristic = CBMutableCharacteristic(type: TransferService.characteristicUUID,
                                                     properties: [.notify, .writeWithoutResponse],
                                                     value: nil, permissions: [.readable, .writeable])
        let service = CBMutableService(type: TransferService.serviceUUID, primary: true)
        service.characteristics = [characteristic]
        peripheralManager.add(service)
        transferCharacteristic = characteristic
        peripheralManager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [TransferService.serviceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        sendDataIndex = 0
        connectedCentral = central
        sendData()
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        readyCallbacks += 1
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            guard let value = request.value, let message = String(data: value, encoding: .utf8) else { continue }
            messagesReceived.append(message)
        }
    }

    func sendData() {
        guard let transferCharacteristic else { return }
        if sendingEOM {
            if peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: nil) {
                sendingEOM = false
            } else {
                refusedUpdates += 1
            }
            return
        }
        if sendDataIndex >= dataToSend.count { return }
        var didSend = true
        while didSend {
            var amountToSend = dataToSend.count - sendDataIndex
            if let mtu = connectedCentral?.maximumUpdateValueLength { amountToSend = min(amountToSend, mtu) }
            let chunk = dataToSend.subdata(in: sendDataIndex..<(sendDataIndex + amountToSend))
            didSend = peripheralManager.updateValue(chunk, for: transferCharacteristic, onSubscribedCentrals: nil)
            if !didSend {
                refusedUpdates += 1
                return
            }
            chunksSent += 1
            sendDataIndex += amountToSend
            if sendDataIndex >= dataToSend.count {
                sendingEOM = true
                if peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: nil) {
                    sendingEOM = false
                } else {
                    refusedUpdates += 1
                }
                return
            }
        }
    }
}

final class TransferCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var centralManager: CBCentralManager!
    var discoveredPeripheral: CBPeripheral?
    var transferCharacteristic: CBCharacteristic?
    var data = Data()
    let messageCount: Int
    var writeIterationsComplete = 0

    // What the test reads (on the main queue).
    var receivedText: String?
    var disconnected = false
    var notReadyToWrite = 0
    var readyToWriteCallbacks = 0

    init(messages: Int) {
        messageCount = messages
        super.init()
        centralManager = CBCentralManager(delegate: self, queue: nil, options: [CBCentralManagerOptionShowPowerAlertKey: true])
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else { return }
        centralManager.scanForPeripherals(withServices: [TransferService.serviceUUID],
                                          options: [CBCentralManagerScanOptionAllowDuplicatesKey: true])
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard discoveredPeripheral != peripheral else { return }
        discoveredPeripheral = peripheral
        centralManager.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        centralManager.stopScan()
        writeIterationsComplete = 0
        data.removeAll(keepingCapacity: false)
        peripheral.delegate = self
        peripheral.discoverServices([TransferService.serviceUUID])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        disconnected = true
        discoveredPeripheral = nil
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard error == nil, let services = peripheral.services else { return }
        for service in services {
            peripheral.discoverCharacteristics([TransferService.characteristicUUID], for: service)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        guard error == nil, let characteristics = service.characteristics else { return }
        for characteristic in characteristics where characteristic.uuid == TransferService.characteristicUUID {
            transferCharacteristic = characteristic
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        guard error == nil, let chunk = characteristic.value else { return }
        if chunk == Data("EOM".utf8) {
            receivedText = String(data: data, encoding: .utf8)
            writeData()
        } else {
            data.append(chunk)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        if !characteristic.isNotifying, receivedText != nil, writeIterationsComplete == messageCount {
            centralManager.cancelPeripheralConnection(peripheral)
        }
    }

    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {
        readyToWriteCallbacks += 1
        writeData()
    }

    /// Sends the messages with writes without response while the queue has room; unsubscribes after the last.
    func writeData() {
        guard let peripheral = discoveredPeripheral, let transferCharacteristic else { return }
        while writeIterationsComplete < messageCount {
            guard peripheral.canSendWriteWithoutResponse else {
                notReadyToWrite += 1
                return
            }
            let message = "message \(writeIterationsComplete)"
            peripheral.writeValue(Data(message.utf8), for: transferCharacteristic, type: .withoutResponse)
            writeIterationsComplete += 1
        }
        peripheral.setNotifyValue(false, for: transferCharacteristic)
    }
}
