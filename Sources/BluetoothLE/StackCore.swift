import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import Host
import L2CAP
import BluetoothEngine

/// The loop-confined state of a ``BluetoothStack``: who listens to what (scan streams, notification streams,
/// connection streams, L2CAP channels), who waits for send room, and the links with their peer objects. Every
/// stored property is read and written only on the host's event loop (the host's event handler, completions,
/// and jobs enqueued by ``onLoop(_:)``); that is what makes the `@unchecked Sendable` sound. Nothing here runs
/// user code: it yields to `AsyncStream` continuations and resumes suspended tasks, which then run elsewhere.
final class StackCore: @unchecked Sendable {
    /// The stack underneath: our host, or bluetoothd (``StackEngine``).
    let engine: any StackEngine
    var loop: any EventLoop { engine.eventLoop }

    struct ScanSink {
        var continuation: AsyncThrowingStream<Advertisement, any Error>.Continuation
        var services: Set<BluetoothUUID>
        var duplicates: Bool
        /// Last content seen per device (without duplicates, a device is reported again only when it changed).
        var seen: [BluetoothAddress: [UInt8]] = [:]
    }

    struct LinkState {
        var link: PeerLink
        var peripheral: Peripheral?
        var central: Central?
        /// Notification and indication streams per remote value handle.
        var notificationSinks: [UInt16: [UInt64: AsyncStream<[UInt8]>.Continuation]] = [:]
        /// Jobs to run when the connection's send queue has room again.
        var readyWaiters: [UInt64: () -> Void] = [:]
        /// Open L2CAP channels by local CID.
        var channels: [UInt16: L2CAPChannel] = [:]
    }

    // MARK: Loop-confined state

    var scanSinks: [UInt64: ScanSink] = [:]
    /// Whether the controller scans (or is being told to), and whether a start/stop is in flight.
    var scanning = false
    var scanTransition = false
    var links: [UInt16: LinkState] = [:]
    var connectionSinks: [UInt64: AsyncStream<Central>.Continuation] = [:]
    /// Local characteristics by value handle (the published GATT server).
    var localCharacteristics: [UInt16: Characteristic] = [:]
    /// L2CAP channel listeners per PSM.
    var l2capListeners: [UInt16: AsyncStream<L2CAPChannel>.Continuation] = [:]
    var nextID: UInt64 = 0
    /// Times a write without response or a notification waited for send room (since start).
    var flowControlWaits = 0

    init(engine: any StackEngine) {
        self.engine = engine
    }

    /// Runs `body` on the loop: now when already there, else enqueued.
    func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inEventLoop { body() } else { loop.execute(body) }
    }

    func makeID() -> UInt64 {
        nextID &+= 1
        return nextID
    }

    // MARK: Events (on the loop)

    func handle(_ event: HostEvent) {
        switch event {
        case .advertisingReport(let report):
            deliver(Advertisement(report))
        case .connected(let connection):
            connected(connection)
        case .disconnected(let handle, let reason):
            disconnected(handle, reason: reason)
        case .attMTUChanged(let handle, let mtu):
            links[handle]?.link.mtuValue.store(mtu)
        case .gattNotification(let handle, let attributeHandle, let value),
             .gattIndication(let handle, let attributeHandle, let value):
            for sink in links[handle]?.notificationSinks[attributeHandle]?.values ?? [:].values { sink.yield(value) }
        case .gattServer(let serverEvent):
            handle(serverEvent)
        case .readyToSend(let handle):
            let waiters = links[handle]?.readyWaiters ?? [:]
            links[handle]?.readyWaiters = [:]
            for waiter in waiters.sorted(by: { $0.key < $1.key }) { waiter.value() }
        case .l2capChannelOpened(let handle, let info):
            channelOpened(handle, info)
        case .l2capSDU(let handle, let channel, let sdu):
            links[handle]?.channels[channel.rawValue]?.continuation.yield(sdu)
        case .l2capChannelClosed(let handle, let channel, _):
            if let closed = links[handle]?.channels.removeValue(forKey: channel.rawValue) { closed.continuation.finish() }
        default:
            // Controller errors, parameter updates, security and pairing events: not part of this API (yet); the
            // host handles them by itself.
            break
        }
    }

    private func handle(_ event: GATTServerEvent) {
        switch event {
        case .valueWritten(let connection, let handle, let value):
            guard let characteristic = localCharacteristics[handle] else { return }
            let central = links[connection.rawValue]?.central
            characteristic.received(CharacteristicWrite(central: central, connectionHandle: connection.rawValue, value: value))
        case .subscriptionChanged(let connection, let valueHandle, let configuration):
            localCharacteristics[valueHandle]?.setSubscription(connection.rawValue, configuration.rawValue)
        case .clientFeaturesChanged, .signedWriteRejected:
            break
        }
    }

    private func connected(_ connection: Connection) {
        let mtu = engine.attMTU(connectionHandle: connection.handle) ?? 23
        let link = PeerLink(core: self, connection: connection, mtu: mtu)
        var state = LinkState(link: link)
        switch connection.role {
        case .central:
            state.peripheral = Peripheral(link: link)
        case .peripheral:
            let central = Central(link: link)
            state.central = central
            for sink in connectionSinks.values { sink.yield(central) }
        }
        links[connection.handle] = state
    }

    private func disconnected(_ handle: UInt16, reason: HCIStatus) {
        guard let state = links.removeValue(forKey: handle) else { return }
        for sinks in state.notificationSinks.values { for sink in sinks.values { sink.finish() } }
        for channel in state.channels.values { channel.continuation.finish() }
        for characteristic in localCharacteristics.values { characteristic.setSubscription(handle, 0) }
        // Waiters for send room find the link gone and fail.
        for waiter in state.readyWaiters.sorted(by: { $0.key < $1.key }) { waiter.value() }
        state.link.disconnection.fire(reason)
    }

    private func channelOpened(_ handle: UInt16, _ info: L2CAPChannelInfo) {
        guard links[handle] != nil else { return }
        let channel = L2CAPChannel(core: self, connectionHandle: handle, info: info,
                                   peer: links[handle]?.link.connection.peer)
        links[handle]?.channels[info.localCID.rawValue] = channel
        if !info.isInitiator {
            if let listener = l2capListeners[info.psm] {
                listener.yield(channel)
            } else {
                engine.closeL2CAPChannel(connectionHandle: handle, channel: info.localCID, completion: nil)
            }
        }
    }

    // MARK: Scanning (on the loop)

    private func deliver(_ advertisement: Advertisement) {
        for (id, sink) in scanSinks {
            if !sink.services.isEmpty, sink.services.isDisjoint(with: advertisement.serviceUUIDs) { continue }
            if !sink.duplicates {
                let key = advertisement.contentKey
                if sink.seen[advertisement.address] == key { continue }
                scanSinks[id]?.seen[advertisement.address] = key
            }
            sink.continuation.yield(advertisement)
        }
    }

    /// Starts or stops the controller's scan to match the listeners, one command sequence at a time (a stop sent
    /// while a start is in flight would otherwise be overtaken by its Set Scan Enable).
    func reconcileScan() {
        guard !scanTransition else { return }
        let wanted = !scanSinks.isEmpty
        guard wanted != scanning else { return }
        scanTransition = true
        if wanted {
            engine.startScanning(ScanOptions(active: true, filterDuplicates: false)) { [self] result in
                scanTransition = false
                switch result {
                case .success:
                    scanning = true
                case .failure(let error):
                    let sinks = scanSinks
                    scanSinks = [:]
                    for sink in sinks.values { sink.continuation.finish(throwing: BluetoothLEError(error)) }
                }
                reconcileScan()
            }
        } else {
            engine.stopScanning { [self] _ in
                scanTransition = false
                scanning = false
                reconcileScan()
            }
        }
    }

    // MARK: Send room (on the loop)

    /// Runs `job` now when the connection may send, else when `HostEvent/readyToSend(handle:)` comes (or the
    /// link ends: `job` then finds no link). Returns the waiter's id, or nil when the job ran at once.
    @discardableResult
    func whenReady(_ handle: UInt16, _ job: @escaping () -> Void) -> UInt64? {
        guard links[handle] != nil, !engine.isReadyToSend(connectionHandle: handle) else {
            job()
            return nil
        }
        let id = makeID()
        links[handle]?.readyWaiters[id] = job
        flowControlWaits += 1
        return id
    }

    /// What is held now, for leak checks.
    var resources: BluetoothLEResources {
        BluetoothLEResources(
            scanStreams: scanSinks.count, isScanning: scanning || scanTransition, links: links.count,
            notificationStreams: links.values.reduce(0) { $0 + $1.notificationSinks.values.reduce(0) { $0 + $1.count } },
            readyWaiters: links.values.reduce(0) { $0 + $1.readyWaiters.count },
            l2capChannels: links.values.reduce(0) { $0 + $1.channels.count },
            connectionStreams: connectionSinks.count, l2capListeners: l2capListeners.count,
            flowControlWaits: flowControlWaits)
    }
}

/// What a ``BluetoothStack`` holds right now: the leak check of tests ("nothing left") and a diagnostic.
public struct BluetoothLEResources: Hashable, Sendable, CustomStringConvertible {
    /// Scan streams (`scan(services:duplicates:)`) still subscribed.
    public var scanStreams: Int
    /// The controller scans, or a start/stop is in flight.
    public var isScanning: Bool
    /// Open connections, in either role.
    public var links: Int
    /// Notification streams still subscribed.
    public var notificationStreams: Int
    /// Writes without response or notifications waiting for room in a connection's send queue.
    public var readyWaiters: Int
    /// Open L2CAP channels.
    public var l2capChannels: Int
    /// Streams of incoming centrals (`connections()`) still subscribed.
    public var connectionStreams: Int
    /// PSMs published with `publishL2CAPChannel(psm:mtu:)` and still listened on.
    public var l2capListeners: Int
    /// Times a write without response or a notification waited for send room, since start (a statistic, not
    /// part of the quiescence check).
    public var flowControlWaits: Int = 0

    /// No stream, no waiter, no scan, no link.
    public var isQuiescent: Bool {
        scanStreams == 0 && !isScanning && links == 0 && notificationStreams == 0 && readyWaiters == 0
            && l2capChannels == 0 && connectionStreams == 0 && l2capListeners == 0
    }

    public var description: String {
        "scan streams \(scanStreams)\(isScanning ? " (scanning)" : ""), links \(links), notification streams "
            + "\(notificationStreams), ready waiters \(readyWaiters), L2CAP channels \(l2capChannels), connection "
            + "streams \(connectionStreams), L2CAP listeners \(l2capListeners)"
    }
}
