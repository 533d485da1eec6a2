import HCI

/// What the host defers to the end of a batch of received frames (one read of the transport): its writes, so that
/// everything the batch causes (Number Of Completed Packets letting queued ACL out, the notifications a readiness
/// event lets the application send, ATT answers) leaves in one write, one system call and one wake-up of the peer's
/// reader instead of one per packet; and the re-arming of its one timer, asked once per batch instead of after every
/// action (issue 31; the H4 stream of Core 5.4 Vol 4 Part A §2 keeps frames in order either way). Owned by
/// ``HostStack`` on its loop.
struct ReceiveBatch {
    /// True while ``HostStack/receive(_:)-([H4Frame])`` runs: sends are appended to ``frames``.
    var isCollecting = false
    /// What waits for the end of the batch, in the order it was sent.
    var frames: [H4Frame] = []
    /// `armTimer()` was asked during the batch: it runs once at the end.
    var timerDue = false
}
