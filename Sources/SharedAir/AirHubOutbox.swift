import BluetoothRuntime
import DequeModule
import Dispatch
import HCI
import HCITransport
import VirtualController

/// Frames on their way from the hub to one host (DESIGN.md "The virtual controller and the air"): the air's loop
/// only appends here and never waits for a socket; a writer on the outbox's own serial queue does the (blocking)
/// sends, so a host that stops reading stalls only itself. The queue is bounded: ``offer(_:)`` answers
/// ``Offer/overflow`` once more than ``limit`` frames wait, and the hub then disconnects that host.
///
/// State: lock-protected; ``offer(_:)`` is called on the air's loop, the writer runs on `queue`.
final class AirHubOutbox: Sendable {
    enum Offer: Equatable { case queued, overflow, closed }

    private struct State {
        var frames: Deque<H4Frame> = []
        var writing = false
        var closed = false
    }

    /// The most frames waiting for the host (besides the batch being written).
    let limit: Int
    /// The most frames written in one call (a batch of at most ~64 KiB with ACL of 251 octets).
    static let batchLimit = 256
    private let transport: any HCITransport
    private let state = LockedValue(State())
    private let queue: DispatchQueue

    init(transport: any HCITransport, limit: Int, label: String) {
        self.transport = transport
        self.limit = max(1, limit)
        self.queue = DispatchQueue(label: label)
    }

    /// Appends `frame` (never blocks); starts the writer when it was idle.
    func offer(_ frame: H4Frame) -> Offer {
        let (offer, start) = state.withLock { state -> (Offer, Bool) in
            guard !state.closed else { return (.closed, false) }
            guard state.frames.count < limit else {
                state.closed = true
                state.frames = []
                return (.overflow, false)
            }
            state.frames.append(frame)
            let start = !state.writing
            state.writing = true
            return (.queued, start)
        }
        if start { queue.async { [self] in drain() } }
        return offer
    }

    /// Frames waiting now.
    var waiting: Int { state.withLock { $0.frames.count } }

    /// Drops what waits and refuses more (the transport is closed by its owner).
    func close() {
        state.withLock { state in
            state.closed = true
            state.frames = []
        }
    }

    /// Writes everything waiting as one batch (one system call, one wake-up of the host's reader, however many
    /// frames a connection event produced), until nothing waits.
    private func drain() {
        while true {
            let batch = state.withLock { state -> [H4Frame] in
                guard !state.closed, !state.frames.isEmpty else {
                    state.writing = false
                    state.frames = []
                    return []
                }
                let batch = Array(state.frames.prefix(Self.batchLimit))
                state.frames.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            do {
                try transport.send(frames: batch)
            } catch {
                close()  // the transport reports its own close to the hub (onClose)
            }
        }
    }
}
