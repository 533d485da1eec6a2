import BluetoothRuntime
import BluetoothCore

/// The earliest deadline of every connection's L2CAP link, ATT bearer and Security Manager, kept up to date
/// without visiting every connection after every packet (issue 13: with a hundred links that visit was a quarter
/// of the host's time).
///
/// A session reports itself when one of its machines changes (``ConnectionSession/link`` and the others have
/// observers); ``earliest()`` asks only those sessions again and keeps each one's deadline in a
/// `DeadlineSchedule` (a heap).
/// Confined to the host's event loop, like the sessions.
final class SessionDeadlines {
    // Unchecked exclusivity: the host asks after every batch of packets, and the run-time check of each access to a
    // class's stored property (swift_beginAccess) cost more than the question. Both are private, touched only by the
    // three short methods below, which call out to nothing that could reach them again, on the host's loop alone.
    /// Sessions changed since the last ``earliest()``.
    @exclusivity(unchecked) private var changed: [ConnectionSession] = []
    /// Each connection's earliest deadline.
    @exclusivity(unchecked) private var schedule = DeadlineSchedule<UInt16>()

    /// `session`'s machines changed: its deadline is asked again at the next ``earliest()``.
    func noteChange(_ session: ConnectionSession) {
        changed.append(session)
    }

    /// The connection `handle` closed: its deadline no longer counts.
    func remove(_ handle: UInt16) {
        schedule.cancel(handle)
    }

    /// The earliest deadline of all open sessions (a changed session that closed meanwhile is skipped).
    func earliest() -> StackInstant? {
        if !changed.isEmpty {
            for session in changed {
                // Cleared after the question: while the change is noted, asking (which reads the machines in
                // place) notes nothing again.
                defer { session.deadlineChanged = false }
                guard session.isOpen else { continue }
                if let deadline = session.nextDeadline {
                    schedule.schedule(session.handle, at: deadline)
                } else {
                    schedule.cancel(session.handle)
                }
            }
            changed.removeAll(keepingCapacity: true)
        }
        return schedule.earliest()?.deadline
    }
}
