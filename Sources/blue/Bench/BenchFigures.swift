import CMallocStatistics
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The JSON the benchmarks print: one object on one line, written by `JSONEncoder` with its keys sorted (the
/// encoder keeps no insertion order; sorted, the same run prints the same line) and slashes left alone.
enum BenchJSON {
    /// A key named at run time.
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }

        init(_ name: String) { stringValue = name }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// `value` as one line of JSON. Never fails for the benchmarks' figures: every number in them is finite or null.
    static func line(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// `value` rounded to `decimals` decimal places (the precision the figure is printed with), nil when it is
    /// not finite (JSON has no NaN nor infinity: null).
    static func number(_ value: Double, decimals: Int) -> Double? {
        guard value.isFinite else { return nil }
        let scale = pow(10, Double(decimals))
        let rounded = (value * scale).rounded() / scale
        return rounded.isFinite ? rounded : value
    }
}

/// What one of the scale benchmarks (`advertisers`, `connections`, `latency`) measured: named figures, printed as a
/// few text lines or one JSON object (``BenchJSON``). (The throughput benchmarks keep ``BenchResult``, whose fields
/// `Scripts/bench_bumble.py` mirrors.)
struct BenchFigures: Encodable {
    enum Value: Encodable {
        case integer(Int)
        case number(Double, decimals: Int)
        case text(String)
        case bool(Bool)
        case null
        /// A nested object (each step of `latency`).
        case object([(String, Value)])

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .object(let fields):
                var container = encoder.container(keyedBy: BenchJSON.Key.self)
                for (key, value) in fields { try container.encode(value, forKey: BenchJSON.Key(key)) }
            case .number(let value, let decimals):
                var container = encoder.singleValueContainer()
                if let number = BenchJSON.number(value, decimals: decimals) { try container.encode(number) } else { try container.encodeNil() }
            case .integer(let value):
                var container = encoder.singleValueContainer()
                try container.encode(value)
            case .text(let text):
                var container = encoder.singleValueContainer()
                try container.encode(text)
            case .bool(let value):
                var container = encoder.singleValueContainer()
                try container.encode(value)
            case .null:
                var container = encoder.singleValueContainer()
                try container.encodeNil()
            }
        }
    }

    var benchmark: String
    var fields: [(String, Value)] = []
    /// The human lines.
    var lines: [String] = []

    mutating func add(_ key: String, _ value: Value) { fields.append((key, value)) }

    func encode(to encoder: any Encoder) throws {
        try Value.object([("benchmark", .text(benchmark))] + fields).encode(to: encoder)
    }

    var json: String { BenchJSON.line(self) }

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
