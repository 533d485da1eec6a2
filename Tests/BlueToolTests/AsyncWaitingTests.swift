import BluetoothRuntime
import Foundation
import TestSupport
import Testing

/// TestSupport's waiting helpers (AsyncWaiting.swift), which the process tests of every target rely on: they wait by
/// suspending, see a child's end even when Foundation does not, and never hang or spin on cancellation.
@Suite struct AsyncWaitingTests {
    @Test func pollReportsWhetherTheConditionHeldInTime() async {
        let start = ContinuousClock.now
        var checks = 0
        // A limit far beyond what three checks take even on a starved machine (a full parallel run once delayed
        // the pool's sleeps by seconds): the poll ends at the third check, not at its limit.
        #expect(await poll(within: .seconds(120)) { checks += 1; return checks == 3 })
        #expect(checks == 3)
        #expect(!(await poll(within: .milliseconds(100)) { false }))
        #expect(ContinuousClock.now - start < .seconds(100))
    }

    @Test func pollStopsAtOnceWhenItsTaskIsCancelled() async {
        let waiter = Task { await poll(within: .seconds(300)) { false } }
        waiter.cancel()
        let start = ContinuousClock.now
        #expect(await waiter.value == false)
        // At once, not at its 300 s limit (the bound leaves room for a busy machine).
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    @Test func blockingWorkRunsOffThePoolAndPassesTypedErrors() async throws {
        struct Refused: Error, Equatable {}
        let onMainThread = await blockingWork { Thread.isMainThread }
        #expect(!onMainThread)
        // Four bodies block at once (the pool has one thread per core) until a poller on the pool has ticked three
        // times: a pool the bodies took could never tick and they would wait out their 60 s bound. No timing is
        // asserted: a busy machine only makes it slower.
        let release = DispatchSemaphore(value: 0)
        let waitedOut = LockedValue(0)
        let ticks = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    _ = await blockingWork {
                        if release.wait(timeout: .now() + 60) == .timedOut { waitedOut.withLock { $0 += 1 } }
                    }
                    return -1
                }
            }
            group.addTask {
                var ticks = 0
                _ = await poll(within: .seconds(60)) { ticks += 1; return ticks >= 3 }
                for _ in 0..<4 { release.signal() }
                return ticks
            }
            var found = 0
            for await value in group where value >= 0 { found = value }
            return found
        }
        #expect(ticks >= 3 && waitedOut.load() == 0, "the pool stalled: \(ticks) polls, \(waitedOut.load()) bodies waited out")
        await #expect(throws: Refused()) { try await blockingWork { () throws(Refused) -> Int in throw Refused() } }
        #expect(await blockingWork(within: .milliseconds(50)) { usleep(2_000_000); return 1 } == nil)
        #expect(await blockingWork(within: .seconds(5)) { 7 } == 7)
    }

    @Test func runToCompletionCollectsOutputStatusAndInput() async throws {
        let sh = URL(fileURLWithPath: "/bin/sh")
        let run = try await runToCompletion(sh, ["-c", "cat; echo err >&2; exit 3"], input: Data("in\n".utf8))
        #expect(run.status == 3 && run.exited && !run.timedOut)
        #expect(run.output == "in\n")
        #expect(run.errors == "err\n")
        let slow = try await runToCompletion(sh, ["-c", "sleep 20"], limit: .milliseconds(300))
        #expect(slow.timedOut && !slow.exited && slow.status == SIGKILL, "\(slow)")
    }

    /// Foundation's `isRunning` stays true while a grandchild holds the socket the child inherited; `ended` asks the
    /// kernel, so the waits end with the child's real status.
    @Test func aChildWhoseGrandchildLivesOnIsSeenToEnd() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "sleep 3 & exit 5"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        #expect(await process.waitForExit(within: .seconds(2)))
        let ended = try #require(process.ended)
        #expect(ended.status == 5 && ended.exited)
        #expect(await process.stop(grace: .seconds(1)) == (5, true))
    }

    @Test func stopEndsAProcessThatIgnoresSIGTERM() async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "trap '' TERM; exec sleep 300"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .milliseconds(200))  // the trap is set
        let start = ContinuousClock.now
        let result = await process.stop(grace: .milliseconds(300))
        #expect(result.status == SIGKILL && !result.clean)
        // Killed after the grace, not when its 300 s sleep ends.
        #expect(ContinuousClock.now - start < .seconds(60))
    }
}
