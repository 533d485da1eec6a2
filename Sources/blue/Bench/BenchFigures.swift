import BluetoothCore
import CMallocStatistics
import Foundation

/// What one of the scale benchmarks (`advertisers`, `connections`, `latency`) measured: named figures in a fixed
/// order, printed as a few text lines or one JSON object. (The throughput benchmarks keep ``BenchResult``, whose
/// fields `Scripts/bench_bumble.py` mirrors.)
struct BenchFigures {
    enum Value {
        case integer(Int)
        case number(Double, decimals: Int)
        case text(String)
        case bool(Bool)
        /// A nested object (each step of `latency`).
        case object([(String, Value)])

        var json: String {
            switch self {
            case .integer(let value): "\(value)"
            case .number(let value, let decimals): value.isFinite ? String(format: "%.\(decimals)f", value) : "null"
            case .text(let text): Dissection.jsonString(text)
            case .bool(let value): value ? "true" : "false"
            case .object(let fields): "{" + fields.map { "\(Dissection.jsonString($0.0)):\($0.1.json)" }.joined(separator: ",") + "}"
            }
        }
    }

    var benchmark: String
    var fields: [(String, Value)] = []
    /// The human lines.
    var lines: [String] = []

    mutating func add(_ key: String, _ value: Value) { fields.append((key, value)) }

    var json: String {
        "{" + ([("benchmark", Value.text(benchmark))] + fields).map { "\(Dissection.jsonString($0.0)):\($0.1.json)" }
            .joined(separator: ",") + "}"
    }

    var text: String { lines.joined(separator: "\n") }
}

/// The process's resident set size in bytes (/proc/self/statm), 0 when unreadable.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// Bytes the process has allocated with malloc and not freed (glibc's mallinfo2), 0 where unknown.
func heapBytesInUse() -> Int {
    Int(ocb_heap_bytes_in_use())
}
