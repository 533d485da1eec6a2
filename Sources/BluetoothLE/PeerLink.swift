import BluetoothCore
import BluetoothRuntime
import Host
import BluetoothEngine

/// One LE connection as the async API sees it (Core 5.4 Vol 6 Part B §4.5): the host's connection record, the
/// ATT_MTU as last exchanged (Vol 3 Part F §3.4.2) and the disconnection reason once the link ended. Shared by
/// the ``Peripheral`` or ``Central`` object of the connection; thread-safe.
final class PeerLink: Sendable {
    let core: StackCore
    let connection: Connection
    let mtuValue: LockedValue<Int>
    let disconnection = AsyncSignal<HCIStatus>()

    init(core: StackCore, connection: Connection, mtu: Int) {
        self.core = core
        self.connection = connection
        mtuValue = LockedValue(mtu)
    }

    var handle: UInt16 { connection.handle }

    /// Runs `body` on the loop and returns what it gave.
    func onLoop<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async throws -> Value {
        let core = core
        return try await PendingOperation<Value>.run { operation in core.onLoop { operation.succeed(body()) } }
    }

    /// Disconnects (HCI Disconnect, Remote User Terminated Connection) and waits for Disconnection Complete.
    func disconnect() async throws {
        guard disconnection.value == nil else { return }
        let engine = core.engine, handle = handle
        let result: Result<HCIStatus, BluetoothLEError> = try await PendingOperation.run { operation in
            engine.disconnect(connectionHandle: handle, reason: .remoteUserTerminatedConnection) { result in
                operation.succeed(result.mapError { BluetoothLEError($0) })
            }
        }
        switch result {
        case .success: _ = try await disconnection.wait()
        case .failure(let error) where error.code == .notConnected: return
        case .failure(let error): throw error
        }
    }
}

extension Result where Failure == BluetoothLEError {
    /// The result with its error widened, as a ``PendingOperation`` takes it.
    var widened: Result<Success, any Error> { mapError { $0 } }
}
