#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin helpers over the POSIX calls the transports share: errno text, full writes, close-on-exec pipes.
package enum POSIX {
    /// "Connection refused (errno 111)".
    package static func errorText(_ code: Int32) -> String {
        if let text = strerror(code) { return "\(String(cString: text)) (errno \(code))" }
        return "errno \(code)"
    }

    /// The current errno as text.
    package static var lastErrorText: String { errorText(errno) }

    /// How a descriptor is written: `send(MSG_NOSIGNAL)` for sockets (a closed peer must not raise SIGPIPE),
    /// `write` for ttys.
    package enum WriteStyle: Sendable {
        case socket
        case file
    }

    /// Writes every byte of `bytes`, retrying on EINTR and after partial writes. Returns nil on success, the errno
    /// otherwise.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8], style: WriteStyle) -> Int32? {
        var written = 0
        while written < bytes.count {
            let result: Int = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                let pointer = base + written
                let remaining = buffer.count - written
                switch style {
                case .socket:
                    #if canImport(Darwin)
                    return send(fd, pointer, remaining, 0)
                    #else
                    return send(fd, pointer, remaining, Int32(MSG_NOSIGNAL))
                    #endif
                case .file:
                    return write(fd, pointer, remaining)
                }
            }
            if result < 0 {
                let code = errno
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    // A non-blocking descriptor (should not happen: ours are blocking): wait until writable.
                    var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&descriptor, 1, 1000)
                    continue
                }
                return code
            }
            if result == 0 { return EIO }
            written += result
        }
        return nil
    }

    /// A close-on-exec channel used to wake a thread blocked in `poll`: (read end, write end). A socket pair, not a
    /// pipe: `socketpair` takes SOCK_CLOEXEC atomically (glibc's `pipe2` is not in the Swift overlay), so no child
    /// spawned by another thread at that moment can inherit it.
    package static func makeWakePipe() -> (read: Int32, write: Int32)? {
        var fds: [Int32] = [-1, -1]
        #if canImport(Darwin)
        guard socketpair(AF_UNIX, SOCK_STREAM, 0, &fds) == 0 else { return nil }
        setCloseOnExec(fds[0])
        setCloseOnExec(fds[1])
        #else
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            return nil
        }
        #endif
        return (fds[0], fds[1])
    }

    /// `accept` whose new descriptor is close-on-exec from the start (`accept4` with SOCK_CLOEXEC on Linux, looked
    /// up at run time because glibc declares it only under `_GNU_SOURCE`): an accepted connection inherited by a
    /// child spawned meanwhile would keep the connection open after we close it, and the peer would never see the
    /// end. Falls back to `accept` + FD_CLOEXEC.
    package static func acceptCloseOnExec(_ fd: Int32) -> Int32 {
        #if !canImport(Darwin)
        if let accept4 = acceptWithFlags {
            return accept4(fd, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
        }
        #endif
        let accepted = accept(fd, nil, nil)
        if accepted >= 0 { setCloseOnExec(accepted) }
        return accepted
    }

    #if !canImport(Darwin)
    private typealias Accept4 = @convention(c) (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32) -> Int32
    private static let acceptWithFlags: Accept4? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "accept4") else { return nil }
        return unsafeBitCast(symbol, to: Accept4.self)
    }()
    #endif

    /// Sets FD_CLOEXEC on `fd`.
    package static func setCloseOnExec(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFD)
        if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
    }

    /// Makes a socket never raise SIGPIPE where the platform has a socket option for it (Darwin); Linux uses
    /// MSG_NOSIGNAL on every send instead.
    package static func disableSIGPIPE(_ fd: Int32) {
        #if canImport(Darwin)
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// Sets TCP_NODELAY (H4 packets are small and latency matters more than coalescing).
    package static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Creates (or truncates) `path` to write a capture or a recording into, close-on-exec: mode 0600 when it is new
    /// (captures carry keys: HCI LE Long Term Key Request Reply, SMP key distribution), and a symbolic link at `path`
    /// is not followed (another user's link in a shared folder would point the capture elsewhere). The descriptor,
    /// or the reason in one line.
    package static func createOutputFile(_ path: String) -> Result<Int32, OutputFileError> {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd < 0 else { return .success(fd) }
        let code = errno
        if code == ELOOP {
            return .failure(OutputFileError(path: path, detail: "it is a symbolic link: not followed (a capture holds keys; give the real path)"))
        }
        return .failure(OutputFileError(path: path, detail: errorText(code)))
    }

    /// Why ``createOutputFile(_:)`` failed: the path and what the system said.
    package struct OutputFileError: Error, Sendable, CustomStringConvertible {
        package var path: String
        /// "No such file or directory", "it is a symbolic link: not followed (...)".
        package var detail: String
        /// The one line: "cannot create PATH: DETAIL".
        package var reason: String { "cannot create \(path): \(detail)" }
        package var description: String { reason }
    }

    /// At most `limit + 1` octets of the file at `path` (one more than allowed, so the caller can tell "too large"
    /// from "just fits" without reading a device or a huge file to its end); nil, with `errno` set, when it cannot
    /// be opened or read.
    package static func readFile(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { closeDescriptor(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let wanted = min(chunk.count, limit + 1 - bytes.count)
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { break }
            bytes += chunk[0..<count]
        }
        return bytes
    }

    /// The size in octets of the file at `path`, nil when it cannot be examined.
    package static func fileSize(_ path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_size)
    }

    /// Closes `fd`, ignoring EINTR (on Linux the descriptor is released even then).
    package static func closeDescriptor(_ fd: Int32) {
        guard fd >= 0 else { return }
        _ = close(fd)
    }

    /// The current Unix time in microseconds (CLOCK_REALTIME).
    package static func unixMicroseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) &* 1_000_000 &+ Int64(spec.tv_nsec / 1000)
    }
}
