import BluetoothRuntime
import FoundationEssentials
import HCITransport
import SystemInterface
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A listening UNIX socket beside the hub's own (`SOCKET.monitor`, `SOCKET.control`) with a wake pipe, and the
/// accept loop its thread runs until ``close()``: what ``AirHubMonitor`` and ``AirHubControl`` share.
package final class AirHubSideSocket: Sendable {
    package let path: String
    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    private let closed = LockedValue(false)

    /// Listens at `path` (a stale socket file there is replaced); `purpose` names it in errors ("monitor").
    package init(path: String, purpose: String) throws(AirHubError) {
        let address: sockaddr_un
        do { address = try SocketAddress.unix(path: path) } catch { throw AirHubError(.listenFailed, "\(purpose): \(error.reason)") }
        unlink(path)
        guard let fd = SocketAddress.makeSocket(family: AF_UNIX, type: SocketAddress.streamType) else {
            throw AirHubError(.listenFailed, "\(purpose): cannot create a socket: \(POSIX.lastErrorText)")
        }
        if let code = SocketAddress.bindPrivately(fd, address, path: path) {
            POSIX.closeDescriptor(fd)
            throw AirHubError(.listenFailed, "\(purpose): cannot bind \(path): \(POSIX.errorText(code))")
        }
        guard Glibc.listen(fd, 8) == 0, let wake = POSIX.makeWakePipe() else {
            POSIX.closeDescriptor(fd)
            unlink(path)
            throw AirHubError(.listenFailed, "\(purpose): cannot listen on \(path): \(POSIX.lastErrorText)")
        }
        self.path = path
        self.fd = fd
        self.wake = wake
    }

    /// Starts a thread named `threadName` that accepts clients (close-on-exec, no SIGPIPE) and hands each to
    /// `onClient`, until ``close()``; then it closes the listening socket. A client of another user (SO_PEERCRED: not
    /// the hub's effective uid, nor root) is handed to `refuse` with one line saying why, then closed: the socket
    /// file's mode 0600 already keeps other users out, this holds even where the file is reachable.
    package func acceptOnThread(named threadName: String, refuse: @escaping @Sendable (Int32, String) -> Void,
                        onClient: @escaping @Sendable (Int32) -> Void) {
        DetachedThread.spawn(named: threadName) { [self] in
            while true {
                var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&descriptors, 2, -1)
                if ready < 0, errno == EINTR { continue }
                guard ready > 0, descriptors[1].revents == 0 else { break }
                let client = POSIX.acceptCloseOnExec(fd)
                guard client >= 0 else { continue }
                POSIX.disableSIGPIPE(client)
                if let reason = Self.refusal(ofClient: client) {
                    refuse(client, reason)
                    Self.closeAfterLastWords(client)
                    continue
                }
                onClient(client)
            }
            POSIX.closeDescriptor(fd)
            POSIX.closeDescriptor(wake.read)
        }
    }

    /// Ends the connection to a refused client so that it reads what it was told: what it sent and we did not read
    /// would make the close a reset, which loses our line at its end. Our side is shut for writing (the client sees
    /// the end), then what it sends is read and dropped until it closes, at most 100 ms.
    private static func closeAfterLastWords(_ client: Int32) {
        _ = shutdown(client, Int32(SHUT_WR))
        let deadline = ContinuousClock.now + .milliseconds(100)
        var scratch = [UInt8](repeating: 0, count: 512)
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 20) >= 0 || errno == EINTR else { break }
            guard descriptor.revents != 0 else { continue }
            let count = scratch.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
            if count == 0 || (count < 0 && errno != EINTR) { break }
        }
        POSIX.closeDescriptor(client)
    }

    /// Why `client` is refused (it runs as another user), nil when it is served.
    static func refusal(ofClient client: Int32) -> String? {
        guard let peer = PeerCredentials.of(socket: client), !PrivateDirectory.isTrustedOwner(peer.uid) else { return nil }
        return "refused: this hub serves uid \(geteuid()) (and root) only, not uid \(peer.uid)"
    }

    /// Wakes the accept thread to stop, and removes the socket file (idempotent).
    package func close() {
        guard closed.withLock({ value in defer { value = true }; return !value }) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        POSIX.closeDescriptor(wake.write)
        unlink(path)
    }
}
