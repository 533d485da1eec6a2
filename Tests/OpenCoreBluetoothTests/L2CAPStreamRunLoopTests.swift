import BluetoothCore
import BluetoothRuntime
import Dispatch
import Foundation
import Testing
@testable import OpenCoreBluetooth

/// A thread running its run loop in `mode` (an app's stream thread), with a keep-alive timer of its own so the mode
/// is never empty. Each `run(mode:before:)` call lasts up to 10 s (a timer firing does not end it), so an event
/// that arrives within one call proves the stream woke the sleeping run loop; `runCalls` counts the calls that
/// returned. `stop()` invalidates the keep-alive and wakes the loop: once the streams are removed or closed, the mode
/// is empty and the thread ends.
final class RunLoopThread: @unchecked Sendable {
    private struct State {
        var loop: RunLoop?
        var keepAlive: Timer?
        var stopped = false
        var runCalls = 0
    }

    let mode: RunLoop.Mode
    private(set) var thread: Thread?
    private let state = LockedValue(State())
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init(mode: RunLoop.Mode = .default) {
        self.mode = mode
        let thread = Thread { [self] in
            let keepAlive = Timer(fire: .distantFuture, interval: 0, repeats: false) { _ in }
            RunLoop.current.add(keepAlive, forMode: mode)
            state.withLock { state in
                state.loop = RunLoop.current
                state.keepAlive = keepAlive
            }
            started.signal()
            while !state.withLock({ $0.stopped }) {
                _ = RunLoop.current.run(mode: mode, before: Date().addingTimeInterval(10))
                state.withLock { $0.runCalls += 1 }
            }
            finished.signal()
        }
        self.thread = thread
        thread.start()
        started.wait()
    }

    var loop: RunLoop? { state.withLock { $0.loop } }
    var runCalls: Int { state.withLock { $0.runCalls } }

    /// Runs `body` on the thread, from its run loop, and waits for it. Timers due now fire in order of their dates,
    /// so every wake-up a stream posted before this call has been handled when it returns.
    @discardableResult
    func sync<T>(_ body: @escaping () -> T) -> T? {
        guard let loop else { return nil }
        let done = DispatchSemaphore(value: 0)
        let result = LockedValue<T?>(nil)
        let work = UncheckedBox(value: body)
        let timer = Timer(fire: Date(), interval: 0, repeats: false) { _ in
            result.store(work.value())
            done.signal()
        }
        loop.add(timer, forMode: mode)
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return result.load()
    }

    /// Waits (up to 10 s, a barrier at a time) until `condition` holds.
    func waitUntil(_ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while !condition() {
            guard Date() < deadline else { return false }
            sync {}
        }
        return true
    }

    /// Ends the thread (once no stream is scheduled in it); true when it ended.
    @discardableResult
    func stop() -> Bool {
        let (loop, keepAlive) = state.withLock { state -> (RunLoop?, Timer?) in
            state.stopped = true
            return (state.loop, state.keepAlive)
        }
        keepAlive?.invalidate()
        loop?.add(Timer(fire: Date(), interval: 0, repeats: false) { _ in }, forMode: mode)
        return finished.wait(timeout: .now() + 10) == .success
    }
}

struct UncheckedBox<T>: @unchecked Sendable { let value: T }

/// A channel backend driven by the test: `inject` delivers an SDU, `grant` returns credits (`.canSend`), `end`
/// closes the channel; `send` takes up to the credits left.
private final class ScriptedChannel: CBL2CAPChannelBackend, @unchecked Sendable {
    let psm: CBL2CAPPSM = 0x0085
    let peer = CBBackendPeer(address: BluetoothAddress(0x0A_1C_00_00_0C_0C, type: .public))
    private let state = LockedValue<(sink: (@Sendable (CBL2CAPChannelBackendEvent) -> Void)?, sent: [UInt8], credits: Int, closed: Bool)>((nil, [], 0, false))

    init(credits: Int) { state.withLock { $0.credits = credits } }

    var sent: [UInt8] { state.withLock { $0.sent } }
    var isClosed: Bool { state.withLock { $0.closed } }

    func start(_ events: @escaping @Sendable (CBL2CAPChannelBackendEvent) -> Void) { state.withLock { $0.sink = events } }

    func send(_ bytes: [UInt8]) -> Int {
        state.withLock { state in
            let count = min(bytes.count, state.credits)
            state.sent += bytes.prefix(count)
            state.credits -= count
            return count
        }
    }

    func close() { state.withLock { $0.closed = true } }

    func inject(_ bytes: [UInt8]) { state.load().sink?(.received(bytes)) }

    func grant(_ credits: Int) {
        state.withLock { $0.credits += credits }
        state.load().sink?(.canSend)
    }

    func end() { state.load().sink?(.closed) }
}

/// One delegate event as seen by the recorder: which stream, which event, and where it ran.
private struct StreamEventRecord: Equatable {
    var input: Bool
    var event: Stream.Event
    var onThread: Bool
    var onLoop: Bool
}

/// Records stream events with the thread and run loop they arrived on; reads `readSize` bytes per
/// `hasBytesAvailable` and writes one chunk of `outgoing` per `hasSpaceAvailable` (no loops: the streams' repeated
/// events must carry the transfer).
private final class StreamRecorder: NSObject, StreamDelegate, @unchecked Sendable {
    private struct State {
        var records: [StreamEventRecord] = []
        var received: [UInt8] = []
        var written = 0
    }

    private let host: RunLoopThread
    private let readSize: Int
    private let outgoing: [UInt8]
    private let chunk: Int
    private let state = LockedValue(State())

    init(host: RunLoopThread, readSize: Int = 4096, outgoing: [UInt8] = [], chunk: Int = 100) {
        self.host = host
        self.readSize = readSize
        self.outgoing = outgoing
        self.chunk = chunk
    }

    var records: [StreamEventRecord] { state.withLock { $0.records } }
    var events: [Stream.Event] { records.map(\.event) }
    var received: [UInt8] { state.withLock { $0.received } }
    var written: Int { state.withLock { $0.written } }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        let record = StreamEventRecord(
            input: aStream is InputStream, event: eventCode,
            onThread: Thread.current === host.thread, onLoop: RunLoop.current === host.loop)
        state.withLock { $0.records.append(record) }
        if eventCode == .hasBytesAvailable, let input = aStream as? InputStream {
            var buffer = [UInt8](repeating: 0, count: readSize)
            let count = input.read(&buffer, maxLength: readSize)
            if count > 0 { state.withLock { $0.received += buffer.prefix(count) } }
        }
        if eventCode == .hasSpaceAvailable, let output = aStream as? OutputStream {
            let start = state.withLock { $0.written }
            guard start < outgoing.count else { return }
            let piece = Array(outgoing[start..<min(outgoing.count, start + chunk)])
            let count = output.write(piece, maxLength: piece.count)
            if count > 0 { state.withLock { $0.written += count } }
        }
    }
}

/// Stream events follow the run loops the streams are scheduled in (Foundation's stream client semantics, as
/// CoreBluetooth's CBL2CAPChannel streams on Apple systems; Core 5.4 Vol 3 Part A §10.1 for the channel).
@Suite struct L2CAPStreamRunLoopTests {
    private let queue = DispatchQueue(label: "l2cap-runloop-tests")

    private func makeChannel(credits: Int = 0) -> (CBL2CAPChannel, ScriptedChannel) {
        let backend = ScriptedChannel(credits: credits)
        let channel = CBL2CAPChannel(backend: backend, peer: CBPeer(peer: backend.peer), queue: queue)
        return (channel, backend)
    }

    /// Scheduled from the stream thread in `RunLoop.current`: `openCompleted` and `hasBytesAvailable` (input),
    /// `openCompleted` and `hasSpaceAvailable` (output) run on that thread and its run loop, inside the one
    /// `run(mode:before:)` call the thread was sleeping in when the bytes came (the stream woke it).
    @Test func eventsArriveOnTheScheduledRunLoopsThread() throws {
        let host = RunLoopThread()
        let (channel, backend) = makeChannel(credits: 100)
        let recorder = StreamRecorder(host: host)
        let input: InputStream = channel.inputStream
        let output: OutputStream = channel.outputStream
        input.delegate = recorder
        output.delegate = recorder
        let scheduledIn = host.sync { () -> Bool in
            input.schedule(in: .current, forMode: .default)
            output.schedule(in: .current, forMode: .default)
            input.open()
            output.open()
            return RunLoop.current === host.loop
        }
        #expect(scheduledIn == true)
        #expect(host.waitUntil { recorder.records.count >= 3 })
        let callsBefore = host.runCalls
        backend.inject([1, 2, 3])
        #expect(host.waitUntil { recorder.received.count == 3 })
        #expect(host.runCalls == callsBefore)
        #expect(recorder.received == [1, 2, 3])
        let records = recorder.records
        #expect(records.filter(\.input).map(\.event) == [.openCompleted, .hasBytesAvailable])
        #expect(records.filter { !$0.input }.map(\.event) == [.openCompleted, .hasSpaceAvailable])
        #expect(records.allSatisfy { $0.onThread && $0.onLoop })
        #expect(records.count == 4)
        input.close()
        output.close()
        #expect(host.stop())
    }

    /// Opened and fed while scheduled nowhere: no event (the run loop thread runs and sees nothing), reading by
    /// polling works; scheduled later, the pending events come, once each, in order.
    @Test func nothingIsDeliveredUntilScheduledThenPendingEventsCome() throws {
        let host = RunLoopThread()
        let (channel, backend) = makeChannel()
        let recorder = StreamRecorder(host: host)
        let input: InputStream = channel.inputStream
        input.delegate = recorder
        input.open()
        backend.inject([7, 8])
        queue.sync {}
        host.sync {}
        #expect(recorder.records.isEmpty)
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(input.hasBytesAvailable)
        #expect(input.read(&buffer, maxLength: 1) == 1)
        #expect(buffer[0] == 7)
        backend.inject([9])
        backend.inject([10])
        queue.sync {}
        host.sync {}
        #expect(recorder.records.isEmpty)
        host.sync { input.schedule(in: .current, forMode: .default) }
        #expect(host.waitUntil { recorder.received.count == 3 })
        #expect(recorder.received == [8, 9, 10])
        #expect(recorder.events == [.openCompleted, .hasBytesAvailable])
        #expect(recorder.records.allSatisfy { $0.onThread && $0.onLoop })
        input.close()
        #expect(host.stop())
    }

    /// After `remove(from:forMode:)` nothing is delivered (bytes wait, `hasBytesAvailable` says so); scheduled
    /// again, delivery resumes.
    @Test func removalStopsDeliveryAndSchedulingResumesIt() throws {
        let host = RunLoopThread()
        let (channel, backend) = makeChannel()
        let recorder = StreamRecorder(host: host)
        let input: InputStream = channel.inputStream
        input.delegate = recorder
        host.sync {
            input.schedule(in: .current, forMode: .default)
            input.open()
        }
        backend.inject([1])
        #expect(host.waitUntil { recorder.received == [1] })
        host.sync { input.remove(from: .current, forMode: .default) }
        let seen = recorder.records.count
        backend.inject([2, 3])
        queue.sync {}
        host.sync {}
        #expect(recorder.records.count == seen)
        #expect(input.hasBytesAvailable)
        host.sync { input.schedule(in: .current, forMode: .default) }
        #expect(host.waitUntil { recorder.received == [1, 2, 3] })
        #expect(recorder.events == [.openCompleted, .hasBytesAvailable, .hasBytesAvailable])
        input.close()
        #expect(host.stop())
    }

    /// A stream scheduled in another mode than the one its run loop runs delivers nothing; scheduled in the running
    /// mode, it does. The thread here runs a private mode.
    @Test func eventsWaitForTheScheduledMode() throws {
        let privateMode = RunLoop.Mode("org.opencorebluetooth.tests.l2cap")
        let host = RunLoopThread(mode: privateMode)
        let (channel, backend) = makeChannel()
        let recorder = StreamRecorder(host: host)
        let input: InputStream = channel.inputStream
        input.delegate = recorder
        host.sync {
            input.schedule(in: .current, forMode: .default)
            input.open()
        }
        backend.inject([5])
        queue.sync {}
        host.sync {}
        #expect(recorder.records.isEmpty)
        host.sync { input.schedule(in: .current, forMode: privateMode) }
        #expect(host.waitUntil { recorder.received == [5] })
        #expect(recorder.events == [.openCompleted, .hasBytesAvailable])
        input.close()
        #expect(host.stop())
    }

    /// A scheduled stream is a source of its run loop: `run(mode:before:)` on an otherwise empty mode returns at
    /// once (false) before scheduling and after removal, and runs until the limit (true) while scheduled.
    @Test func aScheduledStreamKeepsItsRunLoopRunning() throws {
        let (channel, _) = makeChannel()
        let input: InputStream = channel.inputStream
        let mode = RunLoop.Mode("org.opencorebluetooth.tests.keepalive")
        let results = LockedValue<[Bool]>([])
        let done = DispatchSemaphore(value: 0)
        let box = UncheckedBox(value: input)
        let thread = Thread {
            let loop = RunLoop.current
            var seen: [Bool] = []
            seen.append(loop.run(mode: mode, before: Date().addingTimeInterval(0.05)))
            box.value.schedule(in: loop, forMode: mode)
            seen.append(loop.run(mode: mode, before: Date().addingTimeInterval(0.05)))
            box.value.remove(from: loop, forMode: mode)
            seen.append(loop.run(mode: mode, before: Date().addingTimeInterval(0.05)))
            results.store(seen)
            done.signal()
        }
        thread.start()
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(results.load() == [false, true, false])
    }

    /// Data both ways, carried only by delegate events on the stream thread: 5,000 bytes written 100 at a time, one
    /// write per `hasSpaceAvailable`, as credits come 700 at a time; 64 SDUs read 7 bytes per `hasBytesAvailable`.
    @Test func dataFlowsBothWaysThroughRunLoopEvents() throws {
        let host = RunLoopThread()
        let outgoing = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        let sdus = (0..<64).map { index in (0..<(index % 23 + 1)).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0) } }
        let (channel, backend) = makeChannel(credits: 700)
        let recorder = StreamRecorder(host: host, readSize: 7, outgoing: outgoing, chunk: 100)
        let input: InputStream = channel.inputStream
        let output: OutputStream = channel.outputStream
        input.delegate = recorder
        output.delegate = recorder
        host.sync {
            for stream in [input, output] as [Stream] {
                stream.schedule(in: .current, forMode: .default)
                stream.open()
            }
        }
        for sdu in sdus { backend.inject(sdu) }
        var grants = 0
        while backend.sent.count < outgoing.count, grants < 20 {
            #expect(host.waitUntil { recorder.written == backend.sent.count && !output.hasSpaceAvailable || recorder.written == outgoing.count })
            guard recorder.written < outgoing.count else { break }
            backend.grant(700)
            queue.sync {}  // the stream has room again (hasSpaceAvailable) before the next check
            grants += 1
        }
        #expect(host.waitUntil { recorder.received.count == sdus.joined().count })
        // The channel may have taken the last bytes before the recorder (on the stream thread) counted them.
        #expect(host.waitUntil { recorder.written == outgoing.count })
        #expect(backend.sent == outgoing)
        #expect(recorder.written == outgoing.count)
        #expect(grants == 7)
        #expect(recorder.received == Array(sdus.joined()))
        #expect(recorder.records.allSatisfy { $0.onThread && $0.onLoop })
        input.close()
        output.close()
        #expect(host.stop())
    }

    /// The channel closing while bytes are unread: `endEncountered` comes after the read that takes the last byte
    /// (each partial read is followed by another `hasBytesAvailable`).
    @Test func endEncounteredFollowsTheLastRead() throws {
        let host = RunLoopThread()
        let (channel, backend) = makeChannel()
        let recorder = StreamRecorder(host: host, readSize: 2)
        let input: InputStream = channel.inputStream
        input.delegate = recorder
        input.open()
        backend.inject([1, 2, 3])
        backend.end()
        queue.sync {}
        #expect(input.streamStatus == .open)
        host.sync { input.schedule(in: .current, forMode: .default) }
        #expect(host.waitUntil { recorder.events.last == .endEncountered })
        #expect(recorder.events == [.openCompleted, .hasBytesAvailable, .hasBytesAvailable, .endEncountered])
        #expect(recorder.received == [1, 2, 3])
        #expect(input.streamStatus == .atEnd)
        input.close()
        #expect(host.stop())
    }

    /// The channel closing: `endEncountered` on both streams, on the stream thread, after the input's bytes; after
    /// `close()` the streams deliver nothing more and leave the run loop (the thread's mode empties and it ends).
    @Test func endEncounteredThenCloseStopsEverything() throws {
        let host = RunLoopThread()
        let (channel, backend) = makeChannel(credits: 10)
        let recorder = StreamRecorder(host: host)
        let input: InputStream = channel.inputStream
        let output: OutputStream = channel.outputStream
        input.delegate = recorder
        output.delegate = recorder
        host.sync {
            for stream in [input, output] as [Stream] {
                stream.schedule(in: .current, forMode: .default)
                stream.open()
            }
        }
        backend.inject([4, 2])
        backend.end()
        #expect(host.waitUntil { recorder.records.filter { $0.event == .endEncountered }.count == 2 })
        #expect(recorder.received == [4, 2])
        #expect(recorder.records.filter(\.input).map(\.event) == [.openCompleted, .hasBytesAvailable, .endEncountered])
        #expect(input.streamStatus == .atEnd)
        #expect(output.streamStatus == .atEnd)
        input.close()
        output.close()
        let seen = recorder.records.count
        backend.inject([1])
        queue.sync {}
        host.sync {}
        #expect(recorder.records.count == seen)
        #expect(recorder.records.allSatisfy { $0.onThread && $0.onLoop })
        #expect(host.stop())
        withExtendedLifetime(channel) {}
    }
}
