public import HCI
import BluetoothRuntime
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemInterface

/// A btsnoop capture file written as packets go by (the format of ``BTSnoopWriter``, datalink 1002 "HCI UART (H4)",
/// which Wireshark and `tshark` open): the file header at creation, then each record written to the file as soon as
/// it is recorded, so a capture stays readable if the process dies. Thread-safe.
public final class BTSnoopFileSink: Sendable {
    private struct State {
        var writer = BTSnoopWriter(datalink: .hciUART)
        var fd: Int32
        var ownsDescriptor: Bool
        var error: HCITransportError?
    }

    private let state: LockedValue<State>
    /// A description of the destination ("/tmp/capture.btsnoop" or "fd:5").
    public let name: String

    /// Creates (or truncates) the file at `path` (mode 0600 when new, a symbolic link not followed:
    /// `POSIX.createOutputFile`) and writes the btsnoop header.
    public convenience init(path: String) throws(HCITransportError) {
        let fd: Int32
        switch POSIX.createOutputFile(path) {
        case .success(let opened): fd = opened
        case .failure(let error): throw HCITransportError(.openFailed, "cannot create the snoop file \(path): \(error.detail)")
        }
        try self.init(fileDescriptor: fd, closeWhenDone: true, name: path)
    }

    /// Writes the capture to an open descriptor (a file, a pipe), starting with the btsnoop header.
    /// - Parameter closeWhenDone: whether ``close()`` closes the descriptor.
    public init(fileDescriptor fd: Int32, closeWhenDone: Bool = false, name: String? = nil) throws(HCITransportError) {
        self.name = name ?? "fd:\(fd)"
        var initial = State(fd: fd, ownsDescriptor: closeWhenDone)
        let header = initial.writer.takeBytes()
        if let code = POSIX.writeAll(fd, header, style: .file) {
            if closeWhenDone { POSIX.closeDescriptor(fd) }
            throw HCITransportError(.ioError, "cannot write the snoop header to \(self.name): \(POSIX.errorText(code))")
        }
        initial.fd = fd
        state = LockedValue(initial)
    }

    /// Appends one record and writes it out. After a write error the sink stops writing (see ``error``).
    public func record(_ frame: H4Frame, direction: BTSnoopDirection, unixMicroseconds: Int64) {
        state.withLock { state in
            guard state.fd >= 0, state.error == nil else { return }
            state.writer.write(frame, direction: direction, unixMicroseconds: unixMicroseconds)
            let bytes = state.writer.takeBytes()
            if let code = POSIX.writeAll(state.fd, bytes, style: .file) {
                state.error = HCITransportError(.ioError, "snoop file \(name): write failed: \(POSIX.errorText(code))")
            }
        }
    }

    /// The write error that stopped the capture, if any.
    public var error: HCITransportError? { state.withLock { $0.error } }

    /// Stops recording and closes the descriptor if this sink owns it. Idempotent.
    public func close() {
        state.withLock { state in
            if state.ownsDescriptor, state.fd >= 0 { POSIX.closeDescriptor(state.fd) }
            state.fd = -1
        }
    }

    deinit {
        close()
    }
}

/// Wraps any ``HCITransport`` and records every frame both ways in a btsnoop capture: frames the host sends are
/// *sent* (host to controller), frames it receives are *received* (controller to host), as btsnoop's direction
/// flag defines them. Timestamps come from `clock` (Unix microseconds; the real time by default; tests inject a
/// fixed sequence). A sent frame is recorded before it is handed to the wrapped transport, so a capture never
/// shows an answer before its command.
///
/// The sink is not closed with the transport: its owner closes it (records are already on disk).
public final class SnoopingTransport: HCITransport {
    public let wrapped: any HCITransport
    public let sink: BTSnoopFileSink
    private let clock: @Sendable () -> Int64
    /// Set once the wrapped transport closed: sends are then not recorded (they throw).
    private let ended = LockedValue(false)

    /// The real time in Unix microseconds (CLOCK_REALTIME): the default clock.
    public static func realTimeClock() -> Int64 { POSIX.unixMicroseconds() }

    public var name: String { "\(wrapped.name) (snoop: \(sink.name))" }

    public init(
        wrapping transport: any HCITransport, sink: BTSnoopFileSink,
        clock: @escaping @Sendable () -> Int64 = SnoopingTransport.realTimeClock
    ) {
        self.wrapped = transport
        self.sink = sink
        self.clock = clock
    }

    public func start(
        onFrame: @escaping @Sendable (H4Frame) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        try start(onFrames: { frames in for frame in frames { onFrame(frame) } }, onClose: onClose)
    }

    public func send(_ frame: H4Frame) throws(HCITransportError) {
        if !ended.withLock({ $0 }) {
            sink.record(frame, direction: .sent, unixMicroseconds: clock())
        }
        try wrapped.send(frame)
    }

    public func start(
        onFrames: @escaping @Sendable ([H4Frame]) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        let sink = sink
        let clock = clock
        let ended = ended
        try wrapped.start(
            onFrames: { frames in
                let now = clock()
                for frame in frames { sink.record(frame, direction: .received, unixMicroseconds: now) }
                onFrames(frames)
            },
            onClose: { error in
                ended.withLock { $0 = true }
                onClose(error)
            })
    }

    public func send(frames: [H4Frame]) throws(HCITransportError) {
        if !ended.withLock({ $0 }) {
            let now = clock()
            for frame in frames { sink.record(frame, direction: .sent, unixMicroseconds: now) }
        }
        try wrapped.send(frames: frames)
    }

    public func close() {
        ended.withLock { $0 = true }
        wrapped.close()
    }
}
