import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The `blue air` processes serving one socket, found by their command line in /proc: a hub started on demand by a
/// manager whose hub went away (`.resetting`, then the hub opened again) is recorded by the process that started
/// it, which may be another test's manager running at the same time, so tests tell their hubs by socket.
public enum HubProcesses {
    /// Whether process `pid` is a hub serving `socket`.
    public static func serves(_ pid: Int32, _ socket: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
        let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return arguments.contains("air") && arguments.contains(socket)
    }

    /// The hubs serving `socket` now (this process excluded).
    public static func serving(_ socket: String) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { Int32($0) }.filter { $0 != getpid() && serves($0, socket) }
    }

    /// Sends SIGTERM to every hub serving `socket`.
    public static func stop(_ socket: String) {
        for pid in serving(socket) { kill(pid, SIGTERM) }
    }
}
