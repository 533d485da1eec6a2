#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials
import VirtualController

/// Starts `blue air` in the background when no hub runs, so that commands in two terminals meet with no flags
/// (issue 3 item 4: "later commands start the hub themselves when none runs").
///
/// The hub runs in its own session (it survives the command that started it and ignores that terminal's ^C), with
/// standard input from /dev/null and its output appended to a log file next to the socket (mode 0600, never through
/// a symbolic link), in a folder checked first (``AirHub/prepareSocketFolder(forSocket:)``). Two commands racing to
/// start it are harmless: the second hub exits at once ("already running") and both join the first.
public enum AirHubLauncher {
    /// The log of a background hub: the socket path with `.log` instead of `.sock` (or appended).
    public static func logPath(forSocket socketPath: String) -> String {
        socketPath.hasSuffix(".sock") ? String(socketPath.dropLast(5)) + ".log" : socketPath + ".log"
    }

    /// Makes sure a hub accepts on `socketPath`: returns at once when one runs, else spawns
    /// `executable air --socket socketPath` (plus `arguments`) and waits up to `timeout` for it to listen.
    /// - Returns: the process id of the hub this call started; nil when one was already running.
    @discardableResult
    public static func ensureRunning(
        executable: String, socketPath: String = AirHub.defaultSocketPath, arguments: [String] = [],
        timeout: Duration = .seconds(5)
    ) throws(AirHubError) -> Int32? {
        try ensureRunning(executable: executable, command: "air", socketPath: socketPath, arguments: arguments,
                          timeout: timeout, isRunning: { AirHub.isRunning(at: $0) })
    }

    /// Makes sure a server of `blue` accepts on `socketPath`: returns at once when `isRunning` says one does, else
    /// spawns `executable command --socket socketPath` (plus `arguments`) the same way as the hub and waits up to
    /// `timeout` for it (the Bluetooth service, `blue service`, starts so too).
    /// - Returns: the process id of the server this call started; nil when one was already running.
    @discardableResult
    public static func ensureRunning(
        executable: String, command: String, socketPath: String, arguments: [String] = [], timeout: Duration = .seconds(5),
        isRunning: (String) -> Bool
    ) throws(AirHubError) -> Int32? {
        // The folder first: a log, a socket or a probe in a folder someone else controls would be theirs to read,
        // replace or answer.
        try AirHub.prepareSocketFolder(forSocket: socketPath)
        try AirHub.checkTrust(ofSocket: socketPath)
        if isRunning(socketPath) { return nil }
        let pid = try spawn(executable: executable, arguments: [command, "--socket", socketPath] + arguments,
                            log: logPath(forSocket: socketPath))
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            if isRunning(socketPath) { return pid }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                // It exited: another command may have started one at the same moment.
                if isRunning(socketPath) { return nil }
                throw AirHubError(.listenFailed, "\(executable) \(command) exited before listening on \(socketPath); "
                                  + "see \(logPath(forSocket: socketPath))")
            }
            usleep(20_000)
        }
        throw AirHubError(.listenFailed, "\(executable) \(command) did not listen on \(socketPath) within \(timeout)")
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34+; declared only under `_GNU_SOURCE`, so looked up
    /// at run time): closes every descriptor from 3 up in the child. Without it (older C libraries) nothing is added.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
        let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
        _ = closeFrom(&actions, 3)
    }

    /// Starts `executable` with `arguments` in a session of its own, as a background hub starts: standard input from
    /// /dev/null, output appended to `log` (0600, never through a symbolic link), none of our other descriptors, and
    /// this process's environment with `environment` over it. What the Bluetooth service uses to launch a program
    /// again for an event.
    package static func spawnDetached(executable: String, arguments: [String], environment: [String: String],
                                      log: String) throws(AirHubError) -> Int32 {
        try spawn(executable: executable, arguments: arguments, log: log, environment: environment)
    }

    private static func spawn(executable: String, arguments: [String], log: String,
                              environment: [String: String] = [:]) throws(AirHubError) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // O_NOFOLLOW: a symbolic link planted at the log's path is not written through.
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The hub outlives us: it must not hold our other descriptors (sockets, pipes a parent waits on for EOF).
        Self.closeInheritedDescriptors(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        #if canImport(Glibc)
        posix_spawnattr_setflags(&attributes, 0x80)  // POSIX_SPAWN_SETSID (glibc 2.26+; needs _GNU_SOURCE in C)
        #endif
        let argv = ([executable] + arguments).map { strdup($0) }
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }
        let envp = variables.map { strdup("\($0.key)=\($0.value)") }
        defer { for pointer in envp { free(pointer) } }
        let result: Int32 = (argv + [nil]).withUnsafeBufferPointer { pointers in
            guard let base = pointers.baseAddress else { return EINVAL }
            return (envp + [nil]).withUnsafeBufferPointer { environment in
                guard let variables = environment.baseAddress else { return EINVAL }
                return posix_spawn(&pid, executable, &actions, &attributes, base, variables)
            }
        }
        guard result == 0 else {
            throw AirHubError(.listenFailed, "cannot start \(executable) \(arguments.first ?? ""): \(String(cString: strerror(result)))")
        }
        return pid
    }
}
