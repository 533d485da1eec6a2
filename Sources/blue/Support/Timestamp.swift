import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// When something was seen, as `blue` prints it: the local time of day with milliseconds on text lines
/// ("14:03:07.215", with `--timestamps`), ISO 8601 in UTC with milliseconds in JSON ("time").
enum Timestamp {
    /// "HH:MM:SS.mmm", local time.
    static func clock(_ date: Date = Date()) -> String {
        let seconds = date.timeIntervalSince1970
        var whole = time_t(seconds.rounded(.down))
        var parts = tm()
        localtime_r(&whole, &parts)
        let milliseconds = Int((seconds - seconds.rounded(.down)) * 1000)
        return two(parts.tm_hour) + ":" + two(parts.tm_min) + ":" + two(parts.tm_sec) + "." + three(milliseconds)
    }

    /// "2026-11-24T14:03:07.215Z".
    static func iso(_ date: Date = Date()) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    private static func three(_ value: Int) -> String { String(repeating: "0", count: max(0, 3 - String(value).count)) + String(value) }
}
