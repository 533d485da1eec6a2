import BluetoothRuntime
import Testing
import BluetoothCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite struct ManualEventLoopTests {
    @Test func jobsRunInOrderOnlyWhenAsked() {
        let loop = ManualEventLoop()
        let log = LockedValue<[Int]>([])
        for value in 1...3 { loop.execute { log.withLock { $0.append(value) } } }
        #expect(log.withLock { $0 }.isEmpty)
        #expect(loop.run() == 3)
        #expect(log.withLock { $0 } == [1, 2, 3])
        #expect(!loop.hasPendingWork)
    }

    @Test func timersFireInDeadlineOrderAtTheirOwnInstants() {
        let loop = ManualEventLoop()
        let log = LockedValue<[String]>([])
        loop.schedule(after: .seconds(30)) { log.withLock { $0.append("30s at \(loop.now)") } }
        loop.schedule(after: .milliseconds(100)) {
            log.withLock { $0.append("100ms at \(loop.now)") }
            loop.schedule(after: .milliseconds(100)) { log.withLock { $0.append("200ms at \(loop.now)") } }
        }
        loop.advance(by: .seconds(1))
        #expect(log.withLock { $0 } == ["100ms at 0.100000s", "200ms at 0.200000s"])
        #expect(loop.pendingWorkDescription == "0 jobs, 1 timer (next at 30.000000s)")
        loop.advance(by: .seconds(29))
        #expect(log.withLock { $0 }.last == "30s at 30.000000s")
        #expect(loop.pendingWorkDescription == "nothing")
    }

    @Test func cancelledTimersNeverRunAndTiesKeepSchedulingOrder() {
        let loop = ManualEventLoop()
        let log = LockedValue<[Int]>([])
        let cancelled = loop.schedule(after: .seconds(1)) { log.withLock { $0.append(0) } }
        loop.schedule(after: .seconds(1)) { log.withLock { $0.append(1) } }
        loop.schedule(after: .seconds(1)) { log.withLock { $0.append(2) } }
        cancelled.cancel()
        loop.advance(by: .seconds(1))
        #expect(log.withLock { $0 } == [1, 2])
    }

    /// Thousands of timers, most cancelled and scheduled again (as hosts re-arm their one timer), past the heap's
    /// sweeps of cancelled ones: each live timer runs once, at its instant, in (deadline, scheduling) order, and the
    /// count of what is left is the live ones.
    @Test func manyTimersCancelledAndRescheduledRunOnceInOrder() {
        let loop = ManualEventLoop()
        let log = LockedValue<[Int]>([])
        var expected: [(deadline: Int, order: Int, value: Int)] = []
        var handles: [ScheduledJob] = []
        var order = 0
        for value in 0..<3_000 {
            let deadline = (value * 7_919) % 1_000 + 1
            // Three earlier schedulings of the same work, cancelled, then the one that stays.
            for stale in 0..<3 {
                handles.append(loop.schedule(after: .milliseconds(deadline + stale)) { log.withLock { $0.append(-1) } })
                handles.last?.cancel()
                order += 1
            }
            loop.schedule(after: .milliseconds(deadline)) {
                #expect(loop.now == StackInstant.zero + .milliseconds(deadline))
                log.withLock { $0.append(value) }
            }
            expected.append((deadline, order, value))
            order += 1
        }
        #expect(loop.pendingWorkDescription == "0 jobs, 3000 timers (next at 0.001000s)")
        loop.advance(by: .milliseconds(500))
        let half = expected.filter { $0.deadline <= 500 }.count
        #expect(log.withLock { $0.count } == half)
        loop.advance(by: .seconds(1))
        let sorted = expected.sorted { ($0.deadline, $0.order) < ($1.deadline, $1.order) }.map(\.value)
        #expect(log.withLock { $0 } == sorted)
        #expect(!loop.hasPendingWork)
    }

    @Test func inEventLoopIsTrueOnlyInsideJobs() {
        let loop = ManualEventLoop()
        let seen = LockedValue<Bool?>(nil)
        loop.execute { seen.withLock { $0 = loop.inEventLoop } }
        #expect(!loop.inEventLoop)
        loop.run()
        #expect(seen.withLock { $0 } == true)
    }

    @Test("a job that runs the loop itself: the nested jobs run, and the loop still says it is running after")
    func nestedRunKeepsTheOuterJobRunning() {
        let loop = ManualEventLoop()
        let seen = LockedValue<[String]>([])
        loop.execute {
            loop.execute { seen.withLock { $0.append("inner \(loop.inEventLoop)") } }
            loop.run()
            seen.withLock { $0.append("outer \(loop.inEventLoop)") }
        }
        loop.run()
        #expect(seen.withLock { $0 } == ["inner true", "outer true"])
        #expect(!loop.inEventLoop)
    }

    @Test("advance(to:) runs each job a timer enqueues at that timer's instant, before the next timer")
    func timerJobsRunAtTheirTimersInstant() {
        let loop = ManualEventLoop()
        let seen = LockedValue<[String]>([])
        for milliseconds in [10, 20] {
            loop.schedule(at: StackInstant(nanoseconds: UInt64(milliseconds) * 1_000_000)) {
                loop.execute { seen.withLock { $0.append("job of \(milliseconds) ms at \(loop.now.nanoseconds / 1_000_000)") } }
            }
        }
        loop.advance(to: StackInstant(nanoseconds: 15_000_000))
        #expect(seen.withLock { $0 } == ["job of 10 ms at 10"])
        #expect(loop.now.nanoseconds == 15_000_000)
        loop.advance(to: StackInstant(nanoseconds: 30_000_000))
        #expect(seen.withLock { $0 } == ["job of 10 ms at 10", "job of 20 ms at 20"])
        #expect(loop.now.nanoseconds == 30_000_000)
    }

    @Test func runawayJobsStopAtTheLimit() {
        let loop = ManualEventLoop()
        @Sendable func again() { loop.execute(again) }
        loop.execute(again)
        #expect(loop.run(limit: 1_000) == 1_000)
        #expect(loop.hasPendingWork)
    }
}

@Suite struct DispatchEventLoopTests {
    @Test func runsJobsSeriallyAndTimersAfterTheirDelay() async {
        let loop = DispatchEventLoop(label: "test")
        let start = loop.now
        let elapsed: Duration = await withCheckedContinuation { continuation in
            loop.schedule(after: .milliseconds(20)) {
                continuation.resume(returning: loop.now - start)
            }
        }
        #expect(elapsed >= .milliseconds(20))
        let inLoop = loop.sync { loop.inEventLoop }
        #expect(inLoop)
        #expect(!loop.inEventLoop)
    }

    @Test("executeHandingOver runs the job on the calling thread, after the jobs already enqueued; from the loop, later")
    func handingOverRunsOnTheCaller() {
        let loop = DispatchEventLoop(label: "hand-over")
        let order = LockedValue<[String]>([])
        let ranOnCaller = LockedValue(false)
        let caller = UInt(pthread_self())
        loop.execute { order.withLock { $0.append("enqueued") } }
        loop.executeHandingOver {
            order.withLock { $0.append("handed over") }
            ranOnCaller.store(UInt(pthread_self()) == caller && loop.inEventLoop)
        }
        // It returned once the job ran: in order, on this thread, as the loop.
        #expect(order.load() == ["enqueued", "handed over"])
        #expect(ranOnCaller.load())
        // From the loop itself it cannot wait for the loop: the job is enqueued and runs after the current one.
        loop.sync {
            loop.executeHandingOver { order.withLock { $0.append("from the loop") } }
            order.withLock { $0.append("current job") }
        }
        loop.sync {}
        #expect(order.load() == ["enqueued", "handed over", "current job", "from the loop"])
    }

    @Test func actorsCanRunOnTheLoop() async {
        actor Counter {
            let loop: DispatchEventLoop
            var count = 0
            init(loop: DispatchEventLoop) { self.loop = loop }
            nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }
            func increment() -> Bool {
                count += 1
                return loop.inEventLoop
            }
        }
        let loop = DispatchEventLoop(label: "actor")
        let counter = Counter(loop: loop)
        #expect(await counter.increment())
    }
}

@Suite struct LockedValueTests {
    /// Reading a stored closure must not re-wrap it (each read through an inout access used to add thunks, so
    /// 100,000 reads took minutes); this loop finishes at once when `load()` is used.
    @Test func readingAClosureDoesNotGrowIt() {
        let box = LockedValue<(@Sendable (Int) -> Int)?>(nil)
        box.store { $0 + 1 }
        var total = 0
        for index in 0..<100_000 {
            total &+= box.load()?(index) ?? 0
        }
        #expect(total == (1...100_000).reduce(0, +))
    }
}
