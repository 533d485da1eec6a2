public import BluetoothCore
/// A serial executor with a clock (see the design note). Everything stateful in the stack runs on one.
public protocol EventLoop: AnyObject, Sendable {
    /// The current time on this loop's timeline.
    var now: StackInstant { get }

    /// Runs `job` on the loop after the jobs already enqueued.
    func execute(_ job: @escaping @Sendable () -> Void)

    /// Runs `job` on the loop at `deadline` (or as soon as possible after it). Cancel with the returned handle.
    @discardableResult
    func schedule(at deadline: StackInstant, _ job: @escaping @Sendable () -> Void) -> ScheduledJob

    /// Whether the caller is running on this loop right now.
    var inEventLoop: Bool { get }
}

extension EventLoop {
    /// Runs `job` on the loop after `delay`.
    @discardableResult
    public func schedule(after delay: Duration, _ job: @escaping @Sendable () -> Void) -> ScheduledJob {
        schedule(at: now + delay, job)
    }
}

/// A timer armed on an `EventLoop`. Cancelling is idempotent and safe from any thread; a cancelled job never runs.
public final class ScheduledJob: Sendable {
    private let state: LockedValue<Bool> = LockedValue(false)
    /// When the job is due.
    public let deadline: StackInstant

    init(deadline: StackInstant) {
        self.deadline = deadline
    }

    public func cancel() { state.withLock { $0 = true } }

    public var isCancelled: Bool { state.withLock { $0 } }
}
