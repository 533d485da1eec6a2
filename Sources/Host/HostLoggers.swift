import BluetoothRuntime
import Logging

/// The host's loggers, one per layer it drives (labels in ``LogLabel``), made by
/// ``HostConfiguration/makeLogger`` when the stack is created. Not a Bluetooth type: what each logs and at which
/// level is in ``LogLabel``.
struct HostLoggers {
    let hci: Logger
    let l2cap: Logger
    let att: Logger
    let smp: Logger
    let gap: Logger
    /// Whether any packet would be logged at all: the HCI logger at trace, or a protocol's at debug. Read once here,
    /// as the loggers are values whose levels are set when they are made; the per-packet log calls look at this
    /// first, because asking a `Logger` its level copies its handler out of the existential (four times per
    /// notification, ~1% of its instructions, issue 31 item 3).
    let logsPackets: Bool

    init(_ make: (String) -> Logger) {
        hci = make(LogLabel.hci)
        l2cap = make(LogLabel.l2cap)
        att = make(LogLabel.att)
        smp = make(LogLabel.smp)
        gap = make(LogLabel.gap)
        logsPackets = hci.logLevel <= .trace || [l2cap, att, smp].contains { $0.logLevel <= .debug }
    }
}
