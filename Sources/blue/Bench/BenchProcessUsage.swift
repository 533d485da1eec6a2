import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's own CPU time, user and system separately (getrusage(RUSAGE_SELF), POSIX), and its peak resident
/// size: taken at the first value and after the last of a benchmark across processes (issue 31 item 1), so anyone
/// can compare stacks on the same controller by what each costs per value.
struct BenchProcessUsage: Sendable {
    var userSeconds: Double
    var systemSeconds: Double
    /// ru_maxrss, in bytes (Linux reports kilobytes).
    var peakResidentBytes: Int
    /// The resident size now (/proc/self/statm).
    var residentBytes: Int
    /// Context switches so far, voluntary (a thread slept: waiting for input or a lock) and involuntary.
    var contextSwitches: Int

    static func now() -> BenchProcessUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        let resident = blue.residentBytes()
        return BenchProcessUsage(userSeconds: seconds(usage.ru_utime), systemSeconds: seconds(usage.ru_stime),
                                 peakResidentBytes: max(Int(usage.ru_maxrss) * 1024, resident), residentBytes: resident,
                                 contextSwitches: Int(usage.ru_nvcsw) + Int(usage.ru_nivcsw))
    }
}

/// What one process spent over a benchmark's measured span: the difference of two ``BenchProcessUsage`` samples,
/// the values it covered, and the resident size at the span's end.
struct BenchCPU: Sendable {
    var userSeconds: Double
    var systemSeconds: Double
    var values: Int
    var residentBytes: Int
    var peakResidentBytes: Int
    /// Context switches of the process's threads over the span (each one a sleep and a wake-up).
    var contextSwitches: Int

    init(from start: BenchProcessUsage, to end: BenchProcessUsage, values: Int) {
        userSeconds = max(0, end.userSeconds - start.userSeconds)
        systemSeconds = max(0, end.systemSeconds - start.systemSeconds)
        self.values = values
        residentBytes = end.residentBytes
        peakResidentBytes = end.peakResidentBytes
        contextSwitches = max(0, end.contextSwitches - start.contextSwitches)
    }

    /// Microseconds of CPU per value, user and system.
    var userMicrosecondsPerValue: Double { values > 0 ? userSeconds * 1e6 / Double(values) : 0 }
    var systemMicrosecondsPerValue: Double { values > 0 ? systemSeconds * 1e6 / Double(values) : 0 }
    var contextSwitchesPerValue: Double { values > 0 ? Double(contextSwitches) / Double(values) : 0 }

    var text: String {
        TextFormat.printf("  CPU over the span: %.3f s user + %.3f s system = %.1f µs user + %.1f µs system per value; "
               + "%.2f context switches per value; resident %.1f MB (peak %.1f MB)", userSeconds, systemSeconds,
               userMicrosecondsPerValue, systemMicrosecondsPerValue, contextSwitchesPerValue,
               Double(residentBytes) / 1e6, Double(peakResidentBytes) / 1e6)
    }

    var fields: [(String, BenchFigures.Value)] {
        [
            ("cpuUserSeconds", .number(userSeconds, decimals: 6)), ("cpuSystemSeconds", .number(systemSeconds, decimals: 6)),
            ("cpuUserMicrosecondsPerValue", .number(userMicrosecondsPerValue, decimals: 3)),
            ("cpuSystemMicrosecondsPerValue", .number(systemMicrosecondsPerValue, decimals: 3)),
            ("contextSwitches", .integer(contextSwitches)),
            ("residentBytes", .integer(residentBytes)), ("peakResidentBytes", .integer(peakResidentBytes)),
        ]
    }
}
