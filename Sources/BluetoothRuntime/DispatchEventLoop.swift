public import BluetoothCore
import Dispatch

/// The production `EventLoop`: a serial DispatchQueue and the continuous clock (or a ``SharedTime`` several loops
/// follow, for a test kit's world). It is also a Swift concurrency `SerialExecutor`, so actors can be isolated to the
/// stack's loop.
public final class DispatchEventLoop: EventLoop, SerialExecutor, @unchecked Sendable {
    private let queue: DispatchQueue
    private let key = DispatchSpecificKey<ObjectIdentifier>()
    private let epoch = ContinuousClock.now
    /// The clock shared with other loops, when there is one: its timers, and its count of queued jobs.
    public let sharedTime: SharedTime?

    /// A loop on a new serial queue named `label`, on the continuous clock or on `sharedTime`.
    public init(label: String = "OpenCoreBluetooth.stack", sharedTime: SharedTime? = nil) {
        queue = DispatchQueue(label: label)
        self.sharedTime = sharedTime
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    public var now: StackInstant {
        if let sharedTime { return sharedTime.now }
        let elapsed = (ContinuousClock.now - epoch).nanosecondsClamped
        return StackInstant(nanoseconds: UInt64(max(0, elapsed)))
    }

    public var inEventLoop: Bool { DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self) }

    public func execute(_ job: @escaping @Sendable () -> Void) {
        queue.async(countedBy: sharedTime, execute: job)
    }

    /// Runs `job` on the calling thread as the queue's turn comes (`DispatchQueue.sync` on a serial queue runs the
    /// block on the caller: no worker thread is woken). On a shared clock the job is enqueued instead, so that the
    /// clock counts it as pending work while it waits.
    public func executeHandingOver(_ job: @escaping @Sendable () -> Void) {
        if sharedTime != nil || inEventLoop {
            execute(job)
        } else {
            queue.sync(execute: job)
        }
    }

    @discardableResult
    public func schedule(at deadline: StackInstant, _ job: @escaping @Sendable () -> Void) -> ScheduledJob {
        let handle = ScheduledJob(deadline: deadline)
        if let sharedTime {
            sharedTime.schedule(at: deadline, on: queue, handle: handle, job)
            return handle
        }
        let delay = max(0, (deadline - now).nanosecondsClamped)
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay))) {
            guard !handle.isCancelled else { return }
            handle.cancel()
            job()
        }
        return handle
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async(countedBy: sharedTime) { unowned.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Runs `body` on the loop and waits for it (for setup and teardown code outside the loop; never call it from
    /// the loop itself).
    public func sync<Result: Sendable>(_ body: @Sendable () throws -> Result) rethrows -> Result {
        sharedTime?.began()
        defer { sharedTime?.ended() }
        return try queue.sync(execute: body)
    }
}
