public import HCI

/// A byte pipe between a host and a controller carrying H4-framed HCI packets (Core 5.4 Vol 4 Part A): in-process,
/// H4 over TCP / UNIX sockets / serial ports, or the Linux HCI user channel.
///
/// Contract:
/// - `start` begins delivery. `onFrame` is called for each frame from the other side, in order, from ONE reader at
///   a time (never concurrently, never a task per packet). `onClose` is called exactly once when the transport ends:
///   `nil` after `close()` by this side, an error otherwise (peer closed, I/O error, poisoned H4 stream).
///   Callbacks run on the transport's reader thread: owners hop to their `EventLoop` (`loop.execute { ... }`).
/// - `send` is thread-safe, keeps frames whole and in order, and throws once the transport is closed.
/// - `close` is idempotent.
/// - The batch forms (`start(onFrames:onClose:)`, `send(frames:)`) carry several frames per call: a transport that
///   reads or writes a byte stream delivers what one read brought in one call and writes a batch with one system
///   call, so its owner hops to its loop once per batch and the kernel sees one write (issue 31: system calls and
///   thread wake-ups per packet, not the packets' bytes, are most of a host's CPU across processes). The defaults
///   deliver one frame per call and send one at a time.
public protocol HCITransport: AnyObject, Sendable {
    /// A short human-readable description: "tcp:127.0.0.1:9000", "in-process (host side)".
    var name: String { get }

    func start(
        onFrame: @escaping @Sendable (H4Frame) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError)

    func send(_ frame: H4Frame) throws(HCITransportError)

    /// Like `start(onFrame:onClose:)`, with every frame one read brought in one call (never empty, in order).
    func start(
        onFrames: @escaping @Sendable ([H4Frame]) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError)

    /// Sends `frames` in order, whole, as one write where the transport can; throws as `send` does (frames before a
    /// failure may have gone out).
    func send(frames: [H4Frame]) throws(HCITransportError)

    func close()
}

extension HCITransport {
    public func start(
        onFrames: @escaping @Sendable ([H4Frame]) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        try start(onFrame: { onFrames([$0]) }, onClose: onClose)
    }

    public func send(frames: [H4Frame]) throws(HCITransportError) {
        for frame in frames { try send(frame) }
    }
}

/// Why a transport failed, with a code a program can test and a reason a person can read.
public struct HCITransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// The transport specification (`--hci`) is not understood.
        case invalidSpecification
        /// Opening failed (connection refused, no such device, permission denied...).
        case openFailed
        /// The other side closed the connection.
        case closedByPeer
        /// The transport was closed by this side; no more sends.
        case closed
        /// A read or write failed.
        case ioError
        /// The byte stream is not valid H4 (unknown packet type, length above the cap).
        case framingError
        /// `start` was called twice.
        case alreadyStarted
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}
