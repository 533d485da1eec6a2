import BluetoothRuntime
import Dispatch
import FoundationEssentials
import HCITransport
import SystemInterface
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The hub's control socket (`SOCKET.control`, beside `SOCKET.monitor`): faults on demand at run time
/// (``AirHubFault``; `blue fault` is its client). A client connects, writes one command line (at most
/// ``AirHubFault/maximumLineLength`` octets, newline-terminated), and reads the answer until the hub closes the
/// connection: `ok: EFFECT` (further lines for `devices`) or `error: REASON`. Clients are served one at a time on
/// the control thread; one that sends nothing for ``readTimeout`` or too long a line gets an error and is closed,
/// so none can hold the socket. A client of another user (SO_PEERCRED) gets `error: refused: ...` and is closed:
/// faults and moves belong to the hub's user (and root).
final class AirHubControl: Sendable {
    /// How long a client may take to send its line.
    static let readTimeout: Duration = .seconds(2)
    /// How long the control thread waits for the air's loop to apply a command.
    static let applyTimeout: Duration = .seconds(5)

    private let socket: AirHubSideSocket
    private let handler: @Sendable (AirHubFault, @escaping @Sendable (Result<String, AirHubError>) -> Void) -> Void

    private init(socket: AirHubSideSocket,
                 handler: @escaping @Sendable (AirHubFault, @escaping @Sendable (Result<String, AirHubError>) -> Void) -> Void) {
        self.socket = socket
        self.handler = handler
    }

    /// Listens at `path` (a stale socket file there is replaced) and serves clients on a thread of its own.
    static func listen(
        at path: String,
        handler: @escaping @Sendable (AirHubFault, @escaping @Sendable (Result<String, AirHubError>) -> Void) -> Void
    ) throws(AirHubError) -> AirHubControl {
        let control = AirHubControl(socket: try AirHubSideSocket(path: path, purpose: "control"), handler: handler)
        control.socket.acceptOnThread(named: "OpenCoreBluetooth.air-hub.control", refuse: { client, reason in
            _ = POSIX.writeAll(client, Array("error: \(reason)\n".utf8), style: .socket)
        }) { [control] client in
            let answer = control.respond(to: control.readLine(client))
            _ = POSIX.writeAll(client, Array((answer + "\n").utf8), style: .socket)
            POSIX.closeDescriptor(client)
        }
        return control
    }

    /// One line from `client`: its text, or why there is none.
    private func readLine(_ client: Int32) -> Result<String, AirHubError> {
        var bytes: [UInt8] = []
        let deadline = ContinuousClock.now + Self.readTimeout
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .failure(AirHubError(.invalidCommand, "no command line within 2 s")) }
            var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(clamping: max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count > 0 { bytes += chunk[0..<count] }
            if let newline = bytes.firstIndex(of: 0x0A) {
                bytes = Array(bytes[..<newline])
            } else if count > 0, bytes.count <= AirHubFault.maximumLineLength {
                continue
            }
            guard bytes.count <= AirHubFault.maximumLineLength else {
                return .failure(AirHubError(.invalidCommand, "a command line is at most \(AirHubFault.maximumLineLength) octets"))
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                return .failure(AirHubError(.invalidCommand, "the command line is not UTF-8"))
            }
            return .success(text)
        }
    }

    private func respond(to line: Result<String, AirHubError>) -> String {
        let fault: AirHubFault
        do throws(AirHubError) {
            fault = try AirHubFault(parsing: line.get())
        } catch {
            return "error: \(error.reason)"
        }
        let answer = LockedValue<Result<String, AirHubError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        handler(fault) { result in
            answer.store(result)
            done.signal()
        }
        let seconds = Double(Self.applyTimeout.components.seconds)
        guard done.wait(timeout: .now() + seconds) == .success, let result = answer.load() else {
            return "error: the air did not apply \"\(fault.line)\" within \(Int(seconds)) s"
        }
        switch result {
        case .success(let effect): return "ok: \(effect)"
        case .failure(let error): return "error: \(error.reason)"
        }
    }

    /// Stops serving and removes the socket file.
    func close() {
        socket.close()
    }
}

extension AirHub {
    /// Sends one control command line to the hub whose socket is `socketPath` (through `SOCKET.control`) and
    /// returns its answer, `ok: ...` or `error: ...` (several lines for `devices`). Throws
    /// ``AirHubError/Code/listenFailed`` when no hub answers there and ``AirHubError/Code/untrusted`` when the
    /// socket, its folder or the hub is not this user's (``checkTrust(ofSocket:)``); waits at most `timeout` for the
    /// answer.
    public static func control(_ line: String, socketPath: String, timeout: Duration = .seconds(10)) throws(AirHubError) -> String {
        let path = socketPath + ".control"
        try checkTrust(ofSocket: path)
        let fd: Int32
        switch SocketOwnership.connect(toServerAt: path) {
        case .success(let connected): fd = connected
        case .failure(.badPath(let reason)): throw AirHubError(.listenFailed, reason)
        case .failure(.untrusted(let error)): throw AirHubError(.untrusted, error.reason)
        case .failure(.cannotConnect(let code)):
            throw AirHubError(.listenFailed, "no blue air hub answers at \(socketPath) (\(POSIX.errorText(code)))")
        }
        defer { POSIX.closeDescriptor(fd) }
        POSIX.disableSIGPIPE(fd)
        if let code = POSIX.writeAll(fd, Array((line + "\n").utf8), style: .socket) {
            throw AirHubError(.listenFailed, "cannot send to \(path): \(POSIX.errorText(code))")
        }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + timeout
        while answer.count < 1 << 20 {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw AirHubError(.listenFailed, "the hub did not answer within \(timeout)") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: left.components.seconds * 1000 + 1))
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            answer += chunk[0..<count]
        }
        var text = String(decoding: answer, as: UTF8.self)
        while text.hasSuffix("\n") { text.removeLast() }
        guard !text.isEmpty else { throw AirHubError(.listenFailed, "the hub closed the control connection without an answer") }
        return text
    }
}
