import BlueZ
import ArgumentParser
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import SystemInterface
import HCITransport
import Host
import StackLauncher
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--hci` and `--snoop`, shared by every command that runs a stack (DESIGN.md "Transports").
struct StackOptions: ParsableArguments, Sendable {
    @Option(name: .customLong("hci"), help: ArgumentHelp(
        "The controller: virtual (default), air:PATH, tcp:HOST:PORT, unix:PATH, serial:/dev/ttyX[,BAUD][,rtscts], hciN, or bluez[:hciN] (bluetoothd's: scan, explore, read, write, subscribe, pair, serve).",
        valueName: "transport"))
    var hci: String = "virtual"

    @Option(name: .customLong("snoop"), help: ArgumentHelp("Record the HCI traffic in this btsnoop file (Wireshark opens it).",
                                                           valueName: "file"))
    var snoop: String?

    @OptionGroup var log: LogOptions

    /// The stack `--hci` names, on whichever engine runs it (StackLauncher's ``OpenedStack``): bluetoothd's for
    /// `bluez`, `bluez:hciN`, else our host with `options`. `needing` lists what the command asks that only our host
    /// does (its options in use): through bluetoothd StackLauncher refuses the first with its one line (exit 64)
    /// before anything starts, as it refuses `--snoop`. Losing the controller (bluetoothd's adapter too) ends the
    /// command (exit 69).
    func openEngine(label: String, options: StackLaunchOptions? = nil, needing: [BluetoothdLimitation] = [])
        async throws(CLIFailure) -> any OpenedStack {
        var options = options ?? StackLaunchOptions(label: "blue.\(label)")
        options.needingOurHost = needing
        options.snoopPath = snoop
        options.hubStarter = .executable(StackLauncher.currentExecutablePath)
        let stack: any OpenedStack
        do throws(StackLaunchError) {
            stack = try await StackLauncher.open(specification: StackSpecification(parsing: hci), options: options)
        } catch {
            throw Self.failure(error)
        }
        CommandRun.adopt(stack)
        return stack
    }

    /// Opens our host on `hci` with `options` (a command that needs our host's own calls: `blue bench ... --hci`).
    static func open(hci: String, snoop: String?, _ options: StackLaunchOptions) async throws(CLIFailure) -> LaunchedStack {
        var options = options
        options.snoopPath = snoop
        options.hubStarter = .executable(StackLauncher.currentExecutablePath)
        let launched: LaunchedStack
        do {
            launched = try await StackLauncher.open(hci, options: options)
        } catch {
            throw failure(error)
        }
        CommandRun.adopt(launched)
        return launched
    }

    /// A launch failure as the command's: bad `--hci` text, snoop file or option for that engine 64, else 69.
    static func failure(_ error: StackLaunchError) -> CLIFailure {
        switch error.code {
        case .invalidSpecification, .snoopFailed, .notOffered: CLIFailure(.usage, error.reason)
        default: CLIFailure(.unavailable, error.reason)
        }
    }
}

/// A failure a command reports as one line on standard error, with its exit code.
///
/// Exit codes: 1 the operation failed (not writable, ATT error, connection lost, timed out, a stop by SIGINT or
/// SIGTERM that could not finish within ``CommandRun/shutdownLimit``), 2 the target or the characteristic was not
/// found, 64 bad input (UUID, value, `--hci` text, definition file), 69 the transport or the hub is unreachable, or
/// the controller went away while the command ran (``StackLoss``: hub stopped, peer closed, device unplugged).
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
/// code. The body runs on the global executor; the main thread waits for the first of: the body's end, the loss
/// of a controller (any stack of the process), a stop by signal that cannot finish, standard output closed
/// (``CommandRun``).
func runCommand(_ body: @escaping @Sendable () async throws(CLIFailure) -> Void) throws {
    CommandRun.begin()
    Task {
        do throws(CLIFailure) {
            try await body()
            CommandRun.end(.completed)
        } catch {
            // A failure caused by the controller going away is reported as that loss.
            CommandRun.end(CommandRun.adoptedLoss.map { .lost($0) } ?? .failed(error))
        }
    }
    try CommandRun.finish(CommandRun.wait())
}

/// The command this process runs, and the ways it can end besides its body finishing: every stack the commands
/// open (``StackOptions/open(_:)``, or any ``LaunchedStack``: the CoreBluetooth managers'
/// too) is watched for the loss of its controller, SIGINT and SIGTERM are handled once for the process, and a
/// closed standard output ends the command quietly.
///
/// - Controller lost: one line "blue serve: lost the controller: air:/tmp/x.sock closed by the peer", exit 69.
/// - SIGINT/SIGTERM: the command's ``SignalWatcher``s (a server, a scan, a subscription waiting for them) stop it
///   gracefully, exit 0; when none waits (connecting, discovering), the command ends at once with 128+signal.
///   A graceful stop that has not finished after ``shutdownLimit`` (a controller that does not answer) ends with
///   "blue serve: gave up stopping after 5 s: the controller did not answer", exit 1. A second signal exits at once
///   (128+signal).
/// - Standard output closed (EPIPE, `blue scan --json | head -1`; or, for a pipe, its reader gone while the command
///   is quiet: `blue serve | head -1`): the stacks are shut down and the command exits 0, saying nothing.
enum CommandRun {
    /// How long a stop by signal may take before the command gives up: 5 s, or `$OCB_STOP_LIMIT` seconds
    /// (0.1...600) when set.
    static let shutdownLimit: Duration = {
        if let text = ProcessInfo.processInfo.environment["OCB_STOP_LIMIT"], let seconds = Double(text),
           seconds >= 0.1, seconds <= 600 {
            return .milliseconds(Int64(seconds * 1000))
        }
        return .seconds(5)
    }()

    /// ``shutdownLimit`` for Dispatch.
    private static var shutdownInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = shutdownLimit.components
        return .milliseconds(Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
    }

    enum End: Sendable {
        case completed
        case failed(CLIFailure)
        case lost(StackLoss)
        case gaveUp
        case outputClosed
        case interrupted(Int32)
    }

    private struct State {
        var end: End?
        var stacks: [any OpenedStack] = []
        var listeners: [UInt64: @Sendable (Int32) -> Void] = [:]
        var nextListener: UInt64 = 0
        var signals = 0
        var begun = false
    }

    private static let state = LockedValue(State())
    private static let ended = DispatchSemaphore(value: 0)

    /// "blue serve": the program and the subcommand, for the lines that do not come from the command itself.
    static var name: String {
        let arguments = CommandLine.arguments.dropFirst().prefix { !$0.hasPrefix("-") }.prefix(1)
        return (["blue"] + arguments).joined(separator: " ")
    }

    /// Installs the process's handling of signals, lost controllers and a closed standard output (once).
    static func begin() {
        let first = state.withLock { state in
            defer { state.begun = true }
            return !state.begun
        }
        guard first else { return }
        signal(SIGPIPE, SIG_IGN)
        Console.whenOutputCloses { end(.outputClosed) }
        Console.watchForReaderGone()
        LaunchedStack.observeLosses { loss in end(.lost(loss)) }
        ProcessSignals.handle { number in received(number) }
    }

    /// Keeps `stack` to shut it down when the command ends otherwise than by its body (its capture file closed), and
    /// ends the command when its controller goes away.
    static func adopt(_ stack: any OpenedStack) {
        state.withLock { $0.stacks.append(stack) }
        stack.onLoss { loss in end(.lost(loss)) }
    }

    /// The loss of an adopted stack's controller, if one was lost.
    static var adoptedLoss: StackLoss? {
        state.load().stacks.lazy.compactMap(\.loss).first
    }

    /// Ends the command (the first end wins).
    static func end(_ how: End) {
        let first = state.withLock { state -> Bool in
            guard state.end == nil else { return false }
            state.end = how
            return true
        }
        if first { ended.signal() }
    }

    /// Waits (on the main thread) for the end. From then on the process has a bound to be gone: if finishing
    /// (stacks shut down, captures closed, the runtime's exit) has not ended it after ``shutdownLimit`` plus a
    /// second — a stuck exit path, seen once under heavy load by the hostile-controller fuzz — it exits at once with
    /// the end's status.
    static func wait() -> End {
        ended.wait()
        let how = state.load().end ?? .completed
        DispatchQueue.global().asyncAfter(deadline: .now() + shutdownInterval + .seconds(1)) {
            exitNow(status(of: how))
        }
        return how
    }

    /// The exit status ``finish(_:)`` gives an end.
    static func status(of how: End) -> Int32 {
        switch how {
        case .completed, .outputClosed: return 0
        case .failed(let failure): return failure.kind.rawValue
        case .lost: return CLIFailure.Kind.unavailable.rawValue
        case .gaveUp: return CLIFailure.Kind.failed.rawValue
        case .interrupted(let number): return 128 + number
        }
    }

    /// Prints what the end says and exits with its code (throws ArgumentParser's `ExitCode`).
    static func finish(_ how: End) throws {
        switch how {
        case .completed:
            Console.flush()
        case .failed(let failure):
            Console.flush()
            printError(failure.message)
            throw ExitCode(failure.kind.rawValue)
        case .lost(let loss):
            Console.flush()
            Console.error("\(name): \(loss)")
            shutDownStacks(status: CLIFailure.Kind.unavailable.rawValue)
            throw ExitCode(CLIFailure.Kind.unavailable.rawValue)
        case .gaveUp:
            Console.flush()
            Console.error("\(name): gave up stopping after \(shutdownLimit.secondsText): the controller did not answer")
            throw ExitCode(CLIFailure.Kind.failed.rawValue)
        case .outputClosed:
            shutDownStacks(status: 0)
        case .interrupted(let number):
            Console.flush()
            shutDownStacks(status: 128 + number)
            throw ExitCode(128 + number)
        }
    }

    /// Shuts the adopted stacks down (their captures complete), exiting with `status` if that takes longer than
    /// ``shutdownLimit``.
    private static func shutDownStacks(status: Int32) {
        let stacks = state.withLock { state in
            defer { state.stacks = [] }
            return state.stacks
        }
        guard !stacks.isEmpty else { return }
        let done = LockedValue(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + shutdownInterval) {
            if !done.load() { exitNow(status) }
        }
        for stack in stacks { stack.shutdown() }
        done.store(true)
    }

    /// Exits without running anything more (stdio flushed).
    static func exitNow(_ status: Int32) -> Never {
        fflush(nil)
        _exit(status)
    }

    /// One delivery of SIGINT or SIGTERM (``ProcessSignals`` calls this once per delivery).
    private static func received(_ number: Int32) {
        let (count, listeners) = state.withLock { state -> (Int, [@Sendable (Int32) -> Void]) in
            state.signals += 1
            guard state.signals == 1 else { return (state.signals, []) }
            defer { state.listeners = [:] }
            return (1, state.listeners.sorted { $0.key < $1.key }.map(\.value))
        }
        if count > 1 { exitNow(128 + number) }
        if listeners.isEmpty {
            end(.interrupted(number))
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + shutdownInterval) { end(.gaveUp) }
        for listener in listeners { listener(number) }
    }

    /// Adds a listener of the first SIGINT or SIGTERM; returns its key for ``removeSignalListener(_:)``.
    fileprivate static func addSignalListener(_ listener: @escaping @Sendable (Int32) -> Void) -> UInt64 {
        begin()
        return state.withLock { state in
            state.nextListener += 1
            state.listeners[state.nextListener] = listener
            return state.nextListener
        }
    }

    fileprivate static func removeSignalListener(_ key: UInt64) {
        state.withLock { _ = $0.listeners.removeValue(forKey: key) }
    }
}

/// Unbuffered output, safe from any thread (stack loops, timers, signal handlers). Standard output closed under
/// us (EPIPE: the reader went away, `| head -1`) is not an error: what follows is dropped and the handler given to
/// ``whenOutputCloses(_:)`` runs once (by default the process exits 0). Never traps, unlike `FileHandle.write`.
enum Console {
    private static let closed = LockedValue(false)
    private static let closeHandler = LockedValue<(@Sendable () -> Void)?>(nil)
    private static let ignoresBrokenPipes: Void = {
        signal(SIGPIPE, SIG_IGN)
    }()

    /// Writes `text` and a newline to standard output at once (a pipe reader sees each line as it happens).
    static func line(_ text: String) {
        write(text + "\n")
    }

    static func write(_ text: String) {
        _ = ignoresBrokenPipes
        let broken = closed.withLock { closed -> Bool in
            guard !closed else { return false }
            if writeAll(1, text) == EPIPE {
                closed = true
                return true
            }
            return false
        }
        guard broken else { return }
        let handler = closeHandler.load()
        // Not on the writer's thread: it may be a stack's loop, which the handler shuts down.
        DispatchQueue.global().async {
            if let handler { handler() } else { CommandRun.exitNow(0) }
        }
    }

    /// One line on standard error (failures ignored: there is nowhere left to report them).
    static func error(_ line: String) {
        errorText(line + "\n")
    }

    /// Text on standard error as it is (a progress bar redrawn with "\r").
    static func errorText(_ text: String) {
        _ = ignoresBrokenPipes
        _ = writeAll(2, text)
    }

    /// What to do once standard output is found closed (called once, on a global queue).
    static func whenOutputCloses(_ handler: @escaping @Sendable () -> Void) {
        closeHandler.store(handler)
    }

    /// Notices the reader of standard output going away even while nothing is written (a quiet hub under
    /// `| head -1`): when standard output is a pipe or a socket, a thread waits for its error condition and then
    /// runs the ``whenOutputCloses(_:)`` handler as a failed write would.
    static func watchForReaderGone() {
        var status = stat()
        guard fstat(1, &status) == 0 else { return }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFIFO || kind == S_IFSOCK else { return }
        DetachedThread.spawn(named: "blue.stdout-watch") {
            var entry = pollfd(fd: 1, events: 0, revents: 0)
            while true {
                let ready = poll(&entry, 1, -1)
                if ready < 0, errno == EINTR { continue }
                guard ready > 0, entry.revents & Int16(POLLERR | POLLHUP) != 0 else { return }
                break
            }
            let first = closed.withLock { closed in
                defer { closed = true }
                return !closed
            }
            guard first else { return }
            if let handler = closeHandler.load() { handler() } else { CommandRun.exitNow(0) }
        }
    }

    /// Writes every byte unless the descriptor fails; returns the failing errno, or 0.
    private static func writeAll(_ fd: Int32, _ text: String) -> Int32 {
        DescriptorWriter.writeAll(fd, text)
    }

    static func flush() {
        fflush(nil)
    }

    /// Whether standard output is a terminal.
    static var isTerminal: Bool { isatty(1) == 1 }

    /// The terminal's columns and rows (standard output), nil when it is not a terminal or does not say.
    static var terminalSize: (columns: Int, rows: Int)? {
        var size = winsize()
        guard isTerminal, ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return (Int(size.ws_col), Int(size.ws_row))
    }

    /// One JSON object on one line (keys sorted).
    static func json(_ object: [String: Any]) {
        guard let text = JSONWriter.text(object) else { return }
        line(text)
    }
}

/// Calls `handler` once, on a private queue, at the first SIGINT or SIGTERM of the process while it is not
/// cancelled: a command waiting for a signal to stop gracefully (``CommandRun`` bounds that stop and exits at once
/// on a second signal).
final class SignalWatcher: Sendable {
    private let key: UInt64

    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        key = CommandRun.addSignalListener(handler)
    }

    func cancel() {
        CommandRun.removeSignalListener(key)
    }
}

/// Seconds from a command-line `Double` (clamped to 0...1 day).
func duration(seconds: Double) -> Duration {
    .milliseconds(Int64(min(max(seconds, 0), 86_400) * 1000))
}
