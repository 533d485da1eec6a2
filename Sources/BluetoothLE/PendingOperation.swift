import BluetoothRuntime

/// One awaited operation of the async API: the bridge between a completion called on the stack's loop and a
/// task suspended in `await`. It finishes exactly once: with the operation's result, or with `CancellationError`
/// when the awaiting task is cancelled first (a result arriving later is then ignored; ``isFinished`` lets the
/// loop side skip work nobody waits for any more). Thread-safe; resuming a continuation runs no user code.
final class PendingOperation<Value: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<Value, any Error>)
        case finished(Result<Value, any Error>)
    }

    private let state = LockedValue<State>(.idle)

    /// Whether a result (or the cancellation) was already delivered.
    var isFinished: Bool {
        state.withLock { if case .finished = $0 { true } else { false } }
    }

    /// A step that cannot be taken back is under way (``commit()``), and whether the task was cancelled meanwhile.
    private let step = LockedValue<(committed: Bool, cancelRequested: Bool)>((false, false))

    /// Starts a step that cannot be taken back (a value handed to the link): false when the operation already ended
    /// (cancelled). Until ``release()``, cancelling does not end it: the step's result does.
    func commit() -> Bool {
        step.withLock { step in
            guard !isFinished else { return false }
            step.committed = true
            return true
        }
    }

    /// Ends the step of ``commit()`` without a result (the operation waits again): false when the task was cancelled
    /// meanwhile, which ends the operation now.
    func release() -> Bool {
        let cancelled = step.withLock { step -> Bool in
            step.committed = false
            return step.cancelRequested
        }
        if cancelled { finish(.failure(CancellationError())) }
        return !cancelled
    }

    /// The task was cancelled: ends the operation unless a committed step is under way (its result ends it).
    fileprivate func cancel() -> Bool {
        let now = step.withLock { step -> Bool in
            step.cancelRequested = true
            return !step.committed
        }
        return now && finish(.failure(CancellationError()))
    }

    /// Delivers `result` unless the operation already finished. Returns whether this call finished it.
    @discardableResult
    func finish(_ result: Result<Value, any Error>) -> Bool {
        let (finishedNow, continuation): (Bool, CheckedContinuation<Value, any Error>?) = state.withLock { state in
            switch state {
            case .idle:
                state = .finished(result)
                return (true, nil)
            case .waiting(let continuation):
                state = .finished(result)
                return (true, continuation)
            case .finished:
                return (false, nil)
            }
        }
        continuation?.resume(with: result)
        return finishedNow
    }

    @discardableResult func succeed(_ value: Value) -> Bool { finish(.success(value)) }
    @discardableResult func fail(_ error: any Error) -> Bool { finish(.failure(error)) }

    private func install(_ continuation: CheckedContinuation<Value, any Error>) -> Bool {
        let stored: Result<Value, any Error>? = state.withLock { state in
            switch state {
            case .idle:
                state = .waiting(continuation)
                return nil
            case .finished(let result):
                return result
            case .waiting:
                return .failure(BluetoothLEError(.protocolError, "operation awaited twice"))
            }
        }
        guard let stored else { return true }
        continuation.resume(with: stored)
        return false
    }

    /// Runs `start` (which must not block: it hands the work to the loop) and suspends until the operation
    /// finishes. Cancelling the task finishes it with `CancellationError` and then calls `onCancel`.
    static func run(
        onCancel: (@Sendable () -> Void)? = nil,
        _ start: @escaping @Sendable (PendingOperation<Value>) -> Void
    ) async throws -> Value {
        let operation = PendingOperation<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                if operation.install(continuation) { start(operation) }
            }
        } onCancel: {
            if operation.cancel() { onCancel?() }
        }
    }
}
