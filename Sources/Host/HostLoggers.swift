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

    init(_ make: (String) -> Logger) {
        hci = make(LogLabel.hci)
        l2cap = make(LogLabel.l2cap)
        att = make(LogLabel.att)
        smp = make(LogLabel.smp)
        gap = make(LogLabel.gap)
    }
}
