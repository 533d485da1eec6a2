public import BluetoothCore
public import Dispatch
import SystemInterface
import HeapModule

/// One clock for a set of ``DispatchEventLoop``s (a test kit's world: its air and every stack on it) that follows the
/// wall clock until someone waits, and then jumps to the next timer whenever every loop is idle, so that a test
/// spanning ATT's 30-second timeout or a 32-second supervision timeout takes a few seconds.
///
/// The loops keep their own queues and threads. Each job they run is counted while queued and running; their
/// timers live here, in one heap. A driver thread fires the timers that are due and, while ``waiting(until:_:)``
/// (or ``beginWaiting(horizon:)``) holds the clock and no job of any loop is queued or running, moves the clock to
/// the earliest timer (never past the waiter's horizon). Without a waiter, time is the wall clock's, from where the
/// last wait left it. Code that waits in real time (a `DispatchQueue.asyncAfter`, `Task.sleep`) is not sped up; a
/// loop job that blocks waiting for a timer of these loops would stop the clock while someone waits.
public final class SharedTime: @unchecked Sendable {
    private struct Timer: Comparable {
        var deadline: StackInstant
        var sequence: UInt64
        var handle: ScheduledJob
        var queue: DispatchQueue
        var job: @Sendable () -> Void

        static func < (lhs: Timer, rhs: Timer) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.sequence < rhs.sequence)
        }
        static func == (lhs: Timer, rhs: Timer) -> Bool { lhs.sequence == rhs.sequence }
    }

    private let condition = ConditionLock()
    // Guarded by `condition`.
    private var held: StackInstant = .zero
    private var realBase = ContinuousClock.now
    /// Where the current wait started, on both clocks (the pace limit counts from there).
    private var waitStart: (held: StackInstant, real: ContinuousClock.Instant) = (.zero, ContinuousClock.now)
    /// Since when work has kept the clock from jumping, while someone waits.
    private var busySince: ContinuousClock.Instant?
    private var jumps = 0
    private var largestJump: Duration = .zero
    private var paceLimited = 0
    private var stallAdvances = 0
    /// How much faster than the wall clock the clock may run while someone waits: work the loops do not count
    /// (a task resuming on the cooperative pool, an app's own queue) gets a moment of wall clock for each jump.
    /// 10 by default: at 100, a loaded machine's full test run saw a world run ahead of its app.
    public let maximumPace: Double
    private var waiters = 0
    private var horizon: StackInstant?
    private var busy = 0
    private var timers = Heap<Timer>()
    private var sequence: UInt64 = 0
    private var stopped = false

    /// A clock at zero, following the wall clock until someone waits; its driver thread runs until ``stop()``.
    public init(maximumPace: Double = 10) {
        self.maximumPace = max(1, maximumPace)
        DetachedThread.spawn(named: "OpenCoreBluetooth.sharedTime") { [self] in drive() }
    }

    /// The time now.
    public var now: StackInstant {
        condition.lock()
        defer { condition.unlock() }
        return current()
    }

    /// Runs `body` while the clock jumps (at most to `horizon`), then lets it follow the wall clock again.
    public func waiting<T>(until horizon: StackInstant? = nil, _ body: () async throws -> T) async rethrows -> T {
        beginWaiting(horizon: horizon)
        defer { endWaiting() }
        return try await body()
    }

    /// Starts a wait: the clock jumps while every loop is idle, never past `horizon` (nil: no limit).
    public func beginWaiting(horizon: StackInstant?) {
        condition.lock()
        if waiters == 0 {
            held = current()
            waitStart = (held, ContinuousClock.now)
        }
        waiters += 1
        if let horizon { self.horizon = min(self.horizon ?? horizon, horizon) }
        condition.broadcast()
        condition.unlock()
    }

    /// Ends a wait (the last one: the clock follows the wall clock from where it stands).
    public func endWaiting() {
        condition.lock()
        waiters -= 1
        if waiters == 0 {
            realBase = ContinuousClock.now
            horizon = nil
        }
        condition.broadcast()
        condition.unlock()
    }

    /// What the clock stands on, for a failure message: its time, waiters, busy jobs, timers and the next deadline.
    public var summary: String {
        condition.lock()
        defer { condition.unlock() }
        let next = timers.min.map { "\($0.deadline)" } ?? "none"
        return "time \(current()), \(waiters) waiting (horizon \(horizon.map { "\($0)" } ?? "none")), \(busy) busy, "
            + "\(timers.count) timers, next \(next), \(jumps) jumps (largest \(largestJump)), \(paceLimited) pace-limited, "
            + "\(stallAdvances) stalled advances"
    }

    /// Stops the driver (timers not yet due are dropped).
    public func stop() {
        condition.lock()
        stopped = true
        timers = Heap()
        condition.broadcast()
        condition.unlock()
    }

    // MARK: For the loops (and the work they hand on)

    /// A job enters a loop's queue, or other work the clock must wait for while someone waits (an app's delegate
    /// call the stack handed on): each `began` is followed by one ``ended()`` once the work ran.
    public func began() {
        condition.lock()
        busy += 1
        condition.unlock()
    }

    /// A job counted by ``began()`` finished.
    public func ended() {
        condition.lock()
        busy -= 1
        if busy == 0 { condition.broadcast() }
        condition.unlock()
    }

    /// `work` on `queue`, counted from now until it ran (``began()`` / ``ended()``).
    public func async(on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        began()
        queue.async { [self] in
            work()
            ended()
        }
    }

    /// `job` to run on `queue` at `deadline` of this clock, unless `handle` is cancelled first.
    func schedule(at deadline: StackInstant, on queue: DispatchQueue, handle: ScheduledJob, _ job: @escaping @Sendable () -> Void) {
        condition.lock()
        sequence &+= 1
        timers.insert(Timer(deadline: deadline, sequence: sequence, handle: handle, queue: queue, job: job))
        condition.broadcast()
        condition.unlock()
    }

    // MARK: The driver

    /// The time now (under the lock).
    private func current() -> StackInstant {
        if waiters > 0 { return held }
        return held + (ContinuousClock.now - realBase)
    }

    private func drive() {
        condition.lock()
        while !stopped {
            while let top = timers.min, top.handle.isCancelled { _ = timers.removeMin() }
            guard let next = timers.min else {
                condition.wait()
                continue
            }
            let now = current()
            if next.deadline <= now {
                // Everything due, in deadline order, each counted busy until it ran.
                while let due = timers.min, due.deadline <= now {
                    _ = timers.removeMin()
                    guard !due.handle.isCancelled else { continue }
                    busy += 1
                    due.queue.async { [self] in
                        if !due.handle.isCancelled {
                            due.handle.cancel()
                            due.job()
                        }
                        ended()
                    }
                }
                continue
            }
            if waiters > 0 {
                if busy == 0 {
                    // Idle: to the next timer, or to the waiter's horizon when that comes first (it then sees its
                    // limit reached), no further than the pace allows.
                    let wanted = horizon.map { min($0, next.deadline) } ?? next.deadline
                    let allowed = waitStart.held + (ContinuousClock.now - waitStart.real) * maximumPace
                    busySince = nil
                    if wanted <= allowed {
                        if wanted > held {
                            jumps += 1
                            largestJump = max(largestJump, wanted - held)
                            held = wanted
                            continue
                        }
                    } else {
                        // Ahead of the pace: stand at what it allows, and sleep until it allows the rest.
                        paceLimited += 1
                        if allowed > held { held = allowed }
                        let seconds = Double((wanted - allowed).nanosecondsClamped) / 1e9 / maximumPace
                        _ = condition.wait(seconds: min(max(seconds, 0.0005), 0.05))
                        continue
                    }
                }
                // A loop is busy (or the horizon is reached): look again when something changes. Work that stays
                // busy for long (a start-up waiting on a timer of these loops) sees the clock at the wall clock's pace.
                let before = ContinuousClock.now
                _ = condition.wait(seconds: 0.002)
                if busy > 0 {
                    let stalled = ContinuousClock.now - (busySince ?? before)
                    if busySince == nil { busySince = before }
                    if stalled > .milliseconds(50) {
                        let target = horizon.map { min($0, held + (ContinuousClock.now - before)) } ?? held + (ContinuousClock.now - before)
                        if target > held { held = target; stallAdvances += 1 }
                    }
                } else {
                    busySince = nil
                }
            } else {
                let seconds = Double((next.deadline - now).nanosecondsClamped) / 1e9
                _ = condition.wait(seconds: min(seconds, 1))
            }
        }
        condition.unlock()
    }
}

extension DispatchQueue {
    /// `work` on this queue, counted by `time` until it ran when there is one (a test kit's world: its clock must not
    /// skip ahead while the work waits), else plainly queued.
    @inlinable
    public func async(countedBy time: SharedTime?, execute work: @escaping @Sendable () -> Void) {
        guard let time else { return async(execute: work) }
        time.async(on: self, work)
    }
}
