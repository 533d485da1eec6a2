import BluetoothRuntime
import Dispatch

/// Where a manager's work for the app goes: at once onto the manager's queue, or, while the app receives no
/// events (``OCBApplication``: suspended, or in the background without the role's mode), held in order and
/// queued when the gate opens again, before anything later. Discardable work (advertisement reports) is dropped
/// while held.
final class DeliveryGate: Sendable {
    private struct State {
        var open: Bool
        var held: [@Sendable () -> Void] = []
    }

    let queue: DispatchQueue
    private let state: LockedValue<State>
    /// The clock of a test kit's world, which must not skip ahead while the app has a delegate call to run.
    private let sharedTime: SharedTime?

    init(queue: DispatchQueue, open: Bool = true, sharedTime: SharedTime? = nil) {
        self.queue = queue
        state = LockedValue(State(open: open))
        self.sharedTime = sharedTime
    }

    /// Queues `work`, or holds it (drops it when `discardable`) while the gate is closed.
    func deliver(discardable: Bool = false, _ work: @escaping @Sendable () -> Void) {
        state.withLock { state in
            if state.open {
                queue.async(countedBy: sharedTime, execute: work)
            } else if !discardable {
                state.held.append(work)
            }
        }
    }

    /// Opens or closes the gate; opening queues what was held, in order (under the lock, so later work follows it).
    func setOpen(_ open: Bool) {
        state.withLock { state in
            state.open = open
            guard open else { return }
            for work in state.held { queue.async(countedBy: sharedTime, execute: work) }
            state.held = []
        }
    }

    /// How much work waits (tests).
    var heldCount: Int { state.withLock { $0.held.count } }
}
