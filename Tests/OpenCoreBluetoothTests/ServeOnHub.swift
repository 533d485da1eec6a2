import Foundation
import SharedAir
import Testing
import TestSupport
@testable import OpenCoreBluetooth
#if canImport(Glibc)
import Glibc
#endif

/// A `blue air` hub of one test's own and a `blue serve ARGUMENTS --json` on it (the executable built beside the
/// tests), its events read as they come. `stop()` ends both and removes the folder; call it in a `defer`.
final class ServeOnHub: @unchecked Sendable {
    let directory: String
    let socket: String
    private let hub: Process
    private let server: Process
    private let outputPath: String
    private let errorPath: String

    /// Starts the hub, then the server once the hub listens; the folder holds the socket and what `files` give
    /// (name → contents), for the arguments to name (`directory + "/NAME"`).
    init(_ label: String, files: [String: String] = [:], arguments: (String) -> [String]) async throws {
        directory = try makeTestDirectory(label)
        socket = directory + "/air.sock"
        for (name, contents) in files { try Data(contents.utf8).write(to: URL(fileURLWithPath: directory + "/" + name)) }
        let blue = try #require(HostBackend.hubExecutable(), "no blue executable beside the tests")
        hub = try PairingAgentTests.run(blue, ["air", "--socket", socket, "--stats-interval", "0"])
        outputPath = directory + "/serve.jsonl"
        errorPath = directory + "/serve.stderr"
        for path in [outputPath, errorPath] { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        server = Process()
        server.executableURL = URL(fileURLWithPath: blue)
        server.arguments = ["serve", "--hci", "air:\(socket)", "--json"] + arguments(directory)
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        server.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        guard await poll(within: .seconds(30), until: { AirHub.isRunning(at: socket) }) else {
            PairingAgentTests.stop(hub)
            throw ServeOnHubError.hubDidNotListen
        }
        try server.run()
    }

    enum ServeOnHubError: Error { case hubDidNotListen }

    /// The server's events so far (one JSON object per line).
    var events: [[String: Any]] {
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// What the server wrote on standard error.
    var errors: String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// The "serving" event, once the server advertises.
    func serving() async throws -> [String: Any] {
        try await waitFor("serving", within: .seconds(30), until: { [self] in events.contains { $0["event"] as? String == "serving" } },
                          seen: { [self] in "\(events) \(errors)" })
        return events.first { $0["event"] as? String == "serving" } ?? [:]
    }

    func stop() {
        if server.isRunning { PairingAgentTests.stop(server) }
        PairingAgentTests.stop(hub)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
