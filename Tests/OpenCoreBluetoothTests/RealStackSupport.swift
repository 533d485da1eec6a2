import Dispatch
import Foundation
import Testing
import TestSupport
@testable import OpenCoreBluetooth

// The fixture of the real-stack tests: CoreBluetooth apps whose managers run real host stacks over virtual
// controllers on a private in-process air (`HostBackend.privateAirProvider`), driven by DispatchEventLoops in real
// time. The apps live on a queue (the main queue for managers made with `queue: nil`, else their delegate queue);
// the test reads them only there, and waits for each step of the exchange with a limit of its own, so that a step
// slowed by a loaded machine does not eat the time of the steps after it.

/// Carries a value that is not `Sendable` (an app object) between the test's task and the queue it lives on; the
/// test touches `value` only on that queue.
struct Box<T>: @unchecked Sendable {
    let value: T
}

/// A value shared between the test and the delegate queues, behind a lock.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: T
    init(_ value: T) { _value = value }
    var value: T {
        get { lock.withLock { _value } }
        set { lock.withLock { _value = newValue } }
    }
}

/// Runs `body` on `queue` and returns its result, suspending (never blocking) the caller meanwhile.
func onQueue<T: Sendable>(_ queue: DispatchQueue, _ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        queue.async { continuation.resume(returning: body()) }
    }
}

/// Runs `body` on the main queue (where the apps with `queue: nil` live) and returns its result.
func onMain<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await onQueue(.main, body)
}

/// Makes app objects on the main queue with every manager they create backed by `provider` (typically a private
/// air: `HostBackend.privateAirProvider(seed:)`, shared by all the apps that must meet).
func makeOnMain<T>(with provider: CBBackendProvider, _ make: @escaping @Sendable () -> T) async -> Box<T> {
    await onMain { CBBackendRegistry.$taskProvider.withValue(provider) { Box(value: make()) } }
}

/// Waits for one step of a real-stack exchange: until `condition`, checked on `queue` every 20 ms, holds, at most
/// `limit` of real time counted from this call (each step its own limit). When it does not hold in time, records
/// an issue at the caller naming the step, its limit and what `seen` (read on `queue`) describes — the state the
/// step's assertions would have looked at — and throws, ending the test there rather than leaving every later
/// step to wait out its own limit.
///
/// ```swift
/// try await waitFor("the central's read", until: { apps.value.1.log.count >= 1 }, seen: { "\(apps.value.1.log)" })
/// ```
/// How long a step may take by default: far beyond what any step needs (they take well under a second), because a
/// whole test process beside a QEMU guest on a busy 2-core machine was seen to stall for about 24 s at once (every
/// step of four suites timed out together at 20 s, the main queue unserved meanwhile). A step that never happens
/// still fails, a minute later.
let stepLimit: Duration = .seconds(60)

func waitFor(
    _ step: String, within limit: Duration = stepLimit, on queue: DispatchQueue = .main,
    until condition: @escaping @Sendable () -> Bool, seen: @escaping @Sendable () -> String,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let failure = await stepFailure(step, within: limit, on: queue, until: condition, seen: seen)
    let stepHappenedInTime = failure == nil
    try #require(stepHappenedInTime, failure, sourceLocation: sourceLocation)
}

/// ``waitFor(_:within:on:until:seen:sourceLocation:)`` for a test that must go on after a step timed out (to stop
/// what it started): records the same issue and returns whether the step happened in time.
@discardableResult
func expectStep(
    _ step: String, within limit: Duration = stepLimit, on queue: DispatchQueue = .main,
    until condition: @escaping @Sendable () -> Bool, seen: @escaping @Sendable () -> String,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> Bool {
    guard let failure = await stepFailure(step, within: limit, on: queue, until: condition, seen: seen) else { return true }
    Issue.record(failure, sourceLocation: sourceLocation)
    return false
}

/// Polls `condition` on `queue` for at most `limit`; nil when it held, else the failure message.
private func stepFailure(
    _ step: String, within limit: Duration, on queue: DispatchQueue,
    until condition: @escaping @Sendable () -> Bool, seen: @escaping @Sendable () -> String
) async -> Comment? {
    let start = ContinuousClock.now
    if await poll(within: limit, every: .milliseconds(20), until: { await onQueue(queue, condition) }) { return nil }
    let waited = ContinuousClock.now - start
    let state = await onQueue(queue, seen)
    return "step '\(step)' timed out (limit \(limit), waited \(waited)); seen: \(state)"
}
