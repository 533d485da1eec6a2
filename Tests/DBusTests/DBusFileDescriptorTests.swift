import DBus
import Foundation
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

// File descriptor passing (D-Bus Specification: type UNIX_FD 'h', header field UNIX_FDS, NEGOTIATE_UNIX_FD): through
// a real dbus-daemon between two of our connections, and from a bus of the test's own for what dbus-daemon never
// sends (descriptors no message announces, too few, too many).

struct FDTestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A connected pair of close-on-exec UNIX sockets (SOCK_SEQPACKET unless told).
private func socketPair(_ type: Int32 = Int32(SOCK_SEQPACKET.rawValue)) throws -> (Int32, Int32) {
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
        throw FDTestFailure("socketpair failed: errno \(errno)")
    }
    return (fds[0], fds[1])
}

/// Whether every copy of the peer of `end` is closed (in this process, the bus and the kernel's queues): `end`
/// reports a hang-up within `limit`.
private func peerClosed(_ end: Int32, within limit: Duration = .seconds(10)) async -> Bool {
    await poll(within: limit) {
        var descriptor = pollfd(fd: end, events: Int16(POLLIN), revents: 0)
        return Glibc.poll(&descriptor, 1, 0) > 0 && descriptor.revents & Int16(POLLHUP) != 0
    }
}

/// The next packet on `fd` within `limit`, nil when none came.
private func receivePacket(_ fd: Int32, within limit: Duration = .seconds(10)) async -> [UInt8]? {
    let readable = await poll(within: limit) {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return Glibc.poll(&descriptor, 1, 0) > 0
    }
    guard readable else { return nil }
    var buffer = [UInt8](repeating: 0, count: 256)
    let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
    return count >= 0 ? Array(buffer.prefix(count)) : nil
}

private func sendPacket(_ fd: Int32, _ text: String) -> Bool {
    let bytes = Array(text.utf8)
    return send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count
}

private func socketType(_ fd: Int32) -> Int32 {
    var type: Int32 = -1
    var length = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else { return -1 }
    return type
}

private func isCloseOnExec(_ fd: Int32) -> Bool {
    let flags = fcntl(fd, F_GETFD)
    return flags >= 0 && flags & FD_CLOEXEC != 0
}

private func isOpen(_ fd: Int32) -> Bool { fcntl(fd, F_GETFD) >= 0 }

/// Our connections passing descriptors through dbus-daemon, as bluetoothd's AcquireWrite/AcquireNotify will.
@Suite(.timeLimit(.minutes(2)))
struct DBusFileDescriptorTests {
    /// A exports an AcquireWrite-like method answering `(hq)`: one end of a SOCK_SEQPACKET pair, with a packet
    /// waiting in it. B calls it, reads the packet from the descriptor it got, and answers through it.
    @Test func aSocketTravelsInAReplyAndCarriesBothWays() async throws {
        guard let bus = try await startTestBus() else { return }
        defer { Task { await bus.stop() } }
        let a = try await DBusConnection.connect(address: bus.address)
        defer { a.close() }
        let b = try await DBusConnection.connect(address: bus.address)
        defer { b.close() }
        #expect(a.canPassUnixFDs, "dbus-daemon agrees to NEGOTIATE_UNIX_FD")
        #expect(b.canPassUnixFDs)
        let kept = LockedBoxDB<Int32>(-1)
        a.export(path: "/org/opencorebluetooth/char0") { call in
            guard call.member == "AcquireWrite", let (mine, theirs) = try? socketPair() else {
                return call.errorReply(name: "org.freedesktop.DBus.Error.Failed", message: "no \(call.member ?? "?")")
            }
            kept.value = mine
            guard sendPacket(mine, "hello from A") else {
                return call.errorReply(name: "org.freedesktop.DBus.Error.Failed", message: "send: errno \(errno)")
            }
            // Our end stays here; theirs is handed to the connection with the reply (closed once sent).
            return call.methodReturn([.unixFD(0), .uint16(517)], fileDescriptors: [theirs])
        }
        let reply = try await b.call(.call(destination: a.uniqueName, path: "/org/opencorebluetooth/char0",
                                           interface: "org.bluez.GattCharacteristic1", member: "AcquireWrite",
                                           body: [.properties([:])]))
        let mine = kept.value
        defer { close(mine) }
        #expect(reply.signature == "hq")
        #expect(reply.unixFDs == 1)
        #expect(reply.fileDescriptors.count == 1)
        #expect(reply.body.last == .uint16(517))
        let fd = try #require(reply.fileDescriptor(at: reply.body[0]))
        #expect(isCloseOnExec(fd), "received with MSG_CMSG_CLOEXEC")
        #expect(socketType(fd) == Int32(SOCK_SEQPACKET.rawValue), "the other end of A's pair")
        #expect(await receivePacket(fd) == Array("hello from A".utf8))
        #expect(sendPacket(fd, "hello from B"))
        #expect(await receivePacket(mine) == Array("hello from B".utf8))
        // B holds the last copy of A's other end (A's connection closed its own after sending, the bus its own):
        // when B closes it, A's end hears the hang-up.
        #expect(!(await peerClosed(mine, within: .milliseconds(200))))
        close(fd)
        #expect(await peerClosed(mine), "a copy of the passed end leaked in A's connection or in B's")
    }

    /// Descriptors that reach a handler are lent (closed after it returns); those nobody takes are closed: an
    /// unknown object, an error reply, a reply after its call's time limit. The sender keeps its own.
    @Test func descriptorsNobodyKeepsAreClosed() async throws {
        guard let bus = try await startTestBus() else { return }
        defer { Task { await bus.stop() } }
        let a = try await DBusConnection.connect(address: bus.address)
        defer { a.close() }
        let b = try await DBusConnection.connect(address: bus.address)
        defer { b.close() }

        // A signal to B: its handler sees an open socket, which B closes when the handler has returned.
        let seen = LockedBoxDB<[Int32]>([])
        b.addSignalHandler { signal in
            guard signal.member == "Handed", let fd = signal.fileDescriptor(at: signal.body.first ?? .byte(0)) else { return }
            seen.value.append(socketType(fd))
        }
        let (watch1, sent1) = try socketPair()
        defer { close(watch1) }
        try a.send(DBusMessage(kind: .signal, path: "/org/opencorebluetooth/Sender", interface: "org.opencorebluetooth.Test",
                               member: "Handed", destination: b.uniqueName, body: [.unixFD(0)], fileDescriptors: [sent1]))
        #expect(isOpen(sent1), "the sender keeps its descriptor")
        #expect(await poll(within: .seconds(10)) { !seen.value.isEmpty })
        #expect(seen.value == [Int32(SOCK_SEQPACKET.rawValue)])
        #expect(!(await peerClosed(watch1, within: .milliseconds(100))), "A still holds its copy")
        close(sent1)
        #expect(await peerClosed(watch1), "B kept the signal's descriptor")

        // A call to an object B does not export.
        let (watch2, sent2) = try socketPair()
        defer { close(watch2) }
        do {
            _ = try await a.call(.call(destination: b.uniqueName, path: "/nothing", interface: "org.example.X", member: "Take",
                                       body: [.unixFD(0)], fileDescriptors: [sent2]))
            Issue.record("a call to nothing was answered")
        } catch {
            #expect(error.name == "org.freedesktop.DBus.Error.UnknownObject")
        }
        close(sent2)
        #expect(await peerClosed(watch2), "B kept the descriptor of a call nobody took")

        // An error reply that carries a descriptor: the caller gets the error, the descriptor is closed.
        let (watch3, sent3) = try socketPair()
        defer { close(watch3) }
        b.export(path: "/refusing") { call in
            var refusal = call.errorReply(name: "org.example.Error.No", message: "no")
            refusal.body.append(.unixFD(0))
            refusal.fileDescriptors = [sent3]
            return refusal
        }
        do {
            _ = try await a.call(.call(destination: b.uniqueName, path: "/refusing", interface: "org.example.X", member: "Take"))
            Issue.record("a refusal was a success")
        } catch {
            #expect(error.name == "org.example.Error.No")
        }
        #expect(await peerClosed(watch3), "the error reply's descriptor leaked (in B after sending, or in A)")

        // A reply after the call's time limit.
        let (watch4, sent4) = try socketPair()
        defer { close(watch4) }
        b.export(path: "/slow") { call in
            usleep(1_000_000)
            return call.methodReturn([.unixFD(0)], fileDescriptors: [sent4])
        }
        do {
            let early = try await a.call(.call(destination: b.uniqueName, path: "/slow", interface: "org.example.X", member: "Take"),
                                         timeout: .milliseconds(100))
            Issue.record("a call past its limit returned")
            early.closeFileDescriptors()
        } catch {
            #expect(error.code == .timedOut)
        }
        #expect(await peerClosed(watch4), "the late reply's descriptor leaked")
        #expect(!a.isClosed && !b.isClosed)
    }

    // MARK: A bus of our own

    /// A bus that answers ERROR to NEGOTIATE_UNIX_FD: no descriptor goes out, and nothing else breaks.
    @Test func aBusThatRefusesDescriptorsGetsNone() async throws {
        let (bus, connection) = try await connectToFakeBus(agree: false)
        defer { connection.close(); bus.close() }
        #expect(!connection.canPassUnixFDs)
        let (x, y) = try socketPair()
        defer { close(x); close(y) }
        let signal = DBusMessage(kind: .signal, path: "/a", interface: "org.example.T", member: "WithFD", body: [.unixFD(0)],
                                 fileDescriptors: [y])
        #expect(throws: DBusError(.invalidArgument, "the bus did not agree to pass file descriptors (NEGOTIATE_UNIX_FD), and the message carries 1")) {
            try connection.send(signal)
        }
        do {
            _ = try await connection.call(.call(destination: "org.example", path: "/a", interface: "org.example.T", member: "M",
                                                body: [.unixFD(0)], fileDescriptors: [y]), timeout: .seconds(5))
            Issue.record("a call with a descriptor went out")
        } catch {
            #expect(error.code == .invalidArgument)
        }
        #expect(!connection.isClosed)
        try connection.send(DBusMessage(kind: .signal, path: "/a", interface: "org.example.T", member: "Plain"))
        let first = try await bus.readMessage()
        #expect(first.member == "Plain", "the refused messages never reached the wire")
        #expect(first.unixFDs == nil)
    }

    /// Descriptors sent with a message that announces none are closed; the connection goes on.
    @Test func descriptorsNoMessageAnnouncesAreClosed() async throws {
        let (bus, connection) = try await connectToFakeBus(agree: true)
        defer { connection.close(); bus.close() }
        #expect(connection.canPassUnixFDs)
        let signals = LockedBoxDB<[DBusMessage]>([])
        connection.addSignalHandler { signals.value.append($0) }
        let (watch, stray) = try socketPair()
        defer { close(watch) }
        try bus.send(signal(serial: 2, member: "Stray"), descriptors: [stray, stray, stray])
        close(stray)
        try bus.send(signal(serial: 3, member: "After"))
        #expect(await poll(within: .seconds(10)) { signals.value.count == 2 })
        #expect(signals.value.map(\.member) == ["Stray", "After"])
        #expect(signals.value.first?.fileDescriptors == [])
        #expect(await peerClosed(watch), "the stray descriptors leaked")
        #expect(!connection.isClosed)
    }

    /// Descriptors that come with a message's first octets wait for its last ones.
    @Test func descriptorsWaitForTheRestOfTheirMessage() async throws {
        let (bus, connection) = try await connectToFakeBus(agree: true)
        defer { connection.close(); bus.close() }
        let seen = LockedBoxDB<[(count: Int, type: Int32, cloexec: Bool)]>([])
        connection.addSignalHandler { message in
            let fd = message.fileDescriptor(at: message.body.first ?? .byte(0)) ?? -1
            seen.value.append((message.fileDescriptors.count, socketType(fd), isCloseOnExec(fd)))
        }
        let (watch, passed) = try socketPair()
        defer { close(watch) }
        var message = signal(serial: 2, member: "Split")
        message.body = [.unixFD(0)]
        message.unixFDs = 1
        let bytes = try message.encoded()
        try bus.sendRaw(Array(bytes.prefix(10)), descriptors: [passed])
        close(passed)
        try await Task.sleep(for: .milliseconds(200))
        #expect(seen.value.isEmpty)
        try bus.sendRaw(Array(bytes.dropFirst(10)))
        #expect(await poll(within: .seconds(10)) { !seen.value.isEmpty })
        let first = try #require(seen.value.first)
        #expect(first.count == 1 && first.type == Int32(SOCK_SEQPACKET.rawValue) && first.cloexec)
        #expect(await peerClosed(watch), "the signal's descriptor was not closed after its handlers")
        #expect(!connection.isClosed)
    }

    /// A message that announces more descriptors than came with it ends the connection (the stream of descriptors
    /// cannot be matched to messages any more); those that came are closed.
    @Test func tooFewDescriptorsEndTheConnection() async throws {
        let (bus, connection) = try await connectToFakeBus(agree: true)
        defer { connection.close(); bus.close() }
        let closed = LockedBoxDB<DBusError?>(nil)
        connection.onClose { closed.value = $0 }
        let (watch, passed) = try socketPair()
        defer { close(watch) }
        var message = signal(serial: 2, member: "Short")
        message.unixFDs = 2
        try bus.send(message, descriptors: [passed])
        close(passed)
        #expect(await poll(within: .seconds(10)) { closed.value != nil })
        #expect(closed.value == DBusError(.disconnected, "the bus sent a message that does not decode: a message announcing 2 file descriptors, 1 arrived"))
        #expect(await peerClosed(watch), "the descriptor that came leaked")
    }

    @Test func aThousandAnnouncedEndTheConnection() async throws {
        let (bus, connection) = try await connectToFakeBus(agree: true)
        defer { connection.close(); bus.close() }
        let closed = LockedBoxDB<DBusError?>(nil)
        connection.onClose { closed.value = $0 }
        var message = signal(serial: 2, member: "Greedy")
        message.unixFDs = 1000
        try bus.send(message)
        #expect(await poll(within: .seconds(10)) { closed.value != nil })
        #expect(closed.value == DBusError(.disconnected, "the bus sent a message that does not decode: a message announcing 1000 file descriptors (at most 64)"))
    }

    /// More descriptors in one message than the receive buffer holds: the kernel drops the rest (MSG_CTRUNC), so
    /// the connection ends, and the ones received are closed.
    @Test func moreThanTheBufferHoldsEndsTheConnection() async throws {
        let (bus, connection) = try await connectToFakeBus(agree: true)
        defer { connection.close(); bus.close() }
        let closed = LockedBoxDB<DBusError?>(nil)
        connection.onClose { closed.value = $0 }
        let (watch, passed) = try socketPair()
        defer { close(watch) }
        var message = signal(serial: 2, member: "Flood")
        message.unixFDs = 100
        try bus.send(message, descriptors: Array(repeating: passed, count: 100))
        close(passed)
        #expect(await poll(within: .seconds(10)) { closed.value != nil })
        #expect(closed.value?.reason == "the bus sent more than 64 file descriptors at once (the kernel dropped the rest)")
        #expect(await peerClosed(watch), "the 64 received leaked")
    }

    /// Descriptors piling up behind a message that never ends: the queue is capped, the connection ends.
    @Test func aQueueThatNeverDrainsEndsTheConnection() async throws {
        let (bus, connection) = try await connectToFakeBus(agree: true)
        defer { connection.close(); bus.close() }
        let closed = LockedBoxDB<DBusError?>(nil)
        connection.onClose { closed.value = $0 }
        let (watch, passed) = try socketPair()
        defer { close(watch) }
        let bytes = try signal(serial: 2, member: "Never").encoded()
        for index in 0..<5 {
            try bus.sendRaw([bytes[index]], descriptors: Array(repeating: passed, count: 64))
            try await Task.sleep(for: .milliseconds(50))
        }
        close(passed)
        #expect(await poll(within: .seconds(10)) { closed.value != nil })
        let reason = closed.value?.reason ?? ""
        #expect(reason.hasPrefix("the bus sent ") && reason.hasSuffix(" file descriptors no message announced"), "\(reason)")
        #expect(await peerClosed(watch), "the queued descriptors leaked")
    }

    private func signal(serial: UInt32, member: String) -> DBusMessage {
        DBusMessage(kind: .signal, serial: serial, path: "/org/opencorebluetooth/Fake", interface: "org.opencorebluetooth.Test",
                    member: member, sender: "org.freedesktop.DBus")
    }

    private func connectToFakeBus(agree: Bool) async throws -> (FakeBus, DBusConnection) {
        let bus = try FakeBus()
        bus.startServing(agree: agree)
        let connection: DBusConnection
        do {
            connection = try await DBusConnection.connect(address: bus.address, timeout: .seconds(30))
        } catch {
            bus.close()
            throw error
        }
        try await bus.served()
        return (bus, connection)
    }
}

/// The UNIX_FDS header field and the descriptors' place in a message.
@Suite struct DBusFileDescriptorCodecTests {
    /// A reply `h` with one descriptor, byte for byte: the UNIX_FDS field (9, "u", 1) follows the signature.
    @Test func theHeaderCountsTheDescriptors() throws {
        var reply = DBusMessage(kind: .methodReturn, serial: 4, replySerial: 3, body: [.unixFD(0)], fileDescriptors: [5])
        let expected: [UInt8] = [0x6C, 0x02, 0x00, 0x01, 4, 0, 0, 0, 4, 0, 0, 0, 0x18, 0, 0, 0,
                                 0x05, 0x01, 0x75, 0x00, 3, 0, 0, 0,
                                 0x08, 0x01, 0x67, 0x00, 0x01, 0x68, 0x00, 0x00,
                                 0x09, 0x01, 0x75, 0x00, 1, 0, 0, 0,
                                 0, 0, 0, 0]
        #expect(try reply.encoded() == expected)
        let decoded = try DBusMessage(decoding: expected)
        #expect(decoded.unixFDs == 1)
        #expect(decoded.fileDescriptors.isEmpty, "the codec attaches none: the connection does")
        #expect(decoded.body == [.unixFD(0)])
        // The descriptors carried decide the count, whatever unixFDs said.
        reply.fileDescriptors = [5, 6, 7]
        reply.unixFDs = 9
        #expect(try DBusMessage(decoding: reply.encoded()).unixFDs == 3)
        // None carried: the field only when set by hand.
        reply.fileDescriptors = []
        #expect(try DBusMessage(decoding: reply.encoded()).unixFDs == 9)
        reply.unixFDs = nil
        let bare = try reply.encoded()
        #expect(try DBusMessage(decoding: bare).unixFDs == nil)
        #expect(bare.count == expected.count - 8, "no UNIX_FDS field")
        reply.fileDescriptors = Array(repeating: 5, count: 65)
        #expect(throws: DBusError(.invalidArgument, "a message with 65 file descriptors (at most 64)")) { try reply.encoded() }
    }

    @Test func unixFDValuesIndexTheDescriptors() {
        let message = DBusMessage(kind: .methodReturn, serial: 2, replySerial: 1, body: [.unixFD(1), .variant(.unixFD(0)), .unixFD(2)],
                                  fileDescriptors: [11, 12])
        #expect(message.fileDescriptor(at: message.body[0]) == 12)
        #expect(message.fileDescriptor(at: message.body[1]) == 11)
        #expect(message.fileDescriptor(at: message.body[2]) == nil, "past the end")
        #expect(message.fileDescriptor(at: .uint32(0)) == nil, "not a descriptor")
    }
}

/// A bus of the test's own for what dbus-daemon never sends: it authenticates one client (agreeing to pass
/// descriptors or not), answers its Hello, then sends the octets and descriptors a test scripts. Every wait is
/// bounded (10 s).
private final class FakeBus: @unchecked Sendable {
    let folder: String
    let address: String
    private let listener: Int32
    private let lock = NSLock()
    private var client: Int32 = -1

    init() throws {
        folder = testTemporaryPath("ocb-fakebus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/bus"
        address = "unix:path=\(path)"
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw FDTestFailure("socket failed: errno \(errno)") }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else { throw FDTestFailure("path too long") }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &socketAddress) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw FDTestFailure("bind/listen failed: errno \(errno)") }
    }

    func close() {
        lock.withLock {
            Glibc.close(listener)
            if client >= 0 { Glibc.close(client) }
            client = -1
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    private var connected: Int32 { lock.withLock { client } }

    private var outcome: Result<Void, FDTestFailure>?
    private var handshakeOutcome: Result<Void, FDTestFailure>? { lock.withLock { outcome } }

    /// Starts accepting the client, authenticating it and answering its Hello, on a thread started now: not from
    /// a task, which could wait for the cooperative pool (that other tests keep busy on a loaded machine) while the
    /// client's authentication runs out of time.
    func startServing(agree: Bool) {
        Thread.detachNewThread { [self] in
            let outcome: Result<Void, FDTestFailure>
            do {
                try handshake(agree: agree)
                outcome = .success(())
            } catch {
                outcome = .failure(error as? FDTestFailure ?? FDTestFailure("\(error)"))
            }
            lock.withLock { self.outcome = outcome }
        }
    }

    /// Waits (at most 40 s: every step of the handshake has its own 10 s bound) for the handshake to end.
    func served() async throws {
        guard await poll(within: .seconds(40), until: { self.handshakeOutcome != nil }) else {
            throw FDTestFailure("the fake bus's handshake did not end within 40 s")
        }
        try handshakeOutcome?.get()
    }

    /// The next message the client sends.
    func readMessage() async throws -> DBusMessage {
        try await blockingWork { () throws -> DBusMessage in try self.readMessageNow() }
    }

    private func handshake(agree: Bool) throws {
        try waitReadable(listener)
        let accepted = accept(listener, nil, nil)
        guard accepted >= 0 else { throw FDTestFailure("accept failed: errno \(errno)") }
        lock.withLock { client = accepted }
        guard try readOctets(1) == [0] else { throw FDTestFailure("no NUL first") }
        let auth = try readLine()
        guard auth.hasPrefix("AUTH EXTERNAL ") else { throw FDTestFailure("not AUTH EXTERNAL: \(auth)") }
        try sendRaw(Array("OK 0123456789abcdef0123456789abcdef\r\n".utf8))
        let negotiate = try readLine()
        guard negotiate == "NEGOTIATE_UNIX_FD" else { throw FDTestFailure("not NEGOTIATE_UNIX_FD: \(negotiate)") }
        try sendRaw(Array((agree ? "AGREE_UNIX_FD\r\n" : "ERROR\r\n").utf8))
        let begin = try readLine()
        guard begin == "BEGIN" else { throw FDTestFailure("not BEGIN: \(begin)") }
        let hello = try readMessageNow()
        guard hello.member == "Hello" else { throw FDTestFailure("not Hello: \(hello)") }
        try send(DBusMessage(kind: .methodReturn, serial: 1, replySerial: hello.serial, destination: ":1.1",
                             sender: "org.freedesktop.DBus", body: [.string(":1.1")]))
    }

    private func waitReadable(_ fd: Int32) throws {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&descriptor, 1, 10_000) > 0 else { throw FDTestFailure("nothing to read within 10 s") }
    }

    private func readOctets(_ count: Int) throws -> [UInt8] {
        var octets: [UInt8] = []
        while octets.count < count {
            try waitReadable(connected)
            var chunk = [UInt8](repeating: 0, count: count - octets.count)
            let got = read(connected, &chunk, chunk.count)
            guard got > 0 else { throw FDTestFailure("the client closed the connection") }
            octets += chunk.prefix(got)
        }
        return octets
    }

    private func readLine() throws -> String {
        var line: [UInt8] = []
        while line.suffix(2) != [13, 10] { line += try readOctets(1) }
        return String(decoding: line.dropLast(2), as: UTF8.self)
    }

    private func readMessageNow() throws -> DBusMessage {
        let prefix = try readOctets(16)
        let total = try DBusMessage.frameLength(prefix: prefix)
        return try DBusMessage(decoding: prefix + readOctets(total - 16))
    }

    /// Sends `message` as encoded (its UNIX_FDS field as set) with `descriptors`, whatever it announces.
    func send(_ message: DBusMessage, descriptors: [Int32] = []) throws {
        try sendRaw(message.encoded(), descriptors: descriptors)
    }

    /// Sends `octets` in one `sendmsg`, with `descriptors` as SCM_RIGHTS.
    func sendRaw(_ octets: [UInt8], descriptors: [Int32] = []) throws {
        let headerLength = MemoryLayout<cmsghdr>.size  // 16 on 64-bit Linux, already aligned to size_t
        let dataLength = descriptors.count * MemoryLayout<Int32>.size
        let controlLength = descriptors.isEmpty ? 0 : headerLength + (dataLength + 7) / 8 * 8
        let control = UnsafeMutableRawPointer.allocate(byteCount: max(controlLength, 1), alignment: 8)
        defer { control.deallocate() }
        if !descriptors.isEmpty {
            control.initializeMemory(as: UInt8.self, repeating: 0, count: controlLength)
            var header = cmsghdr()
            header.cmsg_len = headerLength + dataLength
            header.cmsg_level = SOL_SOCKET
            header.cmsg_type = Int32(SCM_RIGHTS)
            control.storeBytes(of: header, as: cmsghdr.self)
            for (index, descriptor) in descriptors.enumerated() {
                control.storeBytes(of: descriptor, toByteOffset: headerLength + 4 * index, as: Int32.self)
            }
        }
        let fd = connected
        let sent = octets.withUnsafeBytes { buffer -> Int in
            var vector = iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress), iov_len: buffer.count)
            return withUnsafeMutablePointer(to: &vector) { vector -> Int in
                var message = msghdr()
                message.msg_iov = vector
                message.msg_iovlen = 1
                message.msg_control = descriptors.isEmpty ? nil : control
                message.msg_controllen = controlLength
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
        }
        guard sent == octets.count else { throw FDTestFailure("sendmsg sent \(sent) of \(octets.count): errno \(errno)") }
    }
}
