// Seed 004, the central as a runnable program: the seed's view controller (Examples/Seed004CentralApp), created as
// its storyboard does, with the row the user taps given by name.
//
// Usage: Seed004Central [--name NAME] [--text TEXT] [--timeout SECONDS]   (NAME "Chat", the device picked
// from the list as the user's tap would)
// Exits 0 once the text is written and the peripheral's notification received, 1 on timeout or failure.
import ExampleSupport
import Foundation
import Seed004CentralApp

let example = ExampleProgram("Seed004Central")
let timeout = example.timeout(default: 20)
let app = Seed004App(name: example.option("--name") ?? "Chat", text: example.option("--text") ?? "~測試數據 hello") { outcome in
    switch outcome {
    case .received: exit(0)
    case .failed(let text): example.fail(text)
    }
}
example.run(keeping: app, timeout: timeout) {
    example.fail("timed out after \(timeout) s while \(app.stage)")
}
