import AdvertisingData
import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import Host
import OpenCoreBluetooth
import BluetoothEngine

/// A central on a CoreBluetooth backend rather than on our host: bluetoothd over D-Bus for `--hci bluez` and
/// `bluez:hciN` (issue 16). The commands wait on it as they wait on a ``LaunchedStack``: its first state, the
/// target's advertisement, the connection, each GATT operation; every wait is bounded (the backend's D-Bus calls
/// have limits of their own, the waits here time out too).
final class BackendCentral: Sendable {
    let backend: any CBCentralBackend
    /// "bluetoothd (hci0)".
    let transportDescription: String
    /// Runs the commands' timers.
    let eventLoop = DispatchEventLoop(label: "blue.backend")
    private let handlers = LockedValue<(next: UInt64, list: [UInt64: @Sendable (CBCentralBackendEvent) -> Void])>((0, [:]))
    /// The ATT_MTU of each link, as the backend reports it.
    private let mtus = LockedValue<[BluetoothAddress: Int]>([:])

    private init(backend: any CBCentralBackend, description: String) {
        self.backend = backend
        transportDescription = description
    }

    /// How long bluetoothd may take to say whether its adapter is there and powered.
    static let startLimit: Duration = .seconds(15)

    /// Connects to bluetoothd and waits for its adapter's state: powered on, or one line and exit 69.
    static func openBlueZ(_ adapter: BlueZAdapterChoice) async throws(CLIFailure) -> BackendCentral {
        let reason = LockedValue<String?>(nil)
        let backend = HostBackend.bluezCentral(adapter: adapter.name) { line in
            reason.withLock { $0 = $0 ?? line }
        }
        let central = BackendCentral(backend: backend, description: "bluetoothd (\(adapter.name ?? "its first adapter"))")
        let state = OneShot<CBManagerState?>()
        let subscription = central.addHandler { event in
            if case .stateChanged(let value) = event { state.fire(value) }
        }
        backend.start { [weak central] event in central?.dispatch(event) }
        let timer = central.eventLoop.schedule(after: startLimit) { state.fire(nil) }
        let first = await state.wait()
        timer.cancel()
        subscription()
        guard first == .poweredOn else {
            central.shutdown()
            throw startFailure(first, description: central.transportDescription, reason: reason.load())
        }
        return central
    }

    /// Why bluetoothd's first state is not "powered on", as the one line a command ends with (exit 69): the adapter
    /// off, no answer within ``startLimit`` (nil), or the backend's own reason.
    static func startFailure(_ state: CBManagerState?, description: String, reason: String?) -> CLIFailure {
        switch state {
        case .poweredOff?: CLIFailure(.unavailable, "the adapter of \(description) is powered off (`bluetoothctl power on`)")
        case nil: CLIFailure(.unavailable, "\(description) did not answer within \(startLimit.secondsText)")
        default: CLIFailure(.unavailable, reason ?? "cannot use \(description)")
        }
    }

    private func dispatch(_ event: CBCentralBackendEvent) {
        switch event {
        case .connected(let peer, let mtu), .mtuChanged(let peer, let mtu):
            mtus.withLock { $0[peer.address] = mtu }
        default:
            break
        }
        for handler in handlers.load().list.sorted(by: { $0.key < $1.key }).map(\.value) { handler(event) }
    }

    /// Calls `handler` with every event until the returned cancellation.
    func addHandler(_ handler: @escaping @Sendable (CBCentralBackendEvent) -> Void) -> @Sendable () -> Void {
        let id = handlers.withLock { handlers -> UInt64 in
            handlers.next += 1
            handlers.list[handlers.next] = handler
            return handlers.next
        }
        return { [weak self] in self?.handlers.withLock { _ = $0.list.removeValue(forKey: id) } }
    }

    func shutdown() {
        backend.shutdown()
    }

    func attMTU(_ address: BluetoothAddress) -> Int {
        mtus.load()[address] ?? 23
    }

    // MARK: Scanning

    /// Scans (reporting duplicates) until a connectable device matching `target` is heard, for at most `timeout`.
    func findTarget(_ target: TargetMatcher, timeout: Duration) async throws(CLIFailure) -> ScanReport {
        let done = OneShot<ScanReport?>()
        let cancel = addHandler { event in
            if case .advertisement(let advertisement) = event {
                let report = ScanReport(advertisement)
                if report.isConnectable, target.matches(report) { done.fire(report) }
            }
        }
        let timer = eventLoop.schedule(after: timeout) { done.fire(nil) }
        backend.startScan(CBBackendScanParameters(serviceUUIDs: nil, allowDuplicates: true, solicitedServiceUUIDs: []))
        let found = await done.wait()
        cancel()
        timer.cancel()
        backend.stopScan()
        guard let found else {
            throw CLIFailure(.notFound, "no device matching \(target) found within \(timeout.secondsText)")
        }
        return found
    }

    // MARK: Connections

    /// Connects within `timeout` (a connection attempt still running then is cancelled).
    func connect(to address: BluetoothAddress, name: String, timeout: Duration) async throws(CLIFailure) {
        let peer = CBBackendPeer(address: address)
        let done = OneShot<CBBackendError??>()
        let cancel = addHandler { event in
            switch event {
            case .connected(let connected, _) where connected == peer: done.fire(.some(nil))
            case .connectionFailed(let failed, let error) where failed == peer: done.fire(.some(error))
            default: break
            }
        }
        let timer = eventLoop.schedule(after: timeout) { done.fire(nil) }
        backend.connect(peer)
        let outcome = await done.wait()
        cancel()
        timer.cancel()
        switch outcome {
        case .some(nil): return
        case .some(let error?): throw CLIFailure(.failed, "cannot connect to \(name): \(Self.text(error))")
        case nil:
            backend.cancelConnection(peer)
            throw CLIFailure(.failed, "cannot connect to \(name): no connection within \(timeout.secondsText)")
        }
    }

    /// Disconnects and waits for the link's end (at most 5 s).
    func disconnect(_ address: BluetoothAddress) async {
        let peer = CBBackendPeer(address: address)
        let done = OneShot<Void>()
        let cancel = addHandler { event in
            if case .disconnected(let gone, _) = event, gone == peer { done.fire(()) }
        }
        let timer = eventLoop.schedule(after: .seconds(5)) { done.fire(()) }
        backend.cancelConnection(peer)
        await done.wait()
        cancel()
        timer.cancel()
    }

    // MARK: GATT

    /// Waits for the completion `start` is given.
    func complete<Value: Sendable>(
        _ start: (@escaping @Sendable (Result<Value, CBBackendError>) -> Void) -> Void
    ) async -> Result<Value, GATTOperationFailure> {
        let done = OneShot<Result<Value, CBBackendError>>()
        start { done.fire($0) }
        return await done.wait().mapError { GATTOperationFailure(description: Self.text($0)) }
    }

    /// An ATT error as the host route prints it ("Read Not Permitted (0x02)"), else the backend's reason.
    static func text(_ error: CBBackendError) -> String {
        switch error {
        case .att(let code): "\(ATTErrorCode(code))"
        case .core(_, let reason): reason
        }
    }
}

