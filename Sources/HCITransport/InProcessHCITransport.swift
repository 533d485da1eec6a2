public import HCI
import BluetoothRuntime
import Dispatch

/// Two connected in-process transport ends: what one side sends, the other receives, whole and in order. The HCI
/// packets are the same as on any transport (Core 5.4 Vol 4 Part E §5.4); no bytes are framed, the ``H4Frame``
/// values are handed over.
///
/// Delivery: each side has its own serial queue; frames (and the close notification) reach `onFrame`/`onClose`
/// from that queue, never on the sender's stack, so a host and a controller can answer each other without
/// re-entrancy. Frames sent before the receiver calls `start` are kept and delivered after it.
///
/// Closing either side closes both: the closer gets `onClose(nil)` and no further frames; the other side receives
/// the frames already sent to it, then `onClose(closedByPeer)`. Sends on either side then throw.
public final class InProcessHCITransport: HCITransport {
    /// Which end of the pair this is.
    public enum Side: Int, Sendable {
        case host = 0
        case controller = 1

        var other: Side { self == .host ? .controller : .host }
    }

    public let side: Side
    public var name: String { side == .host ? "in-process (host side)" : "in-process (controller side)" }

    private let link: InProcessLink

    fileprivate init(side: Side, link: InProcessLink) {
        self.side = side
        self.link = link
    }

    /// A connected pair: give `host` to the host stack and `controller` to a (virtual) controller.
    public static func makePair(label: String = "OpenCoreBluetooth.in-process") -> (host: any HCITransport, controller: any HCITransport) {
        let link = InProcessLink(label: label)
        return (InProcessHCITransport(side: .host, link: link), InProcessHCITransport(side: .controller, link: link))
    }

    public func start(
        onFrame: @escaping @Sendable (H4Frame) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        try link.start(side: side, name: name, onFrame: onFrame, onClose: onClose)
    }

    public func send(_ frame: H4Frame) throws(HCITransportError) {
        try link.send(frame, from: side, name: name)
    }

    public func close() {
        link.close(from: side)
    }
}

/// The shared state of an in-process pair, behind one lock.
private final class InProcessLink: Sendable {
    struct End {
        var started = false
        var onFrame: (@Sendable (H4Frame) -> Void)?
        var onClose: (@Sendable (HCITransportError?) -> Void)?
        /// Frames sent to this end before it started.
        var pending: [H4Frame] = []
        /// This end closed the link: it receives nothing more.
        var closedLocally = false
    }

    struct State {
        var ends = [End(), End()]
        var closed = false
        /// The side that closed the link, once closed.
        var closer: InProcessHCITransport.Side?
    }

    private let state = LockedValue(State())
    private let queues: [DispatchQueue]

    init(label: String) {
        queues = [DispatchQueue(label: "\(label).host"), DispatchQueue(label: "\(label).controller")]
    }

    func start(
        side: InProcessHCITransport.Side, name: String,
        onFrame: @escaping @Sendable (H4Frame) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        let index = side.rawValue
        let refusal: HCITransportError? = state.withLock { state in
            if state.ends[index].started { return HCITransportError(.alreadyStarted, "\(name): start was already called") }
            if state.ends[index].closedLocally { return HCITransportError(.closed, "\(name): the transport is closed") }
            state.ends[index].started = true
            state.ends[index].onFrame = onFrame
            state.ends[index].onClose = onClose
            let pending = state.ends[index].pending
            state.ends[index].pending = []
            // Enqueued under the lock so later sends stay behind these frames.
            for frame in pending { enqueueDelivery(frame, to: index) }
            if state.closed {
                // The peer closed before this side started: report it after the frames it sent.
                enqueueClose(to: index, report: HCITransportError(.closedByPeer, "\(name): the peer closed the link"))
            }
            return nil
        }
        if let refusal { throw refusal }
    }

    func send(_ frame: H4Frame, from side: InProcessHCITransport.Side, name: String) throws(HCITransportError) {
        let target = side.other.rawValue
        let refusal: HCITransportError? = state.withLock { state in
            if state.closed {
                let byPeer = state.closer == side.other
                return byPeer
                    ? HCITransportError(.closedByPeer, "\(name): the peer closed the link")
                    : HCITransportError(.closed, "\(name): the transport is closed")
            }
            if state.ends[target].started {
                enqueueDelivery(frame, to: target)
            } else {
                state.ends[target].pending.append(frame)
            }
            return nil
        }
        if let refusal { throw refusal }
    }

    func close(from side: InProcessHCITransport.Side) {
        state.withLock { state in
            let index = side.rawValue
            guard !state.ends[index].closedLocally else { return }
            state.ends[index].closedLocally = true
            state.ends[index].pending = []
            guard !state.closed else { return }
            state.closed = true
            state.closer = side
            if state.ends[index].started { enqueueClose(to: index, report: nil) }
            let other = side.other.rawValue
            if state.ends[other].started {
                let name = side.other == .host ? "in-process (host side)" : "in-process (controller side)"
                enqueueClose(to: other, report: HCITransportError(.closedByPeer, "\(name): the peer closed the link"))
            }
        }
    }

    /// Enqueues `frame` for end `index` (call with the lock held; the job takes the lock again when it runs).
    private func enqueueDelivery(_ frame: H4Frame, to index: Int) {
        queues[index].async { [self] in
            let callback = state.withLock { state in state.ends[index].closedLocally ? nil : state.ends[index].onFrame }
            callback?(frame)
        }
    }

    /// Enqueues the close notification for end `index`, once (call with the lock held).
    private func enqueueClose(to index: Int, report: HCITransportError?) {
        queues[index].async { [self] in
            let callback: (@Sendable (HCITransportError?) -> Void)? = state.withLock { state in
                let callback = state.ends[index].onClose
                state.ends[index].onClose = nil
                state.ends[index].onFrame = nil
                return callback
            }
            callback?(report)
        }
    }
}
