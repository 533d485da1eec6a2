import BluetoothCore
public import BluetoothRuntime
import FoundationEssentials
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A scenario file (issue 29 item 6): a timeline of faults and moves that `blue air --scenario FILE` plays on the
/// shared air, each step a `blue fault` line at a time after the hub starts, so a field problem ("at 5 s dev2 walks
/// away, at 8 s the room gets noisy, at 12 s dev3's battery dies") is a file anyone can run again:
///
/// ```json
/// {"seed": 7,
///  "steps": [{"at": 5, "fault": "move dev2 500 0"},
///            {"at": 8, "fault": "loss 20%"},
///            {"at": 12, "fault": "power dev3 off"}]}
/// ```
///
/// The seed (optional) is the air's unless `--seed` is given; with `--record` the run is recorded, faults included.
/// Steps are applied with ``AirHub/apply(_:completion:)``, so each is reported and recorded as `blue fault`'s are; a
/// step that cannot apply (no such device yet) is reported as a warning and the timeline goes on.
public struct AirScenario: Hashable, Sendable {
    public struct Step: Hashable, Sendable {
        /// Time after the hub started.
        public var at: Duration
        public var fault: AirHubFault
    }

    /// The largest scenario file read.
    public static let maximumFileSize = 1 << 20
    public static let maximumSteps = 10_000
    /// The latest a step may be (a week).
    public static let maximumSeconds = 604_800.0

    public var seed: UInt64?
    /// In time order (steps at the same time keep the file's order).
    public var steps: [Step]

    private struct File: Decodable {
        struct Entry: Decodable {
            var at: Double
            var fault: String
        }

        /// A seed: an integer from 0 to 2^64 − 1 (JSONDecoder alone calls a negative one "not valid JSON").
        struct Seed: Decodable {
            var value: UInt64

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                guard let value = try? container.decode(UInt64.self) else {
                    throw DecodingError.dataCorruptedError(in: container, debugDescription: "the seed must be an integer from 0 to 18446744073709551615")
                }
                self.value = value
            }
        }

        var seed: Seed?
        var steps: [Entry]
    }

    private static let shape = #"expected {"seed": N (optional), "steps": [{"at": SECONDS, "fault": "LINE"}, ...]}"#

    /// Parses a scenario; the error (``AirHubError/Code/invalidCommand``) is one line naming the step at fault.
    public init(parsing bytes: [UInt8]) throws(AirHubError) {
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw AirHubError(.invalidCommand, "\(Self.shape): \(Self.describe(error))")
        } catch {
            throw AirHubError(.invalidCommand, "\(Self.shape): not JSON")
        }
        guard file.steps.count <= Self.maximumSteps else {
            throw AirHubError(.invalidCommand, "\(file.steps.count) steps: at most \(Self.maximumSteps)")
        }
        var steps: [Step] = []
        for (index, entry) in file.steps.enumerated() {
            let name = "step \(index + 1)"
            guard entry.at.isFinite, entry.at >= 0, entry.at <= Self.maximumSeconds else {
                throw AirHubError(.invalidCommand, "\(name): \"at\" must be seconds from 0 to \(Int(Self.maximumSeconds))")
            }
            guard entry.fault.utf8.count <= AirHubFault.maximumLineLength else {
                throw AirHubError(.invalidCommand, "\(name): the fault line is longer than \(AirHubFault.maximumLineLength) octets")
            }
            let fault: AirHubFault
            do throws(AirHubError) {
                fault = try AirHubFault(parsing: entry.fault)
            } catch {
                throw AirHubError(.invalidCommand, "\(name) (\"\(entry.fault.prefix(64))\"): \(error.reason)")
            }
            if case .listDevices = fault {
                throw AirHubError(.invalidCommand, "\(name): \"devices\" asks, it changes nothing: use loss, drop, power, range or move")
            }
            steps.append(Step(at: .milliseconds(Int64((entry.at * 1000).rounded())), fault: fault))
        }
        self.seed = file.seed?.value
        self.steps = steps.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    }

    /// Reads and parses the scenario at `path` (at most ``maximumFileSize`` octets).
    public static func load(path: String) throws(AirHubError) -> AirScenario {
        guard let data = POSIX.readFile(path, limit: maximumFileSize) else {
            throw AirHubError(.invalidCommand, "cannot read the scenario \(path): \(POSIX.lastErrorText)")
        }
        guard data.count <= maximumFileSize else {
            throw AirHubError(.invalidCommand, "the scenario \(path) is larger than \(maximumFileSize) octets")
        }
        do throws(AirHubError) {
            return try AirScenario(parsing: data)
        } catch {
            throw AirHubError(.invalidCommand, "scenario \(path): \(error.reason)")
        }
    }

    /// The first line of a decoding error, with the path of the value at fault.
    private static func describe(_ error: DecodingError) -> String {
        let context: DecodingError.Context
        switch error {
        case .typeMismatch(_, let found), .valueNotFound(_, let found), .keyNotFound(_, let found), .dataCorrupted(let found):
            context = found
        @unknown default:
            return "not a scenario"
        }
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        let reason: String
        if case .keyNotFound(let key, _) = error {
            reason = "missing \"\(key.stringValue)\""
        } else {
            reason = context.debugDescription.split(separator: "\n").first.map(String.init) ?? "invalid"
        }
        return (path.isEmpty ? "" : "at \(path): ") + String(reason.prefix(160))
    }
}

extension AirHub {
    /// Plays `scenario` on this hub, its times counted from now: each step is applied at its time on the air's loop
    /// (reported as a ``AirHubEvent/fault(_:_:)``), a step that is refused is reported as a warning. Returns the
    /// scheduled steps, to cancel them.
    @discardableResult
    public func play(_ scenario: AirScenario) -> [ScheduledJob] {
        let start = eventLoop.now
        return scenario.steps.map { step in
            eventLoop.schedule(at: start + step.at) { [weak self] in
                self?.apply(step.fault) { [weak self] result in
                    guard case .failure(let error) = result else { return }
                    self?.emit(.warning("scenario at \(Self.secondsText(step.at)): \(step.fault.line): \(error.reason)"))
                }
            }
        }
    }

    private static func secondsText(_ duration: Duration) -> String {
        let milliseconds = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}
