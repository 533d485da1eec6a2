import Dispatch
public import Foundation
public import BluetoothRuntime

/// The base of the two managers (CoreBluetooth `CBManager`): state and authorization.
///
/// Delegate callbacks run, in order, on the queue given at init; `nil` means the main queue. On Linux the main
/// queue runs only while the main thread is in `dispatchMain()`, `RunLoop.main.run()` or an async `main`
/// (`@main` with `static func main() async`): a command-line program that uses `queue: nil` must end its setup
/// with one of these, or pass its own serial queue.
open class CBManager: NSObject, @unchecked Sendable {
    let queue: DispatchQueue
    /// The app the manager belongs to (its provider's): foreground or not (``OCBApplication``).
    let application: OCBApplication
    /// The background mode that keeps this manager's events flowing in the background.
    let backgroundMode: OCBBackgroundModes
    /// Every event and completion for the app goes through it: held while the app receives no events.
    let gate: DeliveryGate
    private let stateBox = LockedValue(CBManagerState.unknown)
    private let misuseBox = LockedValue<[String]>([])

    // Internal as Apple's (no public init), @usableFromInline so that a subclass of a manager in another module
    // still inherits the managers' convenience initializers (an invisible designated initializer would stop that).
    @usableFromInline init(queue: DispatchQueue?, application: OCBApplication, backgroundMode: OCBBackgroundModes,
                           sharedTime: SharedTime? = nil) {
        self.queue = queue ?? DispatchQueue.main
        self.application = application
        self.backgroundMode = backgroundMode
        gate = DeliveryGate(queue: self.queue, open: application.deliversEvents(to: backgroundMode), sharedTime: sharedTime)
        super.init()
    }

    /// Opens or closes the gate for the app's new state (the managers add their scanning and advertising rules).
    func followApplicationState() {
        gate.setOpen(application.deliversEvents(to: backgroundMode))
    }

    /// `.unknown` until the first `…DidUpdateState` callback (always asynchronous, never inside `init`).
    public internal(set) var state: CBManagerState {
        get { stateBox.withLock { $0 } }
        set { stateBox.withLock { $0 = newValue } }
    }

    /// The app's Bluetooth authorization (``OCBApplication/bluetoothAuthorization``; `.allowedAlways` unless the app
    /// says otherwise: Linux has no privacy prompt).
    @available(iOS, deprecated: 13.1, message: "Use CBManager.authorization")
    @available(macOS, deprecated: 10.15, message: "Use CBManager.authorization")
    public var authorization: CBManagerAuthorization { application.bluetoothAuthorization }

    /// The process's Bluetooth authorization (`OCB_BLUETOOTH_AUTHORIZATION`; `.allowedAlways` unless set).
    public class var authorization: CBManagerAuthorization { OCBApplication.process.bluetoothAuthorization }

    /// "<CBCentralManager: 0x…>", as Apple prints managers in its logs.
    var objectLabel: String { "<\(type(of: self)): \(Self.address(of: self))>" }

    static func address(of object: AnyObject) -> String {
        "0x" + String(UInt(bitPattern: ObjectIdentifier(object).hashValue), radix: 16)
    }

    /// Logs an API misuse as CoreBluetooth does (one line, logged as a warning) and keeps it for tests.
    func misuse(_ message: String) {
        let line = "[CoreBluetooth] API MISUSE: \(message)"
        misuseBox.withLock { $0.append(line) }
        Log.coreBluetooth.warning("\(line)")
    }

    /// The misuse lines logged by this manager and its peripherals (tests).
    var misuseLog: [String] { misuseBox.withLock { $0 } }

    /// The end of both managers' initializers. `restore` of the restored state's `snapshot` (delivering
    /// `willRestoreState`) is queued first, so it precedes the first state update; then the backend starts and
    /// each of its events is re-queued, in order, on the manager's queue for `handle` (the manager kept alive
    /// until it ran), through the ``gate`` (held while the app receives no events; `discardableWhileHeld` ones are
    /// dropped then). Without a backend the misuse is logged, the state becomes `.unsupported` and
    /// `didUpdateState` tells the delegate.
    func startBackend<Snapshot: Sendable, Event: Sendable>(
        restoring snapshot: Snapshot?, with restore: @escaping @Sendable (Snapshot) -> Void,
        start: ((@escaping @Sendable (Event) -> Void) -> Void)?,
        handle: @escaping @Sendable (Event) -> Void,
        discardableWhileHeld: @escaping @Sendable (Event) -> Bool = { _ in false },
        didUpdateState: @escaping @Sendable () -> Void
    ) {
        if let snapshot { queue.async { restore(snapshot) } }
        guard application.isBluetoothAllowed else {
            // The user said "Don't Allow" (or the device restricts it): no stack, `.unauthorized`, as on iOS.
            gate.deliver {
                self.state = .unauthorized
                didUpdateState()
            }
            return
        }
        guard let start else {
            queue.async {
                self.misuse("\(self.objectLabel) has no Bluetooth backend (CBBackendRegistry): state is unsupported")
                self.state = .unsupported
                didUpdateState()
            }
            return
        }
        start { [weak self] event in
            guard let self else { return }
            self.gate.deliver(discardable: discardableWhileHeld(event)) { withExtendedLifetime(self) { handle(event) } }
        }
    }

    /// Logs the powered-on misuse and answers whether the command may go on.
    func requirePoweredOn() -> Bool {
        guard state == .poweredOn else {
            misuse("\(objectLabel) can only accept this command while in the powered on state")
            return false
        }
        return true
    }
}
