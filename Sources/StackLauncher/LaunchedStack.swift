public import BluetoothRuntime
public import HCITransport
public import Host
import VirtualController
public import BluetoothEngine

/// A started ``HostStack`` on its own `DispatchEventLoop`, as ``StackLauncher`` opened it: the transport it runs
/// on, what the controller told at initialisation, and any number of event handlers (the host itself takes one).
///
/// Event handlers run on ``eventLoop``, in registration order, for every ``HostEvent``. ``shutdown()`` closes the
/// transport (the controller's connections drop), then the snoop capture.
public final class LaunchedStack: Sendable {
    /// Cancels an event handler added with ``addEventHandler(_:)``.
    public typealias EventSubscription = StackEventSubscription

    public let host: HostStack
    /// The stack as the APIs use it: through the engine seam.
    public var engine: any StackEngine { host }
    public let eventLoop: DispatchEventLoop
    /// The `--hci` specification this stack runs on; for `virtual`, what it became (`air:PATH` or `virtual`).
    public let spec: HCITransportSpec
    /// How the transport was reached, for a status line: "air:/run/user/0/opencorebluetooth/air.sock (hub)".
    public let transportDescription: String
    /// What initialisation learned about the controller (addresses, buffers, version).
    public let controllerInfo: ControllerInfo
    /// The capture file, when one was asked for.
    public let snoopSink: BTSnoopFileSink?
    /// Keeps a private in-process air alive as long as the stack (the `virtual` fallback).
    let ownedAir: InProcessAir?
    private let stopped = LockedValue(false)
    private let watch: LossWatchingTransport

    init(host: HostStack, eventLoop: DispatchEventLoop, spec: HCITransportSpec, transportDescription: String,
         controllerInfo: ControllerInfo, snoopSink: BTSnoopFileSink?, ownedAir: InProcessAir?,
         watch: LossWatchingTransport) {
        self.host = host
        self.eventLoop = eventLoop
        self.spec = spec
        self.transportDescription = transportDescription
        self.controllerInfo = controllerInfo
        self.snoopSink = snoopSink
        self.ownedAir = ownedAir
        self.watch = watch
        let stopped = stopped
        watch.onLoss { loss in
            guard !stopped.load() else { return }
            for observer in Self.lossObservers.load() { observer(loss) }
        }
    }

    // MARK: Losing the controller

    private static let lossObservers = LockedValue<[@Sendable (StackLoss) -> Void]>([])

    /// Calls `observer` for every stack of this process (opened from now on) whose controller goes away while it runs
    /// (``StackLoss``: a hub stopped, a peer closed, a device unplugged), never for a stack ``shutdown()`` closed.
    /// For programs that end when any of their stacks loses its controller (the `blue` tool: one line and exit 69),
    /// including stacks opened for them by other layers (CoreBluetooth managers). Called on the transport's reader
    /// thread: do not block it; hop to another queue before calling ``shutdown()``.
    public static func observeLosses(_ observer: @escaping @Sendable (StackLoss) -> Void) {
        lossObservers.withLock { $0.append(observer) }
    }

    /// The loss of the controller, once the transport ended without this side closing it; nil while it runs (and
    /// after a ``shutdown()``).
    public var loss: StackLoss? { watch.loss }

    /// Calls `handler` once if the controller goes away while the stack runs (at once when it already has), on the
    /// transport's reader thread. Not after ``shutdown()``.
    public func onLoss(_ handler: @escaping @Sendable (StackLoss) -> Void) {
        let stopped = stopped
        watch.onLoss { loss in
            guard !stopped.load() else { return }
            handler(loss)
        }
    }

    /// Adds a handler of every ``HostEvent`` from now on (called on ``eventLoop``): the host's own fan-out
    /// (``HostStack/addEventHandler(_:)``).
    @discardableResult
    public func addEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) -> EventSubscription {
        host.addEventHandler(handler)
    }

    /// The address peers see (the random static address by default, Core 5.4 Vol 6 Part B §1.3.2.1).
    public var ownAddress: String { controllerInfo.ownAddress.string }

    /// Shuts the host down (its transport closes; the peers see the link end), waits until the loop did it, and
    /// closes the snoop file. Idempotent. Do not call it from the stack's own loop.
    public func shutdown() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        host.removeEventHandlers()
        host.shutdown()
        if !eventLoop.inEventLoop { eventLoop.sync {} }
        snoopSink?.close()
        ownedAir?.shutdown()
    }
}
