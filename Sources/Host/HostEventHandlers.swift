import BluetoothRuntime
import BluetoothEngine

/// The owners of a ``HostStack``'s events (Bumble's `Host` fans its events out the same way): any number of handlers,
/// each called on the host's loop for every ``HostEvent``, in the order they were added. Adding and removing is
/// allowed from any thread and takes effect at the next event.
final class HostEventHandlers: Sendable {
    private let table = LockedValue<(next: UInt64, list: [(id: UInt64, handler: @Sendable (HostEvent) -> Void)])>((0, []))

    func add(_ handler: @escaping @Sendable (HostEvent) -> Void) -> UInt64 {
        table.withLock { table -> UInt64 in
            table.next &+= 1
            table.list.append((table.next, handler))
            return table.next
        }
    }

    func remove(_ id: UInt64) {
        table.withLock { table in table.list.removeAll { $0.id == id } }
    }

    func removeAll() {
        table.withLock { $0.list = [] }
    }

    /// Calls every handler with `event` (on the loop).
    func deliver(_ event: HostEvent) {
        for entry in table.load().list { entry.handler(event) }
    }
}

/// Cancels a handler added with ``HostStack/addEventHandler(_:)``.
public struct HostEventSubscription: Sendable {
    let id: UInt64
    weak var host: HostStack?

    public func cancel() { host?.eventHandlers.remove(id) }
}
