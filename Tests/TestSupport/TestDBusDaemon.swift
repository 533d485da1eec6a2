public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A dbus-daemon of a test's own (the session configuration, listening on a socket in a fresh folder), stopped with
/// ``stop()``: for the D-Bus client's tests and for stand-ins of bluetoothd. Not a Bluetooth type.
public final class TestDBusDaemon: @unchecked Sendable {
    public let process = Process()
    public let folder: String
    /// The bus address (`unix:path=…`).
    public let address: String

    /// Whether a missing dbus-daemon or gdbus must fail the test (the interop checks are required).
    public static var required: Bool { ProcessInfo.processInfo.environment["OCB_REQUIRE_INTEROP"] == "1" }

    /// Starts one and waits (at most 20 s) until its socket accepts a connection (the file appears at bind(),
    /// before listen(): a client connecting in between is refused, which a busy machine showed); nil when
    /// dbus-daemon is not installed. Throws when it cannot be started or does not listen.
    public static func start() async throws -> TestDBusDaemon? {
        guard let daemon = executable("dbus-daemon") else { return nil }
        let bus = try TestDBusDaemon(daemon: daemon)
        let socket = bus.folder + "/bus"
        let appeared = await poll(within: .seconds(20)) { Self.accepts(socket) || bus.process.ended != nil }
        guard appeared, bus.process.ended == nil else {
            await bus.stop()
            throw Failure(reason: "dbus-daemon did not start")
        }
        return bus
    }

    /// Whether a UNIX stream socket at `path` accepts a connection now.
    static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0
    }

    public struct Failure: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    private init(daemon: String) throws {
        folder = testTemporaryPath("ocb-dbus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        address = "unix:path=\(folder)/bus"
        process.executableURL = URL(fileURLWithPath: daemon)
        process.arguments = ["--session", "--nofork", "--nopidfile", "--address=\(address)"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// The first executable `name` in /usr/bin, /bin or /usr/local/bin.
    public static func executable(_ name: String) -> String? {
        ["/usr/bin/", "/bin/", "/usr/local/bin/"].map { $0 + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs GLib's gdbus on this bus (`--session` with the bus in the environment: gdbus then says Hello; with
    /// `--address` it speaks peer to peer and the bus drops what it sends before Hello). Nil when gdbus is missing.
    public func gdbus(_ arguments: [String]) async throws -> CompletedProcess? {
        guard let gdbus = Self.executable("gdbus") else { return nil }
        let command = arguments.first.map { [$0] } ?? []
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        return try await runToCompletion(URL(fileURLWithPath: gdbus), command + ["--session"] + arguments.dropFirst(),
                                         environment: environment, limit: .seconds(30))
    }

    public func stop() async {
        _ = await process.stop(grace: .seconds(2))
        try? FileManager.default.removeItem(atPath: folder)
    }
}
