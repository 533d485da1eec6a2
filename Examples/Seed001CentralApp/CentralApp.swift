// What the programs that run seed 001's macOS central (Examples/Seed001Central, `blue demo`) see of it. The
// seed's BlueEar and BluetoothManager (BluetoothManager.swift) stay as the seed declares them, internal to this
// module; this file creates the manager as the seed's view controller does, hands the BlueEar calls on as events
// and sends the seed's `print` lines to a log of the program's choice.
public import OpenCoreBluetooth
import BluetoothRuntime

/// Seed 001's macOS central app: the GAP Central role (Core 5.4 Vol 3 Part C §2.2.2.4) scanning for the seed's
/// service, connecting, and reading and writing its characteristic over GATT (Vol 3 Part G §4).
public final class CentralApp {
    /// The seed's BlueEar calls, under the seed's names.
    public enum Event: Equatable, Sendable {
        case didStartConfiguration, didStartScanningPeripherals, didSendData, didReceiveData, didFailConnection
        case didConnectPeripheral(name: String?), didDisconnectPeripheral(name: String?)
    }

    let manager: BluetoothManager

    /// Creates the seed's BluetoothManager with `onEvent` as its BlueEar. The seed's log lines, each with its
    /// terminator, go to `log` (standard output by default; the last app created in the process decides).
    public init(log: @escaping @Sendable (String) -> Void = { Swift.print($0, terminator: "") }, onEvent: @escaping (Event) -> Void) {
        seedLog.store(log)
        manager = BluetoothManager(delegate: Ear(onEvent: onEvent))
    }

    /// The seed's `scan()` (the view controller's button): creates the central manager, which scans once powered on.
    public func scan() { manager.scan() }

    /// The seed's central manager (nil before `scan()`).
    public var centralManager: CBCentralManager? { manager.centralManager }
}

/// The seed's BlueEar, forwarding each call as an event.
private struct Ear: BlueEar {
    let onEvent: (CentralApp.Event) -> Void
    func didStartConfiguration() { onEvent(.didStartConfiguration) }
    func didStartScanningPeripherals() { onEvent(.didStartScanningPeripherals) }
    func didConnectPeripheral(name: String?) { onEvent(.didConnectPeripheral(name: name)) }
    func didDisconnectPeripheral(name: String?) { onEvent(.didDisconnectPeripheral(name: name)) }
    func didSendData() { onEvent(.didSendData) }
    func didReceiveData() { onEvent(.didReceiveData) }
    func didFailConnection() { onEvent(.didFailConnection) }
}

/// Where the seed's `print` goes (`CentralApp.init(log:onEvent:)`).
let seedLog = LockedValue<@Sendable (String) -> Void>({ Swift.print($0, terminator: "") })

/// The seed's `print`: the same text, to `seedLog`.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    seedLog.load()(items.map { "\($0)" }.joined(separator: separator) + terminator)
}
