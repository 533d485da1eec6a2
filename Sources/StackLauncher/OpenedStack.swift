public import BluetoothEngine
import BluetoothRuntime

/// A started stack, whichever engine runs it (BluetoothEngine's ``StackEngine``): our host as ``StackLauncher``
/// opened it (``LaunchedStack``), or bluetoothd (``BluetoothdStack``). What the APIs and `blue` hold: the engine
/// they drive, how it was reached, its controller, the news of its loss and its end.
public protocol OpenedStack: AnyObject, Sendable {
    var engine: any StackEngine { get }
    /// How the stack was reached, for a status line: "air:/run/user/0/opencorebluetooth/air.sock (hub)",
    /// "bluetoothd (hci0)".
    var transportDescription: String { get }
    /// The controller as the engine knew it once started (its own address).
    var controllerInfo: ControllerInfo { get }
    /// Calls `handler` once if the controller goes away while the stack runs (a hub stopped, an adapter powered off
    /// or bluetoothd gone), from any thread; never after ``shutdown()``.
    func onLoss(_ handler: @escaping @Sendable (StackLoss) -> Void)
    /// The loss of the controller, once it went away while the stack ran; nil while it runs and after ``shutdown()``.
    var loss: StackLoss? { get }
    /// Disconnects everything and lets the engine go. Idempotent; not from the engine's own loop.
    func shutdown()
}

extension LaunchedStack: OpenedStack {}

extension OpenedStack {
    /// Waits for the one completion `start` is given (the engine's completion-based calls, awaited; a second call
    /// of the completion is ignored).
    public func awaitCompletion<Value: Sendable, Failure: Error>(
        _ start: (@escaping @Sendable (Result<Value, Failure>) -> Void) -> Void
    ) async -> Result<Value, Failure> {
        await firstCompletion(start)
    }
}
