// Seed 001, the macOS central as a runnable program: the seed's BluetoothManager (Examples/Seed001CentralApp), with
// this file in the place of its view controller (whose button calls `scan()`). What today's Apple SDK would also
// ask of a command-line program: callbacks on the main queue (`queue: nil`), so the program runs `dispatchMain()`.
//
// Usage: Seed001Central [--timeout SECONDS]
// The seed's log goes to standard output, the view controller's label texts to standard error. Exits 0 once it
// read {"Hello": "Darkness"}, wrote {"Yo": "Lo"} and the connection closed (the seed disconnects after the write
// response), 1 on timeout.
// Runs on the shared air (the `blue air` hub, started on demand), where it meets a peripheral in another process.
import ExampleSupport
import Foundation
import Seed001CentralApp

let example = ExampleProgram("Seed001Central")

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
            example.log("Start configuration 🎛")
        case .didStartScanningPeripherals:
            scanning = true
            example.log("Start scanning peripherals 👀")
        case .didConnectPeripheral(let name):
            connected = true
            example.log("Did connect to: \(name ?? "") 🤜🏽🤛🏽")
        case .didDisconnectPeripheral(let name):
            example.log("Did disconnect: \(name ?? "") 🤜🏽🤚🏽")
            if received && sent {
                example.log("Exchange done")
                exit(0)
            }
        case .didSendData:
            sent = true
            example.log("Did send data ⬆️")
        case .didReceiveData:
            received = true
            example.log("Did received data ⬇️")
        case .didFailConnection:
            example.log("Connection failed 🤷🏽‍♂️")
        }
    }
}

let timeout = example.timeout(default: 20)
let viewController = ViewController()
viewController.discover()
example.run(keeping: viewController, timeout: timeout) {
    let stage = viewController.sent ? "wrote {\"Yo\": \"Lo\"}, but the connection did not close"
        : viewController.received ? "read the value, but the write did not go out"
        : viewController.connected ? "connected, but no value arrived on the characteristic"
        : viewController.scanning ? "no peripheral advertising the seed's service"
        : "Bluetooth did not power on"
    example.fail("timed out after \(timeout) s: \(stage)")
}
