// The peripheral the seed 003 and 004 centrals talk to: the chat service of `blue serve --profile chat` (seed
// 002's transfer UUIDs) with one characteristic (read, write, write without response, notify) and a second,
// read-only one (the greeting). Each text written is echoed to subscribers as "echo: TEXT".
//
// Usage: ChatPeripheral [--name NAME] [--timeout SECONDS]   (name "Chat"; runs until the timeout, default 60 s,
// then exits 0; with --once, exits 0 after the first echo is sent)
import ExampleSupport
import Foundation
import OpenCoreBluetooth

let example = ExampleProgram("ChatPeripheral")

enum ChatService {
    nonisolated(unsafe) static let serviceUUID = CBUUID(string: "E20A39F4-73F5-4BC4-A12F-17D1AD07A961")
    nonisolated(unsafe) static let messageUUID = CBUUID(string: "08590F7E-DB05-467E-8757-72F6FAEB13D4")
    nonisolated(unsafe) static let greetingUUID = CBUUID(string: "C0DE0001-7E57-4C0D-9000-00000000CAFE")
}

final class ChatPeripheral: NSObject, CBPeripheralManagerDelegate, @unchecked Sendable {
    var peripheralManager: CBPeripheralManager!
    let name: String
    let once: Bool
    var message: CBMutableCharacteristic?
    var pending: [Data] = []

    init(name: String, once: Bool) {
        self.name = name
        self.once = once
        super.init()
        peripheralManager = CBPeripheralManager(delegate: self, queue: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        if peripheral.state == .unsupported { fail("Bluetooth is not supported here") }
        guard peripheral.state == .poweredOn else { return }
        let message = CBMutableCharacteristic(type: ChatService.messageUUID,
                                              properties: [.read, .write, .writeWithoutResponse, .notify],
                                              value: nil, permissions: [.readable, .writeable])
        let greeting = CBMutableCharacteristic(type: ChatService.greetingUUID, properties: [.read],
                                               value: Data("Hello from \(name)".utf8), permissions: [.readable])
        let service = CBMutableService(type: ChatService.serviceUUID, primary: true)
        service.characteristics = [message, greeting]
        peripheralManager.add(service)
        self.message = message
        peripheralManager.startAdvertising([CBAdvertisementDataLocalNameKey: name,
                                            CBAdvertisementDataServiceUUIDsKey: [ChatService.serviceUUID]])
        log("Advertising as \(name)")
        print("ready")
        fflush(nil)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        let value = message?.value ?? Data()
        guard request.offset <= value.count else {
            peripheral.respond(to: request, withResult: .invalidOffset)
            return
        }
        request.value = value.subdata(in: request.offset..<value.count)
        peripheral.respond(to: request, withResult: .success)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            let text = request.value.flatMap { String(data: $0, encoding: .utf8) } ?? ""
            log("Received: \(text)")
            message?.value = request.value
            pending.append(Data("echo: \(text)".utf8))
        }
        if let first = requests.first { peripheral.respond(to: first, withResult: .success) }
        sendPending()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        log("Central \(central.identifier) subscribed")
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: CBPeripheralManager) {
        sendPending()
    }

    private func sendPending() {
        guard let message else { return }
        while let next = pending.first {
            guard peripheralManager.updateValue(next, for: message, onSubscribedCentrals: nil) else { return }
            pending.removeFirst()
            log("Notified: \(String(decoding: next, as: UTF8.self))")
            if once {
                // Leave the central time to receive the notification before this device leaves the air.
                DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) { exit(0) }
            }
        }
    }
}

func log(_ text: String) { example.log(text) }
func fail(_ text: String) -> Never { example.fail(text) }

let timeout = example.timeout(default: 60)
let chat = ChatPeripheral(name: example.option("--name") ?? "Chat", once: example.flag("--once"))
example.run(keeping: chat, timeout: timeout) {
    if chat.once { fail("timed out after \(timeout) s: nothing was written") }
    exit(0)
}
