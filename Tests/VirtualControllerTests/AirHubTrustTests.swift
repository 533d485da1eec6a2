import BluetoothRuntime
import Foundation
import HCITransport
import SystemInterface
import TestSupport
import Testing
@testable import SharedAir
#if canImport(Glibc)
import Glibc
#endif

/// Issue 30: the hub's folder and sockets are this user's alone, and neither the hub nor its clients trust a folder,
/// a socket or a server of another user. The tests marked "as uid 65534" need root (to act as that user with
/// setpriv); they are skipped otherwise, saying so.
@Suite("AirHub trust")
struct AirHubTrustTests {
    static let canActAsAnotherUser = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    static func mode(_ path: String) -> mode_t? {
        var info = stat()
        return lstat(path, &info) == 0 ? info.st_mode & 0o7777 : nil
    }

    static func hub(at socket: String) -> AirHub {
        AirHub(configuration: AirHubConfiguration(socketPath: socket, statisticsInterval: nil),
               eventLoop: DispatchEventLoop(label: "trust-test"))
    }

    static func startError(_ hub: AirHub) -> AirHubError? {
        do throws(AirHubError) {
            try hub.start()
            hub.stop()
            return nil
        } catch {
            return error
        }
    }

    @Test func hubCreatesAPrivateFolderAndPrivateSockets() async throws {
        let root = try makeTestDirectory("trust")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/air"
        let socket = folder + "/air.sock"
        let hub = Self.hub(at: socket)
        try hub.start()
        defer { hub.stop() }
        #expect(Self.mode(folder) == 0o700)
        for path in [socket, socket + ".control", socket + ".monitor"] {
            #expect(Self.mode(path) == 0o600, "\(path)")
        }
        #expect(AirHub.isRunning(at: socket))
        #expect(try AirHub.control("devices", socketPath: socket).hasPrefix("ok:"))
    }

    @Test func hubAndClientsRefuseAFolderOpenToOthers() throws {
        let root = try makeTestDirectory("trust")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let folder = root + "/open"
        #expect(mkdir(folder, 0o700) == 0 && chmod(folder, 0o777) == 0)
        let socket = folder + "/air.sock"
        let error = try #require(Self.startError(Self.hub(at: socket)))
        #expect(error.code == .untrusted)
        #expect(error.reason.contains(folder) && error.reason.contains("0777") && !error.reason.contains("\n"))
        #expect(!FileManager.default.fileExists(atPath: socket))

        // A hub that was started before the folder was opened up: its clients now refuse it.
        #expect(chmod(folder, 0o700) == 0)
        let hub = Self.hub(at: socket)
        try hub.start()
        defer { hub.stop() }
        #expect(AirHub.isRunning(at: socket))
        #expect(chmod(folder, 0o777) == 0)
        #expect(!AirHub.isRunning(at: socket))
        #expect(throws: HCITransportError.self) { try AirHub.connect(at: socket) }
        let control = try #require(throws: AirHubError.self) { try AirHub.control("devices", socketPath: socket) }
        #expect(control.code == .untrusted)
        #expect(chmod(folder, 0o700) == 0)
    }

    /// A symbolic link planted at the socket's path: the hub does not replace or follow it, the client does not
    /// connect through it.
    @Test func symbolicLinkAtTheSocketPathIsNotFollowed() throws {
        let root = try makeTestDirectory("trust")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let victim = root + "/victim"
        #expect(FileManager.default.createFile(atPath: victim, contents: Data("keep".utf8)))
        let socket = root + "/air.sock"
        #expect(symlink(victim, socket) == 0)
        let error = try #require(Self.startError(Self.hub(at: socket)))
        #expect(error.reason.contains("not a socket"))
        #expect(FileManager.default.contents(atPath: victim) == Data("keep".utf8))
        let linkInfo = try FileManager.default.destinationOfSymbolicLink(atPath: socket)
        #expect(linkInfo == victim)

        // A link to a real hub's socket: refused too.
        let real = root + "/real.sock"
        let hub = Self.hub(at: real)
        try hub.start()
        defer { hub.stop() }
        #expect(unlink(socket) == 0 && symlink(real, socket) == 0)
        let refused = try #require(throws: AirHubError.self) { try AirHub.checkTrust(ofSocket: socket) }
        #expect(refused.code == .untrusted && refused.reason.contains("symbolic link"))
        #expect(!AirHub.isRunning(at: socket))
    }

    /// Squatting (issue 30): uid 65534 makes a folder writable by all and listens in it; a hub of ours refuses to
    /// start there, and a client refuses to connect there, also through a socket file handed to root.
    @Test(.enabled(if: canActAsAnotherUser, "acting as uid 65534 needs root, /usr/bin/setpriv and /usr/bin/python3"), .timeLimit(.minutes(1)))
    func squattedFolderOfAnotherUserIsRefused() async throws {
        let shared = "/tmp/ocb-squat-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(shared, 0o755) == 0 && chmod(shared, 0o1777) == 0)
        defer { try? FileManager.default.removeItem(atPath: shared) }
        // Their folder, writable by all.
        let squat = shared + "/opencorebluetooth-squat"
        let made = try await runToCompletion(
            URL(fileURLWithPath: "/usr/bin/setpriv"), OtherUser.setpriv + ["/bin/sh", "-c", "mkdir \(squat) && chmod 0777 \(squat)"])
        #expect(made.status == 0, "\(made)")
        var info = stat()
        #expect(lstat(squat, &info) == 0 && info.st_uid == OtherUser.uid)

        let listener = try OtherUser.listen(at: squat + "/air.sock")
        defer { listener.terminate() }
        #expect(await poll(within: .seconds(10), every: .milliseconds(20)) { FileManager.default.fileExists(atPath: squat + "/air.sock") })

        let error = try #require(Self.startError(Self.hub(at: squat + "/air.sock")))
        #expect(error.code == .untrusted)
        #expect(error.reason.contains("uid 65534"))
        #expect(!AirHub.isRunning(at: squat + "/air.sock"))
        let connect = try #require(throws: HCITransportError.self) { try AirHub.connect(at: squat + "/air.sock") }
        #expect(connect.reason.contains("uid 65534"))

        // Their socket in a folder all may share (sticky, as /tmp): the socket's owner gives it away...
        let theirs = try OtherUser.listen(at: shared + "/air.sock")
        defer { theirs.terminate() }
        #expect(await poll(within: .seconds(10), every: .milliseconds(20)) { FileManager.default.fileExists(atPath: shared + "/air.sock") })
        let file = try #require(throws: HCITransportError.self) { try AirHub.connect(at: shared + "/air.sock") }
        #expect(file.reason.contains("the socket \(shared)/air.sock belongs to uid 65534"))
        // ...and when the file is root's, the server's credentials (SO_PEERCRED) still do.
        #expect(lchown(shared + "/air.sock", 0, 0) == 0)
        let peer = try #require(throws: HCITransportError.self) { try AirHub.connect(at: shared + "/air.sock") }
        #expect(peer.reason.contains("runs as uid 65534"))
        #expect(!AirHub.isRunning(at: shared + "/air.sock"))
    }

    /// The control and monitor sockets refuse a client of another user with one line (SO_PEERCRED), even when the
    /// socket file is made reachable to them.
    @Test(.enabled(if: canActAsAnotherUser, "acting as uid 65534 needs root, /usr/bin/setpriv and /usr/bin/python3"), .timeLimit(.minutes(1)))
    func controlAndMonitorRefuseAnotherUser() async throws {
        let folder = "/tmp/ocb-control-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkdir(folder, 0o755) == 0 && chmod(folder, 0o755) == 0)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let socket = folder + "/air.sock"
        let hub = Self.hub(at: socket)
        try hub.start()
        defer { hub.stop() }
        #expect(chmod(socket + ".control", 0o666) == 0 && chmod(socket + ".monitor", 0o666) == 0)
        let control = try await OtherUser.exchange(with: socket + ".control", sending: "loss 50\n")
        #expect(control.status == 0, "\(control)")
        #expect(control.output.hasPrefix("error: refused: this hub serves uid 0"), "\(control)")
        #expect(hub.air.configuration.packetLoss == 0)
        let monitor = try await OtherUser.exchange(with: socket + ".monitor", sending: "")
        #expect(monitor.status == 0, "\(monitor)")
        #expect(monitor.output.contains("refused: this hub serves uid 0"), "\(monitor)")
        // This user is still served.
        #expect(try AirHub.control("devices", socketPath: socket).hasPrefix("ok:"))
    }
}

/// uid 65534, through setpriv and the system's Python (a listener, a client).
private enum OtherUser {
    static let uid: uid_t = 65534
    static let setpriv = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"]

    /// A UNIX socket of theirs listening at `path` (accepting and closing connections) for 30 s.
    static func listen(at path: String) throws -> Process {
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.bind(sys.argv[1])
            s.listen(8)
            s.settimeout(30)
            try:
                while True:
                    c, _ = s.accept()
                    c.close()
            except Exception:
                pass
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = setpriv + ["/usr/bin/python3", "-c", script, path]
        try process.run()
        return process
    }

    /// Connects to `path` as them, sends `text`, and returns what comes back until the other end closes.
    static func exchange(with path: String, sending text: String) async throws -> CompletedProcess {
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(10)
            s.connect(sys.argv[1])
            s.sendall(sys.argv[2].encode())
            data = b""
            while True:
                d = s.recv(4096)
                if not d:
                    break
                data += d
            sys.stdout.buffer.write(data.replace(b"\\0", b""))
            """
        return try await runToCompletion(URL(fileURLWithPath: "/usr/bin/setpriv"),
                                         setpriv + ["/usr/bin/python3", "-c", script, path, text], limit: .seconds(20))
    }
}
