import ArgumentParser
import BluetoothRuntime
import Dispatch
import Foundation
import HCITransport
import Host
import StackLauncher
import VirtualController

/// `--hci` and `--snoop`, shared by every command that runs a stack (DESIGN.md "Transports").
struct StackOptions: ParsableArguments, Sendable {
    @Option(name: .customLong("hci"), help: ArgumentHelp(
        "The controller: virtual (default), air:PATH, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyX[,BAUD][,rtscts] or hciN.",
        valueName: "transport"))
    var hci: String = "virtual"

    @Option(name: .customLong("snoop"), help: ArgumentHelp("Record the HCI traffic in this btsnoop file (Wireshark opens it).",
                                                           valueName: "file"))
    var snoop: String?

    /// Opens the stack. `virtual` joins the shared air hub, starting it in the background when none runs (these
    /// commands exist to meet another process): `$OCB_AIR_SOCKET` or the default socket path.
    func open(label: String, meetsOtherProcesses: Bool = true) async throws(CLIFailure) -> LaunchedStack {
        var options = StackLaunchOptions(snoopPath: snoop, label: "blue.\(label)")
        if meetsOtherProcesses {
            options.virtualFallback = .startHub(executable: StackLauncher.currentExecutablePath)
        }
        do {
            return try await StackLauncher.open(hci, options: options)
        } catch {
            switch error.code {
            case .invalidSpecification: throw CLIFailure(.usage, error.reason)
            case .snoopFailed: throw CLIFailure(.usage, error.reason)
            default: throw CLIFailure(.unavailable, error.reason)
            }
        }
    }
}

/// A failure a command reports as one line on standard error, with its exit code.
///
/// Exit codes: 1 the operation failed (not writable, ATT error, connection lost, timed out), 2 the target or the
/// characteristic was not found, 64 bad input (UUID, value, `--hci` text, definition file), 69 the transport or
/// the hub is unreachable.
struct CLIFailure: Error, Sendable {
    enum Kind: Int32, Sendable {
        case failed = 1
        case notFound = 2
        case usage = 64
        case unavailable = 69
    }

    var kind: Kind
    var message: String

    init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}

/// Runs an async command body from a synchronous `run()`: prints a ``CLIFailure`` as one line and exits with its
/// code. The body runs on the global executor; the main thread waits.
func runCommand(_ body: @escaping @Sendable () async throws(CLIFailure) -> Void) throws {
    signal(SIGPIPE, SIG_IGN)
    let outcome = LockedValue<CLIFailure?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        do throws(CLIFailure) {
            try await body()
        } catch {
            outcome.store(error)
        }
        done.signal()
    }
    done.wait()
    if let failure = outcome.load() {
        Console.flush()
        printError(failure.message)
        throw ExitCode(failure.kind.rawValue)
    }
    Console.flush()
}

/// Unbuffered output, safe from any thread (stack loops, timers, signal handlers).
enum Console {
    private static let lock = LockedValue(())

    /// Writes `text` and a newline to standard output at once (a pipe reader sees each line as it happens).
    static func line(_ text: String) {
        write(text + "\n")
    }

    static func write(_ text: String) {
        lock.withLock { _ in
            var bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeMutableBytes { buffer in
                    Foundation.write(1, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                }
                if written <= 0 { break }
                offset += written
            }
            bytes.removeAll()
        }
    }

    static func flush() {
        fflush(nil)
    }

    /// Whether standard output is a terminal.
    static var isTerminal: Bool { isatty(1) == 1 }

    /// One JSON object on one line (keys sorted).
    static func json(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return
        }
        line(String(decoding: data, as: UTF8.self))
    }
}

/// Waits for SIGINT or SIGTERM (asynchronously), then calls `handler` once, on a private queue.
final class SignalWatcher: Sendable {
    private let sources: LockedValue<[any DispatchSourceSignal]>

    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "blue.signals")
        let fired = LockedValue(false)
        sources = LockedValue([SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let first = fired.withLock { value in
                    defer { value = true }
                    return !value
                }
                if first { handler(number) }
            }
            source.resume()
            return source
        })
    }

    func cancel() {
        for source in sources.load() { source.cancel() }
    }
}

/// Seconds from a command-line `Double` (clamped to 0...1 day).
func duration(seconds: Double) -> Duration {
    .milliseconds(Int64(min(max(seconds, 0), 86_400) * 1000))
}
