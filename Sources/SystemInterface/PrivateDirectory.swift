#if canImport(Glibc)
package import Glibc
#elseif canImport(Musl)
package import Musl
#elseif canImport(Darwin)
package import Darwin
#endif

/// Folders that only this user controls, checked before a socket or a secret is put in them or trusted from them,
/// as OpenSSH, tmux and systemd check theirs (issue 30): another local user who creates the folder first, or makes it
/// writable to all, must not get between the user and what the folder holds.
///
/// Two rules:
/// - **private** (``ensure(_:)``, ``checkPrivate(_:)``): for the folders the library names itself (the shared air's
///   `/tmp/opencorebluetooth-UID`, `$XDG_RUNTIME_DIR/opencorebluetooth`, the bond folder): a real directory (a
///   symbolic link is refused, never followed), owned by the effective uid, with no permission bit for group or
///   other (0700). A missing one is created 0700 (mkdir, which never follows a symbolic link, then checked again).
/// - **chosen by the user** (``checkChosen(_:)``): for a folder the user named (`air:PATH`, `--socket`, `OCB_BONDS`):
///   owned by the user or root, and not writable by group or other unless sticky (/tmp: nobody can replace or remove
///   another's file there). A symbolic link to such a folder is followed when the link itself is the user's or root's.
///
/// Under both rules every ancestor (symbolic links resolved) must belong to the user or root and be writable by
/// nobody else unless sticky, as OpenSSH's `safe_path` asks: otherwise another user could move the folder away and
/// put one of theirs in its place. Failures are ``PrivatePathError``: one line naming the folder and what is wrong.
package enum PrivateDirectory {
    /// Makes sure `path` is a private folder: created with mode 0700 when missing (its parent must exist), then
    /// checked with ``checkPrivate(_:)``, so that a folder someone else made first, or a symbolic link planted there,
    /// is refused.
    package static func ensure(_ path: String) throws(PrivatePathError) {
        if mkdir(path, 0o700) != 0 {
            let code = errno
            guard code == EEXIST else {
                throw PrivatePathError(.cannotCreate, "cannot create the folder \(path): \(POSIX.errorText(code))")
            }
        }
        try checkPrivate(path)
    }

    /// Refuses `path` unless it is a directory (not a symbolic link), owned by the effective uid, with no permission
    /// bit for group or other.
    package static func checkPrivate(_ path: String) throws(PrivatePathError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw PrivatePathError(.cannotInspect, "cannot inspect the folder \(path): \(POSIX.lastErrorText)")
        }
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFLNK else {
            throw PrivatePathError(.notADirectory, "\(path) is a symbolic link, not a folder of this user's; refusing to follow it")
        }
        guard kind == S_IFDIR else { throw PrivatePathError(.notADirectory, "\(path) is not a folder") }
        let user = geteuid()
        guard info.st_uid == user else {
            throw PrivatePathError(
                .ownedByAnotherUser, "\(path) belongs to uid \(info.st_uid), not to this user (uid \(user)); someone else controls it")
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o077 == 0 else {
            throw PrivatePathError(
                .openToOthers, "\(path) is open to other users (mode \(octal(mode))); it must be 0700 (chmod 700 it if you made it, else remove it)")
        }
        try checkAncestors(of: path)
    }

    /// Refuses `path` when a folder above it belongs to another user, or is writable by group or other without the
    /// sticky bit (either could rename `path` away and put another in its place). Walks the real path of its parent
    /// up to `/`.
    package static func checkAncestors(of path: String) throws(PrivatePathError) {
        let parent = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        guard let resolved = realpath(parent.isEmpty ? (path.hasPrefix("/") ? "/" : ".") : parent, nil) else {
            throw PrivatePathError(.cannotInspect, "cannot resolve the folders above \(path): \(POSIX.lastErrorText)")
        }
        var current = String(cString: resolved)
        free(resolved)
        while true {
            var info = stat()
            guard stat(current, &info) == 0 else {
                throw PrivatePathError(.cannotInspect, "cannot inspect \(current) above \(path): \(POSIX.lastErrorText)")
            }
            try checkOwnerAndWriters(info, "\(current), above \(path),", owner: "they could replace \(path)",
                                     writers: "they could replace \(path)")
            guard current != "/", let slash = current.lastIndex(of: "/") else { return }
            current = slash == current.startIndex ? "/" : String(current[..<slash])
        }
    }

    /// Refuses `path` unless it is a directory owned by the effective uid or root, not writable by group or other
    /// unless sticky. A symbolic link is followed only when the link itself belongs to the user or root.
    package static func checkChosen(_ path: String) throws(PrivatePathError) {
        var link = stat()
        guard lstat(path, &link) == 0 else {
            throw PrivatePathError(.cannotInspect, "cannot inspect the folder \(path): \(POSIX.lastErrorText)")
        }
        if link.st_mode & S_IFMT == S_IFLNK, !isTrustedOwner(link.st_uid) {
            throw PrivatePathError(
                .ownedByAnotherUser, "\(path) is a symbolic link of uid \(link.st_uid), not of this user (uid \(geteuid())) or root; refusing to follow it")
        }
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw PrivatePathError(.cannotInspect, "cannot inspect the folder \(path): \(POSIX.lastErrorText)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw PrivatePathError(.notADirectory, "\(path) is not a folder") }
        try checkOwnerAndWriters(info, path, owner: "someone else controls it", writers: "another user could replace what it holds")
        try checkAncestors(of: path)
    }

    /// Refuses a folder (`info`, named `name` in the line) owned by neither the effective uid nor root, or writable
    /// by group or other without the sticky bit; `owner` and `writers` say what such a user could do.
    private static func checkOwnerAndWriters(_ info: stat, _ name: String, owner: String, writers: String) throws(PrivatePathError) {
        guard isTrustedOwner(info.st_uid) else {
            throw PrivatePathError(
                .ownedByAnotherUser, "\(name) belongs to uid \(info.st_uid), not to this user (uid \(geteuid())) or root; \(owner)")
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o022 == 0 || mode & S_ISVTX != 0 else {
            throw PrivatePathError(.openToOthers, "\(name) is writable by other users and not sticky (mode \(octal(mode))); \(writers)")
        }
    }

    /// Whether a file of `uid` may be trusted: the effective uid's own, or root's (root can do anything anyway).
    package static func isTrustedOwner(_ uid: uid_t) -> Bool {
        uid == geteuid() || uid == 0
    }

    /// "0755".
    static func octal(_ mode: mode_t) -> String {
        let digits = String(mode, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// Checks of a UNIX socket before and after connecting to it, so that a client talks only to a server of its own
/// user (or root): the socket file must be a socket (not a symbolic link) owned by one of them, and the listening
/// process's credentials (SO_PEERCRED, Linux) must be theirs too, which no swapped file can fake.
package enum SocketOwnership {
    /// Refuses the file at `path` when it is not a socket or belongs to neither the effective uid nor root. A missing
    /// file passes (connecting then fails with "no socket at this path").
    package static func checkFile(_ path: String) throws(PrivatePathError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            let code = errno
            if code == ENOENT { return }
            throw PrivatePathError(.cannotInspect, "cannot inspect the socket \(path): \(POSIX.errorText(code))")
        }
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFLNK else {
            throw PrivatePathError(.notASocket, "\(path) is a symbolic link, not a socket; refusing to follow it")
        }
        guard kind == S_IFSOCK else { throw PrivatePathError(.notASocket, "\(path) is not a socket") }
        guard PrivateDirectory.isTrustedOwner(info.st_uid) else {
            throw PrivatePathError(
                .ownedByAnotherUser, "the socket \(path) belongs to uid \(info.st_uid), not to this user (uid \(geteuid())) or root; refusing to connect")
        }
    }

    /// Why ``connect(toServerAt:)`` gave no connection.
    package enum ConnectFailure: Error, Sendable {
        /// The path cannot be a UNIX socket's address (too long, a NUL in it).
        case badPath(String)
        /// The socket file or the process listening on it is not this user's (or root's).
        case untrusted(PrivatePathError)
        /// No socket could be made, or nobody accepted the connection: the errno.
        case cannotConnect(Int32)
    }

    /// Connects a new UNIX stream socket to the server at `path`, the file checked before (``checkFile(_:)``) and
    /// the server once connected (``checkPeer(ofConnected:path:)``): the connected descriptor, which the caller
    /// closes, or why not, with nothing left open. What every client of our own servers (the air hub's control and
    /// monitor sockets, the Bluetooth service) does before it speaks.
    package static func connect(toServerAt path: String) -> Result<Int32, ConnectFailure> {
        let address: sockaddr_un
        do {
            address = try SocketAddress.unix(path: path)
        } catch {
            return .failure(.badPath(error.reason))
        }
        do throws(PrivatePathError) {
            try checkFile(path)
        } catch {
            return .failure(.untrusted(error))
        }
        guard let fd = SocketAddress.makeSocket(family: AF_UNIX, type: SocketAddress.streamType) else {
            return .failure(.cannotConnect(errno))
        }
        if let code = SocketAddress.connect(fd, address) {
            POSIX.closeDescriptor(fd)
            return .failure(.cannotConnect(code))
        }
        do throws(PrivatePathError) {
            try checkPeer(ofConnected: fd, path: path)
        } catch {
            POSIX.closeDescriptor(fd)
            return .failure(.untrusted(error))
        }
        return .success(fd)
    }

    /// Whether a server of this user (or root) accepts connections at `path` (a probe: it connects and hangs up).
    package static func serverAnswers(at path: String) -> Bool {
        guard case .success(let fd) = connect(toServerAt: path) else { return false }
        POSIX.closeDescriptor(fd)
        return true
    }

    /// Refuses the connected UNIX socket `fd` when the process at its other end runs as neither the effective uid
    /// nor root. Where the kernel does not say (not Linux), passes: the file checks stand alone there.
    package static func checkPeer(ofConnected fd: Int32, path: String) throws(PrivatePathError) {
        guard let peer = PeerCredentials.of(socket: fd) else { return }
        guard PrivateDirectory.isTrustedOwner(peer.uid) else {
            throw PrivatePathError(
                .ownedByAnotherUser, "the server at \(path) runs as uid \(peer.uid), not as this user (uid \(geteuid())) or root; refusing it")
        }
    }
}

/// Why a folder or a socket is not trusted, with a code a program can test and a reason a person can read (one line,
/// naming the path).
package struct PrivatePathError: Error, Hashable, Sendable, CustomStringConvertible {
    package enum Code: String, Hashable, Sendable {
        /// The folder could not be created.
        case cannotCreate
        /// `lstat`/`stat` failed (permission denied, a component missing).
        case cannotInspect
        /// The path is a symbolic link, a file or anything but a folder.
        case notADirectory
        /// The path is a symbolic link, a file or anything but a socket.
        case notASocket
        /// The folder, the socket or its server belongs to another user.
        case ownedByAnotherUser
        /// The folder has permission bits for other users that its rule forbids.
        case openToOthers
    }

    package var code: Code
    package var reason: String

    package init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    package var description: String { reason }
}
