import BluetoothRuntime

/// The device's Bluetooth as the user and the system switch it, for the managers of one ``CBBackendProvider``:
/// iOS's Settings and Control Centre switch (`.poweredOff` and back to `.poweredOn`) and its Bluetooth service
/// restarting (`.resetting`, then `.poweredOn`) — the states of `CBManagerState` an app cannot cause itself.
///
/// Off, every manager of the provider goes `.poweredOff` at once: its links end without `didDisconnect` (iOS 10 and
/// later), its scan and advertising stop, a peripheral manager keeps its services (Apple: only below `.poweredOff`
/// is the local database cleared) and publishes them again when Bluetooth is back; a manager made while it is off
/// starts `.poweredOff`. On again, each manager gets a new stack and `.poweredOn`. ``reset()`` is the system's
/// Bluetooth service restarting: `.resetting` (a peripheral manager's services are gone and must be added again),
/// then `.poweredOn` on a new stack. The same happens by itself when the controller stops answering commands (a hung
/// chip, which bluetoothd and the Linux kernel reset).
///
/// Each provider has its own (a test kit's world drives its app's); a program's default provider has one nobody
/// switches.
public final class OCBSystemBluetooth: Sendable {
    /// Where the switch stands.
    public enum Power: String, Sendable, Hashable {
        case on, off
    }

    /// What an observer is told.
    enum Change: Sendable {
        case turnedOff, turnedOn, reset
    }

    private struct State {
        var power: Power
        var observers: [ObjectIdentifier: WeakObserver] = [:]
    }

    private struct WeakObserver {
        weak var value: (any SystemBluetoothObserver)?
    }

    private let storage: LockedValue<State>

    /// A switch standing at `power` (on by default).
    public init(power: Power = .on) {
        storage = LockedValue(State(power: power))
    }

    /// Where the switch stands now.
    public var power: Power { storage.withLock { $0.power } }

    /// Turns Bluetooth off (nothing happens if it is off).
    public func turnOff() { change(to: .off, .turnedOff) }

    /// Turns Bluetooth on (nothing happens if it is on).
    public func turnOn() { change(to: .on, .turnedOn) }

    /// The system's Bluetooth service restarts: each manager goes `.resetting`, then `.poweredOn` on a new stack.
    /// Turns Bluetooth on if it was off.
    public func reset() { change(to: .on, .reset) }

    /// Registers a backend (weakly) to hear of changes.
    func observe(_ observer: any SystemBluetoothObserver) {
        storage.withLock { $0.observers[ObjectIdentifier(observer)] = WeakObserver(value: observer) }
    }

    private func change(to power: Power, _ change: Change) {
        let observers = storage.withLock { state -> [any SystemBluetoothObserver] in
            guard state.power != power || change == .reset else { return [] }
            state.power = power
            state.observers = state.observers.filter { $0.value.value != nil }
            return state.observers.values.compactMap(\.value)
        }
        for observer in observers { observer.systemBluetoothChanged(change) }
    }
}

/// A backend's stack that follows the system's Bluetooth switch.
protocol SystemBluetoothObserver: AnyObject, Sendable {
    func systemBluetoothChanged(_ change: OCBSystemBluetooth.Change)
}
