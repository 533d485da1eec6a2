import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import SystemInterface

/// HCI over a stream socket with the UART transport's framing (H4, Core 5.4 Vol 4 Part A §2): each packet is its
/// indicator octet then the packet, back to back. This is what Bumble's `tcp-server:` transport, RootCanal's HCI
/// port and our own ``H4Listener`` speak.
///
/// One reader thread per transport does blocking reads and deframes with ``H4Framer``; `onFrame` and `onClose` run
/// on it. Writes are serialized under a lock (whole frames, retried after EINTR and partial writes, never raising
/// SIGPIPE). A poisoned stream (unknown indicator, length above the cap) closes the transport with
/// ``HCITransportError/Code/framingError`` naming the stream offset.
public final class SocketH4Transport: DescriptorBackedTransport {
    let core: DescriptorTransportCore
    /// The process at the other end, for an accepted UNIX socket (nil otherwise, or when the kernel does not say).
    public let peerProcess: PeerProcess?

    private init(core: DescriptorTransportCore, peerProcess: PeerProcess? = nil) {
        self.core = core
        self.peerProcess = peerProcess
    }

    /// Takes ownership of a connected stream socket (from `accept`, `socketpair`...). TCP sockets get TCP_NODELAY.
    /// - Parameters:
    ///   - name: the description; by default derived from the peer address ("tcp:127.0.0.1:53211").
    ///   - maximumPayloadLength: the framer's cap on an announced packet length (see ``H4Framer``).
    public convenience init(
        acceptedFileDescriptor fd: Int32, name: String? = nil, maximumPayloadLength: Int = 65535
    ) throws(HCITransportError) {
        guard fd >= 0 else { throw HCITransportError(.openFailed, "invalid file descriptor \(fd)") }
        POSIX.setCloseOnExec(fd)
        POSIX.disableSIGPIPE(fd)
        let peer = Self.describePeer(fd)
        if peer.isTCP { POSIX.setNoDelay(fd) }
        let process = peer.isTCP ? nil : PeerProcess.of(socket: fd)
        let core = try DescriptorTransportCore(
            fd: fd, name: name ?? peer.name, isSocket: true, writeStyle: .socket,
            readMode: .stream(maximumPayloadLength: maximumPayloadLength))
        self.init(core: core, peerProcess: process)
    }

    /// Connects to an H4 server over TCP (IPv4; "localhost" and names resolve to their IPv4 address), with
    /// TCP_NODELAY.
    public static func connect(
        host: String, port: UInt16, maximumPayloadLength: Int = 65535
    ) throws(HCITransportError) -> SocketH4Transport {
        let name = "tcp:\(host):\(port)"
        let address: sockaddr_in
        do {
            address = try SocketAddress.ipv4(host: host, port: port)
        } catch {
            throw HCITransportError(.openFailed, "\(name): \(error.reason)")
        }
        return try openStream(address, family: AF_INET, name: name, maximumPayloadLength: maximumPayloadLength) { code in
            code == ECONNREFUSED ? "is the controller listening?" : nil
        }
    }

    /// Connects to an H4 server on a UNIX stream socket. With `serverOfThisUserOnly` (the air hub's clients), the
    /// socket file must be a socket (not a symbolic link) of this user or root, and so must the listening process
    /// (SO_PEERCRED, Linux); otherwise ``HCITransportError/Code/openFailed`` says why in one line.
    public static func connect(
        path: String, maximumPayloadLength: Int = 65535, serverOfThisUserOnly: Bool = false
    ) throws(HCITransportError) -> SocketH4Transport {
        let name = "unix:\(path)"
        let address: sockaddr_un
        do {
            address = try SocketAddress.unix(path: path)
            if serverOfThisUserOnly { try SocketOwnership.checkFile(path) }
        } catch {
            throw HCITransportError(.openFailed, "\(name): \(error)")
        }
        let checkPeer: ((Int32) -> String?)? = serverOfThisUserOnly ? { fd in
            do throws(PrivatePathError) {
                try SocketOwnership.checkPeer(ofConnected: fd, path: path)
                return nil
            } catch {
                return error.reason
            }
        } : nil
        return try openStream(address, family: AF_UNIX, name: name, maximumPayloadLength: maximumPayloadLength,
                              checkPeer: checkPeer) { code in
            code == ENOENT ? "no socket at this path" : code == ECONNREFUSED ? "nobody is listening on this socket" : nil
        }
    }

    /// Connects a new stream socket of `family` to `address` (TCP sockets get TCP_NODELAY) and runs the transport on
    /// it; `hint` says what a connect errno means for this kind of address; `checkPeer` (when given) refuses the
    /// connected peer with a reason.
    private static func openStream<Address>(
        _ address: Address, family: Int32, name: String, maximumPayloadLength: Int, checkPeer: ((Int32) -> String?)? = nil,
        hint: (Int32) -> String?
    ) throws(HCITransportError) -> SocketH4Transport {
        guard let fd = SocketAddress.makeSocket(family: family, type: SocketAddress.streamType) else {
            throw HCITransportError(.openFailed, "\(name): cannot create a socket: \(POSIX.lastErrorText)")
        }
        if let code = SocketAddress.connect(fd, address) {
            POSIX.closeDescriptor(fd)
            let explanation = hint(code).map { " (\($0))" } ?? ""
            throw HCITransportError(.openFailed, "\(name): connect failed: \(POSIX.errorText(code))\(explanation)")
        }
        if let refusal = checkPeer?(fd) {
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "\(name): \(refusal)")
        }
        POSIX.disableSIGPIPE(fd)
        if family == AF_INET { POSIX.setNoDelay(fd) }
        let core = try DescriptorTransportCore(
            fd: fd, name: name, isSocket: true, writeStyle: .socket,
            readMode: .stream(maximumPayloadLength: maximumPayloadLength))
        return SocketH4Transport(core: core)
    }

    /// "tcp:ADDRESS:PORT" or "unix:PATH" for the peer of `fd`.
    private static func describePeer(_ fd: Int32) -> (name: String, isTCP: Bool) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard result == 0 else { return ("fd:\(fd)", false) }
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
            }
            return ("tcp:\(SocketAddress.text(address.sin_addr)):\(UInt16(bigEndian: address.sin_port))", true)
        case AF_UNIX:
            // The connecting side of a UNIX socket is usually unnamed: report our own (listening) path.
            var local = sockaddr_un()
            var localLength = socklen_t(MemoryLayout<sockaddr_un>.size)
            let named = withUnsafeMutablePointer(to: &local) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
            }
            guard named == 0 else { return ("unix:fd:\(fd)", false) }
            let path = withUnsafeBytes(of: local.sun_path) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            let process = PeerProcess.of(socket: fd).map { ", \($0)" } ?? ""
            return ("unix:\(path) (accepted\(process))", false)
        default:
            return ("fd:\(fd)", false)
        }
    }
}
