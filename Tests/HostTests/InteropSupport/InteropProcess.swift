import BluetoothRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A peer process of an interop test (Bumble's controllers, RootCanal, a Bumble peer script): its stdout is
/// collected line by line, its stderr goes to a file, and it is always ended with SIGKILL — never SIGTERM, which
/// Foundation's `Process` leaves blocked in children of Swift Testing's worker threads. Call ``kill()`` in a
/// `defer`; `deinit` kills as well.
final class InteropProcess: @unchecked Sendable {
    let label: String
    private let process = Process()
    private let lines = LockedValue<[String]>([])
    private let partial = LockedValue<[UInt8]>([])
    private let closed = LockedValue(false)
    private let stderrPath: String

    init(_ label: String, executable: String, arguments: [String]) throws {
        self.label = label
        stderrPath = NSTemporaryDirectory() + "ocb-interop-\(label)-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).err"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONUNBUFFERED"] = "1"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: stderrPath) ?? FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let lines = lines, partial = partial, closed = closed
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty {
                handle.readabilityHandler = nil
                closed.store(true)
                return
            }
            let complete: [String] = partial.withLock { buffer in
                buffer.append(contentsOf: data)
                var found: [String] = []
                while let newline = buffer.firstIndex(of: 0x0A) {
                    found.append(String(decoding: buffer[..<newline], as: UTF8.self))
                    buffer.removeSubrange(...newline)
                }
                return found
            }
            if !complete.isEmpty { lines.withLock { $0.append(contentsOf: complete) } }
        }
        try process.run()
    }

    deinit { kill() }

    var isRunning: Bool { process.isRunning }

    /// Every stdout line so far.
    var output: [String] { lines.load() }

    /// The JSON objects printed so far (lines that do not parse are skipped).
    var jsonLines: [InteropJSON] { output.compactMap(InteropJSON.init(line:)) }

    /// The last part of stderr, for failure messages.
    var stderrTail: String {
        guard let data = FileManager.default.contents(atPath: stderrPath) else { return "" }
        return String(decoding: data.suffix(3000), as: UTF8.self)
    }

    /// What the process said, for failure messages.
    var transcript: String {
        "\(label) stdout:\n" + output.map { String($0.prefix(400)) }.joined(separator: "\n") + "\n\(label) stderr (tail):\n" + stderrTail
    }

    /// Waits (bounded) for the first JSON line whose "event" is `event`; fails when the process exits first or
    /// reports an "error" event.
    func waitForEvent(_ event: String, seconds: Double, where accept: @Sendable (InteropJSON) -> Bool = { _ in true }) async throws -> InteropJSON {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let objects = jsonLines
            if let found = objects.first(where: { $0.string("event") == event && accept($0) }) { return found }
            if let error = objects.first(where: { $0.string("event") == "error" }) {
                throw InteropFailure("\(label) failed: \(error.string("message") ?? "?")\n\(error.string("trace") ?? "")\n\(transcript)")
            }
            if !process.isRunning, closed.load() {
                throw InteropFailure("\(label) exited (\(process.terminationStatus)) before \"\(event)\"\n\(transcript)")
            }
            if Date() > deadline { throw InteropFailure("\(label): no \"\(event)\" within \(seconds) s\n\(transcript)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// SIGKILL; idempotent. Does not wait: Foundation reaps the child (a wait here would block a thread of the
    /// cooperative pool, as `kill()` runs in `defer` and `deinit`).
    func kill() {
        if process.isRunning {
            Glibc.kill(process.processIdentifier, SIGKILL)
        }
        try? FileManager.default.removeItem(atPath: stderrPath)
    }

    /// Runs a short command to completion (SIGKILL after `seconds`) and returns its stdout.
    ///
    /// Synchronous (it blocks its thread) because it serves a `static let` initialiser: ``InteropEnvironment/rootCanal``,
    /// asked once per test process, by the `.enabled(if:)` traits while Swift Testing plans the run, before the tests
    /// start. Do not call it from a test body.
    static func runToCompletion(_ executable: String, _ arguments: [String], seconds: Double) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let killer = DispatchWorkItem { if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: killer)
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        killer.cancel()
        return String(decoding: data, as: UTF8.self)
    }
}

/// One JSON object printed by a peer script (interop_gatt.emit), read through typed accessors.
struct InteropJSON: @unchecked Sendable {
    let object: [String: Any]

    init?(line: String) {
        guard let data = line.data(using: .utf8),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else { return nil }
        self.object = object
    }

    init(object: [String: Any]) { self.object = object }

    func string(_ key: String) -> String? { object[key] as? String }
    func int(_ key: String) -> Int? { (object[key] as? NSNumber)?.intValue }
    func bool(_ key: String) -> Bool? { (object[key] as? NSNumber)?.boolValue }
    func strings(_ key: String) -> [String]? { object[key] as? [String] }
    func child(_ key: String) -> InteropJSON? { (object[key] as? [String: Any]).map(InteropJSON.init(object:)) }
    /// A hex string field as bytes.
    func bytes(_ key: String) -> [UInt8]? { string(key).flatMap(InteropJSON.bytes(hex:)) }
    var count: Int { object.count }
    func array(_ key: String) -> [Any]? { object[key] as? [Any] }

    static func bytes(hex: String) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(hex.count / 2)
        var high: UInt8?
        for character in hex.utf8 {
            let nibble: UInt8
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = character - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = character - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = character - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let value = high {
                result.append(value << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return high == nil ? result : nil
    }
}
