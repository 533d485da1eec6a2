/// Awaits a completion-based call: `start` is given a completion, and the first result it is called with is the
/// answer; later calls are ignored (a timeout racing the reply, a connection ending after it). For the engines'
/// callback APIs (the seam, StackEngine) seen from async code.
public func firstCompletion<Value: Sendable, Failure: Error>(
    _ start: (@escaping @Sendable (Result<Value, Failure>) -> Void) -> Void
) async -> Result<Value, Failure> {
    await withCheckedContinuation { (continuation: CheckedContinuation<Result<Value, Failure>, Never>) in
        let once = LockedValue<CheckedContinuation<Result<Value, Failure>, Never>?>(continuation)
        start { result in
            let pending = once.withLock { value in
                defer { value = nil }
                return value
            }
            pending?.resume(returning: result)
        }
    }
}
