import BluetoothRuntime
import Dispatch
import Foundation
import HCITransport
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
public final class DBusConnection: Sendable {
    /// The bus's answer to a method call exported here: a reply (``DBusMessage/methodReturn(_:)`` or
    /// ``DBusMessage/errorReply(name:message:)``), or nil to send nothing.
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

    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    private let state = LockedValue(State())
    private let writeLock = NSLock()

    private init(address: String, fd: Int32, wake: (read: Int32, write: Int32), guid: String, uniqueName: String) {
        self.address = address
        self.fd = fd
        self.wake = wake
        serverGUID = guid
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

    /// `$DBUS_SESSION_BUS_ADDRESS` (nil when unset).
    public static var sessionBusAddress: String? {
        ProcessInfo.processInfo.environment["DBUS_SESSION_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The socket path of the first `unix:path=` entry of an address (`;`-separated entries, `,`-separated
    /// `key=value` with %-escapes). Other transports are not supported.
    public static func socketPath(of address: String) throws(DBusError) -> String {
        for entry in address.split(separator: ";") {
            guard entry.hasPrefix("unix:") else { continue }
            for pair in entry.dropFirst(5).split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0] == "path" else { continue }
                guard let path = String(parts[1]).removingPercentEncoding, !path.isEmpty else { break }
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
        do {
            guid = try authenticate(fd, timeout: timeout)
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
        var buffer: [UInt8] = []
        let name: String
        do {
            try write(fd, try named.encoded())
            name = try readHelloReply(fd, buffer: &buffer, timeout: timeout)
        } catch {
            POSIX.closeDescriptor(fd)
            POSIX.closeDescriptor(wake.read)
            POSIX.closeDescriptor(wake.write)
            throw error
        }
        let connection = DBusConnection(address: address, fd: fd, wake: wake, guid: guid, uniqueName: name)
        connection.state.withLock { $0.nextSerial = 2 }
        connection.startReader(buffer: buffer)
        return connection
    }

    /// ``connect(address:timeout:)`` on a thread of its own.
    public static func connect(address: String, timeout: Duration = .seconds(5)) async throws(DBusError) -> DBusConnection {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<DBusConnection, DBusError>, Never>) in
            Thread.detachNewThread {
                do throws(DBusError) {
                    continuation.resume(returning: .success(try connect(address: address, timeout: timeout)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// SASL EXTERNAL with our uid: `\0AUTH EXTERNAL <hex(uid)>`, `OK <guid>`, `BEGIN`.
    private static func authenticate(_ fd: Int32, timeout: Duration) throws(DBusError) -> String {
        let uid = String(getuid())
        let hex = uid.utf8.map { String(format: "%02x", $0) }.joined()
        try write(fd, [0] + Array("AUTH EXTERNAL \(hex)\r\n".utf8))
        let deadline = ContinuousClock.now + timeout
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
        let answer = String(decoding: line.dropLast(2), as: UTF8.self)
        guard answer.hasPrefix("OK ") else {
            throw DBusError(.authenticationFailed, "the bus refused EXTERNAL authentication for uid \(uid): \(answer)")
        }
        try write(fd, Array("BEGIN\r\n".utf8))
        return String(answer.dropFirst(3))
    }

    private static func readHelloReply(_ fd: Int32, buffer: inout [UInt8], timeout: Duration) throws(DBusError) -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            while let message = try takeFrame(&buffer) {
                guard message.replySerial == 1 else { continue }
                if let error = message.error { throw DBusError(.connectFailed, "Hello refused: \(error)") }
                guard let name = message.body.first?.stringValue else { throw DBusError(.connectFailed, "Hello answered without a name") }
                return name
            }
            try waitReadable(fd, until: deadline, what: "the answer to Hello")
            guard try readSome(fd, into: &buffer) else { throw DBusError(.connectFailed, "the bus closed the connection before Hello's answer") }
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

    /// Reads what is there; false at the end of the stream.
    private static func readSome(_ fd: Int32, into buffer: inout [UInt8]) throws(DBusError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                return true
            }
            if count == 0 { return false }
            if errno == EINTR { continue }
            if errno == EAGAIN { return true }
            throw DBusError(.disconnected, "reading from the bus failed: \(POSIX.errorText(errno))")
        }
    }

    /// The first whole message of `buffer`, removed from it; nil when it holds less.
    private static func takeFrame(_ buffer: inout [UInt8]) throws(DBusError) -> DBusMessage? {
        guard buffer.count >= 16 else { return nil }
        let total = try DBusMessage.frameLength(prefix: Array(buffer.prefix(16)))
        guard buffer.count >= total else { return nil }
        let frame = Array(buffer.prefix(total))
        buffer.removeFirst(total)
        return try DBusMessage(decoding: frame)
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) throws(DBusError) {
        if let code = POSIX.writeAll(fd, bytes, style: .socket) {
            throw DBusError(.disconnected, "writing to the bus failed: \(POSIX.errorText(code))")
        }
    }

    // MARK: Sending

    /// Sends `message` with the next serial; returns the serial.
    @discardableResult
    public func send(_ message: DBusMessage) throws(DBusError) -> UInt32 {
        try send(message, registering: nil)
    }

    private func send(_ message: DBusMessage, registering completion: (@Sendable (Result<DBusMessage, DBusError>) -> Void)?)
        throws(DBusError) -> UInt32 {
        var numbered = message
        // Serial assignment and the write stay in order under the write lock (the bus requires nothing of the
        // order, but a reply must never arrive before its call is registered).
        writeLock.lock()
        defer { writeLock.unlock() }
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
            try Self.write(fd, bytes)
        } catch {
            state.withLock { _ = $0.pending.removeValue(forKey: numbered.serial) }
            throw error
        }
        return numbered.serial
    }

    /// Calls a method; `completion` gets the reply (an error reply as ``DBusError/Code/errorReply``), or
    /// ``DBusError/Code/timedOut`` after `timeout`, or ``DBusError/Code/disconnected``, exactly once, on any thread.
    public func call(_ message: DBusMessage, timeout: Duration = DBusConnection.defaultTimeout,
                     completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) {
        let once = LockedValue<(@Sendable (Result<DBusMessage, DBusError>) -> Void)?>(completion)
        let finish: @Sendable (Result<DBusMessage, DBusError>) -> Void = { result in
            let pending = once.withLock { value in
                defer { value = nil }
                return value
            }
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

    private func startReader(buffer initial: [UInt8]) {
        let thread = Thread { [self] in
            var buffer = initial
            while true {
                do throws(DBusError) {
                    while let message = try Self.takeFrame(&buffer) { dispatch(message) }
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
                    guard try Self.readSome(fd, into: &buffer) else {
                        end(DBusError(.disconnected, "the bus closed the connection"))
                        return
                    }
                } catch {
                    end(error)
                    return
                }
            }
        }
        thread.name = "DBus.reader"
        thread.start()
    }

    private func dispatch(_ message: DBusMessage) {
        switch message.kind {
        case .methodReturn, .error:
            guard let serial = message.replySerial else { return }
            let completion = state.withLock { $0.pending.removeValue(forKey: serial) }
            completion?(.success(message))
        case .signal:
            for handler in state.withLock({ Array($0.signalHandlers.values) }) { handler(message) }
        case .methodCall:
            let handler = state.withLock { state in message.path.flatMap { state.exported[$0] } }
            let reply: DBusMessage?
            if let handler {
                reply = handler(message)
            } else {
                reply = message.errorReply(name: "org.freedesktop.DBus.Error.UnknownObject",
                                           message: "no object at \(message.path ?? "?")")
            }
            if let reply, !message.flags.contains(.noReplyExpected) { _ = try? send(reply) }
        }
    }
}
