import BluetoothRuntime
import HeapModule

/// The earliest deadline of every connection's L2CAP link, ATT bearer and Security Manager, kept up to date
/// without visiting every connection after every packet (issue 13: with a hundred links that visit was a quarter
/// of the host's time).
///
/// A session reports itself when one of its machines changes (``ConnectionSession/link`` and the others have
/// observers); ``earliest(isCurrent:)`` asks only those sessions again, keeps each one's deadline in a heap and
/// drops the entries that are no longer current (a later change, a closed session) when they come to the top.
/// Confined to the host's event loop, like the sessions.
final class SessionDeadlines {
    private struct Entry: Comparable {
        var deadline: StackInstant
        var sequence: UInt64
        var handle: UInt16

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.deadline < rhs.deadline || (lhs.deadline == rhs.deadline && lhs.sequence < rhs.sequence)
        }

        static func == (lhs: Entry, rhs: Entry) -> Bool { lhs.sequence == rhs.sequence }
    }

    /// Sessions changed since the last ``earliest(isCurrent:)``.
    private var changed: [ConnectionSession] = []
    /// The sequence number of each connection's current entry in ``heap``.
    private var current: [UInt16: UInt64] = [:]
    private var heap = Heap<Entry>()
    private var sequence: UInt64 = 0

    /// `session`'s machines changed: its deadline is asked again at the next ``earliest(isCurrent:)``.
    func noteChange(_ session: ConnectionSession) {
        changed.append(session)
    }

    /// The connection `handle` closed: its deadline no longer counts.
    func remove(_ handle: UInt16) {
        current[handle] = nil
    }

    /// The earliest deadline of all sessions; `isCurrent` tells whether a changed session is still the one of its
    /// connection (a closed one is skipped).
    func earliest(isCurrent: (ConnectionSession) -> Bool) -> StackInstant? {
        if !changed.isEmpty {
            for session in changed {
                session.deadlineChanged = false
                guard isCurrent(session) else { continue }
                sequence &+= 1
                if let deadline = session.nextDeadline {
                    current[session.handle] = sequence
                    heap.insert(Entry(deadline: deadline, sequence: sequence, handle: session.handle))
                } else {
                    current[session.handle] = nil
                }
            }
            changed.removeAll(keepingCapacity: true)
        }
        while let top = heap.min {
            if current[top.handle] == top.sequence { return top.deadline }
            heap.removeMin()
        }
        return nil
    }
}
