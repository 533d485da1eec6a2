import BlueZ
import BluetoothRuntime
import BluetoothEngine
import StackLauncher

/// A stack as the commands drive it, whichever engine runs it (BluetoothEngine's ``StackEngine``): our host, opened
/// by StackLauncher (``LaunchedStack``), or bluetoothd (``BluetoothdStack``, `--hci bluez`). The commands' waits
/// (StackOperations.swift, TargetResolution.swift) are written once, on this.
protocol CommandStack: Sendable {
    var engine: any StackEngine { get }
    /// How the stack was reached, for a status line: "air:/run/user/0/opencorebluetooth/air.sock (hub)",
    /// "bluetoothd (hci0)".
    var transportDescription: String { get }
    /// The controller as the engine knew it once started (its own address).
    var controllerInfo: ControllerInfo { get }
    /// Disconnects everything and lets the engine go.
    func shutdown()
}

extension LaunchedStack: CommandStack {}

/// bluetoothd's stack for a command (`--hci bluez`, `bluez:hciN`): the BlueZ module's ``BlueZEngine``, started.
final class BluetoothdStack: CommandStack {
    let engine: any StackEngine
    /// "bluetoothd (hci0)".
    let transportDescription: String
    /// The adapter (its address is bluetoothd's Adapter1.Address).
    let controllerInfo: ControllerInfo

    private init(engine: any StackEngine, description: String, controllerInfo: ControllerInfo) {
        self.engine = engine
        transportDescription = description
        self.controllerInfo = controllerInfo
    }

    /// Connects to bluetoothd and waits until its adapter is there and powered (at most the engine's start limit),
    /// else one line and exit 69.
    static func open(_ adapter: BlueZAdapterChoice) async throws(CLIFailure) -> BluetoothdStack {
        let engine = BlueZEngine(adapter: adapter.name)
        let started = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ControllerInfo, HostError>, Never>) in
            engine.start { continuation.resume(returning: $0) }
        }
        let info: ControllerInfo
        switch started {
        case .success(let started): info = started
        case .failure(let error):
            engine.shutdown()
            throw CLIFailure(.unavailable, error.reason)
        }
        let stack = BluetoothdStack(engine: engine, description: engine.description, controllerInfo: info)
        // The adapter powered off or bluetoothd gone ends the command, as a lost controller does on our host.
        engine.addEventHandler { event in
            if case .controllerError(let error) = event { CommandRun.end(.failed(CLIFailure(.unavailable, "lost \(error.reason)"))) }
        }
        return stack
    }

    func shutdown() { engine.shutdown() }
}

/// The adapter `--hci bluez` / `bluez:hciN` names (nil: bluetoothd's first).
struct BlueZAdapterChoice: Sendable {
    var name: String?
}
