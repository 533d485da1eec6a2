import BluetoothRuntime
import FoundationEssentials
import SystemInterface
#if canImport(Glibc)
import Glibc
#endif

/// The write end of the pipe that ``ProcessSignals``' C handler reports each delivery to (set once, before the
/// handler is installed; read by the handler, which may run on any thread).
nonisolated(unsafe) private var signalPipeWriteEnd: Int32 = -1

/// SIGINT and SIGTERM for the whole process, never lost.
///
/// Not Dispatch signal sources: with them a signal must be set to SIG_IGN, and the source starts observing only
/// once libdispatch's manager thread has registered it, after `resume()` returned — a SIGTERM arriving in between
/// is discarded (SIG_IGN) and the command runs on. Seen under load: `blue air` given SIGTERM right after it printed
/// "listening" (its sources were made after that line) ran until SIGKILL, and the hostile-controller fuzz's
/// `blue serve` did not stop after an early SIGTERM. Here a C handler (sigaction) is in place when ``handle(_:_:)``
/// returns; it writes the signal's number to a pipe (async-signal-safe), and a thread of its own reads the pipe and
/// calls the Swift handler, once per delivery (two signals delivered one after the other are two calls). Children
/// exec'd later get the default actions back (caught signals are reset by exec).
enum ProcessSignals {
    private static let installed = LockedValue(false)

    /// Installs the handler for SIGINT and SIGTERM (once per process; later calls are ignored) and calls `handler`
    /// with each delivered signal's number, in order, on a dedicated thread.
    static func handle(_ handler: @escaping @Sendable (Int32) -> Void) {
        let first = installed.withLock { installed in
            defer { installed = true }
            return !installed
        }
        guard first else { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            // No pipe: fall back to the default actions (the process ends on the signal).
            return
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        signalPipeWriteEnd = fds[1]
        for number in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = write(signalPipeWriteEnd, &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = Int32(SA_RESTART)
            _ = sigaction(number, &action, nil)
        }
        // A parent may have started us with these signals blocked (Foundation's Process hands its child the
        // spawning thread's mask: Swift Testing's worker threads block SIGTERM). Unblocked here and so in the reader
        // thread made next, which inherits this mask: a delivery always finds a thread to run the handler on, even
        // once the main thread has parked in dispatchMain().
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        _ = pthread_sigmask(SIG_UNBLOCK, &set, nil)
        let readEnd = fds[0]
        DetachedThread.spawn(named: "blue.signals") {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0, errno == EINTR { continue }
                guard count == 1 else { return }
                handler(Int32(byte))
            }
        }
    }
}
