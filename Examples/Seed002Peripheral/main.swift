// Seed 002, the peripheral (Apple's BTLE Transfer sample as the iOS 7 "Core Bluetooth - Lección práctica" tutorial
// teaches it), with `import OpenCoreBluetooth` in place of `import CoreBluetooth`. It publishes the transfer
// service, advertises it, and when a central subscribes sends the text in chunks of the central's
// maximumUpdateValueLength followed by "EOM"; when updateValue returns false it stops and resumes in
// peripheralManagerIsReady(toUpdateSubscribers:).
//
// Usage: Seed002Peripheral [--timeout SECONDS] [TEXT]   (TEXT defaults to a built-in long text)
// Exits 0 once the text and "EOM" are sent and the central unsubscribed, 1 on timeout.
// Runs on the shared air (the `blue air` hub, started on demand), where it meets a central in another process.
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("Seed002Peripheral")

enum TransferService {
    nonisolated(unsafe) static let serviceUUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
    nonisolated(unsafe) static let characteristicUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
}

final class PeripheralViewController: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var peripheralManager: CBPeripheralManager!
    var transferCharacteristic: CBMutableCharacteristic?
    var connectedCentral: CBCentral?
    var dataToSend = Data()
    var sendDataIndex = 0
    var sendingEOM = false
    var finished = false

    init(text: String) {
        super.init()
        dataToSend = Data(text.utf8)
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil, options: [CBPeripheralManagerOptionShowPowerAlertKey: true])
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        switch peripheral.state {
        case .poweredOn:
            log("CBManager is powered on")
            setupPeripheral()
        case .unsupported:
            fail("Bluetooth is not supported here")
        default:
            log("CBManager state \(peripheral.state.rawValue)")
        }
    }

    private func setupPeripheral() {
        let transferCharacteristic = CBMutableCharacteristic(type: TransferService.characteristicUUID,
                                                             properties: [.notify, .writeWithoutResponse],
                                                             value: nil,
                                                             permissions: [.readable, .writeable])
        let transferService = CBMutableService(type: TransferService.serviceUUID, primary: true)
        transferService.characteristics = [transferCharacteristic]
        peripheralManager.add(transferService)
        self.transferCharacteristic = transferCharacteristic
        peripheralManager.startAdvertising([CBAdvertisementDataServiceUUIDsKey: [TransferService.serviceUUID]])
        log("Advertising the transfer service (\(dataToSend.count) bytes to send)")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        log("Central subscribed to characteristic")
        sendDataIndex = 0
        sendingEOM = false
        connectedCentral = central
        peripheralManager.stopAdvertising()
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didUnsubscribeFrom characteristic: CBCharacteristic) {
        log("Central unsubscribed from characteristic")
        connectedCentral = nil
        if finished {
            log("Transfer complete")
            exit(0)
        }
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        sendData()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            guard let value = request.value, let message = String(data: value, encoding: .utf8) else { continue }
            log("Received write: \(message)")
        }
    }

    /// Sends the next chunks while the transmit queue has room; "EOM" after the last.
    func sendData() {
        guard let transferCharacteristic else { return }
        if sendingEOM {
            if peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: nil) {
                sendingEOM = false
                finished = true
                log("Sent: EOM")
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
            if !didSend { return }
            sendDataIndex += amountToSend
            if sendDataIndex >= dataToSend.count {
                sendingEOM = true
                if peripheralManager.updateValue(Data("EOM".utf8), for: transferCharacteristic, onSubscribedCentrals: nil) {
                    sendingEOM = false
                    finished = true
                    log("Sent: EOM")
                }
                return
            }
        }
    }
}

func log(_ text: String) { example.log(text) }
func fail(_ text: String) -> Never { example.fail(text) }

let builtInText = (1...120).map { "Line \($0): The quick brown fox jumps over the lazy dog. Ünïcødé ✓" }.joined(separator: "\n")

let timeout = example.timeout(default: 20)
let text = example.operands.first ?? builtInText

let controller = PeripheralViewController(text: text)
example.run(keeping: controller, timeout: timeout) {
    fail("timed out after \(timeout) s: \(controller.finished ? "the central did not unsubscribe" : "the text was not sent")")
}
