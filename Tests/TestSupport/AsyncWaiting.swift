import Dispatch
public import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Waiting in tests without blocking Swift concurrency's cooperative pool.
//
// Swift Testing runs every test function (sync or async) on the cooperative pool, which on Linux has one thread per
// core: two on a 2-core machine. A test that blocks its thread (`usleep`, `Thread.sleep`, `Process.waitUntilExit`,
// `DispatchSemaphore.wait`, `readDataToEndOfFile`, a blocking `read`) for seconds takes a whole core's worth of the
// pool away; two such tests at once stall every async test in the process, whose wall-clock deadlines then expire.
// The helpers below wait by suspending (`Task.sleep`) or run the blocking call on a thread of their own. Two more
// traps they avoid: Foundation's `Process.isRunning` stays true while a grandchild holds the child's inherited socket
// (`Process.ended` asks the kernel), and a cancelled task (a time limit) cannot sleep, so a `try? await Task.sleep`
// loop spins forever (`poll` and `waitForEnd` stop).

/// Runs `body` on a new thread of its own, never on the cooperative pool, and suspends the caller until it returns.
///
/// Use it for a call that blocks and cannot be made asynchronous: a blocking `read`, `readDataToEndOfFile()`, a
/// library function that polls, a long synchronous loop driven by real time.
///
/// ```swift
/// let data = await blockingWork { pipe.fileHandleForReading.readDataToEndOfFile() }
/// ```
public func blockingWork<T: Sendable, Failure: Error>(
    _ body: @escaping @Sendable () throws(Failure) -> T
) async throws(Failure) -> T {
    let result: Result<T, Failure> = await withCheckedContinuation { continuation in
        let thread = Thread {
            do throws(Failure) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        thread.name = "test.blockingWork"
        thread.start()
    }
    return try result.get()
}

/// Runs `body` on a thread of its own and waits for it at most `limit` of real time.
///
/// Returns nil when `body` did not return in time; the thread then goes on and its result is dropped, so `body`
/// must be safe to finish later (the caller typically unblocks it, e.g. by closing a socket).
public func blockingWork<T: Sendable>(within limit: Duration, _ body: @escaping @Sendable () -> T) async -> T? {
    let gate = ResumeOnce<T?>()
    return await withCheckedContinuation { continuation in
        gate.arm(continuation)
        let thread = Thread { gate.resume(body()) }
        thread.name = "test.blockingWork"
        thread.start()
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds(limit)) { gate.resume(nil) }
    }
}

/// Checks `condition` every `interval` until it holds or `limit` of real time has passed, suspending (never
/// blocking a thread) in between. Returns whether it held; the condition is checked once more at the deadline (or
/// when the task is cancelled, e.g. by a time limit).
///
/// ```swift
/// #expect(await poll(within: .seconds(10)) { hub.devices.count == 2 })
/// ```
public func poll(
    within limit: Duration, every interval: Duration = .milliseconds(10), until condition: () async throws -> Bool
) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    // A cancelled task (a time limit) cannot sleep: stop polling rather than spin until the deadline.
    while clock.now < deadline, !Task.isCancelled {
        if try await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}

extension Process {
    /// How the process ended — its exit status (or the signal) and whether it exited by itself — or nil while it
    /// runs.
    ///
    /// Foundation notices a child's end only when every copy of a socket the child inherited is closed, so a child
    /// that left a grandchild running (e.g. a hub it spawned) stays `isRunning` forever, a zombie. This asks the
    /// kernel instead (`waitid` with `WNOWAIT`: the child is not reaped, Foundation still collects it later).
    public var ended: (status: Int32, exited: Bool)? {
        if !isRunning { return (terminationStatus, terminationReason == .exit) }
        var info = siginfo_t()
        guard waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
              info._sifields._sigchld.si_pid == processIdentifier else { return nil }
        return (info._sifields._sigchld.si_status, info.si_code == Int32(CLD_EXITED))
    }

    /// Waits (suspending, at most `limit` of real time) until the process has ended. Returns whether it did.
    public func waitForExit(within limit: Duration) async -> Bool {
        await poll(within: limit, every: .milliseconds(20)) { ended != nil }
    }

    /// Waits (suspending) until the process has ended, however long that takes; returns how it ended. When the
    /// waiting task is cancelled (a test's time limit), the process is killed (SIGKILL) and its end awaited.
    @discardableResult
    public func waitForEnd() async -> (status: Int32, exited: Bool) {
        while true {
            if let ended { return ended }
            if Task.isCancelled {
                // A cancelled task cannot sleep (Task.sleep returns at once): end the child, which the kernel reports
                // within milliseconds, and wait for that on this thread, bounded to a second.
                kill(processIdentifier, SIGKILL)
                for _ in 0..<1000 {
                    if let ended { return ended }
                    usleep(1000)
                }
                return (ended?.status ?? SIGKILL, false)
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits (suspending) until the process has ended, however long that takes. Returns its exit status (or the
    /// signal).
    @discardableResult
    public func exitStatus() async -> Int32 {
        await waitForEnd().status
    }

    /// Ends the process: SIGTERM, then SIGKILL if it still runs after `grace`; waits (suspending) until it is gone.
    /// Returns its exit status (or the signal) and whether it ended by itself within the grace period.
    @discardableResult
    public func stop(grace: Duration) async -> (status: Int32, clean: Bool) {
        if let ended { return (ended.status, ended.exited) }
        kill(processIdentifier, SIGTERM)
        if await waitForExit(within: grace), let ended { return (ended.status, ended.exited) }
        kill(processIdentifier, SIGKILL)
        return (await waitForEnd().status, false)
    }

    /// Ends the process without waiting: SIGTERM now, SIGKILL after `grace` from a background queue if it still
    /// runs then. For `defer` and `deinit`, which cannot suspend. Foundation reaps the child either way.
    public func stopInBackground(grace: Duration = .seconds(2)) {
        guard ended == nil else { return }
        let pid = processIdentifier
        kill(pid, SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds(grace)) { [self] in
            if ended == nil, processIdentifier == pid { kill(pid, SIGKILL) }
        }
    }
}

/// What a program run to completion by ``runToCompletion(_:_:environment:input:limit:)`` left.
public struct CompletedProcess: Sendable, CustomStringConvertible {
    /// The exit status, or the signal that ended it.
    public var status: Int32
    /// Whether it exited by itself (false: a signal, including the SIGKILL at the time limit).
    public var exited: Bool
    /// Whether it was killed for running past its time limit.
    public var timedOut: Bool
    /// Everything it wrote to stdout.
    public var standardOutput: Data
    /// Everything it wrote to stderr.
    public var standardError: Data

    /// stdout as UTF-8 text.
    public var output: String { String(decoding: standardOutput, as: UTF8.self) }
    /// stderr as UTF-8 text.
    public var errors: String { String(decoding: standardError, as: UTF8.self) }
    /// Status and both outputs, for failure messages.
    public var description: String {
        "status \(status)\(exited ? "" : " (signal)")\(timedOut ? " (timed out)" : "")\nstdout:\n\(output)\nstderr:\n\(errors)"
    }
}

/// Runs `executable` to completion and collects its stdout and stderr, without blocking the caller's thread: output
/// goes to temporary files (a child filling one pipe while we drain the other cannot deadlock), the exit is awaited
/// by polling, and the process is killed (SIGKILL) after `limit`.
///
/// - Parameters:
///   - environment: the whole environment of the child; nil inherits ours.
///   - input: what its stdin reads (nil: /dev/null).
public func runToCompletion(
    _ executable: URL, _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil,
    limit: Duration = .seconds(120)
) async throws -> CompletedProcess {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let outURL = folder.appendingPathComponent("stdout")
    let errURL = folder.appendingPathComponent("stderr")
    let inURL = folder.appendingPathComponent("stdin")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    let outHandle = try FileHandle(forWritingTo: outURL)
    let errHandle = try FileHandle(forWritingTo: errURL)
    defer {
        try? outHandle.close()
        try? errHandle.close()
    }
    process.standardOutput = outHandle
    process.standardError = errHandle
    if let input {
        _ = FileManager.default.createFile(atPath: inURL.path, contents: input)
        process.standardInput = try FileHandle(forReadingFrom: inURL)
    } else {
        process.standardInput = FileHandle.nullDevice
    }
    try process.run()
    var timedOut = false
    if !(await process.waitForExit(within: limit)) {
        timedOut = true
        kill(process.processIdentifier, SIGKILL)
    }
    let (status, exited) = await process.waitForEnd()
    return CompletedProcess(
        status: status, exited: exited, timedOut: timedOut,
        standardOutput: (try? Data(contentsOf: outURL)) ?? Data(),
        standardError: (try? Data(contentsOf: errURL)) ?? Data())
}

/// A duration in seconds, for Dispatch's deadlines.
private func seconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) + Double(attoseconds) / 1e18
}

/// Resumes a continuation exactly once: the first of several racing completions wins, the others are dropped.
private final class ResumeOnce<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Never>?

    /// Called first, before anything can call ``resume(_:)``.
    func arm(_ continuation: CheckedContinuation<T, Never>) {
        lock.withLock { self.continuation = continuation }
    }

    func resume(_ value: T) {
        let waiting: CheckedContinuation<T, Never>? = lock.withLock {
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: value)
    }
}
