// Seed 001, the macOS central as a runnable program: the seed's BluetoothManager (Examples/Seed001CentralApp), with
// this file in the place of its view controller (whose button calls `scan()`). What today's Apple SDK would also
// ask of a command-line program: callbacks on the main queue (`queue: nil`), so the program runs `dispatchMain()`.
//
// Usage: Seed001Central [--timeout SECONDS]
// The seed's log goes to standard output, the view controller's label texts to standard error. Exits 0 once it
// read {"Hello": "Darkness"}, wrote {"Yo": "Lo"} and the connection closed (the seed disconnects after the write
// response), 1 on timeout.
// Runs on the process's own virtual air; OCB_HCI=virtual-hub (or air:PATH) meets a peripheral in another process.
import Foundation
import Seed001CentralApp

/// The view controller's part: it shows the BlueEar events (here on standard error) and ends the program.
final class ViewController: @unchecked Sendable {
    var app: CentralApp?
    var scanning = false
    var connected = false
    var received = false
    var sent = false

    func discover() {
        let app = CentralApp { event in self.hear(event) }
        self.app = app
        app.scan()
    }

    func hear(_ event: CentralApp.Event) {
        switch event {
        case .didStartConfiguration:
            label("Start configuration 🎛")
        case .didStartScanningPeripherals:
            scanning = true
            label("Start scanning peripherals 👀")
        case .didConnectPeripheral(let name):
            connected = true
            label("Did connect to: \(name ?? "") 🤜🏽🤛🏽")
        case .didDisconnectPeripheral(let name):
            label("Did disconnect: \(name ?? "") 🤜🏽🤚🏽")
            if received && sent {
                label("Exchange done")
                exit(0)
            }
        case .didSendData:
            sent = true
            label("Did send data ⬆️")
        case .didReceiveData:
            received = true
            label("Did received data ⬇️")
        case .didFailConnection:
            label("Connection failed 🤷🏽‍♂️")
        }
    }
}

func label(_ text: String) {
    FileHandle.standardError.write(Data("[Seed001Central] \(text)\n".utf8))
}

func fail(_ text: String) -> Never {
    FileHandle.standardError.write(Data("Seed001Central: \(text)\n".utf8))
    exit(1)
}

var timeout = 20.0
let arguments = Array(CommandLine.arguments.dropFirst())
if let index = arguments.firstIndex(of: "--timeout") {
    guard index + 1 < arguments.count, let seconds = Double(arguments[index + 1]), seconds > 0 else {
        fail("--timeout needs a positive number of seconds")
    }
    timeout = seconds
}

let viewController = ViewController()
viewController.discover()
DispatchQueue.main.asyncAfter(deadline: .now() + timeout) {
    let stage = viewController.sent ? "wrote {\"Yo\": \"Lo\"}, but the connection did not close"
        : viewController.received ? "read the value, but the write did not go out"
        : viewController.connected ? "connected, but no value arrived on the characteristic"
        : viewController.scanning ? "no peripheral advertising the seed's service"
        : "Bluetooth did not power on"
    fail("timed out after \(timeout) s: \(stage)")
}
withExtendedLifetime(viewController) { dispatchMain() }
