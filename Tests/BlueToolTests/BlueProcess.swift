import Foundation
import TestSupport

/// Runs the `blue` executable built next to the test bundle and captures what it prints.
struct BlueProcess {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    static var executable: URL {
        // SwiftPM puts the test bundle and the products in the same folder (.build/<config>/).
        let bundleFolder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let beside = bundleFolder.appendingPathComponent("blue")
        if FileManager.default.isExecutableFile(atPath: beside.path) { return beside }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug/blue")
    }

    /// Runs `blue` with `arguments` to completion (SIGKILL after `limit`), suspending meanwhile: the wait never
    /// blocks a thread of the cooperative pool (see TestSupport's `runToCompletion`).
    /// `environment`: variables added to ours.
    static func run(_ arguments: [String], input: String? = nil, environment: [String: String] = [:],
                    limit: Duration = .seconds(180)) async throws -> Result {
        // FORCE_COLOR from the runner's environment would colour every pipe: cleared unless a test sets it.
        let merged = ProcessInfo.processInfo.environment.merging(["FORCE_COLOR": ""].merging(environment) { $1 }) { $1 }
        let completed = try await runToCompletion(executable, arguments, environment: merged, input: Data((input ?? "").utf8),
                                                  limit: limit)
        return Result(status: completed.status, standardOutput: completed.output, standardError: completed.errors)
    }
}
