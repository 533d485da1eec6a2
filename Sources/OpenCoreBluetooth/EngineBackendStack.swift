import BluetoothRuntime
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Host
import StackLauncher
import BluetoothEngine

/// Opens one stack for a backend, asynchronously, and reports it once (our host through `StackLauncher` or
/// `InProcessAir`, or bluetoothd: whichever ``HostBackend/Transport`` names), and takes it off the air when the backend is done.
///
/// Closing a stack on an in-process air also powers its virtual controller off: closing the host's transport
/// leaves the controller on the air, still advertising and accepting connections, with nobody behind it (a
/// released `CBPeripheralManager` would go on advertising its services, and a central would connect to that
/// ghost and wait forever for ATT answers). A device whose program ended goes silent; its peers see the link
/// time out (Core 5.4 Vol 6 Part B §4.5.2), as when a process on the hub exits.
final class EngineBackendStack: SystemBluetoothObserver {
    let transport: HostBackend.Transport
    /// The label of the stack's loop ("OpenCoreBluetooth.central" or ".peripheral").
    let label: String
    /// The ATT_MTU the stack offers (nil: the host's default).
    let preferredATTMTU: Int?
    /// The L2CAP channels open on the stack.
    let channels = EngineL2CAPChannels()
    private let state = LockedValue(State())

    private struct State {
        var stack: (any OpenedStack)?
        /// The current stack's event handler (cancelled when the stack is taken down).
        var subscription: StackEventSubscription?
        var closed = false
        /// The system's Bluetooth is off: no stack is opened until it is on again.
        var switchedOff = false
        /// Stacks being opened (a switch turned on meanwhile does not open another).
        var opening = 0
        var air: InProcessAir?
        /// What ``run(events:prepare:forget:state:)`` was given, once it was.
        var lifecycle: BackendLifecycle?
    }

    /// The system's Bluetooth switch this stack follows (nil: nobody switches it).
    let system: OCBSystemBluetooth?

    /// The identifier under which the Bluetooth service keeps this stack (a manager's restore identifier, with its
    /// role), nil when the stack is the program's own.
    private let keptAs = LockedValue<String?>(nil)

    /// Asks for the stack to be the Bluetooth service's, kept under `identifier` when the program dies, when the
    /// transport allows it (the shared air or another air hub, `service[:TRANSPORT]`); false when it does not (an
    /// in-process air, a controller of the program's own, bluetoothd). Before the first ``open(quietly:ready:)``.
    func keep(as identifier: String) -> Bool {
        guard serviceStack(for: transport) != nil else { return false }
        keptAs.store(identifier)
        return true
    }

    /// The stack the service runs for `transport`, and the service's socket (nil: the service does not run it).
    /// An air hub's programs meet the service beside it: `service.sock` in the hub's folder, unless
    /// `OCB_SERVICE_SOCKET` names one.
    private func serviceStack(for transport: HostBackend.Transport) -> (StackSpecification, String)? {
        let named = getenv(StackLaunchOptions.serviceSocketEnvironmentVariable).map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        switch transport {
        case .hub(let path):
            let folder = (path as NSString).deletingLastPathComponent
            return (.service(.air(path: path)), named ?? (folder.isEmpty ? "service.sock" : folder + "/service.sock"))
        case .specification(let text):
            guard case .service(let stack)? = try? StackSpecification(parsing: text) else { return nil }
            return (.service(stack), named ?? StackLaunchOptions.defaultServiceSocketPath)
        case .inProcess, .bluez:
            return nil
        }
    }

    /// Opens the stack (``HostBackend/launch(_:options:)`` on ``transport`` unless a test gave its own opener).
    private let launch: (@Sendable (StackLaunchOptions) async throws(StackLaunchError) -> any OpenedStack)?

    /// Pair as an iPhone (KeyboardDisplay, MITM asked) rather than NoInputNoOutput: a pairing agent answers the
    /// dialogs (``OCBPairingAgent``).
    let pairsAsAPhone: Bool

    init(transport: HostBackend.Transport, label: String, preferredATTMTU: Int?, pairsAsAPhone: Bool = false,
         system: OCBSystemBluetooth? = nil,
         launch: (@Sendable (StackLaunchOptions) async throws(StackLaunchError) -> any OpenedStack)? = nil) {
        self.transport = transport
        self.system = system
        self.label = label
        self.preferredATTMTU = preferredATTMTU
        self.pairsAsAPhone = pairsAsAPhone
        self.launch = launch
    }

    var stack: (any OpenedStack)? { state.load().stack }

    /// Runs `body` on the stack's loop with the stack (dropped when there is no stack).
    func onStack(_ body: @escaping @Sendable (any OpenedStack) -> Void) {
        guard let stack else { return }
        stack.engine.eventLoop.execute { body(stack) }
    }

    /// Opens the stack in a task; `ready` gets it (nil on failure, after logging why unless `quietly`), on the
    /// stack's loop. When the backend was shut down meanwhile the stack is closed and `ready` is not called.
    func open(quietly: Bool = false, ready: @escaping @Sendable ((any OpenedStack)?) -> Void) {
        // On a test kit's world, the clock waits for the stack to be open (the launch resumes on the cooperative
        // pool, which its loops do not count).
        var sharedTime: SharedTime?
        if case .inProcess(let air) = transport { sharedTime = air.sharedTime }
        sharedTime?.began()
        state.withLock { $0.opening += 1 }
        Task { [self] in
            defer { sharedTime?.ended() }
            var options = StackLaunchOptions(label: label)
            if let preferredATTMTU { options.host.preferredATTMTU = preferredATTMTU }
            if pairsAsAPhone {
                // An iPhone's Pairing Request: KeyboardDisplay, bonding, MITM, Secure Connections (Vol 3 Part H §3.5.1).
                options.host.security.ioCapability = .keyboardDisplay
                options.host.security.mitm = true
            }
            // Reading or writing an attribute that needs encryption pairs (Just Works) or encrypts with the bond,
            // then retries once, as iOS does; bonds persist only with OCB_BONDS (see HostBackend).
            if let directory = HostBackend.bondsDirectory() {
                options.host.security.bondStore = FileBondStore(directory: directory)
                options.identity = .persistent(directory: directory)
            }
            if case .inProcess(let air) = transport {
                options.host.address = .publicAddress
                state.withLock { $0.air = air }
            }
            var result: Result<any OpenedStack, StackLaunchError>
            do throws(StackLaunchError) {
                if let launch {
                    result = .success(try await launch(options))
                } else if let identifier = keptAs.load(), let (specification, socket) = serviceStack(for: transport) {
                    var kept = options
                    kept.serviceIdentifier = identifier
                    kept.serviceSocketPath = socket
                    if case .service(.air(let hub)) = specification { kept.hubSocketPath = hub }
                    result = .success(try await StackLauncher.open(specification: specification, options: kept))
                } else {
                    result = .success(try await HostBackend.launch(transport, options: options))
                }
            } catch {
                result = .failure(error)
            }
            // The service out of reach on an air: the program's own stack, its state in files as before.
            if case .failure(let error) = result, keptAs.load() != nil, case .hub = transport, launch == nil {
                Log.coreBluetooth.notice("\(label): the Bluetooth service is out of reach (\(error.reason)); this manager runs its own stack, and its restoration is imitated from files")
                do throws(StackLaunchError) {
                    result = .success(try await HostBackend.launch(transport, options: options))
                } catch {
                    result = .failure(error)
                }
            }
            switch result {
            case .success(let stack):
                // What `CBCentralManager.supports(_:)` answers from: a controller whose features were read (our host
                // reads them; bluetoothd does not tell them, so its stacks leave the answer as it was).
                if stack.controllerInfo.version != nil { HostBackend.lastController.store(stack.controllerInfo) }
                let keep = state.withLock { state -> Bool in
                    state.opening -= 1
                    guard !state.closed, !state.switchedOff else { return false }
                    state.stack = stack
                    return true
                }
                guard keep else {
                    release(stack)
                    return
                }
                stack.engine.eventLoop.execute { ready(stack) }
            case .failure(let error):
                state.withLock { $0.opening -= 1 }
                if !quietly { Log.coreBluetooth.error("no Bluetooth stack: \(error.reason)") }
                ready(nil)
            }
        }
    }

    /// When `stack` loses its controller (the hub stopped or killed, a TCP peer closed, an adapter unplugged):
    /// logs it once (error) and calls `lost` on the stack's loop, after the events already queued there.
    /// The managers then leave `.poweredOn` for `.poweredOff` — as iOS does when Bluetooth goes away: links end
    /// without `didDisconnect`, scanning and advertising stop, pending requests fail — instead of staying
    /// `.poweredOn` on a stack that can no longer do anything. Not after ``close()`` (no loss then).
    private func whenLost(_ stack: any OpenedStack, _ lost: @escaping @Sendable () -> Void) {
        let label = label, reopens = reopens
        stack.onLoss { [weak self] loss in
            guard let self, !self.state.load().closed, self.stack === stack else { return }
            if HostBackend.reportsControllerLoss {
                Log.coreBluetooth.error("\(label): \(loss); \(reopens ? "Bluetooth is resetting (opening the air's hub again)" : "Bluetooth is off")")
            }
            stack.engine.eventLoop.execute { lost() }
        }
    }

    /// Whether a lost stack may come back: one on the shared air's hub, which is the system's Bluetooth service
    /// here (a hub that stops is started again on demand, as launchd restarts bluetoothd, and iOS shows
    /// `.resetting` meanwhile). A lost controller of its own (TCP, serial, an adapter) is Bluetooth turned off.
    var reopens: Bool {
        guard HostBackend.reopensLostStacks else { return false }
        return switch transport {
        case .hub: true
        case .specification(let text): (try? StackSpecification(parsing: text))?.airHubSocket() != nil
        case .inProcess, .bluez: false
        }
    }

    /// How long a lost stack is tried again before the managers go `.poweredOff`.
    static let reopenLimit: Duration = .seconds(5)

    /// Opens the stack again after its loss (``reopens``), trying every 250 ms until ``reopenLimit`` has passed;
    /// `ready` gets the new stack, or nil. The lost stack is shut down.
    private func reopen(lost: any OpenedStack, ready: @escaping @Sendable ((any OpenedStack)?) -> Void) {
        Thread.detachNewThread { lost.shutdown() }
        attemptReopen(until: ContinuousClock.now + Self.reopenLimit, ready: ready)
    }

    private func attemptReopen(until deadline: ContinuousClock.Instant, ready: @escaping @Sendable ((any OpenedStack)?) -> Void) {
        open(quietly: true) { [self] stack in
            if let stack { return ready(stack) }
            guard ContinuousClock.now < deadline, !state.load().closed else { return ready(nil) }
            Task {
                try? await Task.sleep(for: .milliseconds(250))
                attemptReopen(until: deadline, ready: ready)
            }
        }
    }

    /// A backend's whole life on its stack, in one place for both roles: opens it (`.unsupported` when it cannot
    /// be), gives `events` every event of the stack until it is taken down (its handler removed then, so nothing is
    /// checked per event), `prepare`s it (the peripheral publishes its database) and reports `.poweredOn`. When the
    /// stack is lost, `forget` clears what the backend kept of it (given the state the managers go to), and the
    /// managers go `.poweredOff`, or, when it ``reopens``, `.resetting` until a new stack is prepared (`.poweredOn`)
    /// or none comes (`.poweredOff`). The system's Bluetooth switch (``system``) takes the stack down the same way:
    /// off → `.poweredOff` until on again; reset, or a controller that stops answering commands → `.resetting`, then
    /// a new stack.
    func run(events: @escaping @Sendable (HostEvent, any OpenedStack) -> Void,
             prepare: @escaping @Sendable (any OpenedStack, _ done: @escaping @Sendable () -> Void) -> Void,
             forget: @escaping @Sendable (CBManagerState) -> Void,
             state: @escaping @Sendable (CBManagerState) -> Void) {
        let lifecycle = BackendLifecycle(events: events, prepare: prepare, forget: forget, state: state)
        let off = self.state.withLock { current -> Bool in
            current.lifecycle = lifecycle
            current.switchedOff = system?.power == .off
            return current.switchedOff
        }
        system?.observe(self)
        // Made while Bluetooth is off: `.poweredOff` until it is turned on.
        if off { return state(.poweredOff) }
        start(lifecycle, failing: .unsupported)
    }

    /// Opens a stack and takes it; `failing` is the state when none opens.
    private func start(_ lifecycle: BackendLifecycle, failing: CBManagerState) {
        open { [weak self] stack in
            guard let stack else { return lifecycle.state(failing) }
            self?.take(stack, lifecycle)
        }
    }

    private func take(_ stack: any OpenedStack, _ lifecycle: BackendLifecycle) {
        let subscription = stack.engine.addEventHandler { [weak self, weak stack] event in
            guard let stack else { return }
            if case .controllerError(let error) = event, error.code == .unresponsiveController {
                // A controller that answers no command is reset by the system (bluetoothd, the Linux kernel): the
                // managers see `.resetting`, then a new stack.
                Log.coreBluetooth.error("\(self?.label ?? ""): \(error.reason); Bluetooth is resetting")
                self?.takeDown(stack, to: .resetting, reopening: true)
                return
            }
            lifecycle.events(event, stack)
        }
        state.withLock { $0.subscription = subscription }
        whenLost(stack) { [weak self] in
            guard let self, let lifecycle = takeOut(stack)?.lifecycle else { return }
            guard reopens else {
                lifecycle.forget(.poweredOff)
                return lifecycle.state(.poweredOff)
            }
            lifecycle.forget(.resetting)
            lifecycle.state(.resetting)
            reopen(lost: stack) { [weak self] stack in
                guard let stack else { return lifecycle.state(.poweredOff) }
                self?.take(stack, lifecycle)
            }
        }
        lifecycle.prepare(stack) { [weak self] in
            // Not when the stack was taken down meanwhile (the switch turned off while the database was published).
            guard let self, self.stack === stack else { return }
            lifecycle.state(.poweredOn)
        }
    }

    /// Makes `stack` no longer the current one (its event handler cancelled): what the backend was given, or nil
    /// when it was not current (already taken down, or the backend closed).
    private func takeOut(_ stack: any OpenedStack) -> (lifecycle: BackendLifecycle, subscription: StackEventSubscription?)? {
        let taken = state.withLock { state -> (BackendLifecycle, StackEventSubscription?)? in
            guard !state.closed, let current = state.stack, current === stack, let lifecycle = state.lifecycle else { return nil }
            defer {
                state.stack = nil
                state.subscription = nil
            }
            return (lifecycle, state.subscription)
        }
        taken?.1?.cancel()
        return taken
    }

    /// On `stack`'s loop: takes it down as the system's Bluetooth going `newState` (the backend forgets its links,
    /// the managers hear `newState`), closes it, and with `reopening` opens a new one.
    private func takeDown(_ stack: any OpenedStack, to newState: CBManagerState, reopening: Bool) {
        guard let lifecycle = takeOut(stack)?.lifecycle else { return }
        lifecycle.forget(newState)
        lifecycle.state(newState)
        Thread.detachNewThread { [self] in
            release(stack)
            if reopening { start(lifecycle, failing: .poweredOff) }
        }
    }

    func systemBluetoothChanged(_ change: OCBSystemBluetooth.Change) {
        let (stack, lifecycle, opening) = state.withLock { state -> ((any OpenedStack)?, BackendLifecycle?, Bool) in
            guard !state.closed else { return (nil, nil, false) }
            let wasOff = state.switchedOff
            state.switchedOff = change == .turnedOff
            // Turned on while a stack is open (it never went off): nothing to do.
            if change == .turnedOn, !wasOff { return (nil, nil, false) }
            return (state.stack, state.lifecycle, state.opening > 0)
        }
        guard let lifecycle else { return }
        switch change {
        case .turnedOff, .reset:
            let newState: CBManagerState = change == .reset ? .resetting : .poweredOff
            if let stack {
                stack.engine.eventLoop.execute { [self] in takeDown(stack, to: newState, reopening: change == .reset) }
            } else {
                // Still opening or already off. Off: the stack being opened will not be kept. Reset: the stack
                // being opened is a new one already.
                lifecycle.forget(newState)
                lifecycle.state(newState)
                if change == .reset, !opening { start(lifecycle, failing: .poweredOff) }
            }
        case .turnedOn:
            // A stack still being opened from before the switch went off is kept now.
            if !opening { start(lifecycle, failing: .poweredOff) }
        }
    }

    /// Closes the stack (its links drop for the peers). Idempotent; not from the stack's own loop.
    func close() {
        let stack = state.withLock { state -> (any OpenedStack)? in
            state.closed = true
            defer { state.stack = nil }
            return state.stack
        }
        guard let stack else { return }
        if stack.engine.eventLoop.inEventLoop {
            Thread.detachNewThread { self.release(stack) }
        } else {
            release(stack)
        }
    }

    /// Shuts `stack` down and, on an in-process air, powers its controller off (not from the stack's loop).
    private func release(_ stack: any OpenedStack) {
        stack.shutdown()
        guard let air = state.load().air else { return }
        air.powerOffController(of: stack.controllerInfo.publicAddress)
    }
}

/// What ``EngineBackendStack/run(events:prepare:forget:state:)`` calls back.
private struct BackendLifecycle: Sendable {
    let events: @Sendable (HostEvent, any OpenedStack) -> Void
    let prepare: @Sendable (any OpenedStack, _ done: @escaping @Sendable () -> Void) -> Void
    let forget: @Sendable (CBManagerState) -> Void
    let state: @Sendable (CBManagerState) -> Void
}
