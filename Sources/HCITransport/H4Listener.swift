import BluetoothRuntime
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemInterface

/// A listening TCP or UNIX stream socket that hands each accepted connection to a callback as a
/// ``SocketH4Transport`` (H4 framing, Core 5.4 Vol 4 Part A §2): how a virtual controller is exposed to external
/// hosts, and how tests stand in for a remote controller.
///
/// One accept thread per listener; `onAccept` runs on it (hand the transport to an owner, then `start` it there).
/// `close()` stops accepting at once (later connection attempts are refused) and removes the UNIX socket file.
///
/// UNIX paths: binding where another live listener accepts fails with ``HCITransportError/Code/openFailed``
/// (checked by connecting to it first); a stale socket file nobody listens on is replaced; a path that exists and
/// is not a socket is never removed. The socket file is created mode 0600 (its owner only). TCP listens on
/// 127.0.0.1 unless another address is given: any local user can connect to a TCP port, none can reach a
/// loopback one from elsewhere.
public final class H4Listener: Sendable {
    /// "tcp:127.0.0.1:9000" or "unix:/tmp/ocb.sock".
    public let name: String
    /// The bound TCP port (the kernel's choice when asked for port 0); nil for a UNIX listener.
    public let port: UInt16?
    /// The UNIX socket path; nil for a TCP listener.
    public let path: String?

    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    /// Whether `fd` is open (guards `shutdown` in `close()` against a descriptor closed by the accept thread).
    private let open = LockedValue(true)
    private let closing = LockedValue(false)

    /// The descriptors this object owns (its own and the wake channel's), for tests of their flags.
    var ownedDescriptors: [Int32] { [fd, wake.read, wake.write] }

    private init(fd: Int32, wake: (read: Int32, write: Int32), name: String, port: UInt16?, path: String?) {
        self.fd = fd
        self.wake = wake
        self.name = name
        self.port = port
        self.path = path
    }

    /// Listens on TCP (IPv4). `port` 0 picks an ephemeral port, readable from ``port``.
    public static func listen(
        tcpHost: String = "127.0.0.1", port: UInt16, backlog: Int32 = 16,
        onAccept: @escaping @Sendable (SocketH4Transport) -> Void
    ) throws(HCITransportError) -> H4Listener {
        let requested = "tcp:\(tcpHost):\(port)"
        let address: sockaddr_in
        do {
            address = try SocketAddress.ipv4(host: tcpHost, port: port)
        } catch {
            throw HCITransportError(.openFailed, "listen on \(requested): \(error.reason)")
        }
        guard let fd = SocketAddress.makeSocket(family: AF_INET, type: SocketAddress.streamType) else {
            throw HCITransportError(.openFailed, "listen on \(requested): cannot create a socket: \(POSIX.lastErrorText)")
        }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        try bindAndListen(fd, backlog: backlog, name: requested, inUse: "another program is listening on this port") {
            SocketAddress.bind(fd, address)
        }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &bound) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let boundPort = named == 0 ? UInt16(bigEndian: bound.sin_port) : port
        let listener = try start(
            fd: fd, name: "tcp:\(SocketAddress.text(address.sin_addr)):\(boundPort)", port: boundPort, path: nil,
            onAccept: onAccept)
        return listener
    }

    /// Listens on a UNIX stream socket at `unixPath` (see the type's notes on existing files).
    public static func listen(
        unixPath: String, backlog: Int32 = 16, onAccept: @escaping @Sendable (SocketH4Transport) -> Void
    ) throws(HCITransportError) -> H4Listener {
        let name = "unix:\(unixPath)"
        let address: sockaddr_un
        do {
            address = try SocketAddress.unix(path: unixPath)
        } catch {
            throw HCITransportError(.openFailed, "listen on \(name): \(error.reason)")
        }
        try removeStaleSocket(at: unixPath, address: address, name: name)
        guard let fd = SocketAddress.makeSocket(family: AF_UNIX, type: SocketAddress.streamType) else {
            throw HCITransportError(.openFailed, "listen on \(name): cannot create a socket: \(POSIX.lastErrorText)")
        }
        // Mode 0600: only this user's programs may join (the folder's checks are the caller's: AirHub's).
        try bindAndListen(fd, backlog: backlog, name: name, inUse: "another listener bound this path just now",
                          bindSocket: { SocketAddress.bindPrivately(fd, address, path: unixPath) },
                          cleanUp: { unlink(unixPath) })
        do {
            return try start(fd: fd, name: name, port: nil, path: unixPath, onAccept: onAccept)
        } catch {
            unlink(unixPath)
            throw error
        }
    }

    /// Binds `fd` with `bindSocket` (nil on success, else errno) and listens. On failure closes `fd` (and runs
    /// `cleanUp` if the bind succeeded) and throws ``HCITransportError/Code/openFailed`` naming `name`; `inUse` says
    /// what EADDRINUSE means here.
    private static func bindAndListen(
        _ fd: Int32, backlog: Int32, name: String, inUse: String, bindSocket: () -> Int32?, cleanUp: () -> Void = {}
    ) throws(HCITransportError) {
        if let code = bindSocket() {
            POSIX.closeDescriptor(fd)
            let hint = code == EADDRINUSE ? " (\(inUse))" : ""
            throw HCITransportError(.openFailed, "listen on \(name): bind failed: \(POSIX.errorText(code))\(hint)")
        }
        guard systemListen(fd, backlog) == 0 else {
            let reason = POSIX.lastErrorText
            POSIX.closeDescriptor(fd)
            cleanUp()
            throw HCITransportError(.openFailed, "listen on \(name): listen failed: \(reason)")
        }
    }

    /// Refuses a path where a live listener accepts or which is not a socket; removes a stale socket file.
    private static func removeStaleSocket(at path: String, address: sockaddr_un, name: String) throws(HCITransportError) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }  // nothing there
        guard (info.st_mode & S_IFMT) == S_IFSOCK else {
            throw HCITransportError(
                .openFailed, "listen on \(name): \(path) exists and is not a socket; refusing to replace it")
        }
        guard let probe = SocketAddress.makeSocket(family: AF_UNIX, type: SocketAddress.streamType) else { return }
        let outcome = SocketAddress.connect(probe, address)
        POSIX.closeDescriptor(probe)
        if outcome == nil {
            throw HCITransportError(
                .openFailed,
                "listen on \(name): another listener is already accepting connections on \(path); "
                    + "stop it or choose another path")
        }
        if outcome == ECONNREFUSED {
            // A socket file left behind by a process that is gone: replace it.
            unlink(path)
        }
    }

    private static func start(
        fd: Int32, name: String, port: UInt16?, path: String?,
        onAccept: @escaping @Sendable (SocketH4Transport) -> Void
    ) throws(HCITransportError) -> H4Listener {
        guard let wake = POSIX.makeWakePipe() else {
            let reason = POSIX.lastErrorText
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "listen on \(name): cannot create a wake pipe: \(reason)")
        }
        let listener = H4Listener(fd: fd, wake: wake, name: name, port: port, path: path)
        guard DetachedThread.spawn({ listener.acceptLoop(onAccept) }) else {
            let reason = POSIX.lastErrorText
            listener.closeDescriptors()
            throw HCITransportError(.openFailed, "listen on \(name): cannot start the accept thread: \(reason)")
        }
        return listener
    }

    /// Stops accepting (idempotent) and removes the UNIX socket file. Connections already accepted stay open.
    public func close() {
        let first = closing.withLock { closing in
            defer { closing = true }
            return !closing
        }
        guard first else { return }
        open.withLock { open in
            guard open else { return }
            _ = shutdown(fd, Int32(SHUT_RDWR))
            var one: UInt8 = 1
            _ = write(wake.write, &one, 1)
        }
        if let path { unlink(path) }
    }

    private func closeDescriptors() {
        open.withLock { open in
            guard open else { return }
            open = false
            WakeablePoll.close(fd, wake: wake)
        }
    }

    private func acceptLoop(_ onAccept: @Sendable (SocketH4Transport) -> Void) {
        defer { closeDescriptors() }
        while !closing.withLock({ $0 }) {
            // A failed poll or the wake pipe ends the loop, like `close()`.
            guard case .ready(let events) = WakeablePoll.wait(fd: fd, wake: wake.read), !closing.withLock({ $0 }) else {
                return
            }
            guard events & Int16(POLLIN) != 0 else {
                if events != 0 { return }  // error or hang-up on the listening socket
                continue
            }
            let accepted = POSIX.acceptCloseOnExec(fd)
            if accepted < 0 {
                let code = errno
                // Transient: interrupted, or the client gave up before we accepted. Anything else (EMFILE...)
                // would spin, so the listener stops.
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK || code == ECONNABORTED || code == EPROTO {
                    continue
                }
                return
            }
            guard let transport = try? SocketH4Transport(acceptedFileDescriptor: accepted) else { continue }
            onAccept(transport)
        }
    }
}
