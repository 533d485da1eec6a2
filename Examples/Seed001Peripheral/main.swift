// Seed 001, the iOS peripheral as a runnable program: the seed's BluetoothManager (Examples/Seed001PeripheralApp),
// with this file in the place of its view controller. What today's Apple SDK would also ask of a command-line program:
// callbacks on the main queue (`queue: nil`), so the program runs `dispatchMain()`.
//
// Usage: Seed001Peripheral [--timeout SECONDS]
// The seed's log goes to standard output, the view controller's label texts to standard error. Exits 0 once the
// central's write {"Yo": "Lo"} arrived (a moment later, so the write response leaves first), 1 on timeout.
// Runs on the process's own virtual air; OCB_HCI=virtual-hub (or air:PATH) meets a central in another process.
import Foundation
import Seed001PeripheralApp

/// The view controller's part: it shows the BlueEar events (here on standard error) and ends the program.
final class ViewController: @unchecked Sendable {
    var app: PeripheralApp?
    var advertising = false
    var sent = false
    var received = false

    func viewDidAppear() {
        app = PeripheralApp { event in self.hear(event) }
    }

    func hear(_ event: PeripheralApp.Event) {
        switch event {
        case .didStartConfiguration:
            label("Start configuration 🎛")
        case .didStartAdvertising:
            advertising = true
            label("Start advertising 📻")
        case .didSendData:
            sent = true
            label("Did send data ⬆️")
        case .didReceiveData:
            didReceiveData()
        }
    }

    func didReceiveData() {
        received = true
        label("Did received data ⬇️")
        // The seed responded to the write before telling us; leave the response time to reach the central.
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) {
            label("Exchange done")
            exit(0)
        }
    }
}

func label(_ text: String) {
    FileHandle.standardError.write(Data("[Seed001Peripheral] \(text)\n".utf8))
}

func fail(_ text: String) -> Never {
    FileHandle.standardError.write(Data("Seed001Peripheral: \(text)\n".utf8))
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
viewController.viewDidAppear()
DispatchQueue.main.asyncAfter(deadline: .now() + timeout) {
    let stage = viewController.sent ? "sent {\"Hello\": \"Darkness\"}, but the central's write did not arrive"
        : viewController.advertising ? "advertising, but no central subscribed"
        : "advertising did not start"
    fail("timed out after \(timeout) s: \(stage)")
}
withExtendedLifetime(viewController) { dispatchMain() }
