import ATT
import BluetoothCore
import BluetoothRuntime
import Dispatch
import GATT
import HCI
import Host
import StackLauncher
import BluetoothEngine

/// Async forms of the engine's completion-based GAP and GATT calls, for the commands (and `blue demo`), on our host
/// and on bluetoothd alike. Each waits for exactly one completion; time limits run on the engine's loop.
extension OpenedStack {
    var eventLoop: any EventLoop { engine.eventLoop }

    /// Adds a handler of the engine's events (beside the others); cancel the subscription to remove it.
    @discardableResult
    func addEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) -> StackEventSubscription {
        engine.addEventHandler(handler)
    }

    func startScan(_ options: ScanOptions) async throws(CLIFailure) {
        let result = await awaitCompletion { engine.startScanning(options, completion: $0) }
        // What the engine does not do (bluetoothd's passive scanning) is a usage error, as an option would be.
        if case .failure(let error) = result { throw CLIFailure(error.code == .notOffered ? .usage : .failed, "cannot scan: \(error.reason)") }
    }

    func stopScan() async {
        _ = await awaitCompletion { (done: @escaping @Sendable (Result<Void, HostError>) -> Void) in
            engine.stopScanning(completion: done)
        }
    }

    /// Connects as central within `timeout`.
    func connect(to address: BluetoothAddress, name: String, timeout: Duration) async throws(CLIFailure) -> Connection {
        var options = ConnectOptions()
        options.timeout = timeout
        let result = await awaitCompletion { engine.connect(to: address, options: options, completion: $0) }
        switch result {
        case .success(let connection): return connection
        case .failure(let error):
            if error.code == .timedOut {
                throw CLIFailure(.failed, "cannot connect to \(name): no connection within \(timeout)")
            }
            throw CLIFailure(.failed, "cannot connect to \(name): \(error.reason)")
        }
    }

    /// Runs one GATT procedure on the connection.
    func gatt(_ handle: UInt16, _ procedure: GATTProcedure) async -> Result<GATTProcedureResult, GATTClientError> {
        await awaitCompletion { engine.gatt(connectionHandle: handle, procedure, completion: $0) }
    }

    /// Disconnects and waits for the Disconnection Complete (failures ignored: the link is gone either way).
    func disconnect(_ handle: UInt16) async {
        _ = await awaitCompletion { (done: @escaping @Sendable (Result<HCIStatus, HostError>) -> Void) in
            engine.disconnect(connectionHandle: handle, reason: .remoteUserTerminatedConnection, completion: done)
        }
    }

    /// The connection's ATT_MTU (read on the engine's loop).
    func attMTU(_ handle: UInt16) -> Int {
        let engine = engine
        if engine.eventLoop.inEventLoop { return engine.attMTU(connectionHandle: handle) ?? 23 }
        let answer = LockedValue(23)
        let done = DispatchSemaphore(value: 0)
        engine.eventLoop.execute {
            answer.store(engine.attMTU(connectionHandle: handle) ?? 23)
            done.signal()
        }
        done.wait()
        return answer.load()
    }
}

extension HostError {
    /// The one line a command prints when securing a link failed, naming the SMP reason and who sent it
    /// (Core 5.4 Vol 3 Part H §3.5.5): `pairing failed: Confirm Value Failed (0x04), remote`; `SMP timeout (30 s):
    /// ...`; `encryption failed: Connection Terminated due to MIC Failure (0x3D)`; other errors: their reason.
    var securityLine: String {
        security?.description ?? reason
    }
}
