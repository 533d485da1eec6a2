public import VirtualController
public import HCI
public import HCITransport
import BluetoothRuntime

/// A host's ``HCITransport`` straight into a ``VirtualController`` in the same process (Core 5.4 Vol 4 Part A:
/// the HCI packets as H4 frames, nothing serialised). Frames the host sends go to
/// ``VirtualController/receiveFromHost(_:)`` (which hops onto the air's loop); the controller's ``VirtualController/toHost``
/// frames go to the host's `onFrame` on the air's loop. With the host on the same loop as the air (a
/// `ManualEventLoop` in tests), a whole scenario of two stacks runs deterministically on one thread.
///
/// `close()` detaches the controller (its `toHost` is cleared), powers it off — a controller whose host is gone
/// stops advertising, scanning and answering on the air, and its links time out at the peers, as when a dongle is
/// unplugged — and reports `onClose(nil)` once; sends then throw.
public final class VirtualControllerTransport: HCITransport, @unchecked Sendable {
    private struct State {
        var started = false
        var closed = false
        var onClose: (@Sendable (HCITransportError?) -> Void)?
    }

    public let controller: VirtualController
    private let state = LockedValue(State())

    public init(controller: VirtualController) {
        self.controller = controller
    }

    public var name: String { "virtual controller \(controller.publicAddress)" }

    public func start(
        onFrame: @escaping @Sendable (H4Frame) -> Void,
        onClose: @escaping @Sendable (HCITransportError?) -> Void
    ) throws(HCITransportError) {
        let refusal: HCITransportError? = state.withLock { state in
            if state.closed { return HCITransportError(.closed, "\(name): the transport is closed") }
            if state.started { return HCITransportError(.alreadyStarted, "\(name): start was already called") }
            state.started = true
            state.onClose = onClose
            return nil
        }
        if let refusal { throw refusal }
        controller.toHost = onFrame
    }

    public func send(_ frame: H4Frame) throws(HCITransportError) {
        let closed = state.withLock { $0.closed }
        if closed { throw HCITransportError(.closed, "\(name): the transport is closed") }
        controller.receiveFromHost(frame)
    }

    public func close() {
        let onClose: (@Sendable (HCITransportError?) -> Void)? = state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            let callback = state.onClose
            state.onClose = nil
            return callback
        }
        guard let onClose else { return }
        controller.toHost = nil
        controller.powerOff()
        onClose(nil)
    }
}
