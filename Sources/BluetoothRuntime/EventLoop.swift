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

    /// Runs `job` on the loop, after the jobs already enqueued, and returns once it ran or was handed over: a loop
    /// that can lends itself to the calling thread for the job, so that a thread with nothing else to do (a
    /// transport's reader) does the loop's work itself instead of waking the loop's thread (one thread wake-up less
    /// per batch of packets: issue 31). The caller may wait for the loop's current job. Never call it from the loop.
    func executeHandingOver(_ job: @escaping @Sendable () -> Void)
}

extension EventLoop {
    /// By default the job is enqueued (``execute(_:)``) and this returns at once.
    public func executeHandingOver(_ job: @escaping @Sendable () -> Void) {
        execute(job)
    }

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
