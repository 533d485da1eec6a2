package import BluetoothCore
import BluetoothRuntime
import Dispatch
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SystemInterface

/// LE credit-based channels through the kernel's L2CAP sockets, for the bluetoothd engine and backends (Core 5.4 Vol 3 Part A §10.1;
/// Linux `include/net/bluetooth/l2cap.h`: `socket(AF_BLUETOOTH, SOCK_SEQPACKET, BTPROTO_L2CAP)` with a
/// `struct sockaddr_l2 { family, le16 psm, bdaddr (little-endian), le16 cid, u8 bdaddr_type }`; an LE address type
/// makes the kernel use LE flow control). bluetoothd does not carry channels: the kernel does, on the link
/// bluetoothd made. Each SOCK_SEQPACKET read or write is one SDU.
package enum BlueZL2CAPSocket {
    package static let addressFamily: Int32 = 31          // AF_BLUETOOTH
    package static let l2capProtocol: Int32 = 0           // BTPROTO_L2CAP
    package static let solBluetooth: Int32 = 274          // SOL_BLUETOOTH
    package static let securityOption: Int32 = 4          // BT_SECURITY
    package static let sendMTUOption: Int32 = 12          // BT_SNDMTU
    package static let securityMedium: UInt8 = 2          // BT_SECURITY_MEDIUM: encrypted
    package static let lePublic: UInt8 = 1                // BDADDR_LE_PUBLIC
    package static let leRandom: UInt8 = 2                // BDADDR_LE_RANDOM

    /// A `sockaddr_l2` (14 octets with padding).
    package static func address(_ address: BluetoothAddress?, psm: UInt16) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 14)
        bytes[0] = UInt8(addressFamily & 0xFF)
        bytes[1] = UInt8(addressFamily >> 8)
        bytes[2] = UInt8(psm & 0xFF)
        bytes[3] = UInt8(psm >> 8)
        if let address {
            let value = address.value
            for index in 0..<6 { bytes[4 + index] = UInt8((value >> (8 * UInt64(index))) & 0xFF) }
            bytes[12] = address.type == .random ? leRandom : lePublic
        } else {
            bytes[12] = lePublic
        }
        return bytes
    }

    /// The address and PSM in a `sockaddr_l2`.
    package static func decode(_ bytes: [UInt8]) -> (address: BluetoothAddress, psm: UInt16)? {
        guard bytes.count >= 13 else { return nil }
        var value: UInt64 = 0
        for index in 0..<6 { value |= UInt64(bytes[4 + index]) << (8 * UInt64(index)) }
        return (BluetoothAddress(value, type: bytes[12] == leRandom ? .random : .public), UInt16(bytes[2]) | UInt16(bytes[3]) << 8)
    }

    private static func withAddress<T>(_ bytes: [UInt8], _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        bytes.withUnsafeBytes { raw in body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count)) }
    }

    /// The adapter's own address (Adapter1 Address and AddressType), which the sockets bind to.
    package static func adapterAddress(_ tree: BlueZObjectTree?, _ adapterPath: String?) -> BluetoothAddress? {
        guard let tree, let adapterPath, let properties = tree.properties(adapterPath, BlueZAdapterSession.adapterInterface),
              let text = properties["Address"]?.stringValue else { return nil }
        return try? BluetoothAddress(string: text, type: properties["AddressType"]?.stringValue == "random" ? .random : .public)
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(description: String) { self.description = description }
    }

    /// A new L2CAP socket bound to `local` (the adapter's address; PSM `psm`, 0 for any), close-on-exec, with
    /// encryption required when asked.
    package static func open(local: BluetoothAddress, psm: UInt16, encrypted: Bool) throws(Failure) -> Int32 {
        let fd = socket(addressFamily, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), l2capProtocol)
        guard fd >= 0 else {
            throw Failure(description: errno == EAFNOSUPPORT ? "this kernel has no Bluetooth sockets (AF_BLUETOOTH)"
                          : "cannot create an L2CAP socket: \(POSIX.errorText(errno))")
        }
        let bound = withAddress(address(local, psm: psm)) { bind(fd, $0, $1) }
        guard bound == 0 else {
            let code = errno
            POSIX.closeDescriptor(fd)
            throw Failure(description: "cannot bind an L2CAP socket to \(local) PSM \(psm): \(POSIX.errorText(code))")
        }
        if encrypted {
            var security: [UInt8] = [securityMedium, 0]
            guard setsockopt(fd, solBluetooth, securityOption, &security, socklen_t(security.count)) == 0 else {
                let code = errno
                POSIX.closeDescriptor(fd)
                throw Failure(description: "cannot require encryption on the channel: \(POSIX.errorText(code))")
            }
        }
        return fd
    }

    /// Connects `fd` to `peer`'s PSM (blocking: the kernel bounds it with its connection timeout).
    package static func connect(_ fd: Int32, to peer: BluetoothAddress, psm: UInt16) throws(Failure) {
        let result = withAddress(address(peer, psm: psm)) { Glibc.connect(fd, $0, $1) }
        guard result == 0 else {
            throw Failure(description: "cannot open PSM \(psm) on \(peer): \(POSIX.errorText(errno))")
        }
    }

    /// The PSM and address a socket is bound to (a listening socket's PSM is the kernel's choice when bound to 0).
    package static func localAddress(_ fd: Int32) -> (address: BluetoothAddress, psm: UInt16)? {
        var bytes = [UInt8](repeating: 0, count: 14)
        var length = socklen_t(bytes.count)
        let result = bytes.withUnsafeMutableBytes { raw in
            getsockname(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        return result == 0 ? decode(bytes) : nil
    }

    package static func peerAddress(_ fd: Int32) -> (address: BluetoothAddress, psm: UInt16)? {
        var bytes = [UInt8](repeating: 0, count: 14)
        var length = socklen_t(bytes.count)
        let result = bytes.withUnsafeMutableBytes { raw in
            getpeername(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
        }
        return result == 0 ? decode(bytes) : nil
    }

    /// The peer's MTU for our SDUs (BT_SNDMTU), 23 when the kernel does not say.
    package static func sendMTU(_ fd: Int32) -> Int {
        var mtu: UInt16 = 0
        var length = socklen_t(MemoryLayout<UInt16>.size)
        guard getsockopt(fd, solBluetooth, sendMTUOption, &mtu, &length) == 0, mtu > 0 else { return 23 }
        return Int(mtu)
    }
}

/// An open channel on a kernel L2CAP socket (``BlueZL2CAPSocket``): a reader thread polls it (and a wake pipe) and
/// reports each SDU, room to send again after a full send buffer (EAGAIN), and the end; `send` writes one SDU of at
/// most the peer's MTU without blocking.
package final class BlueZL2CAPChannel: Sendable {
    /// What the reader thread reports, in order, on the channel's own queue.
    package enum Event: Sendable {
        /// One SDU from the peer.
        case received([UInt8])
        /// Room to send again after ``send(_:)`` took nothing.
        case canSend
        /// The channel ended (either side).
        case closed
    }

    private struct State {
        var sink: (@Sendable (Event) -> Void)?
        var waitingToSend = false
        var closed = false
    }

    package let psm: UInt16
    /// The device at the other end.
    package let peer: BluetoothAddress
    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    private let sendMTU: Int
    /// The largest SDU the peer accepts (the socket's send MTU; Core 5.4 Vol 3 Part A §4.22).
    package var peerMTU: Int { sendMTU }
    private let state = LockedValue(State())
    private let queue = DispatchQueue(label: "BlueZ.l2cap")

    /// Takes `fd` (connected, close-on-exec); nil when the wake pipe cannot be made (the socket is closed then).
    package init?(fd: Int32, psm: UInt16, peer: BluetoothAddress) {
        guard let wake = POSIX.makeWakePipe() else {
            POSIX.closeDescriptor(fd)
            return nil
        }
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        self.fd = fd
        self.wake = wake
        self.psm = psm
        self.peer = peer
        sendMTU = BlueZL2CAPSocket.sendMTU(fd)
    }

    deinit {
        POSIX.closeDescriptor(fd)
        POSIX.closeDescriptor(wake.read)
        POSIX.closeDescriptor(wake.write)
    }

    package func start(_ events: @escaping @Sendable (Event) -> Void) {
        state.withLock { $0.sink = events }
        DetachedThread.spawn(named: "BlueZ.l2cap") { [self] in read() }
    }

    private func emit(_ event: Event) {
        guard let sink = state.load().sink else { return }
        queue.async { sink(event) }
    }

    private func read() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let wantsOut = state.load().waitingToSend
            var descriptors = [pollfd(fd: fd, events: Int16(POLLIN) | (wantsOut ? Int16(POLLOUT) : 0), revents: 0),
                               pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            // A bounded wait, so that a change of waitingToSend is seen even without a wake.
            let ready = poll(&descriptors, 2, 200)
            if ready < 0 {
                if errno == EINTR { continue }
                return finish()
            }
            if descriptors[1].revents != 0 || state.load().closed { return finish() }
            let events = descriptors[0].revents
            if events & Int16(POLLOUT) != 0, state.withLock({ value in defer { value.waitingToSend = false }; return value.waitingToSend }) {
                emit(.canSend)
            }
            if events & Int16(POLLIN) != 0 {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 {
                    emit(.received(Array(buffer[..<count])))
                } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                    return finish()
                }
            } else if events & Int16(POLLHUP | POLLERR) != 0 {
                return finish()
            }
        }
    }

    private func finish() {
        let first = state.withLock { value -> Bool in
            defer { value.closed = true }
            return !value.closed
        }
        emit(.closed)
        if first { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Writes one SDU (at most the peer's MTU); the octets taken, 0 when the socket is full (``Event/canSend`` follows).
    package func send(_ bytes: [UInt8]) -> Int {
        guard !bytes.isEmpty, !state.load().closed else { return 0 }
        let chunk = Array(bytes.prefix(sendMTU))
        let written = chunk.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if written < 0 {
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS {
                state.withLock { $0.waitingToSend = true }
            }
            return 0
        }
        return written
    }

    package func close() {
        let first = state.withLock { value -> Bool in
            defer { value.closed = true }
            return !value.closed
        }
        guard first else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }
}

/// A published PSM on a listening kernel L2CAP socket: a thread accepts centrals' channels and hands each to
/// `opened`; ``close()`` stops listening and closes the channels it opened (as `unpublishL2CAPChannel` does).
package final class BlueZL2CAPListener: Sendable {
    package let psm: UInt16
    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    private let channels = LockedValue<[BlueZL2CAPChannel]>([])
    private let closed = LockedValue(false)

    /// Listens on `fd` (bound); nil when listen fails (the socket is closed then).
    package init?(fd: Int32) {
        guard listen(fd, 8) == 0, let bound = BlueZL2CAPSocket.localAddress(fd), let wake = POSIX.makeWakePipe() else {
            POSIX.closeDescriptor(fd)
            return nil
        }
        self.fd = fd
        self.wake = wake
        psm = bound.psm
    }

    deinit {
        POSIX.closeDescriptor(fd)
        POSIX.closeDescriptor(wake.read)
        POSIX.closeDescriptor(wake.write)
    }

    package func start(_ opened: @escaping @Sendable (BlueZL2CAPChannel) -> Void) {
        DetachedThread.spawn(named: "BlueZ.l2cap.listen") { [self] in
            while !closed.load() {
                var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                                   pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&descriptors, 2, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if descriptors[1].revents != 0 { return }
                guard descriptors[0].revents & Int16(POLLIN) != 0 else {
                    if descriptors[0].revents != 0 { return }
                    continue
                }
                let accepted = POSIX.acceptCloseOnExec(fd)
                guard accepted >= 0 else { continue }
                guard let remote = BlueZL2CAPSocket.peerAddress(accepted),
                      let channel = BlueZL2CAPChannel(fd: accepted, psm: psm, peer: remote.address) else {
                    POSIX.closeDescriptor(accepted)
                    continue
                }
                channels.withLock { $0.append(channel) }
                opened(channel)
            }
        }
    }

    package func close() {
        guard !closed.withLock({ value in defer { value = true }; return value }) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        for channel in channels.withLock({ list in defer { list = [] }; return list }) { channel.close() }
    }
}
