import Foundation

/// Wireshark's `tshark` for the tests that check our bytes against its dissectors. A test that needs it is enabled
/// when it is on the PATH or when `OCB_REQUIRE_INTEROP=1` (Scripts/test.sh installs it and sets that): then a
/// missing tshark fails the test instead of skipping it.
public enum Tshark {
    /// `tshark` on the PATH, if any.
    public static let path: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/tshark") {
            return "\(directory)/tshark"
        }
        return nil
    }()

    /// Whether the interop checks are required (a missing tshark is then a failure).
    public static let required = ProcessInfo.processInfo.environment["OCB_REQUIRE_INTEROP"] == "1"

    /// Whether a test that needs tshark runs.
    public static var enabled: Bool { path != nil || required }

    public struct Missing: Error, CustomStringConvertible {
        public var description: String { "OCB_REQUIRE_INTEROP=1 but tshark is not on the PATH" }
    }

    public struct Failed: Error, CustomStringConvertible {
        public var description: String
    }

    /// The `fields` of every packet of the capture at `path` (those `filter` keeps), one array a packet; a field
    /// that occurs more than once is its occurrences joined by commas.
    public static func fields(_ path: String, _ fields: [String], filter: String? = nil) async throws -> [[String]] {
        guard let tshark = Self.path else { throw Missing() }
        var arguments = ["-r", path, "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,"]
        if let filter { arguments += ["-Y", filter] }
        for field in fields { arguments += ["-e", field] }
        let run = try await runToCompletion(URL(fileURLWithPath: tshark), arguments, limit: .seconds(120))
        guard run.status == 0 else { throw Failed(description: "tshark exited \(run.status): \(run.errors)") }
        return run.output.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }
}
