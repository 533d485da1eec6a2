import DequeModule
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the reader has received and not yet decoded: the stream's octets, and the file descriptors that came with
/// them (SCM_RIGHTS), in arrival order. Owns those descriptors: a message takes the ones its header announces
/// (UNIX_FDS), the others are closed (``closeDescriptors()``), never leaked.
struct DBusInbox {
    /// The most descriptors waiting at once (a peer sending descriptors with a message it never finishes).
    static let maximumQueuedDescriptors = 4 * DBusMessage.maximumFileDescriptors

    var bytes: Deque<UInt8> = []
    var descriptors: Deque<Int32> = []

    /// The first whole message, removed with its descriptors; nil when the octets hold less. A message that
    /// announces more descriptors than arrived (or more than ``DBusMessage/maximumFileDescriptors``) is a
    /// protocol error, as undecodable octets are (D-Bus Specification, "Message Format": the descriptors are sent
    /// with the message). Descriptors left when every octet received is decoded came with messages that did not
    /// announce them: they are closed.
    mutating func takeMessage() throws(DBusError) -> DBusMessage? {
        guard bytes.count >= 16 else { return nil }
        let total = try DBusMessage.frameLength(prefix: Array(bytes.prefix(16)))
        guard bytes.count >= total else { return nil }
        let frame = Array(bytes.prefix(total))
        bytes.removeFirst(total)
        var message = try DBusMessage(decoding: frame)
        let announced = Int(message.unixFDs ?? 0)
        guard announced <= DBusMessage.maximumFileDescriptors else {
            throw DBusError(.decode, "a message announcing \(announced) file descriptors (at most \(DBusMessage.maximumFileDescriptors))")
        }
        guard announced <= descriptors.count else {
            throw DBusError(.decode, "a message announcing \(announced) file descriptors, \(descriptors.count) arrived")
        }
        message.fileDescriptors = Array(descriptors.prefix(announced))
        descriptors.removeFirst(announced)
        if bytes.isEmpty { closeDescriptors() }
        return message
    }

    /// Closes the descriptors nobody took.
    mutating func closeDescriptors() {
        for descriptor in descriptors { POSIX.closeDescriptor(descriptor) }
        descriptors = []
    }
}

/// A D-Bus stream socket's reads and writes with the descriptors that travel with the octets (D-Bus Specification,
/// "Authentication Protocol": NEGOTIATE_UNIX_FD; the descriptors are SCM_RIGHTS ancillary data, `unix(7)`).
enum DBusSocket {
    /// `CMSG_ALIGN`: control messages are aligned to `size_t` (4 octets on Darwin).
    private static func aligned(_ length: Int) -> Int {
        #if canImport(Darwin)
        let alignment = 4
        #else
        let alignment = MemoryLayout<Int>.size
        #endif
        return (length + alignment - 1) & ~(alignment - 1)
    }

    /// `CMSG_ALIGN(sizeof(struct cmsghdr))`: where a control message's data starts.
    private static var headerLength: Int { aligned(MemoryLayout<cmsghdr>.size) }

    /// Reads what is there into `inbox` (`recvmsg` with room for ``DBusMessage/maximumFileDescriptors``
    /// descriptors, received close-on-exec); false at the end of the stream. Descriptors cut off (MSG_CTRUNC: the
    /// kernel closed them) or too many waiting end the connection: which message they belonged to cannot be known
    /// any more.
    static func receive(_ fd: Int32, into inbox: inout DBusInbox) throws(DBusError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let controlLength = headerLength + aligned(DBusMessage.maximumFileDescriptors * MemoryLayout<Int32>.size)
        let control = UnsafeMutableRawPointer.allocate(byteCount: controlLength, alignment: MemoryLayout<cmsghdr>.alignment)
        defer { control.deallocate() }
        #if canImport(Darwin)
        let flags: Int32 = 0
        #else
        let flags = Int32(MSG_CMSG_CLOEXEC)
        #endif
        while true {
            control.initializeMemory(as: UInt8.self, repeating: 0, count: controlLength)
            var received: [Int32] = []
            var truncated = false
            let count = chunk.withUnsafeMutableBytes { buffer -> Int in
                var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
                return withUnsafeMutablePointer(to: &vector) { vector -> Int in
                    var header = msghdr()
                    header.msg_iov = vector
                    header.msg_iovlen = 1
                    header.msg_control = control
                    header.msg_controllen = numericCast(controlLength)
                    let count = recvmsg(fd, &header, flags)
                    guard count >= 0 else { return count }
                    received = descriptors(in: control, length: min(Int(header.msg_controllen), controlLength))
                    truncated = header.msg_flags & Int32(MSG_CTRUNC) != 0
                    return count
                }
            }
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { return true }
                throw DBusError(.disconnected, "reading from the bus failed: \(POSIX.errorText(errno))")
            }
            #if canImport(Darwin)
            for descriptor in received { POSIX.setCloseOnExec(descriptor) }
            #endif
            inbox.bytes.append(contentsOf: chunk[0..<count])
            inbox.descriptors.append(contentsOf: received)
            if truncated {
                throw DBusError(.disconnected, "the bus sent more than \(DBusMessage.maximumFileDescriptors) file descriptors at once (the kernel dropped the rest)")
            }
            guard inbox.descriptors.count <= DBusInbox.maximumQueuedDescriptors else {
                throw DBusError(.disconnected, "the bus sent \(inbox.descriptors.count) file descriptors no message announced")
            }
            return count > 0
        }
    }

    /// The descriptors of the SCM_RIGHTS control messages in `control` (`length` octets filled by the kernel),
    /// every length checked against the buffer.
    private static func descriptors(in control: UnsafeMutableRawPointer, length: Int) -> [Int32] {
        var found: [Int32] = []
        var offset = 0
        while offset + MemoryLayout<cmsghdr>.size <= length {
            let header = control.load(fromByteOffset: offset, as: cmsghdr.self)
            let messageLength = Int(header.cmsg_len)
            guard messageLength >= headerLength, messageLength <= length - offset else { break }
            if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                let count = (messageLength - headerLength) / MemoryLayout<Int32>.size
                for index in 0..<count {
                    found.append(control.loadUnaligned(fromByteOffset: offset + headerLength + index * MemoryLayout<Int32>.size,
                                                       as: Int32.self))
                }
            }
            offset += aligned(messageLength)
        }
        return found
    }

    /// Writes every octet of `bytes`; `descriptors` (when any) go as SCM_RIGHTS with the first octets written, so
    /// that they arrive with the message's start. The caller keeps its descriptors (the kernel passes copies).
    static func send(_ fd: Int32, _ bytes: [UInt8], descriptors: [Int32]) throws(DBusError) {
        var written = 0
        if !descriptors.isEmpty, !bytes.isEmpty {
            let dataLength = descriptors.count * MemoryLayout<Int32>.size
            let controlLength = headerLength + aligned(dataLength)
            let control = UnsafeMutableRawPointer.allocate(byteCount: controlLength, alignment: MemoryLayout<cmsghdr>.alignment)
            defer { control.deallocate() }
            control.initializeMemory(as: UInt8.self, repeating: 0, count: controlLength)
            var header = cmsghdr()
            header.cmsg_len = numericCast(headerLength + dataLength)
            header.cmsg_level = SOL_SOCKET
            header.cmsg_type = Int32(SCM_RIGHTS)
            control.storeBytes(of: header, as: cmsghdr.self)
            for (index, descriptor) in descriptors.enumerated() {
                control.storeBytes(of: descriptor, toByteOffset: headerLength + index * MemoryLayout<Int32>.size, as: Int32.self)
            }
            #if canImport(Darwin)
            let flags: Int32 = 0
            #else
            let flags = Int32(MSG_NOSIGNAL)
            #endif
            while true {
                let count = bytes.withUnsafeBytes { buffer -> Int in
                    var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
                    return withUnsafeMutablePointer(to: &vector) { vector -> Int in
                        var message = msghdr()
                        message.msg_iov = vector
                        message.msg_iovlen = 1
                        message.msg_control = control
                        message.msg_controllen = numericCast(controlLength)
                        return sendmsg(fd, &message, flags)
                    }
                }
                if count > 0 {
                    written = count
                    break
                }
                let code = count < 0 ? errno : EIO
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&descriptor, 1, 1000)
                    continue
                }
                if code == EBADF {
                    throw DBusError(.invalidArgument, "a file descriptor to send is not open: \(POSIX.errorText(code))")
                }
                throw DBusError(.disconnected, "writing to the bus failed: \(POSIX.errorText(code))")
            }
        }
        guard written < bytes.count else { return }
        if let code = POSIX.writeAll(fd, Array(bytes[written...]), style: .socket) {
            throw DBusError(.disconnected, "writing to the bus failed: \(POSIX.errorText(code))")
        }
    }
}
