// Seed 001, the iOS peripheral as a runnable program: the seed's BluetoothManager (Examples/Seed001PeripheralApp),
// with this file in the place of its view controller. What today's Apple SDK would also ask of a command-line program:
// callbacks on the main queue (`queue: nil`), so the program runs `dispatchMain()`.
//
// Usage: Seed001Peripheral [--timeout SECONDS]
// The seed's log goes to standard output, the view controller's label texts to standard error. Exits 0 once the
// central's write {"Yo": "Lo"} arrived (a moment later, so the write response leaves first), 1 on timeout.
// Runs on the shared air (the `blue air` hub, started on demand), where it meets a central in another process.
import ExampleSupport
import Foundation
import Seed001PeripheralApp

let example = ExampleProgram("Seed001Peripheral")

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
            example.log("Start configuration 🎛")
        case .didStartAdvertising:
            advertising = true
            example.log("Start advertising 📻")
        case .didSendData:
            sent = true
            example.log("Did send data ⬆️")
        case .didReceiveData:
            didReceiveData()
        }
    }

    func didReceiveData() {
        received = true
        example.log("Did received data ⬇️")
        // The seed responded to the write before telling us; leave the response time to reach the central.
        DispatchQueue.main.asyncAfter(deadline: .now() + 1) {
            example.log("Exchange done")
            exit(0)
        }
    }
}

let timeout = example.timeout(default: 20)
let viewController = ViewController()
viewController.viewDidAppear()
example.run(keeping: viewController, timeout: timeout) {
    let stage = viewController.sent ? "sent {\"Hello\": \"Darkness\"}, but the central's write did not arrive"
        : viewController.advertising ? "advertising, but no central subscribed"
        : "advertising did not start"
    example.fail("timed out after \(timeout) s: \(stage)")
}
