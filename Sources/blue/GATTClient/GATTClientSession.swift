import BluetoothCore
import BluetoothRuntime
import Host
import BluetoothEngine

/// A connection to a TARGET as the GATT client commands (`explore`, `read`, `write`, `subscribe`) use it, whoever
/// runs the link: our host (`--hci virtual`, `hciN`, `tcp:…`) or bluetoothd over D-Bus (`--hci bluez`, `bluez:hciN`),
/// both through the engine seam (``TargetSession``). The commands print the same either way.
protocol GATTClientSession: Sendable {
    /// What the scan heard of the target (over bluetoothd: its Device1 properties as a report).
    var report: ScanReport { get }
    /// The loop that runs the command's timers.
    var eventLoop: any EventLoop { get }
    /// The ATT_MTU of the link (Core 5.4 Vol 3 Part F §3.2.8).
    var attMTU: Int { get }
    /// The whole database (Core 5.4 Vol 3 Part G §4.4–§4.7); with `readValues`, every readable value and descriptor.
    func discover(readValues: Bool) async throws(CLIFailure) -> GATTTree
    /// A long read of a characteristic value (§4.8.3).
    func read(_ handle: UInt16) async -> Result<[UInt8], GATTOperationFailure>
    /// A write with a response (§4.9.3, §4.9.4 when it does not fit) or a Write Command (§4.9.1).
    func write(_ handle: UInt16, _ value: [UInt8], withResponse: Bool) async -> Result<Void, GATTOperationFailure>
    /// Enables notifications or indications (§4.10, §4.11) and reports each value, the link's end or the failure to
    /// subscribe to `events`, until the returned cancellation is called.
    func subscribe(_ characteristic: GATTTree.Characteristic, indications: Bool,
                   _ events: @escaping @Sendable (SubscriptionEvent) -> Void) -> @Sendable () -> Void
    /// What is known of the link: parameters, PHYs, data length, ATT_MTU, RSSI (``LinkDescription``).
    func link() async -> LinkDescription
    /// Disconnects and lets the stack (or the bus connection) go.
    func close() async
}

extension GATTClientSession {
    /// The name in messages: the advertised name, else the address.
    var displayName: String { report.localName ?? report.address.string }
}

/// Why a GATT operation failed, as the commands print it: "Read Not Permitted (0x02) (handle 0x0012)".
struct GATTOperationFailure: Error, Sendable, CustomStringConvertible {
    var description: String
}

/// What a subscription reports.
enum SubscriptionEvent: Sendable {
    case value([UInt8])
    /// The link ended (the reason as text).
    case disconnected(String)
    /// Subscribing failed.
    case failed(GATTOperationFailure)
}

/// Opens the session the `--hci` option asks for: on bluetoothd's engine for `bluez`, `bluez:hciN`, else on our
/// host's.
func openClientSession(_ options: StackOptions, target: String, timeout: Duration, label: String) async throws(CLIFailure) -> any GATTClientSession {
    try await TargetSession.open(on: try await options.openEngine(label: label), target: target, timeout: timeout)
}
