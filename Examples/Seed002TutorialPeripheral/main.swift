// Seed 002's peripheral as the iOS 7 tutorial wrote it ("iOS 7 SDK: Core Bluetooth - Lección práctica",
// CBPeripheralViewController), ported line for line with `import OpenCoreBluetooth`: the transfer characteristic
// (notify, no value), the text sent in chunks of NOTIFY_MTU (20 octets, whatever the ATT_MTU) followed by "EOM",
// each chunk again when `peripheralManagerIsReadyToUpdateSubscribers` says there is room.
//
// The tutorial starts advertising in viewDidLoad, before the manager is powered on: iOS ignores that call with an
// API MISUSE line, and so does OpenCoreBluetooth. For the program to be found at all it advertises again once its
// service is added (the tutorial's text: "configure it to start advertising"); the misuse line stays, as on iOS.
//
// Usage: Seed002TutorialPeripheral [--transfers N] [--timeout SECONDS] [TEXT]
// Exits 0 once N transfers were sent (default 1) and the central unsubscribed or left, 1 on timeout.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("Seed002TutorialPeripheral")

// SERVICES.h
nonisolated(unsafe) let TRANSFER_SERVICE_UUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
nonisolated(unsafe) let TRANSFER_CHARACTERISTIC_UUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
let NOTIFY_MTU = 20

final class CBPeripheralViewController: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var peripheralManager: CBPeripheralManager!
    var transferCharacteristic: CBMutableCharacteristic?
    var dataToSend = Data()
    var sendDataIndex = 0
    /// The tutorial's `static BOOL sendingEOM` in sendData.
    var sendingEOM = false
    /// What the tutorial's text view holds.
    let textViewText: String
    let transfersWanted: Int
    var transfersSent = 0

    init(text: String, transfers: Int) {
        textViewText = text
        transfersWanted = transfers
        super.init()
        // viewDidLoad
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil)
        peripheralManager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [TRANSFER_SERVICE_UUID]])
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        if peripheral.state != .poweredOn { return }
        NSLogTutorial("self.peripheralManager powered on.")
        transferCharacteristic = CBMutableCharacteristic(type: TRANSFER_CHARACTERISTIC_UUID, properties: .notify,
                                                         value: nil, permissions: .readable)
        let transferService = CBMutableService(type: TRANSFER_SERVICE_UUID, primary: true)
        transferService.characteristics = [transferCharacteristic!]
        peripheralManager.add(transferService)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: (any Error)?) {
        // (The port's one addition: see the top of the file.)
        peripheralManager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [TRANSFER_SERVICE_UUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        NSLogTutorial("Central subscribed to characteristic")
        dataToSend = Data(textViewText.utf8)
        sendDataIndex = 0
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        NSLogTutorial("Central unsubscribed from characteristic")
        if transfersSent >= transfersWanted { exit(0) }
    }

    func sendData() {
        guard let transferCharacteristic else { return }
        if sendingEOM {
            let didSend = peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: nil)
            if didSend {
                sendingEOM = false
                transfersSent += 1
                NSLogTutorial("Sent: EOM")
            }
            return
        }
        if sendDataIndex >= dataToSend.count { return }
        var didSend = true
        while didSend {
            var amountToSend = dataToSend.count - sendDataIndex
            if amountToSend > NOTIFY_MTU { amountToSend = NOTIFY_MTU }
            let chunk = dataToSend.subdata(in: sendDataIndex..<(sendDataIndex + amountToSend))
            didSend = peripheralManager.updateValue(chunk, for: transferCharacteristic, onSubscribedCentrals: nil)
            if !didSend { return }
            NSLogTutorial("Sent: \(String(data: chunk, encoding: .utf8) ?? "(null)")")
            sendDataIndex += amountToSend
            if sendDataIndex >= dataToSend.count {
                sendingEOM = true
                let eomSent = peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: nil)
                if eomSent {
                    sendingEOM = false
                    transfersSent += 1
                    NSLogTutorial("Sent: EOM")
                }
                return
            }
        }
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        sendData()
    }
}

/// The tutorial's NSLog: to standard error, under the program's name.
func NSLogTutorial(_ text: String) { example.log(text) }

let builtInText = (1...12).map { "Línea \($0): el veloz murciélago hindú comía feliz cardillo y kiwi. ✓" }.joined(separator: "\n")
let transfers = Int(example.option("--transfers") ?? "1").flatMap { $0 > 0 ? $0 : nil } ?? { example.fail("--transfers needs a positive number") }()
let timeout = example.timeout(default: 30)
var operands = example.operands
if let index = operands.firstIndex(of: "--transfers") { operands.removeSubrange(index...min(index + 1, operands.count - 1)) }
let controller = CBPeripheralViewController(text: operands.first ?? builtInText, transfers: transfers)
example.run(keeping: controller, timeout: timeout) {
    example.fail("timed out after \(timeout) s with \(controller.transfersSent) of \(controller.transfersWanted) transfers sent")
}
