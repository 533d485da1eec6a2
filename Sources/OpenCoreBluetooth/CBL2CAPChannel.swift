public import Foundation
import BluetoothRuntime

/// An open L2CAP LE credit-based channel (Core 5.4 Vol 3 Part A §10.1) with Foundation streams, as
/// CoreBluetooth's `CBL2CAPChannel`. Keep a strong reference: releasing the channel closes it.
///
/// `inputStream` yields the received SDUs' bytes in order; `outputStream` sends what is written (as many bytes as
/// the channel's credits allow; `hasSpaceAvailable` tells when more fit). Linux Foundation has no run-loop
/// sources for custom streams: stream delegate events (`openCompleted`, `hasBytesAvailable`,
/// `hasSpaceAvailable`, `endEncountered`) are delivered on the owning manager's queue, whether or not the stream
/// was scheduled in a run loop.
public class CBL2CAPChannel: NSObject, @unchecked Sendable {
    let backend: any CBL2CAPChannelBackend
    private let _peer: CBPeer
    private let input: L2CAPInputStream
    private let output: L2CAPOutputStream

    init(backend: any CBL2CAPChannelBackend, peer: CBPeer, queue: DispatchQueue) {
        self.backend = backend
        self._peer = peer
        input = L2CAPInputStream(queue: queue)
        output = L2CAPOutputStream(queue: queue, backend: backend)
        super.init()
        let streams = StreamPair(input: input, output: output)
        backend.start { event in
            queue.async {
                switch event {
                case .received(let bytes): streams.input.received(bytes)
                case .canSend: streams.output.canSend()
                case .closed:
                    streams.input.ended()
                    streams.output.ended()
                }
            }
        }
    }

    deinit {
        backend.close()
    }

    public var peer: CBPeer! { _peer }
    public var inputStream: InputStream! { input }
    public var outputStream: OutputStream! { output }
    public var psm: CBL2CAPPSM { backend.psm }
}

private struct StreamPair: @unchecked Sendable {
    let input: L2CAPInputStream
    let output: L2CAPOutputStream
}

private struct StreamBox: @unchecked Sendable {
    let stream: Stream
}

/// Tells `stream`'s delegate of `event` on `queue` (the manager's), where the channel's streams are used: Streams
/// are not Sendable on Linux, hence the box.
private func deliver(_ event: Stream.Event, of stream: Stream, on queue: DispatchQueue) {
    let box = StreamBox(stream: stream)
    queue.async {
        #if canImport(Darwin)
        box.stream.delegate?.stream?(box.stream, handle: event)
        #else
        box.stream.delegate?.stream(box.stream, handle: event)
        #endif
    }
}

/// The receiving side of a channel: a byte buffer fed by received SDUs; used on the manager's queue.
final class L2CAPInputStream: InputStream {
    private let queue: DispatchQueue
    private let buffer = LockedValue<(bytes: [UInt8], status: Stream.Status, ended: Bool)>(([], .notOpen, false))
    private weak var _delegate: (any StreamDelegate)?

    init(queue: DispatchQueue) {
        self.queue = queue
        super.init(data: Data())
    }

    override var delegate: (any StreamDelegate)? {
        get { _delegate }
        set { _delegate = newValue }
    }

    override var streamStatus: Stream.Status { buffer.withLock { $0.status } }
    override var streamError: (any Error)? { nil }
    override var hasBytesAvailable: Bool { buffer.withLock { !$0.bytes.isEmpty } }

    override func open() {
        let (pending, ended) = buffer.withLock { state -> (Bool, Bool) in
            state.status = state.ended && state.bytes.isEmpty ? .atEnd : .open
            return (!state.bytes.isEmpty, state.ended)
        }
        send(.openCompleted)
        if pending { send(.hasBytesAvailable) } else if ended { send(.endEncountered) }
    }

    override func close() { buffer.withLock { $0.status = .closed } }

    override func read(_ target: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        buffer.withLock { state in
            guard state.status == .open || state.status == .atEnd else { return -1 }
            let count = min(max(0, length), state.bytes.count)
            for index in 0..<count { target[index] = state.bytes[index] }
            state.bytes.removeFirst(count)
            if state.bytes.isEmpty && state.ended { state.status = .atEnd }
            return count
        }
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    #if canImport(Darwin)
    override func property(forKey key: Stream.PropertyKey) -> Any? { nil }
    override func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool { false }
    #else
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    #endif

    /// On the queue.
    func received(_ bytes: [UInt8]) {
        let open = buffer.withLock { state -> Bool in
            state.bytes += bytes
            return state.status == .open
        }
        if open { send(.hasBytesAvailable) }
    }

    /// On the queue.
    func ended() {
        let report = buffer.withLock { state -> Bool in
            state.ended = true
            if state.bytes.isEmpty && state.status == .open { state.status = .atEnd; return true }
            return false
        }
        if report { send(.endEncountered) }
    }

    private func send(_ event: Stream.Event) { deliver(event, of: self, on: queue) }
}

/// The sending side of a channel: writes go to the channel as credits allow.
final class L2CAPOutputStream: OutputStream {
    private let queue: DispatchQueue
    private let backend: (any CBL2CAPChannelBackend)?
    private let state = LockedValue<(status: Stream.Status, space: Bool)>((.notOpen, true))
    private weak var _delegate: (any StreamDelegate)?

    init(queue: DispatchQueue, backend: any CBL2CAPChannelBackend) {
        self.queue = queue
        self.backend = backend
        super.init(toMemory: ())
    }

    required init(toMemory: ()) {
        queue = DispatchQueue.main
        backend = nil
        super.init(toMemory: ())
    }

    override var delegate: (any StreamDelegate)? {
        get { _delegate }
        set { _delegate = newValue }
    }

    override var streamStatus: Stream.Status { state.withLock { $0.status } }
    override var streamError: (any Error)? { nil }
    override var hasSpaceAvailable: Bool { state.withLock { $0.status == .open && $0.space } }

    override func open() {
        let space = state.withLock { state -> Bool in
            if state.status == .notOpen { state.status = .open }
            return state.space && state.status == .open
        }
        send(.openCompleted)
        if space { send(.hasSpaceAvailable) }
    }

    override func close() { state.withLock { $0.status = .closed } }

    override func write(_ source: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        guard state.withLock({ $0.status == .open }) else { return -1 }
        guard length > 0 else { return 0 }
        let bytes = Array(UnsafeBufferPointer(start: source, count: length))
        let accepted = max(0, min(length, backend?.send(bytes) ?? -1))
        state.withLock { $0.space = accepted == length }
        return accepted
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) {}
    #if canImport(Darwin)
    override func property(forKey key: Stream.PropertyKey) -> Any? { nil }
    override func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool { false }
    #else
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    #endif

    /// On the queue.
    func canSend() {
        let report = state.withLock { state -> Bool in
            state.space = true
            return state.status == .open
        }
        if report { send(.hasSpaceAvailable) }
    }

    /// On the queue.
    func ended() {
        let report = state.withLock { state -> Bool in
            guard state.status == .open else { return false }
            state.status = .atEnd
            return true
        }
        if report { send(.endEncountered) }
    }

    private func send(_ event: Stream.Event) { deliver(event, of: self, on: queue) }
}
