import AdvertisingData
public import BluetoothCore
import BluetoothRuntime
import GATT
public import Host
import L2CAP
import BlueZ
public import StackLauncher
public import BluetoothEngine

/// The async/await API over one `HostStack` (Core 5.4 Vol 3 Part C GAP roles, Part G GATT, Part A L2CAP
/// credit-based channels): scanning as an `AsyncSequence`, async connect and GATT client procedures on
/// ``Peripheral``, notifications as streams, a declaratively built GATT server (``Service``, ``Characteristic``),
/// advertising, incoming ``Central``s as a stream, backpressured notifications, and L2CAP channels as streams.
///
/// Concurrency: the stack's state lives on the host's event loop; every method may be called from any task and
/// hops there. User code never runs on the loop: results resume the awaiting task, stream elements are yielded,
/// write handlers run on tasks of their own. Cancelling a task awaiting an operation throws `CancellationError`
/// at once and leaves the stack consistent (the procedure under way completes and its result is dropped; a
/// connect is cancelled; a scan stream that ends stops the scan).
///
/// ```swift
/// let stack = BluetoothStack(host: host)          // or BluetoothStack(opened:), InProcessStacks.make(count:)
/// try await stack.start()
/// for try await advertisement in stack.scan(services: [heartRate]) {
///     let peripheral = try await stack.connect(to: advertisement, timeout: .seconds(5))
///     let measurement = try await peripheral.characteristic(BluetoothUUID(0x2A37), service: heartRate)
///     for await value in try await peripheral.notifications(for: measurement) { print(value) }
///     break                                           // leaving the loop stops the scan
/// }
/// ```
///
/// `init(host:)` installs the host's event handler: do not set another one.
public final class BluetoothStack: Sendable {
    /// The stack underneath: our `HostStack`, or bluetoothd (``init(bluez:)``).
    let engine: any StackEngine
    let core: StackCore
    /// Routes pairing interactions to the ``PairingDelegate`` (see ``setPairingDelegate(_:)``).
    let pairing: PairingRouter
    private let handlerTasks = LockedValue<[Task<Void, Never>]>([])
    /// Ends this wrapper's subscription to the engine's events (at shutdown).
    private let unsubscribe: @Sendable () -> Void
    /// The opened stack this one wraps, shut down with it.
    let opened: (any OpenedStack)?

    /// Wraps `host` (started or not; see ``start()``) and installs its event handler: do not set another.
    public convenience init(host: HostStack) {
        self.init(engine: host)
    }

    /// The stack of bluetoothd over D-Bus rather than our own host (issue 16): `adapter` "hci1", or nil for
    /// bluetoothd's first adapter. Call ``start()`` before anything else: it fails when bluetoothd or its adapter
    /// is not there or not powered. What bluetoothd decides differently (no connection parameters, no own
    /// address, advertising of a name and service UUIDs only, no L2CAP server on a fixed PSM...) is in
    /// `BlueZEngine`'s documentation and README.
    public convenience init(bluez adapter: String? = nil) {
        self.init(engine: BlueZEngine(adapter: adapter))
    }

    /// Wraps `engine` (our host, or bluetoothd: the seam's ``StackEngine``) and installs its event handler: do not
    /// set another.
    public init(engine: any StackEngine) {
        self.engine = engine
        let core = StackCore(engine: engine)
        self.core = core
        let pairing = PairingRouter(engine: engine)
        self.pairing = pairing
        opened = nil
        engine.setEventHandler { event in
            core.handle(event)
            pairing.handle(event)
        }
        unsubscribe = { engine.setEventHandler { _ in } }
    }

    /// Wraps a stack opened by `StackLauncher` (already started, on any engine and `--hci` transport), as one more
    /// of its event handlers. ``shutdown()`` shuts the opened stack down too.
    public init(opened: any OpenedStack) {
        engine = opened.engine
        let core = StackCore(engine: opened.engine)
        self.core = core
        let pairing = PairingRouter(engine: opened.engine)
        self.pairing = pairing
        self.opened = opened
        let subscription = opened.engine.addEventHandler { event in
            core.handle(event)
            pairing.handle(event)
        }
        unsubscribe = { subscription.cancel() }
    }

    /// Opens and starts the stack a `--hci` name (or `OCB_HCI`) gives, as OpenCoreBluetooth reads it
    /// (`StackSpecification`): `bluez` / `bluez:hciN` for bluetoothd; empty or `virtual` for the shared air (its hub
    /// started when none runs), `air:PATH`, `in-process` (the process's own air, shared with its CoreBluetooth
    /// managers), or any `--hci` transport of our host (`tcp:HOST:PORT`, `hci0`...).
    public static func open(_ name: String) async throws -> BluetoothStack {
        let given = name.trimmingWhitespace()
        let text = given.isEmpty ? "virtual" : given
        let options = StackLaunchOptions(label: "BluetoothLE.stack")
        do throws(StackLaunchError) {
            let specification = try StackSpecification(parsing: text)
            if case .host(.inProcess) = specification {
                return BluetoothStack(opened: try await InProcessAir.process.makeStack(options: options))
            }
            return BluetoothStack(opened: try await StackLauncher.open(specification: specification, options: options))
        } catch {
            throw BluetoothLEError(.notReady, "\(text): \(error.reason)")
        }
    }

    /// Sets who answers pairing on this stack's links (numeric values, passkeys, Just Works consent); nil: the
    /// defaults of ``PairingDelegate``'s documentation. See ``Peripheral/pair(_:)``.
    public func setPairingDelegate(_ delegate: (any PairingDelegate)?) {
        pairing.setDelegate(delegate)
    }

    /// Starts the host (transport and controller initialisation) when it was not started yet.
    @discardableResult
    public func start() async throws -> ControllerInfo {
        let engine = engine
        let result: Result<ControllerInfo, BluetoothLEError> = try await PendingOperation.run { operation in
            engine.start { operation.succeed($0.mapError { BluetoothLEError($0) }) }
        }
        return try result.get()
    }

    /// The address the stack uses on air (after ``start()``).
    public func localAddress() async -> BluetoothAddress {
        await onLoop { [engine] in engine.controllerInfo.ownAddress }
    }

    /// What the stack holds now (streams, waiters, links): the leak check of tests.
    public func resources() async -> BluetoothLEResources {
        await onLoop { [core] in core.resources }
    }

    /// Shuts the host down: every stream finishes, every link counts as disconnected, write handlers stop.
    public func shutdown() async {
        for task in handlerTasks.withLock({ tasks in defer { tasks = [] }; return tasks }) { task.cancel() }
        engine.shutdown()
        let core = core, unsubscribe = unsubscribe
        await onLoop {
            unsubscribe()
            for sink in core.scanSinks.values { sink.continuation.finish() }
            core.scanSinks = [:]
            core.scanning = false
            core.scanTransition = false
            for sink in core.connectionSinks.values { sink.finish() }
            core.connectionSinks = [:]
            for listener in core.l2capListeners.values { listener.finish() }
            core.l2capListeners = [:]
            let links = core.links
            core.links = [:]
            for state in links.values {
                for sinks in state.notificationSinks.values { for sink in sinks.values { sink.finish() } }
                for channel in state.channels.values { channel.continuation.finish() }
                for waiter in state.readyWaiters.values { waiter() }
                state.link.disconnection.fire(.connectionTerminatedByLocalHost)
            }
        }
        opened?.shutdown()
    }

    private func onLoop<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
        let core = core
        // Not cancellable: a read of loop state is short.
        return await withCheckedContinuation { continuation in core.onLoop { continuation.resume(returning: body()) } }
    }

    // MARK: Central role

    /// Scans while the stream is iterated (Vol 3 Part C §9.2: active scan, advertising merged with scan
    /// responses). `services`: only devices listing one of them; `duplicates`: every packet, else a device is
    /// reported again only when its advertising content changed. Stopping the iteration (break, cancellation,
    /// dropping the sequence) stops the scan when no other scan is open. Several streams share one scan.
    /// Fails when the controller refuses to scan. Keeps the newest 256 reports when the consumer is slow.
    public func scan(services: [BluetoothUUID] = [], duplicates: Bool = false) -> AdvertisementStream {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Advertisement.self, bufferingPolicy: .bufferingNewest(256))
        let core = core
        let id = LockedValue<UInt64?>(nil)
        continuation.onTermination = { _ in
            core.onLoop {
                guard let sinkID = id.load(), core.scanSinks.removeValue(forKey: sinkID) != nil else { return }
                core.reconcileScan()
            }
        }
        core.onLoop {
            let sinkID = core.makeID()
            id.store(sinkID)
            core.scanSinks[sinkID] = StackCore.ScanSink(continuation: continuation, services: Set(services), duplicates: duplicates)
            core.reconcileScan()
        }
        return AdvertisementStream(base: stream, token: StopToken { continuation.finish() })
    }

    /// Connects to an advertiser (LE Create Connection). `timeout`: give up after it (``BluetoothLEError/Code/timedOut``);
    /// none by default, like CoreBluetooth. Cancelling the task cancels the connect (a connection made anyway is
    /// dropped). The host then exchanges the ATT_MTU by itself.
    public func connect(to address: BluetoothAddress, timeout: Duration? = nil) async throws -> Peripheral {
        let core = core, engine = engine
        let started = LockedValue(false)
        return try await PendingOperation.run(onCancel: {
            if started.load() { engine.cancelConnect(to: address, completion: nil) }
        }) { operation in
            started.store(true)
            engine.connect(to: address, options: ConnectOptions(timeout: timeout)) { result in
                switch result {
                case .success(let connection):
                    guard let peripheral = core.links[connection.handle]?.peripheral else {
                        operation.fail(BluetoothLEError.notConnected(connection.handle))
                        return
                    }
                    if !operation.succeed(peripheral) {
                        engine.disconnect(connectionHandle: connection.handle, reason: .remoteUserTerminatedConnection, completion: nil)
                    }
                case .failure(let error):
                    operation.fail(BluetoothLEError(error))
                }
            }
        }
    }

    /// Connects to the device that sent `advertisement`.
    public func connect(to advertisement: Advertisement, timeout: Duration? = nil) async throws -> Peripheral {
        try await connect(to: advertisement.address, timeout: timeout)
    }

    // MARK: Peripheral role

    /// Adds services to the local GATT server (GAP and GATT services first, when the database is empty), gives
    /// each ``Characteristic`` its handles and starts its ``Characteristic/onWrite(_:)`` handlers.
    public func publish(deviceName: String = "OpenCoreBluetooth", @ServiceBuilder _ services: () -> [Service]) async throws {
        let list = services()
        let definitions = list.map(\.definition)
        let engine = engine
        let result: Result<[GATTServiceHandles], BluetoothLEError> = try await PendingOperation.run { operation in
            engine.publish(deviceName: deviceName, definitions) { operation.succeed($0.mapError { BluetoothLEError($0) }) }
        }
        let handles = try result.get()
        var published: [(UInt16, Characteristic)] = []
        for (service, serviceHandles) in zip(list, handles) {
            for (characteristic, characteristicHandles) in zip(service.characteristics, serviceHandles.characteristics) {
                characteristic.published(valueHandle: characteristicHandles.value)
                published.append((characteristicHandles.value, characteristic))
            }
        }
        let core = core, registered = published
        await onLoop {
            for (handle, characteristic) in registered { core.localCharacteristics[handle] = characteristic }
            let answered = Set(core.localCharacteristics.filter { $0.value.answersRequests }.keys)
            core.engine.setGATTDeferral(answered.isEmpty ? nil : GATTDeferral(handles: answered) { request in core.deferred(request) })
        }
        for (_, characteristic) in published {
            let handlers = characteristic.state.withLock { $0.writeHandlers }
            guard !handlers.isEmpty else { continue }
            let writes = characteristic.writes()
            let task = Task {
                for await write in writes {
                    for handler in handlers { await handler(write) }
                }
            }
            handlerTasks.withLock { $0.append(task) }
        }
    }

    /// Starts advertising (Vol 3 Part C §9.3: general discoverable; connectable by default). The local name goes
    /// to the scan response. Returns once the controller advertises; a connection ends advertising (advertise
    /// again to accept another central).
    public func advertise(name: String? = nil, services: [BluetoothUUID] = [],
                          manufacturerData: (company: CompanyIdentifier, data: [UInt8])? = nil,
                          connectable: Bool = true, interval: Duration = .milliseconds(100)) async throws -> AdvertisingSession {
        let units = UInt16(min(0x4000, max(0x20, (interval / .microseconds(625)).rounded())))
        let content = AdvertisingContent(localName: name, serviceUUIDs: services, manufacturerData: manufacturerData)
        let options = AdvertisingOptions(kind: connectable ? .connectable : .scannable, intervalMin: units, intervalMax: units)
        let engine = engine
        let result: Result<Void, BluetoothLEError> = try await PendingOperation.run { operation in
            engine.startAdvertising(content, options: options) { operation.succeed($0.mapError { BluetoothLEError($0) }) }
        }
        try result.get()
        return AdvertisingSession(engine: engine)
    }

    /// The centrals that connect from now on (in connection order). Ends when the consumer stops iterating.
    public func connections() -> ValueStream<Central> {
        let (stream, continuation) = AsyncStream.makeStream(of: Central.self, bufferingPolicy: .unbounded)
        let core = core
        let id = LockedValue<UInt64?>(nil)
        continuation.onTermination = { _ in
            core.onLoop { if let sinkID = id.load() { core.connectionSinks[sinkID] = nil } }
        }
        core.onLoop {
            let sinkID = core.makeID()
            id.store(sinkID)
            core.connectionSinks[sinkID] = continuation
        }
        return ValueStream(base: stream, token: StopToken { continuation.finish() })
    }

    /// Notifies (or indicates) a new value to the subscribed centrals, or only to `central` (Vol 3 Part G
    /// §4.10, §4.11), and stores it. Suspends while a target connection's send queue is full (CoreBluetooth's
    /// `updateValue` returning false, then `peripheralManagerIsReady`): values are neither lost nor reordered.
    /// A value longer than ATT_MTU − 3 is cut for that central.
    public func notify(_ characteristic: Characteristic, value: [UInt8], to central: Central? = nil) async throws {
        guard let handle = characteristic.valueHandle else {
            throw BluetoothLEError(.notFound, "\(characteristic) is not published")
        }
        let core = core
        let targets: Set<UInt16>? = central.map { [$0.connectionHandle] }
        try await PendingOperation<Void>.run { operation in
            core.onLoop { core.notify(value, handle: handle, targets: targets, characteristic: characteristic, operation) }
        }
    }

    /// Sets a characteristic's stored value without notifying anyone (reads see it from now on).
    public func setValue(_ characteristic: Characteristic, _ value: [UInt8]) async throws {
        guard let handle = characteristic.valueHandle else {
            throw BluetoothLEError(.notFound, "\(characteristic) is not published")
        }
        let engine = engine
        let result: Result<[UInt16], BluetoothLEError> = try await PendingOperation.run { operation in
            engine.updateValue(value, handle: handle, to: [], requireReady: false) { operation.succeed($0.mapError { BluetoothLEError($0) }) }
        }
        _ = try result.get()
        characteristic.stored(value)
    }

    /// Accepts LE credit-based channels on `psm` (0x0080...0x00FF for dynamic PSMs; Vol 3 Part A §4.22) from any
    /// connected central while the stream is iterated; ending the stream stops accepting (open channels stay).
    public func publishL2CAPChannel(psm: UInt16, mtu: UInt16 = 2048) async throws -> ValueStream<L2CAPChannel> {
        let core = core, engine = engine
        let (stream, continuation) = AsyncStream.makeStream(of: L2CAPChannel.self, bufferingPolicy: .unbounded)
        let server = L2CAPChannelServer(psm: psm, mtu: mtu, mps: 247, initialCredits: 16)
        let result: Result<Void, BluetoothLEError> = try await PendingOperation.run { operation in
            engine.registerL2CAPServer(server, requiresEncryption: false) { result in
                switch result {
                case .success:
                    core.l2capListeners[psm] = continuation
                    operation.succeed(.success(()))
                case .failure(let error):
                    operation.succeed(.failure(BluetoothLEError(.invalidParameters, "\(error)")))
                }
            }
        }
        try result.get()
        continuation.onTermination = { _ in
            core.onLoop {
                core.l2capListeners[psm] = nil
                core.engine.unregisterL2CAPServer(psm: psm)
            }
        }
        return ValueStream(base: stream, token: StopToken { continuation.finish() })
    }
}

/// Advertising in progress (Core 5.4 Vol 3 Part C §9.3). ``stop()`` ends it; a connection also ends it.
public final class AdvertisingSession: Sendable {
    let engine: any StackEngine

    init(engine: any StackEngine) {
        self.engine = engine
    }

    /// Stops advertising (LE Set Advertising Enable off).
    public func stop() async {
        let engine = engine
        _ = try? await PendingOperation<Void>.run { operation in engine.stopAdvertising { _ in operation.succeed(()) } }
    }
}

extension StackCore {
    /// On the loop: sends a notification with readiness checked; when a target queue is full, waits for its
    /// ready event and tries again.
    func notify(_ value: [UInt8], handle: UInt16, targets: Set<UInt16>?, characteristic: Characteristic,
                _ operation: PendingOperation<Void>) {
        // Committed while the value is handed over: a cancellation then cannot report a value that goes out.
        guard operation.commit() else { return }
        engine.updateValue(value, handle: handle, to: targets, requireReady: true) { [self] result in
            switch result {
            case .success:
                characteristic.stored(value)
                operation.succeed(())
            case .failure(let error) where error.code == .busy:
                guard operation.release() else { return }
                let candidates = (targets ?? Set(links.keys)).sorted()
                let full = candidates.first { links[$0] != nil && !engine.isReadyToSend(connectionHandle: $0) }
                guard let full else {
                    loop.execute { [self] in notify(value, handle: handle, targets: targets, characteristic: characteristic, operation) }
                    return
                }
                flowControlWaits += 1
                links[full]?.readyWaiters[makeID()] = { [self] in
                    notify(value, handle: handle, targets: targets, characteristic: characteristic, operation)
                }
            case .failure(let error):
                operation.fail(BluetoothLEError(error))
            }
        }
    }
}
