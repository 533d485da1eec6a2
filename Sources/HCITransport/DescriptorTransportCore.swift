import HCI
import BluetoothRuntime
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemInterface

/// The engine shared by the descriptor-based transports (``SocketH4Transport``, ``SerialH4Transport``,
/// ``HCIUserChannelTransport``): one reader thread doing blocking reads (`poll` on the descriptor and a wake pipe,
/// then `read`), frames deframed by ``H4Framer`` (byte streams, Core 5.4 Vol 4 Part A §2) or one packet per read
/// (the HCI user channel), writes under a lock with full-write loops.
///
/// Descriptor lifetime: the descriptor is closed exactly once, by the reader thread when it ends (or by `close()`
/// if the transport was never started), while holding the write lock, so a writer never writes to a closed or
/// reused descriptor. `close()` never waits: it shuts the socket down (unblocking reads and writes) and wakes the
/// reader, which then reports `onClose(nil)`.
final class DescriptorTransportCore: @unchecked Sendable {
    enum ReadMode {
        /// A byte stream carrying H4 frames back to back.
        case stream(maximumPayloadLength: Int)
        /// One H4 frame (indicator octet first) per read.
        case packet
    }

    let name: String
    private let fd: Int32
    private let isSocket: Bool
    private let writeStyle: POSIX.WriteStyle
    private let readMode: ReadMode
    private let wake: (read: Int32, write: Int32)

    private struct State {
        var started = false
        /// Set once the transport is closing for any reason; sends fail from then on.
        var closing = false
        /// `close()` was called by this side: `onClose(nil)`, no more frames delivered.
        var closedLocally = false
        /// The first failure that started closing (a write error), reported unless closed locally.
        var failure: HCITransportError?
        /// Set once the descriptors are closed.
        var finished = false
        /// Called with the frames of one read (one frame per read in `.packet` mode).
        var onFrames: (@Sendable ([H4Frame]) -> Void)?
        var onClose: (@Sendable (HCITransportError?) -> Void)?
    }

    private let state = LockedValue(State())

    /// The descriptors this object owns (its own and the wake channel's), for tests of their flags.
    var ownedDescriptors: [Int32] { [fd, wake.read, wake.write] }
    /// Held for each whole frame written and while closing the descriptor.
    private let writeLock = LockedValue(())
    /// Whether `fd` is still open; guards `shutdown` against a descriptor already closed (and maybe reused).
    private let descriptorOpen = LockedValue(true)

    /// Takes ownership of `fd`.
    init(
        fd: Int32, name: String, isSocket: Bool, writeStyle: POSIX.WriteStyle, readMode: ReadMode
    ) throws(HCITransportError) {
        guard let wake = POSIX.makeWakePipe() else {
            let reason = POSIX.lastErrorText
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "\(name): cannot create the reader's wake pipe: \(reason)")
        }
        self.fd = fd
        self.name = name
        self.isSocket = isSocket
        self.writeStyle = writeStyle
        self.readMode = readMode
        self.wake = wake
    }

    deinit {
        // Only reachable when never started (a started reader thread keeps the core alive).
        closeDescriptors()
    }

    func start(
        onFrames: @escaping @Sendable ([H4Frame]) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        let refusal: HCITransportError? = state.withLock { state in
            if state.started { return HCITransportError(.alreadyStarted, "\(name): start was already called") }
            if state.closing { return HCITransportError(.closed, "\(name): the transport is closed") }
            state.started = true
            state.onFrames = onFrames
            state.onClose = onClose
            return nil
        }
        if let refusal { throw refusal }
        let started = DetachedThread.spawn { [self] in self.readLoop() }
        if !started {
            let reason = POSIX.lastErrorText
            state.withLock { $0.started = false; $0.onFrames = nil; $0.onClose = nil }
            throw HCITransportError(.ioError, "\(name): cannot start the reader thread: \(reason)")
        }
    }

    func send(_ frame: H4Frame) throws(HCITransportError) {
        try writeWhole(frame.encode())
    }

    /// One write for the whole batch on a byte stream; one write per frame where each write is one packet (the HCI
    /// user channel).
    func send(frames: [H4Frame]) throws(HCITransportError) {
        if case .packet = readMode {
            for frame in frames { try writeWhole(frame.encode()) }
        } else if frames.count == 1 {
            try writeWhole(frames[0].encode())
        } else if !frames.isEmpty {
            try writeWhole(H4Framer.encode(frames))
        }
    }

    private func writeWhole(_ bytes: [UInt8]) throws(HCITransportError) {
        if state.withLock({ $0.closing }) {
            throw HCITransportError(.closed, "\(name): the transport is closed")
        }
        let result: HCITransportError? = writeLock.whileLocked {
            guard descriptorOpen.withLock({ $0 }) else {
                return HCITransportError(.closed, "\(name): the transport is closed")
            }
            guard let code = POSIX.writeAll(fd, bytes, style: writeStyle) else { return nil }
            if code == EPIPE || code == ECONNRESET || code == EIO {
                return HCITransportError(.closedByPeer, "\(name): the peer closed the connection (\(POSIX.errorText(code)))")
            }
            return HCITransportError(.ioError, "\(name): write failed: \(POSIX.errorText(code))")
        }
        if let result {
            fail(result)
            throw result
        }
    }

    func close() {
        let started: Bool? = state.withLock { state in
            if state.closing && state.closedLocally { return nil }
            let wasClosing = state.closing
            state.closing = true
            state.closedLocally = true
            return wasClosing ? true : state.started
        }
        guard let started else { return }
        if started {
            interruptReader()
        } else {
            closeDescriptors()
        }
    }

    /// Starts closing because of `error` (a failed write): the reader reports it unless closed locally first.
    private func fail(_ error: HCITransportError) {
        let started: Bool = state.withLock { state in
            if state.failure == nil { state.failure = error }
            state.closing = true
            return state.started
        }
        if started { interruptReader() } else { closeDescriptors() }
    }

    /// Unblocks the reader (and any writer blocked on a full socket buffer).
    private func interruptReader() {
        descriptorOpen.withLock { open in
            guard open else { return }
            if isSocket { _ = shutdown(fd, Int32(SHUT_RDWR)) }
            var one: UInt8 = 1
            _ = write(wake.write, &one, 1)
        }
    }

    /// Closes the descriptor and the wake pipe, once, after any write in progress.
    private func closeDescriptors() {
        writeLock.whileLocked {
            descriptorOpen.withLock { open in
                guard open else { return }
                open = false
                WakeablePoll.close(fd, wake: wake)
            }
        }
        state.withLock { $0.finished = true }
    }

    // MARK: Reader thread

    private func readLoop() {
        let reason = readUntilEnd()
        let (onClose, report): ((@Sendable (HCITransportError?) -> Void)?, HCITransportError?) = state.withLock { state in
            state.closing = true
            let report = state.closedLocally ? nil : (state.failure ?? reason)
            let callback = state.onClose
            state.onClose = nil
            state.onFrames = nil
            return (callback, report)
        }
        closeDescriptors()
        onClose?(report)
    }

    /// Reads until the stream ends; returns why (nil when woken by `close()`).
    private func readUntilEnd() -> HCITransportError? {
        var framer: H4Framer?
        if case .stream(let cap) = readMode { framer = H4Framer(maximumPayloadLength: cap) }
        var buffer = [UInt8](repeating: 0, count: 65_536 + 8)
        var packetIndex = 0
        // A stream socket is read without polling first: `close()` shuts it down, which ends a blocked read, so a
        // wake-up costs one system call instead of two (issue 31). Other descriptors wait in `poll` with the wake pipe.
        let readsDirectly = isSocket && framer != nil
        while true {
            if !readsDirectly {
                let events: Int16
                switch WakeablePoll.wait(fd: fd, wake: wake.read) {
                case .failed(let code):
                    return HCITransportError(.ioError, "\(name): poll failed: \(POSIX.errorText(code))")
                case .woken:
                    return nil
                case .ready(let revents):
                    events = revents
                }
                if state.withLock({ $0.closedLocally }) { return nil }
                if events & Int16(POLLNVAL) != 0 {
                    return HCITransportError(.ioError, "\(name): the descriptor is no longer valid")
                }
                guard events != 0 else { continue }
            }
            let count = buffer.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress, raw.count) }
            if count <= 0, state.withLock({ $0.closedLocally }) { return nil }
            if count < 0 {
                let code = errno
                if code == EINTR || code == EAGAIN || code == EWOULDBLOCK { continue }
                if code == ECONNRESET || code == EIO || code == EPIPE {
                    return HCITransportError(.closedByPeer, "\(name): the peer closed the connection (\(POSIX.errorText(code)))")
                }
                return HCITransportError(.ioError, "\(name): read failed: \(POSIX.errorText(code))")
            }
            if count == 0 {
                let pending = framer?.bufferedByteCount ?? 0
                let detail = pending > 0 ? " in the middle of a frame (\(pending) bytes of it received)" : ""
                return HCITransportError(.closedByPeer, "\(name): the peer closed the connection\(detail)")
            }
            let received = buffer[0..<min(count, buffer.count)]
            if var current = framer {
                let frames = current.append(received)
                framer = current
                if !frames.isEmpty { deliver(frames) }
                if let failure = current.failure {
                    return HCITransportError(.framingError, "\(name): poisoned H4 stream: \(failure.description)")
                }
            } else {
                do {
                    let frame = try H4Frame(decoding: Array(received))
                    deliver([frame])
                } catch {
                    return HCITransportError(
                        .framingError, "\(name): packet \(packetIndex) is not one H4 frame: \(error.description)")
                }
                packetIndex &+= 1
            }
        }
    }

    private func deliver(_ frames: [H4Frame]) {
        guard let onFrames = state.withLock({ $0.closedLocally ? nil : $0.onFrames }) else { return }
        onFrames(frames)
    }
}

/// A transport that is one ``DescriptorTransportCore`` (``SocketH4Transport``, ``SerialH4Transport``,
/// ``HCIUserChannelTransport``; H4 packets, Core 5.4 Vol 4 Part A §2): its name, `start`, `send` and `close` are the
/// core's, so the transports differ only in how they open their descriptor.
protocol DescriptorBackedTransport: HCITransport {
    var core: DescriptorTransportCore { get }
}

extension DescriptorBackedTransport {
    public var name: String { core.name }

    public func start(
        onFrame: @escaping @Sendable (H4Frame) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        try core.start(onFrames: { frames in for frame in frames { onFrame(frame) } }, onClose: onClose)
    }

    public func start(
        onFrames: @escaping @Sendable ([H4Frame]) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        try core.start(onFrames: onFrames, onClose: onClose)
    }

    public func send(_ frame: H4Frame) throws(HCITransportError) {
        try core.send(frame)
    }

    public func send(frames: [H4Frame]) throws(HCITransportError) {
        try core.send(frames: frames)
    }

    public func close() {
        core.close()
    }
}

/// The wait of a reader or accept thread: `poll` on its descriptor and on the wake pipe that `close()` writes to,
/// so a blocked thread can be ended without closing a descriptor under it.
enum WakeablePoll {
    enum Outcome {
        /// The descriptor's `revents` (0 when only spurious).
        case ready(Int16)
        /// The wake pipe became readable: the owner is closing.
        case woken
        /// `poll` failed with this errno (other than EINTR, which is retried).
        case failed(Int32)
    }

    static func wait(fd: Int32, wake: Int32) -> Outcome {
        while true {
            var descriptors = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            if poll(&descriptors, 2, -1) < 0 {
                let code = errno
                if code == EINTR { continue }
                return .failed(code)
            }
            if descriptors[1].revents != 0 { return .woken }
            return .ready(descriptors[0].revents)
        }
    }

    /// Closes the descriptor and both ends of its wake pipe (the caller makes sure it happens once).
    static func close(_ fd: Int32, wake: (read: Int32, write: Int32)) {
        POSIX.closeDescriptor(fd)
        POSIX.closeDescriptor(wake.read)
        POSIX.closeDescriptor(wake.write)
    }
}
