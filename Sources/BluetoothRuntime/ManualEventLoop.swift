public import BluetoothCore
import DequeModule
import HeapModule

/// An `EventLoop` that runs only when told to, on the caller's thread, with time that moves only when told to.
/// Tests and the deterministic simulation use it: the same calls give the same order of events every run.
///
/// Timers are a heap by deadline, then by the order they were scheduled in (as a list scanned per job, 10,000 host
/// stacks' timers made every job cost 10,000 steps: issue 31 item 5). A cancelled timer stays in the heap until it
/// reaches the top or the heap holds twice what it did after the last sweep, so cancelling is O(1) and each
/// timer is swept at most once.
public final class ManualEventLoop: EventLoop, @unchecked Sendable {
    private struct Timer: Comparable {
        var deadline: StackInstant
        var sequence: UInt64
        var handle: ScheduledJob
        var job: Job

        static func < (lhs: Timer, rhs: Timer) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.sequence < rhs.sequence)
        }

        static func == (lhs: Timer, rhs: Timer) -> Bool { lhs.sequence == rhs.sequence }
    }

    /// A job as the loop keeps it. Wrapped in a struct: a closure stored as a generic element (the deque, the lock's
    /// result) is kept in its most general form, and converting it back allocated a thunk for every job.
    private struct Job {
        let body: @Sendable () -> Void
    }

    private struct State {
        var now: StackInstant = .zero
        var jobs: Deque<Job> = []
        var timers = Heap<Timer>()
        /// How many timers the heap held after the last sweep of cancelled ones.
        var sweptCount = 0
        var sequence: UInt64 = 0
        var running = false

        /// The earliest timer not cancelled (cancelled ones above it are dropped).
        mutating func earliestLive() -> Timer? {
            while let top = timers.min {
                if !top.handle.isCancelled { return top }
                timers.removeMin()
            }
            return nil
        }

        mutating func insert(_ timer: Timer) {
            timers.insert(timer)
            guard timers.count > 2 * sweptCount + 256 else { return }
            timers = Heap(timers.unordered.filter { !$0.handle.isCancelled })
            sweptCount = timers.count
        }
    }

    private let state = LockedValue(State())

    /// A loop whose clock starts at `start`.
    public init(start: StackInstant = .zero) {
        state.withLock { $0.now = start }
    }

    public var now: StackInstant { state.withLock { $0.now } }

    public var inEventLoop: Bool { state.withLock { $0.running } }

    public func execute(_ job: @escaping @Sendable () -> Void) {
        state.withLock { $0.jobs.append(Job(body: job)) }
    }

    @discardableResult
    public func schedule(at deadline: StackInstant, _ job: @escaping @Sendable () -> Void) -> ScheduledJob {
        let handle = ScheduledJob(deadline: deadline)
        state.withLock { state in
            state.sequence &+= 1
            state.insert(Timer(deadline: deadline, sequence: state.sequence, handle: handle, job: Job(body: job)))
        }
        return handle
    }

    /// Runs every enqueued job and every timer already due, until none is left. Returns how many ran.
    /// `limit` stops a runaway loop (a job that always enqueues another).
    @discardableResult
    public func run(limit: Int = 10_000_000) -> Int {
        var count = 0
        var wasRunning = false
        while count < limit, let job = nextRunnable(dueBy: nil, wasRunning: &wasRunning) {
            perform(job, wasRunning: wasRunning)
            count += 1
        }
        return count
    }

    /// Moves time forward by `duration`, firing timers in deadline order at their own instants and running every
    /// job they cause. Returns how many jobs and timers ran.
    @discardableResult
    public func advance(by duration: Duration, limit: Int = 10_000_000) -> Int {
        advance(to: now + duration, limit: limit)
    }

    /// Moves time forward to `target` (see ``advance(by:limit:)``).
    @discardableResult
    public func advance(to target: StackInstant, limit: Int = 10_000_000) -> Int {
        // Jobs first, then timers in deadline order, the clock moved to each as it fires: taking the next one and
        // moving the clock is one lock, as is putting `running` back after it.
        var count = 0
        var wasRunning = false
        while count < limit, let job = nextRunnable(dueBy: target, wasRunning: &wasRunning) {
            perform(job, wasRunning: wasRunning)
            count += 1
        }
        state.withLock { $0.now = max($0.now, target) }
        return count + run(limit: max(0, limit - count))
    }

    /// Whether any job or live timer is left.
    public var hasPendingWork: Bool {
        state.withLock { state in
            !state.jobs.isEmpty || state.earliestLive() != nil
        }
    }

    /// What is left, for leak checks: "2 jobs, 1 timer (next at 30.000000s)", or "nothing".
    public var pendingWorkDescription: String {
        state.withLock { state in
            let jobs = state.jobs.count
            let live = state.timers.unordered.filter { !$0.handle.isCancelled }
            if jobs == 0 && live.isEmpty { return "nothing" }
            let next = state.earliestLive().map { " (next at \($0.deadline))" } ?? ""
            return "\(jobs) job\(jobs == 1 ? "" : "s"), \(live.count) timer\(live.count == 1 ? "" : "s")\(next)"
        }
    }

    /// The deadline of the earliest live timer.
    public var nextDeadline: StackInstant? {
        state.withLock { state in state.earliestLive()?.deadline }
    }

    /// Takes the next job, else the earliest timer due by `target` (nil: by now), moving the clock to its deadline,
    /// and marks the loop running, all under one lock; nil when nothing is due. `wasRunning` gets whether the loop
    /// was already running (a job that runs the loop itself), for ``perform(_:wasRunning:)`` to put back.
    private func nextRunnable(dueBy target: StackInstant?, wasRunning: inout Bool) -> Job? {
        var running = false
        let job: Job? = state.withLock { state in
            let job: Job
            if let queued = state.jobs.popFirst() {
                job = queued
            } else {
                guard let timer = state.earliestLive(), timer.deadline <= (target ?? state.now) else { return nil }
                state.timers.removeMin()
                state.now = max(state.now, timer.deadline)
                timer.handle.cancel()
                job = timer.job
            }
            running = state.running
            state.running = true
            return job
        }
        wasRunning = running
        return job
    }

    private func perform(_ job: Job, wasRunning: Bool) {
        job.body()
        state.withLock { $0.running = wasRunning }
    }
}
