import BluetoothRuntime
import Dispatch
import Foundation
import HCI
import HCITransport
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Collects what a transport delivers, and lets a test wait (bounded, suspending) for frames or the close.
final class Collector: Sendable {
    struct Seen {
        var frames: [H4Frame] = []
        /// `.some(nil)` = closed locally, `.some(error)` = closed with an error.
        var close: HCITransportError??
        var closeCount = 0
        var frameThreads: Set<UInt> = []
        /// The size of each delivery (1 each with `start`, a read's frames each with `startBatched`).
        var batchSizes: [Int] = []
    }

    let seen = LockedValue(Seen())

    var onFrame: @Sendable (H4Frame) -> Void {
        { [seen] frame in
            let thread = UInt(pthread_self())
            seen.withLock { $0.frames.append(frame); $0.frameThreads.insert(thread) }
        }
    }

    var onClose: @Sendable (HCITransportError?) -> Void {
        { [seen] error in
            seen.withLock { $0.close = .some(error); $0.closeCount += 1 }
        }
    }

    func start(_ transport: any HCITransport) throws {
        try transport.start(onFrame: onFrame, onClose: onClose)
    }

    /// Starts with the batch form: each call's frames are recorded as one batch.
    func startBatched(_ transport: any HCITransport) throws {
        let seen = seen
        try transport.start(onFrames: { frames in
            let thread = UInt(pthread_self())
            seen.withLock { $0.frames += frames; $0.frameThreads.insert(thread); $0.batchSizes.append(frames.count) }
        }, onClose: onClose)
    }

    var batchSizes: [Int] { seen.withLock { $0.batchSizes } }

    var frames: [H4Frame] { seen.withLock { $0.frames } }

    /// Waits until `count` frames arrived (or the transport closed), at most `seconds`.
    @discardableResult
    func waitForFrames(_ count: Int, seconds: Double = 10) async -> [H4Frame] {
        _ = await poll(within: .seconds(seconds), every: .milliseconds(2)) {
            seen.withLock { $0.frames.count >= count || $0.close != nil }
        }
        return frames
    }

    /// Waits for `onClose`, at most `seconds`; nil if it did not come.
    func waitForClose(seconds: Double = 10) async -> HCITransportError?? {
        _ = await poll(within: .seconds(seconds), every: .milliseconds(2)) { seen.withLock { $0.close != nil } }
        return seen.withLock { $0.close }
    }
}

/// A deterministic mix of commands, events and ACL data packets of varied lengths.
func sampleFrames(count: Int, seed: UInt64) -> [H4Frame] {
    var generator = SeededGenerator(seed: seed)
    return (0..<count).map { index in
        switch index % 3 {
        case 0:
            let parameters = generator.bytes(Int.random(in: 0...255, using: &generator))
            return H4Frame(type: .command, packet: [UInt8(index & 0xFF), 0x20, UInt8(parameters.count)] + parameters)
        case 1:
            let parameters = generator.bytes(Int.random(in: 0...255, using: &generator))
            return H4Frame(type: .event, packet: [0x3E, UInt8(parameters.count)] + parameters)
        default:
            let data = generator.bytes(Int.random(in: 0...600, using: &generator))
            return H4Frame(
                type: .aclData,
                packet: [0x40, 0x00, UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data)
        }
    }
}

/// A raw peer socket (code that does not use our transport), for writing and reading H4 bytes by hand.
final class RawPeer: Sendable {
    let fd: Int32
    /// Sockets are written with send(MSG_NOSIGNAL), anything else (a pty master) with write.
    let isSocket: Bool

    init(fd: Int32, isSocket: Bool = true) {
        self.fd = fd
        self.isSocket = isSocket
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Connects to a TCP port on 127.0.0.1.
    static func tcp(port: UInt16) throws -> RawPeer {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else { _ = Glibc.close(fd); throw PeerError("connect: \(errno)") }
        return RawPeer(fd: fd)
    }

    /// Connects to a UNIX stream socket.
    static func unix(path: String) throws -> RawPeer {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw PeerError("socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { _ = Glibc.close(fd); throw PeerError("connect: \(errno)") }
        return RawPeer(fd: fd)
    }

    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                isSocket ? send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) : Glibc.write(fd, $0.baseAddress, $0.count)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw PeerError("send: \(errno)")
            }
            offset += count
        }
    }

    /// Reads and deframes until `count` frames arrived (10 s read timeout). The blocking reads run on a thread of
    /// their own (TestSupport's `blockingWork`), not on the cooperative pool.
    func readFrames(_ count: Int) async throws -> [H4Frame] {
        try await blockingWork { [self] () throws(PeerError) in try readFramesBlocking(count) }
    }

    private func readFramesBlocking(_ count: Int) throws(PeerError) -> [H4Frame] {
        var framer = H4Framer()
        var frames: [H4Frame] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while frames.count < count {
            let received = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if received < 0, errno == EINTR { continue }
            guard received > 0 else { throw PeerError("read ended after \(frames.count) frames (\(received), errno \(errno))") }
            frames += framer.append(buffer[0..<received])
        }
        return frames
    }

    private let closed = LockedValue(false)

    /// Closes the descriptor once; later calls do nothing. A second `close(fd)` would close whatever descriptor
    /// another test of the parallel run was given that number meanwhile (a pty master, a transport's socket): the
    /// "transport closed under us" failures such a test then sees are not its own.
    func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if first { _ = Glibc.close(fd) }
    }
}

struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A unique short path under /tmp (sun_path holds 107 bytes).
func temporaryPath(_ suffix: String) -> String {
    testTemporaryPath("ocb-tt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))\(suffix)")
}

/// Waits for a value a callback stores, at most `seconds` (suspending).
final class Mailbox<Value: Sendable>: Sendable {
    private let values = LockedValue<[Value]>([])

    func put(_ value: Value) {
        values.withLock { $0.append(value) }
    }

    func take(seconds: Double = 10) async -> Value? {
        var taken: Value?
        _ = await poll(within: .seconds(seconds), every: .milliseconds(2)) {
            taken = values.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            return taken != nil
        }
        return taken
    }
}
