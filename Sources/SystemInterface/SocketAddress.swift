#if canImport(Glibc)
package import Glibc
#elseif canImport(Musl)
package import Musl
#elseif canImport(Darwin)
package import Darwin
#endif

/// Socket addresses for the TCP (IPv4) and UNIX stream transports.
package enum SocketAddress {
    #if canImport(Darwin)
    package static let streamType = SOCK_STREAM
    #else
    package static let streamType = Int32(SOCK_STREAM.rawValue)
    #endif

    /// Resolves an IPv4 host ("127.0.0.1", "localhost", a name) to a `sockaddr_in` with `port`.
    package static func ipv4(host: String, port: UInt16) throws(SocketAddressError) -> sockaddr_in {
        if host.isEmpty { throw SocketAddressError("empty TCP host name") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        if inet_pton(AF_INET, host, &address.sin_addr) == 1 { return address }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = streamType
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        defer { if let list { freeaddrinfo(list) } }
        guard status == 0, let first = list, let resolved = first.pointee.ai_addr,
              first.pointee.ai_addrlen >= socklen_t(MemoryLayout<sockaddr_in>.size)
        else {
            let detail = status == 0 ? "no IPv4 address" : String(cString: gai_strerror(status))
            throw SocketAddressError("cannot resolve TCP host \"\(host)\" to an IPv4 address: \(detail)")
        }
        resolved.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address.sin_addr = $0.pointee.sin_addr }
        return address
    }

    /// The longest UNIX socket path (sun_path without its terminating NUL).
    package static var maximumUnixPathLength: Int { MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 }

    /// A `sockaddr_un` for `path`; throws when the path is empty or too long.
    package static func unix(path: String) throws(SocketAddressError) -> sockaddr_un {
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty else { throw SocketAddressError("empty UNIX socket path") }
        guard bytes.count <= maximumUnixPathLength, !bytes.contains(0) else {
            throw SocketAddressError("UNIX socket path \"\(path)\" is \(bytes.count) bytes; at most \(maximumUnixPathLength) fit in sockaddr_un")
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() where index < raw.count { raw[index] = byte }
        }
        return address
    }

    /// Calls `connect`, retrying on EINTR; nil on success, errno otherwise.
    package static func connect<Address>(_ fd: Int32, _ address: Address) -> Int32? {
        var copy = address
        while true {
            let result = withUnsafePointer(to: &copy) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    systemConnect(fd, $0, socklen_t(MemoryLayout<Address>.size))
                }
            }
            if result == 0 { return nil }
            let code = errno
            if code == EINTR {
                // The connection continues asynchronously: wait for it and read its outcome.
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                _ = poll(&descriptor, 1, 10_000)
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                return error == 0 ? nil : error
            }
            return code
        }
    }

    /// Calls `bind`; nil on success, errno otherwise.
    package static func bind<Address>(_ fd: Int32, _ address: Address) -> Int32? {
        var copy = address
        let result = withUnsafePointer(to: &copy) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                systemBind(fd, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
        return result == 0 ? nil : errno
    }

    /// Binds the UNIX socket `fd` to `address` (the file `path`) so that the file is mode 0600, readable and
    /// writable by its owner only, without touching the process umask (other threads create files too): `fchmod`
    /// before `bind`, which Linux carries over to the file, then `chmod` of the new file where it is not 0600 yet
    /// (other systems). Nil on success, errno otherwise.
    package static func bindPrivately(_ fd: Int32, _ address: sockaddr_un, path: String) -> Int32? {
        _ = fchmod(fd, 0o600)
        if let code = bind(fd, address) { return code }
        var info = stat()
        if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == geteuid(), info.st_mode & 0o777 != 0o600,
           chmod(path, 0o600) != 0 {
            let code = errno
            unlink(path)
            return code
        }
        return nil
    }

    /// A new close-on-exec socket; nil (errno set) on failure.
    package static func makeSocket(family: Int32, type: Int32, protocol: Int32 = 0) -> Int32? {
        #if canImport(Darwin)
        let fd = socket(family, type, `protocol`)
        if fd >= 0 { POSIX.setCloseOnExec(fd) }
        #else
        let fd = socket(family, type | Int32(SOCK_CLOEXEC.rawValue), `protocol`)
        #endif
        return fd >= 0 ? fd : nil
    }

    /// The dotted IPv4 text of an address.
    package static func text(_ address: in_addr) -> String {
        var copy = address
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN) + 1)
        guard inet_ntop(AF_INET, &copy, &buffer, socklen_t(INET_ADDRSTRLEN)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

private func systemBind(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    bind(fd, address, length)
}

/// `listen(2)`, callable from types that have their own `listen` members.
package func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 {
    listen(fd, backlog)
}

/// Why a socket address could not be made from a host name or a path; callers put `reason` in their own error.
package struct SocketAddressError: Error, Sendable {
    package var reason: String

    package init(_ reason: String) {
        self.reason = reason
    }
}
