import HCI

/// Frames the host holds for the controller while it handles a batch of received frames, so that everything one read
/// of the transport causes (Number Of Completed Packets letting queued ACL out, the notifications a readiness event
/// lets the application send, ATT answers) leaves in one write: one system call and one wake-up of the peer's reader
/// per batch instead of per packet (issue 31; the H4 stream of Core 5.4 Vol 4 Part A §2 keeps frames in order either
/// way). Owned by ``HostStack`` on its loop.
struct WriteBatch {
    /// True while ``HostStack/receive(_:)-([H4Frame])`` runs: sends are appended to ``frames``.
    var isCollecting = false
    /// What waits for the end of the batch, in the order it was sent.
    var frames: [H4Frame] = []
}
