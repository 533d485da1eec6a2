import BluetoothRuntime
import Foundation
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
final class EngineBackendStack: Sendable {
    let transport: HostBackend.Transport
    /// The label of the stack's loop ("OpenCoreBluetooth.central" or ".peripheral").
    let label: String
    /// The ATT_MTU the stack offers (nil: the host's default).
    let preferredATTMTU: Int?
    /// The L2CAP channels open on the stack.
    let channels = EngineL2CAPChannels()
    private let state = LockedValue<(stack: (any OpenedStack)?, closed: Bool, air: InProcessAir?)>((nil, false, nil))

    /// Opens the stack (``HostBackend/launch(_:options:)`` on ``transport`` unless a test gave its own opener).
    private let launch: (@Sendable (StackLaunchOptions) async throws(StackLaunchError) -> any OpenedStack)?

    /// Pair as an iPhone (KeyboardDisplay, MITM asked) rather than NoInputNoOutput: a pairing agent answers the
    /// dialogs (``OCBPairingAgent``).
    let pairsAsAPhone: Bool

    init(transport: HostBackend.Transport, label: String, preferredATTMTU: Int?, pairsAsAPhone: Bool = false,
         launch: (@Sendable (StackLaunchOptions) async throws(StackLaunchError) -> any OpenedStack)? = nil) {
        self.transport = transport
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
            let result: Result<any OpenedStack, StackLaunchError>
            do throws(StackLaunchError) {
                if let launch {
                    result = .success(try await launch(options))
                } else {
                    result = .success(try await HostBackend.launch(transport, options: options))
                }
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success(let stack):
                // What `CBCentralManager.supports(_:)` answers from: a controller whose features were read (our host
                // reads them; bluetoothd does not tell them, so its stacks leave the answer as it was).
                if stack.controllerInfo.version != nil { HostBackend.lastController.store(stack.controllerInfo) }
                let keep = state.withLock { state -> Bool in
                    guard !state.closed else { return false }
                    state.stack = stack
                    return true
                }
                guard keep else {
                    release(stack)
                    return
                }
                stack.engine.eventLoop.execute { ready(stack) }
            case .failure(let error):
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
            guard let self, !self.state.load().closed else { return }
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
    private func reopen(ready: @escaping @Sendable ((any OpenedStack)?) -> Void) {
        let lost = state.withLock { state -> (any OpenedStack)? in
            defer { state.stack = nil }
            return state.stack
        }
        if let lost { Thread.detachNewThread { lost.shutdown() } }
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
    /// be), gives `events` every event of the stack until it is lost (its handler removed then, so nothing is
    /// checked per event), `prepare`s it (the peripheral publishes its database) and reports `.poweredOn`; when the stack is
    /// lost, `forget` clears what the backend kept of it, and the managers go `.poweredOff`, or, when it
    /// ``reopens``, `.resetting` until a new stack is prepared (`.poweredOn`) or none comes (`.poweredOff`).
    func run(events: @escaping @Sendable (HostEvent, any OpenedStack) -> Void,
             prepare: @escaping @Sendable (any OpenedStack, _ done: @escaping @Sendable () -> Void) -> Void,
             forget: @escaping @Sendable () -> Void,
             state: @escaping @Sendable (CBManagerState) -> Void) {
        let lifecycle = BackendLifecycle(events: events, prepare: prepare, forget: forget, state: state)
        open { [weak self] stack in
            guard let stack else { return state(.unsupported) }
            self?.take(stack, lifecycle)
        }
    }

    private func take(_ stack: any OpenedStack, _ lifecycle: BackendLifecycle) {
        let subscription = stack.engine.addEventHandler { [weak stack] event in
            guard let stack else { return }
            lifecycle.events(event, stack)
        }
        whenLost(stack) { [weak self] in
            subscription.cancel()
            guard let self else { return }
            lifecycle.forget()
            guard reopens else { return lifecycle.state(.poweredOff) }
            lifecycle.state(.resetting)
            reopen { [weak self] stack in
                guard let stack else { return lifecycle.state(.poweredOff) }
                self?.take(stack, lifecycle)
            }
        }
        lifecycle.prepare(stack) { lifecycle.state(.poweredOn) }
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
    let forget: @Sendable () -> Void
    let state: @Sendable (CBManagerState) -> Void
}
