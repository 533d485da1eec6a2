public import BluetoothCore
import Dispatch

/// The production `EventLoop`: a serial DispatchQueue and the continuous clock. It is also a Swift concurrency
/// `SerialExecutor`, so actors can be isolated to the stack's loop.
public final class DispatchEventLoop: EventLoop, SerialExecutor, @unchecked Sendable {
    private let queue: DispatchQueue
    private let key = DispatchSpecificKey<ObjectIdentifier>()
    private let epoch = ContinuousClock.now

    /// A loop on a new serial queue named `label`.
    public init(label: String = "OpenCoreBluetooth.stack") {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: key, value: ObjectIdentifier(self))
    }

    public var now: StackInstant {
        let elapsed = (ContinuousClock.now - epoch).nanosecondsClamped
        return StackInstant(nanoseconds: UInt64(max(0, elapsed)))
    }

    public var inEventLoop: Bool { DispatchQueue.getSpecific(key: key) == ObjectIdentifier(self) }

    public func execute(_ job: @escaping @Sendable () -> Void) {
        queue.async(execute: job)
    }

    @discardableResult
    public func schedule(at deadline: StackInstant, _ job: @escaping @Sendable () -> Void) -> ScheduledJob {
        let handle = ScheduledJob(deadline: deadline)
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
        queue.async { unowned.runSynchronously(on: executor) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Runs `body` on the loop and waits for it (for setup and teardown code outside the loop; never call it from
    /// the loop itself).
    public func sync<Result: Sendable>(_ body: @Sendable () throws -> Result) rethrows -> Result {
        try queue.sync(execute: body)
    }
}
