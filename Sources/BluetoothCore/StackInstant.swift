/// A point on a stack's timeline, in nanoseconds since the loop's epoch. Time comes only from the `EventLoop`
/// (DESIGN.md "Concurrency": an injected clock), so a manual loop can move it in tests.
public struct StackInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// The start of a timeline.
    public static let zero = StackInstant(nanoseconds: 0)

    public static func < (lhs: StackInstant, rhs: StackInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant `duration` later (saturating; negative durations move back, not below zero).
    public static func + (lhs: StackInstant, rhs: Duration) -> StackInstant {
        let delta = rhs.nanosecondsClamped
        if delta >= 0 {
            let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(UInt64(delta))
            return StackInstant(nanoseconds: overflow ? .max : sum)
        }
        let magnitude = delta.magnitude
        return StackInstant(nanoseconds: lhs.nanoseconds > magnitude ? lhs.nanoseconds - magnitude : 0)
    }

    /// The time from `rhs` to `lhs` (negative when `lhs` is earlier).
    public static func - (lhs: StackInstant, rhs: StackInstant) -> Duration {
        if lhs >= rhs { return .nanoseconds(Int64(clamping: lhs.nanoseconds - rhs.nanoseconds)) }
        return .nanoseconds(-Int64(clamping: rhs.nanoseconds - lhs.nanoseconds))
    }

    public var description: String {
        let seconds = nanoseconds / 1_000_000_000
        let micros = (nanoseconds % 1_000_000_000) / 1_000
        let text = String(micros)
        return "\(seconds).\(String(repeating: "0", count: 6 - text.count))\(text)s"
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to Int64.
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        let (sum, overflow2) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        if overflow2 { return seconds < 0 ? .min : .max }
        return sum
    }
}
