import BluetoothCore
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import Synchronization
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A connection to a D-Bus message bus over a UNIX stream socket (D-Bus Specification, "Transports": `unix:path=`),
/// authenticated with SASL EXTERNAL ("Authentication Protocol") and registered with `Hello` ("Message Bus
/// Specification"): method calls with a time limit, signals, and method calls to the object paths it exports.
///
/// One reader thread per connection reads and decodes frames (poll, woken by a pipe to stop); replies complete their
/// calls, signals go to every signal handler, calls to the handler of their path — all on that thread, so handlers
/// must not block. A frame that does not decode ends the connection (the stream cannot be resynchronised), as does
/// the bus closing it: every pending call then fails with ``DBusError/Code/disconnected``. The reader keeps the
/// connection alive until it ends: call ``close()`` when done.
///
/// File descriptors (D-Bus Specification, "Type System": UNIX_FD) pass when the bus agreed to them during the
/// authentication (``canPassUnixFDs``); they travel in ``DBusMessage/fileDescriptors``. Who owns them:
/// - a message sent (``send(_:)``, ``call(_:timeout:completion:)``): the sender keeps its descriptors (the kernel
///   passes copies);
/// - a reply delivered to a call: the caller, who must close them or hand them on; an error reply's, and a reply's
///   that comes too late or that no call awaits, are closed by the connection;
/// - a call to an exported object, a signal: lent to the handlers, closed by the connection once they returned (and
///   the reply is sent): `fcntl(F_DUPFD_CLOEXEC)` one to keep it;
/// - a reply a ``CallHandler`` returns: handed to the connection, which closes its descriptors once sent;
/// - descriptors that arrive with no message announcing them, or with a message nobody takes: closed.
public final class DBusConnection: Sendable {
    /// The bus's answer to a method call exported here: a reply (``DBusMessage/methodReturn(_:fileDescriptors:)`` or
    /// ``DBusMessage/errorReply(name:message:)``), or nil to send nothing. The call's descriptors are lent for the
    /// handler's duration; the reply's are handed to the connection, which closes them once sent.
    public typealias CallHandler = @Sendable (DBusMessage) -> DBusMessage?

    private struct State {
        var nextSerial: UInt32 = 1
        var pending: [UInt32: @Sendable (Result<DBusMessage, DBusError>) -> Void] = [:]
        var signalHandlers: [UInt64: @Sendable (DBusMessage) -> Void] = [:]
        var nextHandler: UInt64 = 0
        var exported: [String: CallHandler] = [:]
        var closeHandlers: [@Sendable (DBusError) -> Void] = []
        var closed: DBusError?
    }

    /// The default time limit of a call (libdbus's).
    public static let defaultTimeout: Duration = .seconds(25)

    /// The bus address given.
    public let address: String
    /// The unique name the bus gave us (`:1.42`).
    public let uniqueName: String
    /// The server's GUID from the authentication.
    public let serverGUID: String
    /// Whether the bus agreed to pass file descriptors (`NEGOTIATE_UNIX_FD` answered `AGREE_UNIX_FD`): messages
    /// with ``DBusMessage/fileDescriptors`` can be sent only then.
    public let canPassUnixFDs: Bool

    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    private let state = LockedValue(State())
    private let writeLock = Mutex(())

    private init(address: String, fd: Int32, wake: (read: Int32, write: Int32), guid: String, canPassUnixFDs: Bool,
                 uniqueName: String) {
        self.address = address
        self.fd = fd
        self.wake = wake
        serverGUID = guid
        self.canPassUnixFDs = canPassUnixFDs
        self.uniqueName = uniqueName
    }

    deinit {
        POSIX.closeDescriptor(fd)
        POSIX.closeDescriptor(wake.read)
        POSIX.closeDescriptor(wake.write)
    }

    // MARK: Addresses

    /// `$DBUS_SYSTEM_BUS_ADDRESS`, else the specification's default system bus socket.
    public static var systemBusAddress: String {
        if let value = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"], !value.isEmpty { return value }
        return "unix:path=/var/run/dbus/system_bus_socket"
    }

    /// The socket path of the first `unix:path=` entry of an address (`;`-separated entries, `,`-separated
    /// `key=value` with %-escapes). Other transports are not supported.
    public static func socketPath(of address: String) throws(DBusError) -> String {
        for entry in address.split(separator: ";") {
            guard entry.hasPrefix("unix:") else { continue }
            for pair in entry.dropFirst(5).split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0] == "path" else { continue }
                guard let path = PercentEncoding.decode(parts[1]), !path.isEmpty else { break }
                return path
            }
        }
        throw DBusError(.connectFailed, "no unix:path= entry in the bus address \"\(address)\" (other transports are not supported)")
    }

    // MARK: Connecting

    /// Connects, authenticates and says Hello; blocks (at most `timeout` for the authentication and Hello each).
    public static func connect(address: String, timeout: Duration = .seconds(5)) throws(DBusError) -> DBusConnection {
        let path = try socketPath(of: address)
        let socketAddress: sockaddr_un
        do {
            socketAddress = try SocketAddress.unix(path: path)
        } catch {
            throw DBusError(.connectFailed, "the bus at \(path): \(error.reason)")
        }
        guard let fd = SocketAddress.makeSocket(family: AF_UNIX, type: SocketAddress.streamType) else {
            throw DBusError(.connectFailed, "cannot create a socket: \(POSIX.errorText(errno))")
        }
        if let code = SocketAddress.connect(fd, socketAddress) {
            POSIX.closeDescriptor(fd)
            throw DBusError(.connectFailed, "cannot connect to the bus at \(path): \(POSIX.errorText(code))")
        }
        POSIX.disableSIGPIPE(fd)
        let guid: String
        let canPassUnixFDs: Bool
        do {
            (guid, canPassUnixFDs) = try authenticate(fd, timeout: timeout)
        } catch {
            POSIX.closeDescriptor(fd)
            throw error
        }
        guard let wake = POSIX.makeWakePipe() else {
            POSIX.closeDescriptor(fd)
            throw DBusError(.connectFailed, "cannot create a pipe: \(POSIX.errorText(errno))")
        }
        // Hello is the first message: sent and read here, before the reader thread starts.
        let hello = DBusMessage.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "Hello")
        var named = hello
        named.serial = 1
        var inbox = DBusInbox()
        let name: String
        do {
            try write(fd, try named.encoded())
            name = try readHelloReply(fd, inbox: &inbox, timeout: timeout)
        } catch {
            inbox.closeDescriptors()
            POSIX.closeDescriptor(fd)
            POSIX.closeDescriptor(wake.read)
            POSIX.closeDescriptor(wake.write)
            throw error
        }
        let connection = DBusConnection(address: address, fd: fd, wake: wake, guid: guid, canPassUnixFDs: canPassUnixFDs,
                                        uniqueName: name)
        connection.state.withLock { $0.nextSerial = 2 }
        connection.startReader(inbox: inbox)
        return connection
    }

    /// ``connect(address:timeout:)`` on a thread of its own.
    public static func connect(address: String, timeout: Duration = .seconds(5)) async throws(DBusError) -> DBusConnection {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<DBusConnection, DBusError>, Never>) in
            let started = DetachedThread.spawn(named: "DBus.connect") {
                do throws(DBusError) {
                    continuation.resume(returning: .success(try connect(address: address, timeout: timeout)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            if !started {
                continuation.resume(returning: .failure(DBusError(.connectFailed, "no thread to connect on: \(POSIX.errorText(errno))")))
            }
        }
        return try result.get()
    }

    /// SASL EXTERNAL with our uid: `\0AUTH EXTERNAL <hex(uid)>`, `OK <guid>`, then `NEGOTIATE_UNIX_FD` (answered
    /// `AGREE_UNIX_FD`, or `ERROR` when the bus cannot pass descriptors: not a failure), `BEGIN` (D-Bus
    /// Specification, "Authentication Protocol"). Returns the GUID and whether descriptors pass.
    private static func authenticate(_ fd: Int32, timeout: Duration) throws(DBusError) -> (guid: String, canPassUnixFDs: Bool) {
        let uid = String(getuid())
        let hex = Hex.encode(uid.utf8)
        try write(fd, [0] + Array("AUTH EXTERNAL \(hex)\r\n".utf8))
        let deadline = ContinuousClock.now + timeout
        let answer = try readLine(fd, until: deadline)
        guard answer.hasPrefix("OK ") else {
            throw DBusError(.authenticationFailed, "the bus refused EXTERNAL authentication for uid \(uid): \(answer)")
        }
        try write(fd, Array("NEGOTIATE_UNIX_FD\r\n".utf8))
        let agreement = try readLine(fd, until: deadline)
        let canPassUnixFDs: Bool
        if agreement == "AGREE_UNIX_FD" {
            canPassUnixFDs = true
        } else if agreement == "ERROR" || agreement.hasPrefix("ERROR ") {
            canPassUnixFDs = false
        } else {
            throw DBusError(.authenticationFailed, "the bus answered NEGOTIATE_UNIX_FD with \"\(agreement)\"")
        }
        try write(fd, Array("BEGIN\r\n".utf8))
        return (String(answer.dropFirst(3)), canPassUnixFDs)
    }

    /// One line of the authentication exchange, without its CR LF.
    private static func readLine(_ fd: Int32, until deadline: ContinuousClock.Instant) throws(DBusError) -> String {
        var line: [UInt8] = []
        while !(line.count >= 2 && line.suffix(2) == [13, 10]) {
            guard line.count < 16_384 else { throw DBusError(.authenticationFailed, "the bus's answer is longer than 16 KiB") }
            try waitReadable(fd, until: deadline, what: "the authentication")
            var byte: UInt8 = 0
            let count = read(fd, &byte, 1)
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count == 1 else { throw DBusError(.authenticationFailed, "the bus closed the connection during the authentication") }
            line.append(byte)
        }
        return String(decoding: line.dropLast(2), as: UTF8.self)
    }

    private static func readHelloReply(_ fd: Int32, inbox: inout DBusInbox, timeout: Duration) throws(DBusError) -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            while let message = try inbox.takeMessage() {
                message.closeFileDescriptors()
                guard message.replySerial == 1 else { continue }
                if let error = message.error { throw DBusError(.connectFailed, "Hello refused: \(error)") }
                guard let name = message.body.first?.stringValue else { throw DBusError(.connectFailed, "Hello answered without a name") }
                return name
            }
            try waitReadable(fd, until: deadline, what: "the answer to Hello")
            guard try DBusSocket.receive(fd, into: &inbox) else { throw DBusError(.connectFailed, "the bus closed the connection before Hello's answer") }
        }
    }

    private static func waitReadable(_ fd: Int32, until deadline: ContinuousClock.Instant, what: String) throws(DBusError) {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw DBusError(.timedOut, "no answer from the bus for \(what)") }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 60_000))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw DBusError(.disconnected, "poll failed: \(POSIX.errorText(errno))") }
        }
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) throws(DBusError) {
        if let code = POSIX.writeAll(fd, bytes, style: .socket) {
            throw DBusError(.disconnected, "writing to the bus failed: \(POSIX.errorText(code))")
        }
    }

    // MARK: Sending

    /// Sends `message` with the next serial; returns the serial. Its ``DBusMessage/fileDescriptors`` go with it
    /// (SCM_RIGHTS with its first octets, the header's UNIX_FDS set to their count) and stay the caller's; sending
    /// any where ``canPassUnixFDs`` is false is ``DBusError/Code/invalidArgument``.
    @discardableResult
    public func send(_ message: DBusMessage) throws(DBusError) -> UInt32 {
        try send(message, registering: nil)
    }

    private func send(_ message: DBusMessage, registering completion: (@Sendable (Result<DBusMessage, DBusError>) -> Void)?)
        throws(DBusError) -> UInt32 {
        var numbered = message
        if !message.fileDescriptors.isEmpty {
            guard canPassUnixFDs else {
                throw DBusError(.invalidArgument, "the bus did not agree to pass file descriptors (NEGOTIATE_UNIX_FD), and the message carries \(message.fileDescriptors.count)")
            }
            if let closed = message.fileDescriptors.first(where: { $0 < 0 || fcntl($0, F_GETFD) < 0 }) {
                throw DBusError(.invalidArgument, "file descriptor \(closed) of the message is not open")
            }
        }
        numbered.unixFDs = message.fileDescriptors.isEmpty ? nil : UInt32(message.fileDescriptors.count)
        // Serial assignment and the write stay in order under the write lock (the bus requires nothing of the
        // order, but a reply must never arrive before its call is registered).
        return try writeLock.withLock { _ throws(DBusError) -> UInt32 in
            try sendInOrder(numbered, registering: completion)
        }
    }

    /// Numbers and writes `message` (under the write lock).
    private func sendInOrder(_ message: DBusMessage, registering completion: (@Sendable (Result<DBusMessage, DBusError>) -> Void)?)
        throws(DBusError) -> UInt32 {
        var numbered = message
        let closed: DBusError? = state.withLock { state in
            if let closed = state.closed { return closed }
            numbered.serial = state.nextSerial
            state.nextSerial = state.nextSerial == UInt32.max ? 1 : state.nextSerial + 1
            if let completion { state.pending[numbered.serial] = completion }
            return nil
        }
        if let closed { throw closed }
        let bytes: [UInt8]
        do {
            bytes = try numbered.encoded()
        } catch {
            state.withLock { _ = $0.pending.removeValue(forKey: numbered.serial) }
            throw error
        }
        do {
            try DBusSocket.send(fd, bytes, descriptors: numbered.fileDescriptors)
        } catch {
            state.withLock { _ = $0.pending.removeValue(forKey: numbered.serial) }
            throw error
        }
        return numbered.serial
    }

    /// Calls a method; `completion` gets the reply (an error reply as ``DBusError/Code/errorReply``), or
    /// ``DBusError/Code/timedOut`` after `timeout`, or ``DBusError/Code/disconnected``, exactly once, on any thread.
    /// The reply's ``DBusMessage/fileDescriptors`` are the caller's to close (those of an error reply, or of a reply
    /// after the time limit, are closed here).
    public func call(_ message: DBusMessage, timeout: Duration = DBusConnection.defaultTimeout,
                     completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) {
        let once = LockedValue<(@Sendable (Result<DBusMessage, DBusError>) -> Void)?>(completion)
        let finish: @Sendable (Result<DBusMessage, DBusError>) -> Void = { result in
            let pending = once.withLock { value in
                defer { value = nil }
                return value
            }
            // Descriptors that reach nobody: a reply after the time limit, an error reply's.
            if case .success(let reply) = result, pending == nil || reply.error != nil { reply.closeFileDescriptors() }
            if case .success(let reply) = result, let error = reply.error {
                pending?(.failure(error))
            } else {
                pending?(result)
            }
        }
        let serial: UInt32
        do {
            serial = try send(message, registering: finish)
        } catch {
            finish(.failure(error))
            return
        }
        let member = message.member ?? "?"
        let nanoseconds = Int(timeout.components.seconds) * 1_000_000_000 + Int(timeout.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(max(nanoseconds, 0))) { [weak self] in
            self?.state.withLock { _ = $0.pending.removeValue(forKey: serial) }
            finish(.failure(DBusError(.timedOut, "no reply to \(member) within \(timeout)")))
        }
    }

    /// ``call(_:timeout:completion:)`` awaited.
    public func call(_ message: DBusMessage, timeout: Duration = DBusConnection.defaultTimeout) async throws(DBusError) -> DBusMessage {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<DBusMessage, DBusError>, Never>) in
            call(message, timeout: timeout) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    // MARK: Receiving

    /// Calls `handler` with every signal this connection receives (add match rules to receive others' signals);
    /// returns a key for ``removeSignalHandler(_:)``.
    @discardableResult
    public func addSignalHandler(_ handler: @escaping @Sendable (DBusMessage) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextHandler += 1
            state.signalHandlers[state.nextHandler] = handler
            return state.nextHandler
        }
    }

    public func removeSignalHandler(_ key: UInt64) {
        state.withLock { _ = $0.signalHandlers.removeValue(forKey: key) }
    }

    /// Asks the bus for the messages a match rule selects (`type='signal',sender='org.bluez'`…).
    public func addMatch(_ rule: String) async throws(DBusError) {
        _ = try await call(.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                 interface: "org.freedesktop.DBus", member: "AddMatch", body: [.string(rule)]))
    }

    /// Answers the method calls to `path` with `handler` (nil removes it). Calls to a path nobody exported get
    /// `org.freedesktop.DBus.Error.UnknownObject`.
    public func export(path: String, _ handler: CallHandler?) {
        state.withLock { $0.exported[path] = handler }
    }

    /// Calls `handler` once when the connection ends (at once if it already has).
    public func onClose(_ handler: @escaping @Sendable (DBusError) -> Void) {
        let closed: DBusError? = state.withLock { state in
            if state.closed == nil { state.closeHandlers.append(handler) }
            return state.closed
        }
        if let closed { handler(closed) }
    }

    /// Whether the connection has ended.
    public var isClosed: Bool { state.withLock { $0.closed != nil } }

    /// Closes the connection: pending calls fail with ``DBusError/Code/disconnected``.
    public func close() {
        end(DBusError(.disconnected, "the connection was closed"))
        _ = POSIX.writeAll(wake.write, [1], style: .file)
    }

    private func end(_ error: DBusError) {
        let (pending, handlers) = state.withLock { state -> ([@Sendable (Result<DBusMessage, DBusError>) -> Void], [@Sendable (DBusError) -> Void]) in
            guard state.closed == nil else { return ([], []) }
            state.closed = error
            defer {
                state.pending = [:]
                state.closeHandlers = []
                state.exported = [:]
                state.signalHandlers = [:]
            }
            return (Array(state.pending.values), state.closeHandlers)
        }
        for completion in pending { completion(.failure(error)) }
        for handler in handlers { handler(error) }
    }

    private func startReader(inbox initial: DBusInbox) {
        DetachedThread.spawn(named: "DBus.reader") { [self] in
            var inbox = initial
            // Whatever the reader leaves (a partial message's descriptors) is closed when it ends.
            defer { inbox.closeDescriptors() }
            while true {
                do throws(DBusError) {
                    while let message = try inbox.takeMessage() { dispatch(message) }
                } catch {
                    end(DBusError(.disconnected, "the bus sent a message that does not decode: \(error.reason)"))
                    return
                }
                var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                                   pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&descriptors, 2, -1)
                if ready < 0 {
                    if errno == EINTR { continue }
                    end(DBusError(.disconnected, "poll failed: \(POSIX.errorText(errno))"))
                    return
                }
                if descriptors[1].revents != 0 || isClosed { return }
                do throws(DBusError) {
                    guard try DBusSocket.receive(fd, into: &inbox) else {
                        end(DBusError(.disconnected, "the bus closed the connection"))
                        return
                    }
                } catch {
                    end(error)
                    return
                }
            }
        }
    }

    /// Hands a message to its taker; its descriptors go to a call's completion (which closes those that reach
    /// nobody), else they are closed once the handlers returned.
    private func dispatch(_ message: DBusMessage) {
        switch message.kind {
        case .methodReturn, .error:
            let completion = message.replySerial.flatMap { serial in state.withLock { $0.pending.removeValue(forKey: serial) } }
            guard let completion else {
                message.closeFileDescriptors()
                return
            }
            completion(.success(message))
        case .signal:
            for handler in state.withLock({ Array($0.signalHandlers.values) }) { handler(message) }
            message.closeFileDescriptors()
        case .methodCall:
            let handler = state.withLock { state in message.path.flatMap { state.exported[$0] } }
            let reply: DBusMessage?
            if let handler {
                reply = handler(message)
            } else {
                reply = message.errorReply(name: "org.freedesktop.DBus.Error.UnknownObject",
                                           message: "no object at \(message.path ?? "?")")
            }
            if let reply, !message.flags.contains(.noReplyExpected) {
                do throws(DBusError) {
                    try send(reply)
                } catch {
                    // A reply we may not send (descriptors the bus did not agree to): the caller hears why.
                    if error.code == .invalidArgument {
                        _ = try? send(message.errorReply(name: "org.freedesktop.DBus.Error.Failed",
                                                         message: "the reply could not be sent: \(error.reason)"))
                    }
                }
            }
            // The call's descriptors were lent to the handler, its reply's handed to us: each closed once.
            var descriptors = message.fileDescriptors
            for descriptor in reply?.fileDescriptors ?? [] where !descriptors.contains(descriptor) { descriptors.append(descriptor) }
            for descriptor in descriptors { POSIX.closeDescriptor(descriptor) }
        }
    }
}
