// What the programs that run seed 004's central (Examples/Seed004Central) and its tests see of it. The seed's
// ViewController (ViewController.swift) stays as the seed declares it, internal to this module; this file creates
// it as the seed's storyboard does (with the row the user taps given as a name) and sends the seed's `print` lines,
// its `exit(0)` on success and its failures where the program or the test chooses.
public import OpenCoreBluetooth
import BluetoothRuntime

/// Seed 004's central app: the GAP Central role (Core 5.4 Vol 3 Part C §2.2.2.4) talking to an Android GATT server
/// (Vol 3 Part G §4): discovery of everything, a subscription to every characteristic, a write with response and the
/// echo received as a notification. Used from the main queue, as the seed is (its manager delivers there).
public final class Seed004App: @unchecked Sendable {
    /// How the seed ended: it received the echo of its text (its `exit(0)`), or failed, in words.
    public enum Outcome: Equatable, Sendable {
        case received
        case failed(String)
    }

    let controller: ViewController

    /// Creates the seed's view controller, which creates its central manager at once (queue nil: the main queue),
    /// to connect to the peripheral named `name` and write `text`. The seed's log lines go to `log`; `finished`
    /// is called once, with how it ended (the last app created in the process decides for both).
    public init(name: String = "Chat", text: String = "~測試數據 hello",
                log: @escaping @Sendable (String) -> Void = { Swift.print($0, terminator: "") },
                finished: @escaping @Sendable (Outcome) -> Void) {
        seedLog.store(log)
        seedEnd.store(finished)
        controller = ViewController(name: name, text: text)
    }

    /// What the seed was doing last ("scanning", "connecting", "discovering", "writing"...).
    public var stage: String { controller.stage }

    /// The seed's central manager.
    public var centralManager: CBCentralManager { controller.central }
}

/// Where the seed's `print` goes (`Seed004App.init`).
let seedLog = LockedValue<@Sendable (String) -> Void>({ Swift.print($0, terminator: "") })
/// Where the seed's ending goes (`Seed004App.init`).
let seedEnd = LockedValue<@Sendable (Seed004App.Outcome) -> Void>({ _ in })

/// The seed's `print`: the same text, to `seedLog`.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    seedLog.load()(items.map { "\($0)" }.joined(separator: separator) + terminator)
}

/// The seed's `exit(0)` once it received the echo: told to `seedEnd` (a program exits there; a test records it).
/// Its literal is an `Int`, so this is the `exit` the seed's code calls, not the C library's.
func exit(_ status: Int) {
    seedEnd.load()(status == 0 ? .received : .failed("exit \(status)"))
}

/// The seed's failures (its program's `fail`), told to `seedEnd`.
func fail(_ text: String) {
    seedEnd.load()(.failed(text))
}
