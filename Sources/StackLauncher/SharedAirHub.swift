import BluetoothRuntime
import Logging
import Dispatch
public import FoundationEssentials
import Synchronization
import SystemInterface
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SharedAir

/// The shared air (`virtual`, DESIGN.md "Transports"): the one place where the programs of this machine meet as
/// devices do, an ``AirHub`` listening on a UNIX socket (``StackLaunchOptions/defaultHubSocketPath``), started on
/// demand by the first program that needs it.
///
/// Who starts it (``Starter``): the `blue` tool spawns itself (`blue air --socket PATH`, in its own session, so it
/// outlives the command); a library user (OpenCoreBluetooth, BluetoothLE) spawns the `blue` it finds
/// (``executable(environment:programPath:isExecutable:)``), and when there is none it hosts the hub in its own
/// process for as long as the process runs (the others' links end with it, as when `blue air` stops), saying so
/// once on standard error. Two programs racing to start it are harmless: the loser joins the winner's.
public enum SharedAirHub {
    /// How a hub is started when none runs at the socket.
    public enum Starter: Hashable, Sendable {
        /// ``executable(environment:programPath:isExecutable:)``'s `blue`, else ``inThisProcess``.
        case automatic
        /// `EXECUTABLE air --socket PATH` in the background (it outlives this process).
        case executable(String)
        /// An ``AirHub`` in this process, until the process ends.
        case inThisProcess
        /// None: joining fails when no hub runs.
        case never
    }

    /// What ``ensure(at:starter:)`` found or did.
    public enum Outcome: Hashable, Sendable {
        /// A hub was already listening.
        case running
        /// A `blue air` was spawned with this process id.
        case started(pid: Int32)
        /// This process hosts the hub.
        case hostedHere
    }

    /// The environment variable naming the `blue` executable that starts the hub.
    public static let executableEnvironmentVariable = "OCB_BLUE"

    /// The `blue` that starts a hub: `$OCB_BLUE` when set, else `blue` beside `programPath` (SwiftPM builds every
    /// product of a package into one directory, so the example programs and the tests find it there), else the
    /// first executable `blue` on `$PATH`; nil when there is none.
    public static func executable(environment: [String: String] = ProcessInfo.processInfo.environment,
                                  programPath: String = StackLauncher.currentExecutablePath,
                                  isExecutable: (String) -> Bool = { FileManager.default.isExecutableFile(atPath: $0) })
        -> String? {
        if let named = environment[executableEnvironmentVariable], !named.isEmpty { return named }
        var candidates: [String] = []
        if let slash = programPath.lastIndex(of: "/") { candidates.append(programPath[...slash] + "blue") }
        for directory in (environment["PATH"] ?? "").split(separator: ":") where !directory.isEmpty {
            candidates.append(directory + "/blue")
        }
        return candidates.first(where: isExecutable)
    }

    /// The hubs this process hosts, by socket path (kept for the life of the process).
    private static let hosted = LockedValue<[String: AirHub]>([:])
    /// One start at a time in this process: the stacks opened together join the first one's hub.
    private static let starting = Mutex(())

    /// Makes sure a hub listens at `path`, starting one with `starter` when none does. With
    /// `inExistingDirectoryOnly`, a hub is started only where `path`'s directory exists (a mistyped `air:PATH` fails
    /// rather than creating directories); the default socket's directory is always made. Blocking (a spawned hub is
    /// waited for, up to 5 s): call it off any executor that must stay responsive, or use the async form.
    public static func ensure(at path: String, starter: Starter, inExistingDirectoryOnly: Bool = false)
        throws(StackLaunchError) -> Outcome {
        try starting.withLock { _ throws(StackLaunchError) -> Outcome in
            try ensureAlone(at: path, starter: starter, inExistingDirectoryOnly: inExistingDirectoryOnly)
        }
    }

    /// ``ensure(at:starter:inExistingDirectoryOnly:)``, no other start of this process running.
    private static func ensureAlone(at path: String, starter: Starter, inExistingDirectoryOnly: Bool)
        throws(StackLaunchError) -> Outcome {
        // A socket or folder of another user is refused before anything is probed, spawned or hosted there.
        do throws(AirHubError) {
            try AirHub.checkTrust(ofSocket: path)
        } catch {
            throw StackLaunchError(.unreachable, error.reason)
        }
        if AirHub.isRunning(at: path) { return .running }
        let directory = PathComponents.parent(of: path)
        if inExistingDirectoryOnly, path != StackLaunchOptions.defaultHubSocketPath, !directory.isEmpty,
           !FileManager.default.fileExists(atPath: directory) {
            throw StackLaunchError(.unreachable, "no air hub at \(path), and its directory does not exist "
                                   + "(start one with `blue air --socket \(path)`)")
        }
        switch starter {
        case .never:
            throw StackLaunchError(.unreachable, "no air hub at \(path) (start one with `blue air --socket \(path)`)")
        case .executable(let executable):
            return try spawn(executable, at: path)
        case .inThisProcess:
            return try host(at: path)
        case .automatic:
            if let executable = executable() { return try spawn(executable, at: path) }
            let outcome = try host(at: path)
            if outcome == .hostedHere {
                Logger(label: LogLabel.launcher).notice(
                    "no `blue` to start the shared air (set \(executableEnvironmentVariable) or put blue on PATH); this process hosts it at \(path) until it exits")
            }
            return outcome
        }
    }

    /// ``ensure(at:starter:)`` on a thread of its own, so that a spawned hub's start does not hold up the caller's
    /// executor.
    public static func ensure(at path: String, starter: Starter, inExistingDirectoryOnly: Bool = false)
        async throws(StackLaunchError) -> Outcome {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Outcome, StackLaunchError>, Never>) in
            let started = DetachedThread.spawn(named: "air-hub.ensure") {
                do throws(StackLaunchError) {
                    let outcome = try ensure(at: path, starter: starter, inExistingDirectoryOnly: inExistingDirectoryOnly)
                    continuation.resume(returning: .success(outcome))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if !started {
                continuation.resume(returning: .failure(StackLaunchError(.hubFailed, "no thread to reach the air hub on: \(POSIX.errorText(errno))")))
            }
        }
        return try result.get()
    }

    private static func spawn(_ executable: String, at path: String) throws(StackLaunchError) -> Outcome {
        do {
            if let pid = try AirHubLauncher.ensureRunning(executable: executable, socketPath: path) { return .started(pid: pid) }
            return .running
        } catch {
            throw StackLaunchError(.hubFailed, "no air hub at \(path), and none could be started: \(error.reason)")
        }
    }

    private static func host(at path: String) throws(StackLaunchError) -> Outcome {
        let hub = AirHub(configuration: AirHubConfiguration(socketPath: path, statisticsInterval: nil),
                         eventLoop: DispatchEventLoop(label: "OpenCoreBluetooth.sharedAir"))
        do {
            try hub.start()
        } catch {
            if error.code == .alreadyRunning { return .running }
            throw StackLaunchError(.hubFailed, "no air hub at \(path), and none could be hosted here: \(error.reason)")
        }
        hosted.withLock { $0[path] = hub }
        return .hostedHere
    }
}
