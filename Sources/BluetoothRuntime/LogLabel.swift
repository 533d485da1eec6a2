/// The swift-log labels the stack's layers log under, one per layer, so that an app's `LoggingSystem.bootstrap`
/// can route and filter them by label (not a Bluetooth type: Core 5.4 defines no logging).
///
/// What each logs: HCI commands and events at `debug` (ACL data and Number Of Completed Packets at `trace`); the
/// L2CAP, ATT and SMP PDUs of every connection at `debug`, with the connection handle and the peer as metadata (SMP
/// key distribution by name only: keys never reach a log); connections, disconnections, encryption, pairing and the
/// controller's start at `debug` too (the app gets each as an event). At `notice`: what a user must see (a pairing
/// agent's value to compare, a shared air hosted in-process); `warning` and `error`: what the app did wrong or
/// what the stack had to give up. As the Swift server guidelines ask of a library, nothing is logged at `info`.
public enum LogLabel {
    /// HCI commands and events (Vol 4 Part E), controller start and loss.
    public static let hci = "opencorebluetooth.hci"
    /// L2CAP signaling and credit-based channel frames (Vol 3 Part A).
    public static let l2cap = "opencorebluetooth.l2cap"
    /// ATT PDUs (Vol 3 Part F).
    public static let att = "opencorebluetooth.att"
    /// Security Manager PDUs and pairing (Vol 3 Part H).
    public static let smp = "opencorebluetooth.smp"
    /// Connections, disconnections, encryption and link changes (Vol 3 Part C).
    public static let gap = "opencorebluetooth.gap"
    /// Opening a stack on a transport and the shared air hub.
    public static let launcher = "opencorebluetooth.launcher"
    /// The CoreBluetooth API (misuse, state restoration, known peers).
    public static let coreBluetooth = "opencorebluetooth.corebluetooth"
    /// bluetoothd over D-Bus.
    public static let bluez = "opencorebluetooth.bluez"
}
