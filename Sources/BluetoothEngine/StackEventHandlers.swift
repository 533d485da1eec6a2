public import BluetoothRuntime

/// The owners of an engine's events (Bumble's `Host` fans its events out the same way): any number of handlers,
/// each called on the engine's loop for every ``HostEvent``, in the order they were added. Adding and removing is
/// allowed from any thread and takes effect at the next event. Every ``StackEngine`` keeps one.
public final class StackEventHandlers: Sendable {
    @usableFromInline
    let table = LockedValue<(next: UInt64, list: [(id: UInt64, handler: @Sendable (HostEvent) -> Void)])>((0, []))

    public init() {}

    /// Adds `handler`; the subscription removes it.
    public func add(_ handler: @escaping @Sendable (HostEvent) -> Void) -> StackEventSubscription {
        let id = table.withLock { table -> UInt64 in
            table.next &+= 1
            table.list.append((table.next, handler))
            return table.next
        }
        return StackEventSubscription(id: id, handlers: self)
    }

    func remove(_ id: UInt64) {
        table.withLock { table in table.list.removeAll { $0.id == id } }
    }

    /// Removes every handler (the owner is done with the engine).
    public func removeAll() {
        table.withLock { $0.list = [] }
    }

    /// Calls every handler with `event` (on the engine's loop). Inlinable: the host calls it for every event, on the
    /// per-packet path, from another module.
    @inlinable
    public func deliver(_ event: HostEvent) {
        for entry in table.load().list { entry.handler(event) }
    }
}

/// Cancels a handler added with ``StackEngine/addEventHandler(_:)``.
public struct StackEventSubscription: Sendable {
    let id: UInt64
    weak var handlers: StackEventHandlers?

    public func cancel() { handlers?.remove(id) }
}
