public import BluetoothCore
public import HeapModule

/// When each of a set of keys is next due, for an owner that keeps ONE timer armed for the earliest (DESIGN.md "one
/// timer asking each layer"): scheduling, cancelling and finding the earliest are O(log n), so a thousand devices
/// on an air or a hundred links in a host do not cost a scan of every key per event. Ties go to the key scheduled
/// first. Not a Bluetooth type.
///
/// A key scheduled again or cancelled leaves its old entry in the heap; entries that are no longer current are
/// dropped when they reach the top. A value type, confined to its owner's loop.
///
/// Inlinable: its owners (the host after every packet, the air at every event) are in other modules, where an
/// unspecialised generic call builds the tuple and dictionary metadata for `Key` at run time on each use (issue 31).
public struct DeadlineSchedule<Key: Hashable> {
    @usableFromInline
    struct Entry: Comparable {
        @usableFromInline var deadline: StackInstant
        @usableFromInline var sequence: UInt64
        @usableFromInline var key: Key

        @inlinable
        init(deadline: StackInstant, sequence: UInt64, key: Key) {
            self.deadline = deadline
            self.sequence = sequence
            self.key = key
        }

        @inlinable
        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.sequence < rhs.sequence)
        }

        @inlinable
        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.sequence == rhs.sequence }
    }

    /// The sequence number of each key's current entry.
    @usableFromInline var current: [Key: UInt64] = [:]
    @usableFromInline var heap = Heap<Entry>()
    @usableFromInline var sequence: UInt64 = 0

    @inlinable
    public init() {}

    /// Keys scheduled now.
    @inlinable
    public var count: Int { current.count }

    /// `key` is due at `deadline` (instead of any earlier scheduling of it).
    @inlinable
    public mutating func schedule(_ key: Key, at deadline: StackInstant) {
        sequence &+= 1
        current[key] = sequence
        heap.insert(Entry(deadline: deadline, sequence: sequence, key: key))
    }

    /// `key` is no longer due.
    @inlinable
    public mutating func cancel(_ key: Key) {
        current[key] = nil
    }

    /// The key due first and when, nil when none is scheduled.
    @inlinable
    public mutating func earliest() -> (key: Key, deadline: StackInstant)? {
        while let top = heap.min {
            if current[top.key] == top.sequence { return (top.key, top.deadline) }
            heap.removeMin()
        }
        return nil
    }

    /// Takes the key due first when it is due at or before `now`.
    @inlinable
    public mutating func takeDue(now: StackInstant) -> Key? {
        guard let (key, deadline) = earliest(), deadline <= now else { return nil }
        heap.removeMin()
        current[key] = nil
        return key
    }
}
