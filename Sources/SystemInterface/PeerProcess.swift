#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif


/// The process at the other end of a UNIX socket (Linux SO_PEERCRED, then /proc/PID/cmdline): its pid and a short
/// name from its command line ("blue serve", "Seed001Central"), for telling the hub's members apart. Nil where the
/// kernel or /proc does not say.
public struct PeerProcess: Hashable, Sendable, CustomStringConvertible {
    public var pid: Int32
    /// The program's file name and, when it has one, its first word that is not an option ("blue serve").
    public var name: String

    public init(pid: Int32, name: String) {
        self.pid = pid
        self.name = name
    }

    /// The peer of the connected UNIX socket `fd`.
    public static func of(socket fd: Int32) -> PeerProcess? {
        guard let credentials = PeerCredentials.of(socket: fd), credentials.pid > 0 else { return nil }
        guard let data = POSIX.readFile("/proc/\(credentials.pid)/cmdline", limit: 64 * 1024), !data.isEmpty else {
            return PeerProcess(pid: credentials.pid, name: "pid \(credentials.pid)")
        }
        let words = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        let program = (words.first ?? "").split(separator: "/").last.map(String.init) ?? ""
        let command = words.dropFirst().first { !$0.hasPrefix("-") && !$0.isEmpty && !$0.contains("/") }
        return PeerProcess(pid: credentials.pid, name: [program, command].compactMap { $0 }.joined(separator: " "))
    }

    /// "blue-serve": letters, digits and dashes, for file names.
    public var slug: String {
        let mapped = name.map { $0.isLetter || $0.isNumber ? $0 : "-" }
        return String(mapped).split(separator: "-").joined(separator: "-")
    }

    public var description: String { "\(name) (pid \(pid))" }
}

/// Who is at the other end of a connected UNIX socket, as the kernel recorded it when the peer connected or listened
/// (Linux SO_PEERCRED): what the hub's side sockets and the air's clients check before trusting each other.
package struct PeerCredentials: Hashable, Sendable {
    package var pid: Int32
    package var uid: UInt32
    package var gid: UInt32

    /// The peer of `fd`; nil where the kernel does not say (not Linux, not a UNIX socket).
    package static func of(socket fd: Int32) -> PeerCredentials? {
        #if os(Linux)
        // struct ucred (pid, uid, gid), which Glibc's module does not export; SO_PEERCRED is 17 on Linux.
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(fd, SOL_SOCKET, 17, &credentials, &length) == 0 else { return nil }
        return PeerCredentials(pid: credentials.pid, uid: credentials.uid, gid: credentials.gid)
        #else
        return nil
        #endif
    }
}
