import BluetoothCore
import BluetoothDissector
import BluetoothRuntime
import Dispatch
import DequeModule
import HCI
import SharedAir

/// What the console's pages hear over `/api/events` (issue 29 item 1): the air every ``airInterval`` (`type:
/// "air"`), the hub's events as `blue air --json` prints them (`type: "event"`), and every HCI packet between a
/// host and its controller decoded as `blue monitor` decodes it (`type: "packet"`), starting with the last
/// ``eventBacklogLimit`` events and ``backlogLimit`` packets before the page came (a page opened after the programs
/// connected still shows how).
///
/// Threads: the hub's frame tap runs on transport threads and the air's loop; it only queues the raw frame (while
/// no page listens, into the backlog ring; else for decoding, at most ``packetQueueLimit``, beyond which frames are
/// counted as dropped). One serial queue decodes (a ``CaptureDecoder`` per device) and writes to the pages; a timer
/// on it sends the air while a page listens.
final class ConsoleEventStream: Sendable {
    static let airInterval: DispatchTimeInterval = .milliseconds(500)
    /// Frames waiting to be decoded before new ones are dropped.
    static let packetQueueLimit = 8_192
    /// Packets a new page gets from before it came.
    static let backlogLimit = 1_000
    /// Hub events a new page gets from before it came.
    static let eventBacklogLimit = 200

    private struct Frame {
        var device: Int
        var frame: H4Frame
        var direction: BTSnoopDirection
        var unixMicroseconds: Int64
    }

    private struct State {
        var subscribers: [ConsoleSubscriber] = []
        /// The last frames while no page listened, decoded when one comes.
        var recentFrames: Deque<Frame> = []
        /// Frames waiting for the queue while pages listen.
        var frames: Deque<Frame> = []
        var dropped = 0
        var draining = false
        /// The last hub event messages, for the next page.
        var recentEvents: Deque<String> = []
    }

    /// Confined to ``queue``.
    private struct Decoding {
        var decoders: [Int: CaptureDecoder] = [:]
        var number = 0
        /// The last ``backlogLimit`` packet messages, for the next page.
        var recentMessages: Deque<String> = []

        mutating func remember(_ message: String) {
            recentMessages.append(message)
            if recentMessages.count > ConsoleEventStream.backlogLimit { recentMessages.removeFirst() }
        }
    }

    private let hub: AirHub
    private let state = LockedValue(State())
    private let decoding = LockedValue(Decoding())
    private let queue = DispatchQueue(label: "OpenCoreBluetooth.air-console.events")
    private let timer = LockedValue<(any DispatchSourceTimer)?>(nil)

    private let captures: ConsoleCaptures

    init(hub: AirHub, captures: ConsoleCaptures) {
        self.hub = hub
        self.captures = captures
    }

    /// Starts listening to the hub's frames (for the backlog, until ``close()``).
    func start() {
        hub.setFrameTap { [weak self] device, frame, direction, time in
            self?.captures.record(device: device, frame: frame, direction: direction, unixMicroseconds: time)
            self?.enqueue(Frame(device: device, frame: frame, direction: direction, unixMicroseconds: time))
        }
    }

    func subscribe(_ subscriber: ConsoleSubscriber) {
        hub.view { view in subscriber.send(Self.airMessage(view)) }
        queue.async { [self] in
            // A page that left before this ran (its unsubscribe came first) is not added: it would stay forever.
            // Checked and marked under the same lock as the list.
            let joined = state.withLock { state -> (backlog: Deque<Frame>?, events: Deque<String>)? in
                guard !subscriber.isGone else { return nil }
                state.subscribers.append(subscriber)
                guard state.subscribers.count == 1 else { return (nil, state.recentEvents) }
                defer { state.recentFrames = [] }
                return (state.recentFrames, state.recentEvents)
            }
            guard let joined else { return }
            let (backlog, events) = (joined.backlog, joined.events)
            for event in events { subscriber.send(event) }
            if let backlog {
                decoding.withLock { $0.decoders = [:] }
                for frame in backlog {
                    let message = packetMessage(frame)
                    decoding.withLock { $0.remember(message) }
                }
                let source = DispatchSource.makeTimerSource(queue: queue)
                source.schedule(deadline: .now() + Self.airInterval, repeating: Self.airInterval)
                source.setEventHandler { [weak self] in self?.tick() }
                source.resume()
                timer.withLock { $0?.cancel(); $0 = source }
            }
            for message in decoding.withLock({ $0.recentMessages }) { subscriber.send(message, droppable: true) }
        }
    }

    func unsubscribe(_ subscriber: ConsoleSubscriber) {
        let last = state.withLock { state in
            subscriber.markGone()
            state.subscribers.removeAll { $0 === subscriber }
            return state.subscribers.isEmpty
        }
        guard last else { return }
        timer.withLock { $0?.cancel(); $0 = nil }
    }

    /// Ends every page's stream (the console stops).
    func close() {
        hub.setFrameTap(nil)
        for subscriber in state.withLock({ state in defer { state.subscribers = [] }; return state.subscribers }) {
            subscriber.channel.close(promise: nil)
        }
        timer.withLock { $0?.cancel(); $0 = nil }
    }

    /// A hub event, to every page.
    func publish(_ event: AirHubEvent) {
        if case .left(let device, _) = event { captures.forget(device: device.number) }
        let message = "{\"type\":\"event\",\"text\":\(Dissection.jsonString(event.text)),\"event\":\(event.json)}"
        let list = state.withLock { state in
            state.recentEvents.append(message)
            if state.recentEvents.count > Self.eventBacklogLimit { state.recentEvents.removeFirst() }
            return state.subscribers
        }
        for subscriber in list { subscriber.send(message) }
    }

    private func broadcast(_ text: String, droppable: Bool = false) {
        for subscriber in state.withLock({ $0.subscribers }) { subscriber.send(text, droppable: droppable) }
    }

    private func tick() {
        let (dropped, list) = state.withLock { state in
            defer { state.dropped = 0 }
            return (state.dropped, state.subscribers)
        }
        guard !list.isEmpty else { return }
        for subscriber in list {
            let missed = dropped + subscriber.takeDropped()
            if missed > 0 { subscriber.send("{\"type\":\"dropped\",\"count\":\(missed)}") }
        }
        hub.view { [weak self] view in
            self?.forgetDecoders(except: Set(view.devices.map(\.device.number)))
            self?.broadcast(Self.airMessage(view))
        }
    }

    private static func airMessage(_ view: AirHubView) -> String {
        "{\"type\":\"air\",\"air\":\(ConsoleAirJSON(view).encoded())}"
    }

    // MARK: Packets

    private func enqueue(_ frame: Frame) {
        let startDraining = state.withLock { state -> Bool in
            guard !state.subscribers.isEmpty else {
                state.recentFrames.append(frame)
                if state.recentFrames.count > Self.backlogLimit { state.recentFrames.removeFirst() }
                return false
            }
            guard state.frames.count < Self.packetQueueLimit else {
                state.dropped += 1
                return false
            }
            state.frames.append(frame)
            defer { state.draining = true }
            return !state.draining
        }
        if startDraining { queue.async { [weak self] in self?.drain() } }
    }

    private func drain() {
        while true {
            let frames = state.withLock { state -> Deque<Frame> in
                defer { state.frames = [] }
                if state.frames.isEmpty { state.draining = false }
                return state.frames
            }
            guard !frames.isEmpty else { return }
            for frame in frames {
                let message = packetMessage(frame)
                decoding.withLock { $0.remember(message) }
                broadcast(message, droppable: true)
            }
        }
    }

    private func packetMessage(_ frame: Frame) -> String {
        let (node, number) = decoding.withLock { state -> (Dissection, Int) in
            state.number += 1
            var decoder = state.decoders.removeValue(forKey: frame.device) ?? CaptureDecoder()
            let node: Dissection
            do throws(DecodeError) {
                node = try decoder.dissection(of: frame.frame, direction: frame.direction)
            } catch {
                node = Dissection("Malformed packet", error.description)
            }
            state.decoders[frame.device] = decoder
            return (node, state.number)
        }
        let summary = PacketSummary(node, indicator: frame.frame.type.rawValue)
        let layers: String = summary.layers.map { "\"\($0)\"" }.joined(separator: ",")
        let direction = frame.direction == .received ? "received" : "sent"
        var text = "{\"type\":\"packet\",\"packet\":{\"number\":\(number),\"device\":\(frame.device)"
        text += ",\"unixMicroseconds\":\(frame.unixMicroseconds),\"direction\":\"\(direction)\""
        text += ",\"layers\":[\(layers)],\"summary\":" + Dissection.jsonString(summary.text)
        text += ",\"bytes\":\"" + Hex.encode(frame.frame.encode()) + "\",\"dissection\":" + node.renderJSON() + "}}"
        return text
    }

    private func forgetDecoders(except present: Set<Int>) {
        decoding.withLock { state in state.decoders = state.decoders.filter { present.contains($0.key) } }
    }
}
