// What the programs that run seed 001's iOS peripheral (Examples/Seed001Peripheral, `blue demo`) see of it. The
// seed's BlueEar and BluetoothManager (BluetoothManager.swift) stay as the seed declares them, internal to this
// module; this file creates the manager as the seed's view controller does, hands the BlueEar calls on as events
// and sends the seed's `print` lines to a log of the program's choice.
public import OpenCoreBluetooth
import BluetoothRuntime

/// Seed 001's iOS peripheral app: the GAP Peripheral role (Core 5.4 Vol 3 Part C §2.2.2.3) publishing one GATT
/// service (Vol 3 Part G §3.1) and advertising it, as the seed's BluetoothManager does once powered on.
public final class PeripheralApp {
    /// The seed's BlueEar calls, under the seed's names.
    public enum Event: Equatable, Sendable { case didStartConfiguration, didStartAdvertising, didSendData, didReceiveData }

    let manager: BluetoothManager

    /// Creates the seed's BluetoothManager (the view controller's `viewDidAppear`) with `onEvent` as its BlueEar.
    /// The seed's log lines, each with its terminator, go to `log` (standard output by default; the last app
    /// created in the process decides).
    public init(log: @escaping @Sendable (String) -> Void = { Swift.print($0, terminator: "") }, onEvent: @escaping (Event) -> Void) {
        seedLog.store(log)
        manager = BluetoothManager(delegate: Ear(onEvent: onEvent))
    }

    /// The seed's peripheral manager.
    public var peripheralManager: CBPeripheralManager? { manager.peripheralManager }
}

/// The seed's BlueEar, forwarding each call as an event.
private struct Ear: BlueEar {
    let onEvent: (PeripheralApp.Event) -> Void
    func didStartConfiguration() { onEvent(.didStartConfiguration) }
    func didStartAdvertising() { onEvent(.didStartAdvertising) }
    func didSendData() { onEvent(.didSendData) }
    func didReceiveData() { onEvent(.didReceiveData) }
}

/// Where the seed's `print` goes (`PeripheralApp.init(log:onEvent:)`).
let seedLog = LockedValue<@Sendable (String) -> Void>({ Swift.print($0, terminator: "") })

/// The seed's `print`: the same text, to `seedLog`.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    seedLog.load()(items.map { "\($0)" }.joined(separator: separator) + terminator)
}
