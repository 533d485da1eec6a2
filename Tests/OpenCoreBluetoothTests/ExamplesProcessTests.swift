import Foundation
import TestSupport
import Testing

/// Runs the example programs (and `blue`) built beside the test bundle, as a user runs them: separate
/// processes, output captured in files, each stopped (SIGTERM, then SIGKILL) in every path.
final class ExampleProcess: @unchecked Sendable {
    let process = Process()
    let folder: URL
    let outputURL: URL
    let errorURL: URL

    /// The folder SwiftPM puts the products and the test bundle in (.build/<config>/).
    static var productsFolder: URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if FileManager.default.isExecutableFile(atPath: beside.appendingPathComponent("blue").path) { return beside }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent(".build/debug")
    }

    init(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-example-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        outputURL = folder.appendingPathComponent("stdout")
        errorURL = folder.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        let path = Self.productsFolder.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: path.path) else { throw Failure.missing(path.path) }
        process.executableURL = path
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        merged["OCB_HCI"] = nil
        merged.merge(environment) { $1 }
        process.environment = merged
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var outputData: Data { (try? Data(contentsOf: outputURL)) ?? Data() }
    var output: String { String(decoding: outputData, as: UTF8.self) }
    var errors: String { String(decoding: (try? Data(contentsOf: errorURL)) ?? Data(), as: UTF8.self) }

    /// Waits (at most `limit`, suspending) until the output contains `text`.
    func waitFor(_ text: String, limit: Duration = .seconds(10)) async -> Bool {
        await poll(within: limit, every: .milliseconds(20)) { output.contains(text) || process.ended != nil }
            && output.contains(text)
    }

    /// Waits (at most `limit`, suspending) for the process to exit by itself; nil when it did not (it is then
    /// stopped).
    func waitForExit(limit: Duration) async -> Int32? {
        guard await process.waitForExit(within: limit) else {
            await stop()
            return nil
        }
        return await process.exitStatus()
    }

    /// SIGTERM, then SIGKILL after a grace period; suspends until the process is gone.
    func stop() async {
        await process.stop(grace: .seconds(2))
    }

    /// SIGTERM now, SIGKILL after the grace period if still running, without waiting (for `defer`).
    func stopInBackground() {
        process.stopInBackground(grace: .seconds(2))
    }

    deinit {
        // SIGTERM, SIGKILL after the grace period, without waiting (a `defer { stopInBackground() }` has usually
        // sent the SIGTERM already).
        process.stopInBackground(grace: .seconds(2))
        try? FileManager.default.removeItem(at: folder)
    }

    enum Failure: Error { case missing(String), notReady(String) }
}

/// A `blue air` hub on a socket of its own, for one test.
final class ExampleHub: @unchecked Sendable {
    let socket: String
    let hub: ExampleProcess

    /// A hub with `arguments` added to `blue air --socket SOCKET --stats-interval 0` (`--loss 10`...).
    init(arguments: [String] = []) async throws {
        socket = testTemporaryPath("ocb-ex-\(UUID().uuidString.prefix(6).lowercased()).sock")
        hub = try ExampleProcess("blue", ["air", "--socket", socket, "--stats-interval", "0"] + arguments)
        guard await hub.waitFor("listening") else {
            await hub.stop()
            throw ExampleProcess.Failure.notReady("hub: \(hub.output) \(hub.errors)")
        }
    }

    var environment: [String: String] { ["OCB_HCI": "air:\(socket)"] }

    deinit {
        // Without waiting: the hub removes its socket file when SIGTERM ends it; unlink in case it was killed.
        hub.stopInBackground()
        unlink(socket)
    }
}

/// `blue chat send` of a text of about `bytes` bytes and `blue chat receive` on `hub`, both to their end: each must
/// exit 0 and the receiver print the text whole.
func exampleChat(on hub: ExampleHub, bytes: Int) async throws {
    let text = exampleText(bytes: bytes)
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("ocb-chat-\(UUID().uuidString.prefix(8)).txt")
    try Data(text.utf8).write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let environment = ["OCB_AIR_SOCKET": hub.socket]
    let sender = try ExampleProcess("blue", ["chat", "send", "--timeout", "60", "--file", file.path], environment: environment)
    defer { sender.stopInBackground() }
    let receiver = try ExampleProcess("blue", ["chat", "receive", "--timeout", "60"], environment: environment)
    defer { receiver.stopInBackground() }
    #expect(await receiver.waitForExit(limit: .seconds(70)) == 0, "\(receiver.errors)")
    #expect(await sender.waitForExit(limit: .seconds(10)) == 0, "\(sender.errors)")
    #expect(receiver.output == text)
}

/// 64-bit FNV-1a, to compare a long text with what arrived.
func exampleHash(_ data: Data) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
    return hash
}

/// A deterministic long UTF-8 text of about `bytes` bytes (multi-byte characters included).
func exampleText(bytes: Int) -> String {
    var text = ""
    var line = 0
    while text.utf8.count < bytes {
        line += 1
        text += "Line \(line): the quick brown fox jumps over the lazy dog, ünïcødé ✓ \(line &* 7919 % 1000)\n"
    }
    return text
}

/// Stops (SIGTERM, then SIGKILL after 5 s) every `blue air --socket SOCKET` of this user: the hubs that programs
/// started on demand for a test's own socket (they outlive the programs, by design). Removes the socket file.
func stopHubsStarted(at socket: String) async {
    func hubs() -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let pid = Int32(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
            let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard let index = arguments.firstIndex(of: "--socket"), index + 1 < arguments.count,
                  arguments[index + 1] == socket, arguments.contains("air") else { return nil }
            return pid
        }
    }
    for pid in hubs() { kill(pid, SIGTERM) }
    let end = ContinuousClock.now + .seconds(5)
    while !hubs().isEmpty, ContinuousClock.now < end { try? await Task.sleep(for: .milliseconds(50)) }
    for pid in hubs() { kill(pid, SIGKILL) }
    unlink(socket)
}
