import BluetoothCore
import BluetoothDissector
import BluetoothRuntime
import Dispatch
import DequeModule
import HCI
import SharedAir

/// What the console's pages hear over `/api/events` (issue 29 item 1): the air every ``airInterval`` (`type:
/// "air"`), the hub's events as `blue air --json` prints them (`type: "event"`), and every HCI packet between a
/// host and its controller decoded as `blue monitor` decodes it (`type: "packet"`).
///
/// Threads: the hub's frame tap runs on transport threads and the air's loop; it only queues the raw frame
/// (at most ``packetQueueLimit``, else counted as dropped), and one serial queue decodes (a ``CaptureDecoder`` per
/// device) and writes to the pages. The tap and the air timer exist only while a page listens.
final class ConsoleEventStream: Sendable {
    static let airInterval: DispatchTimeInterval = .milliseconds(500)
    /// Frames waiting to be decoded before new ones are dropped.
    static let packetQueueLimit = 8_192

    private struct Frame {
        var device: Int
        var frame: H4Frame
        var direction: BTSnoopDirection
        var unixMicroseconds: Int64
    }

    private struct Pending {
        var frames: Deque<Frame> = []
        var dropped = 0
        var draining = false
    }

    private struct Decoding {
        var decoders: [Int: CaptureDecoder] = [:]
        var number = 0
    }

    private let hub: AirHub
    private let subscribers = LockedValue<[ConsoleSubscriber]>([])
    private let pending = LockedValue(Pending())
    private let decoding = LockedValue(Decoding())
    private let queue = DispatchQueue(label: "OpenCoreBluetooth.air-console.events")
    private let timer = LockedValue<(any DispatchSourceTimer)?>(nil)

    init(hub: AirHub) {
        self.hub = hub
    }

    func subscribe(_ subscriber: ConsoleSubscriber) {
        let first = subscribers.withLock { list in
            list.append(subscriber)
            return list.count == 1
        }
        hub.view { view in subscriber.send(Self.airMessage(view)) }
        guard first else { return }
        hub.setFrameTap { [weak self] device, frame, direction, time in
            self?.enqueue(Frame(device: device, frame: frame, direction: direction, unixMicroseconds: time))
        }
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.schedule(deadline: .now() + Self.airInterval, repeating: Self.airInterval)
        source.setEventHandler { [weak self] in self?.tick() }
        source.resume()
        timer.withLock { $0?.cancel(); $0 = source }
    }

    func unsubscribe(_ subscriber: ConsoleSubscriber) {
        let last = subscribers.withLock { list in
            list.removeAll { $0 === subscriber }
            return list.isEmpty
        }
        guard last else { return }
        hub.setFrameTap(nil)
        timer.withLock { $0?.cancel(); $0 = nil }
    }

    /// Ends every page's stream (the console stops).
    func close() {
        for subscriber in subscribers.withLock({ list in defer { list = [] }; return list }) {
            subscriber.channel.close(promise: nil)
        }
        hub.setFrameTap(nil)
        timer.withLock { $0?.cancel(); $0 = nil }
    }

    /// A hub event, to every page.
    func publish(_ event: AirHubEvent) {
        broadcast("{\"type\":\"event\",\"text\":\(Dissection.jsonString(event.text)),\"event\":\(event.json)}")
    }

    private func broadcast(_ text: String, droppable: Bool = false) {
        for subscriber in subscribers.load() { subscriber.send(text, droppable: droppable) }
    }

    private func tick() {
        let (dropped, list) = (pending.withLock { state in defer { state.dropped = 0 }; return state.dropped }, subscribers.load())
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
        let startDraining = pending.withLock { state -> Bool in
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
            let frames = pending.withLock { state -> Deque<Frame> in
                defer { state.frames = [] }
                if state.frames.isEmpty { state.draining = false }
                return state.frames
            }
            guard !frames.isEmpty else { return }
            for frame in frames { broadcast(packetMessage(frame), droppable: true) }
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
