import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// TCP ports for peers that must be told their port before they start (Bumble's controllers, RootCanal): ports no
/// other test of the run can be handed.
///
/// The old way — bind port 0, read the port, release it, pass it on — races: until the peer binds, the kernel may
/// give the same ephemeral port to another listener of the parallel run (or to an outgoing connection's local
/// end), and the peer then fails to start or a client reaches the wrong listener. The kernel assigns ephemeral ports
/// only from `/proc/sys/net/ipv4/ip_local_port_range` (32768–60999 by default), so these ports come from below that
/// range: a block of this process's own (chosen from the process id), handed out once each, every one checked free
/// by a bind first (another test process on the machine may be using the same block).
public enum TestPorts {
    private static let state = NSLock()
    nonisolated(unsafe) private static var next: Int?

    /// The lowest ephemeral port the kernel may assign; our ports stay below it.
    static var ephemeralLow: Int {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
              let low = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap({ Int($0) }),
              low > 12_000 else { return 32_768 }
        return low
    }

    /// A port on 127.0.0.1 that no listener holds now, never handed out before in this process, outside the
    /// kernel's ephemeral range. Throws when none is left (after 2,000 tries).
    public static func reserve() throws -> UInt16 {
        let top = ephemeralLow - 1
        let bottom = max(10_000, top - 20_000)
        let span = top - bottom
        return try state.withLock {
            var candidate = next ?? (bottom + Int(getpid()) * 97 % span)
            for _ in 0..<2_000 {
                if candidate > top { candidate = bottom }
                let port = candidate
                candidate += 1
                if isFree(UInt16(port)) {
                    next = candidate
                    return UInt16(port)
                }
            }
            throw TestPortsError()
        }
    }

    /// Whether a TCP listener could bind 127.0.0.1:`port` now.
    static func isFree(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return bound == 0
    }
}

/// No free port was found below the ephemeral range.
public struct TestPortsError: Error, CustomStringConvertible {
    public var description: String { "no free TCP port below the kernel's ephemeral range" }
}

/// A fresh folder for one test's files (UNIX sockets, bond stores, captures), under the run's temporary directory
/// (`$TMPDIR`, which `Scripts/test.sh` points at a folder of its own and removes at the end). Short enough for a
/// UNIX socket path inside it (108 bytes). The test removes it when done (`defer`); the script removes what a
/// crashed test left.
public func makeTestDirectory(_ label: String) throws -> String {
    let path = testTemporaryPath("ocb-\(label.prefix(12))-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// `name` inside the run's temporary directory (`$TMPDIR`, else /tmp), for a file or socket a test removes itself.
public func testTemporaryPath(_ name: String) -> String {
    var base = NSTemporaryDirectory()
    if base.hasSuffix("/") { base.removeLast() }
    return base + "/" + name
}
