import BluetoothRuntime

/// A value that is set once (a link's disconnection reason) and awaited by any number of tasks. Waiting tasks
/// that are cancelled throw `CancellationError` and are forgotten. Thread-safe.
final class AsyncSignal<Value: Sendable>: Sendable {
    private struct State {
        var value: Value?
        var waiters: [UInt64: PendingOperation<Value>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = LockedValue(State())

    init() {}

    /// The value, once set.
    var value: Value? { state.withLock { $0.value } }

    /// Sets the value (the first call wins) and wakes every waiter.
    func fire(_ value: Value) {
        let waiters: [PendingOperation<Value>] = state.withLock { state in
            guard state.value == nil else { return [] }
            state.value = value
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.succeed(value) }
    }

    /// The value, waiting for it when it is not set yet.
    func wait() async throws -> Value {
        let id = state.withLock { state -> UInt64 in
            state.nextID &+= 1
            return state.nextID
        }
        return try await PendingOperation<Value>.run(onCancel: { [state] in
            _ = state.withLock { $0.waiters.removeValue(forKey: id) }
        }) { [state] operation in
            let ready: Value? = state.withLock { state in
                if let value = state.value { return value }
                state.waiters[id] = operation
                return nil
            }
            if let ready { operation.succeed(ready) }
        }
    }
}
