import BluetoothRuntime
import Foundation
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A peer process of an interop test (Bumble's controllers, RootCanal, a Bumble peer script): its stdout and stderr
/// go to files in a folder of its own, stdout is read line by line as it grows, and it is always ended with SIGKILL
/// — never SIGTERM, which Foundation's `Process` leaves blocked in children of Swift Testing's worker threads. Call
/// ``kill()`` in a `defer`; `deinit` kills as well.
///
/// No pipe and no Dispatch source: the child's stdout used to be a `Pipe` read through
/// `FileHandle.readabilityHandler`, a Dispatch read source registered with libdispatch's epoll set. Installing and
/// tearing such handlers down from many threads at once — what the parallel interop tests did — is unsafe in
/// corelibs-libdispatch on Linux: the EOF event is lost (measured here: 994 of 1,600 handlers never saw it) and the
/// library traps or uses a freed muxnote (the "Bad pointer dereference in `_dispatch_event_loop_drain`" that
/// crashed a whole test run; upstream swift-corelibs-libdispatch#949). A regular file needs none of that: the child
/// writes, we read from where we left off, and the process's end comes from the kernel (``Process/ended``).
final class InteropProcess: @unchecked Sendable {
    let label: String
    private let process = Process()
    private let folder: String
    private let stdoutPath: String
    private let stderrPath: String
    /// Lines read so far, the bytes after the last newline, and how far into the stdout file we have read.
    private let reader = LockedValue<(lines: [String], partial: [UInt8], offset: Int)>(([], [], 0))

    init(_ label: String, executable: String, arguments: [String]) throws {
        self.label = label
        folder = try makeTestDirectory("interop")
        stdoutPath = folder + "/stdout"
        stderrPath = folder + "/stderr"
        _ = FileManager.default.createFile(atPath: stdoutPath, contents: nil)
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONUNBUFFERED"] = "1"
        process.environment = environment
        // Our copies of the descriptors are closed once the child has its own (it writes through dup2'd ones).
        let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: stdoutPath))
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        defer {
            try? stdout.close()
            try? stderr.close()
        }
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            try? FileManager.default.removeItem(atPath: folder)
            throw error
        }
    }

    deinit { kill() }

    /// Whether the child is still running (asked of the kernel: Foundation's view lags while a grandchild lives).
    var isRunning: Bool { process.ended == nil }

    /// Every complete stdout line so far.
    var output: [String] {
        reader.withLock { state in
            let fresh = Self.readFrom(stdoutPath, offset: state.offset)
            guard !fresh.isEmpty else { return state.lines }
            state.offset += fresh.count
            state.partial.append(contentsOf: fresh)
            var start = 0
            while let newline = state.partial[start...].firstIndex(of: 0x0A) {
                state.lines.append(String(decoding: state.partial[start..<newline], as: UTF8.self))
                start = newline + 1
            }
            state.partial.removeFirst(start)
            return state.lines
        }
    }

    /// The bytes of the file at `path` from `offset` on (empty when there are none or it cannot be read).
    private static func readFrom(_ path: String, offset: Int) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var position = off_t(offset)
        while true {
            let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, position) }
            if count <= 0 { break }
            result.append(contentsOf: buffer[0..<count])
            position += off_t(count)
        }
        return result
    }

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
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while true {
            // Whether it had ended is asked before its output is read, so nothing it wrote before the end is missed.
            let ended = process.ended
            let objects = jsonLines
            if let found = objects.first(where: { $0.string("event") == event && accept($0) }) { return found }
            if let error = objects.first(where: { $0.string("event") == "error" }) {
                throw InteropFailure("\(label) failed: \(error.string("message") ?? "?")\n\(error.string("trace") ?? "")\n\(transcript)")
            }
            if let ended {
                throw InteropFailure("\(label) exited (\(ended.status)\(ended.exited ? "" : ", signal")) before \"\(event)\"\n\(transcript)")
            }
            if ContinuousClock.now > deadline || Task.isCancelled {
                throw InteropFailure("\(label): no \"\(event)\" within \(seconds) s\n\(transcript)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// SIGKILL; idempotent. Does not wait: Foundation reaps the child (a wait here would block a thread of the
    /// cooperative pool, as `kill()` runs in `defer` and `deinit`). The folder with its output goes too.
    func kill() {
        if process.ended == nil {
            Glibc.kill(process.processIdentifier, SIGKILL)
        }
        try? FileManager.default.removeItem(atPath: folder)
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
