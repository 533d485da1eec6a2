public import Foundation
import BluetoothRuntime
import DequeModule

/// An open L2CAP LE credit-based channel (Core 5.4 Vol 3 Part A §10.1) with Foundation streams, as
/// CoreBluetooth's `CBL2CAPChannel`. Keep a strong reference: releasing the channel closes it.
///
/// `inputStream` yields the received SDUs' bytes in order; `outputStream` sends what is written (as many bytes as
/// the channel's credits allow; `hasSpaceAvailable` tells when more fit). As on Apple systems, a stream's delegate
/// events (`openCompleted`, `hasBytesAvailable`, `hasSpaceAvailable`, `endEncountered`) are delivered on the run
/// loops the stream is scheduled in (`schedule(in:forMode:)`), while they run in one of the scheduled modes; a stream
/// scheduled nowhere delivers no events (they wait, coalesced, until it is scheduled), and reading or writing by
/// polling `hasBytesAvailable` / `hasSpaceAvailable` works either way. `remove(from:forMode:)` and `close()` stop
/// delivery. The thread of the run loop must keep running it (`RunLoop.current.run()`, `run(mode:before:)`): a
/// scheduled stream keeps `run(mode:before:)` from returning at once for lack of sources, as on Apple systems.
public class CBL2CAPChannel: NSObject, @unchecked Sendable {
    let backend: any CBL2CAPChannelBackend
    private let _peer: CBPeer
    private let input: L2CAPInputStream
    private let output: L2CAPOutputStream

    init(backend: any CBL2CAPChannelBackend, peer: CBPeer, queue: DispatchQueue) {
        self.backend = backend
        self._peer = peer
        input = L2CAPInputStream()
        output = L2CAPOutputStream(backend: backend)
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

    /// The device at the other end: a `CBPeripheral` (central side) or a `CBCentral` (peripheral manager side).
    public var peer: CBPeer! { _peer }
    /// The stream of received bytes, SDU after SDU.
    public var inputStream: InputStream! { input }
    /// The stream whose written bytes are sent on the channel.
    public var outputStream: OutputStream! { output }
    /// The Protocol/Service Multiplexer the channel was opened on.
    public var psm: CBL2CAPPSM { backend.psm }
}

private struct StreamPair: @unchecked Sendable {
    let input: L2CAPInputStream
    let output: L2CAPOutputStream
}

/// A run loop and a mode, carried into a timer's block (RunLoop is not Sendable on Linux; its CF calls are
/// thread-safe).
private struct RunLoopTarget: @unchecked Sendable {
    let loop: RunLoop
    let mode: RunLoop.Mode
}

/// The stream delegate, held weakly as Foundation does, readable from any thread.
private struct WeakDelegate {
    weak var delegate: (any StreamDelegate)?
}

/// Where a channel stream's delegate events go (the run-loop client side of Foundation streams, as CFStream does
/// it on Apple systems, for the L2CAP CoC streams of Core 5.4 Vol 3 Part A §10.1): the run loops and modes the
/// stream is scheduled in, and the events not yet delivered.
///
/// Events wait in `pending` (each kind once, in order of first arrival) until a scheduled run loop runs one of the
/// stream's modes. Waking a run loop: a one-shot `Timer` added to it in that mode (adding a timer re-arms the run
/// loop's timer source, which wakes a thread sleeping in `run(mode:before:)`; `RunLoop.perform(inModes:block:)` does
/// not wake it on Linux). At most one such timer is outstanding per run loop and mode. Each scheduled mode also holds
/// a keep-alive timer (never firing) so that `run(mode:before:)` does not return at once for an empty mode. The
/// first run loop to fire delivers everything pending; a timer of a mode the stream was removed from delivers
/// nothing. State behind a lock; delegates are called on the run loop's thread, outside the lock.
final class StreamRunLoopEvents: @unchecked Sendable {
    private struct Slot {
        let keepAlive: Timer
        var armed = false
    }

    private struct Entry {
        let loop: RunLoop
        var modes: [RunLoop.Mode: Slot]
    }

    private struct State {
        weak var owner: Stream?
        var delegate = WeakDelegate()
        var entries: [Entry] = []
        var pending: [Stream.Event] = []
        var closed = false

        /// Marks every scheduled run loop and mode without an outstanding wake-up as woken, and returns them.
        mutating func arm() -> [RunLoopTarget] {
            guard !pending.isEmpty, !closed else { return [] }
            var targets: [RunLoopTarget] = []
            for index in entries.indices {
                for (mode, slot) in entries[index].modes where !slot.armed {
                    entries[index].modes[mode]?.armed = true
                    targets.append(RunLoopTarget(loop: entries[index].loop, mode: mode))
                }
            }
            return targets
        }
    }

    private let state = LockedValue(State())

    /// `owner` is the stream whose delegate is told; held weakly.
    func attach(_ owner: Stream) {
        state.withLock { $0.owner = owner }
    }

    var delegate: (any StreamDelegate)? {
        get { state.withLock { $0.delegate.delegate } }
        set { state.withLock { $0.delegate.delegate = newValue } }
    }

    /// Queues `event` for the stream's delegate and wakes the scheduled run loops (none: it waits).
    func post(_ event: Stream.Event) {
        let targets = state.withLock { state -> [RunLoopTarget] in
            guard !state.closed else { return [] }
            if !state.pending.contains(event) { state.pending.append(event) }
            return state.arm()
        }
        wake(targets)
    }

    func schedule(in loop: RunLoop, forMode mode: RunLoop.Mode) {
        let added = state.withLock { state -> (keepAlive: Timer?, targets: [RunLoopTarget]) in
            guard !state.closed else { return (nil, []) }
            let index: Int
            if let found = state.entries.firstIndex(where: { $0.loop === loop }) {
                index = found
            } else {
                state.entries.append(Entry(loop: loop, modes: [:]))
                index = state.entries.count - 1
            }
            guard state.entries[index].modes[mode] == nil else { return (nil, []) }
            let keepAlive = Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
            state.entries[index].modes[mode] = Slot(keepAlive: keepAlive)
            return (keepAlive, state.arm())
        }
        if let keepAlive = added.keepAlive { loop.add(keepAlive, forMode: mode) }
        wake(added.targets)
    }

    func remove(from loop: RunLoop, forMode mode: RunLoop.Mode) {
        let removed = state.withLock { state -> Slot? in
            guard let index = state.entries.firstIndex(where: { $0.loop === loop }) else { return nil }
            let slot = state.entries[index].modes.removeValue(forKey: mode)
            if state.entries[index].modes.isEmpty { state.entries.remove(at: index) }
            return slot
        }
        removed?.keepAlive.invalidate()
    }

    /// The stream was closed: no more events, out of every run loop (as CFStream detaches a closed stream).
    func close() {
        let entries = state.withLock { state -> [Entry] in
            state.closed = true
            state.pending = []
            defer { state.entries = [] }
            return state.entries
        }
        for entry in entries { for slot in entry.modes.values { slot.keepAlive.invalidate() } }
    }

    deinit {
        for entry in state.load().entries { for slot in entry.modes.values { slot.keepAlive.invalidate() } }
    }

    private func wake(_ targets: [RunLoopTarget]) {
        for target in targets {
            let timer = Timer(fire: Date(), interval: 0, repeats: false) { [self] _ in deliver(on: target) }
            target.loop.add(timer, forMode: target.mode)
        }
    }

    /// On `target`'s run loop: tells the delegate of everything pending, if the stream is still scheduled there.
    private func deliver(on target: RunLoopTarget) {
        let taken = state.withLock { state -> (owner: Stream?, delegate: (any StreamDelegate)?, events: [Stream.Event]) in
            guard let index = state.entries.firstIndex(where: { $0.loop === target.loop }),
                state.entries[index].modes[target.mode] != nil
            else { return (nil, nil, []) }
            state.entries[index].modes[target.mode]?.armed = false
            defer { state.pending = [] }
            return (state.owner, state.delegate.delegate, state.pending)
        }
        guard let owner = taken.owner else { return }
        for event in taken.events where Self.stillTrue(event, of: owner) {
            guard owner.streamStatus != .closed else { return }
            #if canImport(Darwin)
            taken.delegate?.stream?(owner, handle: event)
            #else
            taken.delegate?.stream(owner, handle: event)
            #endif
        }
    }

    /// Bytes read or space used up (by polling) since the event was posted make it stale.
    private static func stillTrue(_ event: Stream.Event, of stream: Stream) -> Bool {
        switch event {
        case .hasBytesAvailable: (stream as? InputStream)?.hasBytesAvailable ?? false
        case .hasSpaceAvailable: (stream as? OutputStream)?.hasSpaceAvailable ?? false
        default: true
        }
    }
}

/// The receiving side of a channel: a byte buffer fed by received SDUs (Core 5.4 Vol 3 Part A §10.1), events to
/// the run loops it is scheduled in.
final class L2CAPInputStream: InputStream {
    private let events = StreamRunLoopEvents()
    private let buffer = LockedValue<(bytes: Deque<UInt8>, status: Stream.Status, ended: Bool)>(([], .notOpen, false))

    init() {
        super.init(data: Data())
        events.attach(self)
    }

    override var delegate: (any StreamDelegate)? {
        get { events.delegate }
        set { events.delegate = newValue }
    }

    override var streamStatus: Stream.Status { buffer.withLock { $0.status } }
    override var streamError: (any Error)? { nil }
    override var hasBytesAvailable: Bool { buffer.withLock { !$0.bytes.isEmpty } }

    override func open() {
        let (pending, ended) = buffer.withLock { state -> (Bool, Bool) in
            guard state.status == .notOpen else { return (false, false) }
            state.status = state.ended && state.bytes.isEmpty ? .atEnd : .open
            return (!state.bytes.isEmpty, state.ended)
        }
        events.post(.openCompleted)
        if pending { events.post(.hasBytesAvailable) } else if ended { events.post(.endEncountered) }
    }

    override func close() {
        buffer.withLock { $0.status = .closed }
        events.close()
    }

    /// Reads up to `length` bytes; when bytes remain, another `hasBytesAvailable` follows (as CFStream signals);
    /// when this read took the last bytes of a channel that has closed, `endEncountered` follows.
    override func read(_ target: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        let (count, next) = buffer.withLock { state -> (Int, Stream.Event?) in
            guard state.status == .open || state.status == .atEnd else { return (-1, nil) }
            let count = min(max(0, length), state.bytes.count)
            for index in 0..<count { target[index] = state.bytes[index] }
            state.bytes.removeFirst(count)
            guard state.bytes.isEmpty else { return (count, .hasBytesAvailable) }
            guard state.ended, state.status == .open else { return (count, nil) }
            state.status = .atEnd
            return (count, .endEncountered)
        }
        if let next { events.post(next) }
        return count
    }

    override func getBuffer(_ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length: UnsafeMutablePointer<Int>) -> Bool {
        false
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.schedule(in: aRunLoop, forMode: mode) }
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.remove(from: aRunLoop, forMode: mode) }
    #if canImport(Darwin)
    override func property(forKey key: Stream.PropertyKey) -> Any? { nil }
    override func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool { false }
    #else
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    #endif

    /// On the manager's queue.
    func received(_ bytes: [UInt8]) {
        let open = buffer.withLock { state -> Bool in
            guard state.status != .closed else { return false }
            state.bytes.append(contentsOf: bytes)
            return state.status == .open
        }
        if open { events.post(.hasBytesAvailable) }
    }

    /// On the manager's queue.
    func ended() {
        let report = buffer.withLock { state -> Bool in
            state.ended = true
            if state.bytes.isEmpty && state.status == .open { state.status = .atEnd; return true }
            return false
        }
        if report { events.post(.endEncountered) }
    }
}

/// The sending side of a channel: writes go to the channel as credits allow (Core 5.4 Vol 3 Part A §10.1), events
/// to the run loops it is scheduled in.
final class L2CAPOutputStream: OutputStream {
    private let events = StreamRunLoopEvents()
    private let backend: (any CBL2CAPChannelBackend)?
    private let state = LockedValue<(status: Stream.Status, space: Bool)>((.notOpen, true))

    init(backend: any CBL2CAPChannelBackend) {
        self.backend = backend
        super.init(toMemory: ())
        events.attach(self)
    }

    required init(toMemory: ()) {
        backend = nil
        super.init(toMemory: ())
        events.attach(self)
    }

    override var delegate: (any StreamDelegate)? {
        get { events.delegate }
        set { events.delegate = newValue }
    }

    override var streamStatus: Stream.Status { state.withLock { $0.status } }
    override var streamError: (any Error)? { nil }
    override var hasSpaceAvailable: Bool { state.withLock { $0.status == .open && $0.space } }

    override func open() {
        let (opened, space) = state.withLock { state -> (Bool, Bool) in
            guard state.status == .notOpen else { return (false, false) }
            state.status = .open
            return (true, state.space)
        }
        guard opened else { return }
        events.post(.openCompleted)
        if space { events.post(.hasSpaceAvailable) }
    }

    override func close() {
        state.withLock { $0.status = .closed }
        events.close()
    }

    /// Sends what the channel takes now; when all of it was taken and there is room, another `hasSpaceAvailable`
    /// follows (as CFStream signals), else one follows when credits return.
    override func write(_ source: UnsafePointer<UInt8>, maxLength length: Int) -> Int {
        guard state.withLock({ $0.status == .open }) else { return -1 }
        guard length > 0 else { return 0 }
        let bytes = Array(UnsafeBufferPointer(start: source, count: length))
        let accepted = max(0, min(length, backend?.send(bytes) ?? -1))
        let space = state.withLock { state -> Bool in
            state.space = accepted == length
            return state.space && state.status == .open
        }
        if space { events.post(.hasSpaceAvailable) }
        return accepted
    }

    override func schedule(in aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.schedule(in: aRunLoop, forMode: mode) }
    override func remove(from aRunLoop: RunLoop, forMode mode: RunLoop.Mode) { events.remove(from: aRunLoop, forMode: mode) }
    #if canImport(Darwin)
    override func property(forKey key: Stream.PropertyKey) -> Any? { nil }
    override func setProperty(_ property: Any?, forKey key: Stream.PropertyKey) -> Bool { false }
    #else
    override func property(forKey key: Stream.PropertyKey) -> AnyObject? { nil }
    override func setProperty(_ property: AnyObject?, forKey key: Stream.PropertyKey) -> Bool { false }
    #endif

    /// On the manager's queue.
    func canSend() {
        let report = state.withLock { state -> Bool in
            state.space = true
            return state.status == .open
        }
        if report { events.post(.hasSpaceAvailable) }
    }

    /// On the manager's queue.
    func ended() {
        let report = state.withLock { state -> Bool in
            guard state.status == .open else { return false }
            state.status = .atEnd
            return true
        }
        if report { events.post(.endEncountered) }
    }
}
