import BlueZ
public import BluetoothEngine
import BluetoothRuntime
import Dispatch
import HCITransport

/// bluetoothd's stack (`bluez`, `bluez:hciN`): the BlueZ module's ``BlueZEngine``, started. Opened by
/// ``StackLauncher/open(specification:options:)`` as our host is, so that nothing above asks which one it got.
public final class BluetoothdStack: OpenedStack {
    public let engine: any StackEngine
    /// "bluetoothd (hci0)".
    public let transportDescription: String
    /// The adapter (its address is bluetoothd's Adapter1.Address).
    public let controllerInfo: ControllerInfo
    private let lost = LockedValue<(loss: StackLoss?, handlers: [@Sendable (StackLoss) -> Void], stopped: Bool)>((nil, [], false))

    private let bluez: BlueZEngine

    private init(engine: BlueZEngine, controllerInfo: ControllerInfo) {
        self.engine = engine
        bluez = engine
        transportDescription = engine.description
        self.controllerInfo = controllerInfo
        let lost = lost
        engine.addEventHandler { event in
            guard case .controllerError(let error) = event else { return }
            let loss = StackLoss(code: .closedByPeer, transport: engine.description, detail: error.reason)
            let handlers = lost.withLock { state -> [@Sendable (StackLoss) -> Void] in
                guard state.loss == nil, !state.stopped else { return [] }
                state.loss = loss
                defer { state.handlers = [] }
                return state.handlers
            }
            for handler in handlers { handler(loss) }
        }
    }

    /// Connects to bluetoothd and waits until its adapter `adapter` (nil: its first) is there and powered (at most
    /// the engine's start limit); the reason as a ``StackLaunchError`` otherwise. `busAddress`: another bus than the
    /// system's (tests).
    public static func open(adapter: String?) async throws(StackLaunchError) -> BluetoothdStack {
        try await open(adapter: adapter, busAddress: nil)
    }

    package static func open(adapter: String?, busAddress: String?) async throws(StackLaunchError) -> BluetoothdStack {
        let engine = BlueZEngine(adapter: adapter, busAddress: busAddress)
        let started = await withCheckedContinuation { (continuation: CheckedContinuation<Result<ControllerInfo, HostError>, Never>) in
            engine.start { continuation.resume(returning: $0) }
        }
        switch started {
        case .success(let info):
            return BluetoothdStack(engine: engine, controllerInfo: info)
        case .failure(let error):
            engine.shutdown()
            throw StackLaunchError(.unreachable, error.reason)
        }
    }

    public var loss: StackLoss? { lost.withLock { $0.stopped ? nil : $0.loss } }

    public func onLoss(_ handler: @escaping @Sendable (StackLoss) -> Void) {
        let loss = lost.withLock { state -> StackLoss? in
            guard !state.stopped else { return nil }
            if state.loss == nil { state.handlers.append(handler) }
            return state.loss
        }
        if let loss { handler(loss) }
    }

    /// Returns once the engine has put on the bus what ends its links and registrations (at most 2 s), so that a
    /// program exiting right after leaves bluetoothd tidy.
    public func shutdown() {
        lost.withLock { $0.stopped = true }
        let done = DispatchSemaphore(value: 0)
        bluez.shutdown { done.signal() }
        _ = done.wait(timeout: .now() + 2)
    }
}
