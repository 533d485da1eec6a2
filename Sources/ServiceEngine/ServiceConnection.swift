import BluetoothRuntime
import DequeModule
import Dispatch
import FoundationEssentials
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a ``ServiceConnection`` ended.
public enum ServiceConnectionEnd: Sendable, Equatable, CustomStringConvertible {
    /// The other side closed (or ``ServiceConnection/close()`` was called).
    case closed
    /// The other side sent what is not a message of the protocol (not JSON, not this shape, too long).
    case protocolViolation(String)
    /// The other side did not read what was sent to it and the queue passed its bound.
    case outboxOverflow(Int)

    public var description: String {
        switch self {
        case .closed: "closed"
        case .protocolViolation(let reason): "protocol violation: \(reason)"
        case .outboxOverflow(let bytes): "\(bytes) octets unread by the other side: cut off"
        }
    }
}

/// One end of a connection between a program and the Bluetooth service: messages as JSON, one per line
/// (`\n`-terminated; JSON escapes newlines inside strings), over a UNIX stream socket.
///
/// Reading: a thread of the connection's own reads, splits lines (at most
/// ``ServiceProtocol/maximumMessageLength`` octets each), decodes and hands each message to `onMessage` in order.
/// Writing: ``send(_:)`` encodes on the caller's thread and queues; a serial queue of the connection writes, so a
/// side that stops reading stalls only its own writer, and once more than `outboxLimit` octets wait the
/// connection ends (``ServiceConnectionEnd/outboxOverflow(_:)``). Whatever ends it, `onEnd` is called once, after
/// the last message.
public final class ServiceConnection<Inbound: Decodable & Sendable, Outbound: Encodable & Sendable>: Sendable {
    private struct Outbox {
        var lines: Deque<[UInt8]> = []
        var octets = 0
        var writing = false
        var closed = false
        /// Closed for new messages; the socket shuts once the queue is written.
        var finishing = false
        var end: ServiceConnectionEnd?
        /// The descriptor was closed: its number may belong to another file now, so nothing touches it again.
        var descriptorClosed = false
    }

    /// The socket (owned: closed once reading and writing are over).
    private let fd: Int32
    private let outboxLimit: Int
    private let outbox = LockedValue(Outbox())
    private let writer: DispatchQueue
    private let label: String

    /// Takes ownership of the connected socket `fd`.
    public init(fd: Int32, label: String, outboxLimit: Int = 8 << 20) {
        self.fd = fd
        self.label = label
        self.outboxLimit = max(outboxLimit, ServiceProtocol.maximumMessageLength)
        self.writer = DispatchQueue(label: label + ".writer")
        POSIX.disableSIGPIPE(fd)
    }

    /// Starts reading on a thread of its own.
    public func start(onMessage: @escaping @Sendable (Inbound) -> Void, onEnd: @escaping @Sendable (ServiceConnectionEnd) -> Void) {
        DetachedThread.spawn(named: label + ".reader") { [self] in
            let end = readLoop(onMessage)
            let first = outbox.withLock { state -> ServiceConnectionEnd in
                state.closed = true
                if state.end == nil { state.end = end }
                return state.end ?? end
            }
            shutDown()
            // The writer may be inside write(2); shutdown made it fail. The descriptor goes on the writer's queue,
            // under the lock, so that no later write or shutdown reaches a number the kernel gave to another file.
            writer.sync {
                outbox.withLock { state in
                    state.descriptorClosed = true
                    POSIX.closeDescriptor(fd)
                }
            }
            onEnd(first)
        }
    }

    /// Queues `message`; false when the connection is over (or this message put it past its bound).
    @discardableResult
    public func send(_ message: Outbound) -> Bool {
        let encoder = JSONEncoder()
        guard var line = try? encoder.encode(message) else { return false }
        line.append(0x0A)
        let bytes = [UInt8](line)
        let start: Bool? = outbox.withLock { state in
            guard !state.closed else { return nil }
            guard state.octets + bytes.count <= outboxLimit else {
                state.closed = true
                state.end = .outboxOverflow(state.octets + bytes.count)
                return nil
            }
            state.lines.append(bytes)
            state.octets += bytes.count
            defer { state.writing = true }
            return !state.writing
        }
        guard let start else {
            if outbox.withLock({ $0.end }).map({ if case .outboxOverflow = $0 { true } else { false } }) == true {
                shutDown()
            }
            return false
        }
        if start { writer.async { [self] in drain() } }
        return true
    }

    /// Writes `message` after what is queued and returns once it is written (or failed): a last word before the
    /// process ends, when the writer's queue would not run again.
    public func sendAndWait(_ message: Outbound) {
        guard var line = try? JSONEncoder().encode(message) else { return }
        line.append(0x0A)
        let bytes = [UInt8](line)
        let closed = outbox.withLock { $0.closed }
        guard !closed else { return }
        writer.sync {
            guard !outbox.withLock({ $0.descriptorClosed }) else { return }
            _ = POSIX.writeAll(fd, bytes, style: .socket)
        }
    }

    /// Ends the connection (idempotent): the reader sees the end and calls `onEnd`.
    public func close() {
        outbox.withLock { state in
            state.closed = true
            if state.end == nil { state.end = .closed }
        }
        shutDown()
    }

    /// Shuts the socket both ways (the reader sees the end), unless the descriptor is closed already.
    private func shutDown() {
        outbox.withLock { state in
            if !state.descriptorClosed { _ = shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// Ends the connection once what is queued has been written (a last message, then the end).
    public func finish() {
        let idle = outbox.withLock { state -> Bool in
            state.closed = true
            state.finishing = true
            if state.end == nil { state.end = .closed }
            return !state.writing
        }
        if idle { shutDown() }
    }

    private func drain() {
        while true {
            let next = outbox.withLock { state -> (line: [UInt8]?, finished: Bool) in
                guard !state.lines.isEmpty, !state.descriptorClosed else {
                    state.writing = false
                    return (nil, state.finishing)
                }
                return (state.lines.first, false)
            }
            guard let line = next.line else {
                if next.finished { shutDown() }
                return
            }
            if POSIX.writeAll(fd, line, style: .socket) != nil {
                close()
                outbox.withLock { state in
                    state.lines.removeAll()
                    state.octets = 0
                    state.writing = false
                }
                return
            }
            outbox.withLock { state in
                if !state.lines.isEmpty {
                    state.lines.removeFirst()
                    state.octets -= line.count
                }
            }
        }
    }

    private func readLoop(_ onMessage: @Sendable (Inbound) -> Void) -> ServiceConnectionEnd {
        let decoder = JSONDecoder()
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return .closed }
            var start = 0
            for index in 0..<count where buffer[index] == 0x0A {
                pending.append(contentsOf: buffer[start..<index])
                start = index + 1
                let line = pending
                pending.removeAll(keepingCapacity: true)
                guard !line.isEmpty else { continue }
                do {
                    onMessage(try decoder.decode(Inbound.self, from: Data(line)))
                } catch {
                    return .protocolViolation("not a message: \(Self.describe(error))")
                }
            }
            pending.append(contentsOf: buffer[start..<count])
            if pending.count > ServiceProtocol.maximumMessageLength {
                return .protocolViolation("a message longer than \(ServiceProtocol.maximumMessageLength) octets")
            }
        }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.debugDescription
        case DecodingError.keyNotFound(let key, _): "no \(key.stringValue)"
        case DecodingError.typeMismatch(let type, let context): "\(type) expected at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case DecodingError.valueNotFound(let type, _): "\(type) missing"
        default: "\(error)"
        }
    }
}
