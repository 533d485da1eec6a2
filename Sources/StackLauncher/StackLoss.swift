import BluetoothRuntime
import HCI
public import HCITransport

/// The controller of a ``LaunchedStack`` went away while the stack ran: the transport ended without this side
/// closing it (an air hub stopped or killed, a TCP or UNIX peer closed, a serial device unplugged, an I/O error, a
/// poisoned H4 stream). The stack is then closed (its host reports ``Host/HostEvent/controllerError(_:)`` with
/// `transportFailed` and fails everything pending); a program usually ends with ``description`` as its error line.
public struct StackLoss: Error, Hashable, Sendable, CustomStringConvertible {
    /// How the transport ended (`closedByPeer`, `ioError`, `framingError`...).
    public var code: HCITransportError.Code
    /// The `--hci` specification the stack ran on ("air:/tmp/x.sock", "tcp:127.0.0.1:9000", "serial:/dev/ttyUSB0,...").
    public var transport: String
    /// What the transport said, without its own name in front.
    public var detail: String

    public init(code: HCITransportError.Code, transport: String, detail: String) {
        self.code = code
        self.transport = transport
        self.detail = detail
    }

    /// One line: "lost the controller: air:/tmp/x.sock closed by the peer".
    public var description: String {
        switch code {
        case .closedByPeer:
            return "lost the controller: \(transport) closed by the peer\(Self.extra(detail))"
        default:
            return "lost the controller: \(transport): \(detail)"
        }
    }

    /// " (Input/output error)" or " in the middle of a frame (...)" from "the peer closed the connection...".
    private static func extra(_ detail: String) -> String {
        for prefix in ["the peer closed the connection", "the peer closed the link"] where detail.hasPrefix(prefix) {
            return String(detail.dropFirst(prefix.count))
        }
        return detail.isEmpty ? "" : " (\(detail))"
    }

    /// The loss for a transport's closing error (nil: closed by this side, not a loss).
    static func from(_ error: HCITransportError?, transportName: String, spec: String) -> StackLoss? {
        guard let error, error.code != .closed else { return nil }
        var detail = error.reason
        if detail.hasPrefix(transportName + ": ") { detail.removeFirst(transportName.count + 2) }
        return StackLoss(code: error.code, transport: spec, detail: detail)
    }
}

/// Wraps the transport a launched stack runs on to notice its end (``StackLoss``) before the host does; everything
/// else passes through unchanged.
final class LossWatchingTransport: HCITransport {
    private let inner: any HCITransport
    private let spec: String
    private let state = LockedValue<(loss: StackLoss?, handlers: [@Sendable (StackLoss) -> Void])>((nil, []))

    init(wrapping inner: any HCITransport, spec: String) {
        self.inner = inner
        self.spec = spec
    }

    var name: String { inner.name }

    var loss: StackLoss? { state.load().loss }

    func start(onFrame: @escaping @Sendable (H4Frame) -> Void,
               onClose: @escaping @Sendable (HCITransportError?) -> Void) throws(HCITransportError) {
        let name = inner.name, spec = spec
        try inner.start(onFrame: onFrame, onClose: { [weak self] error in
            if let loss = StackLoss.from(error, transportName: name, spec: spec) { self?.lost(loss) }
            onClose(error)
        })
    }

    func start(onFrames: @escaping @Sendable ([H4Frame]) -> Void,
               onClose: @escaping @Sendable (HCITransportError?) -> Void) throws(HCITransportError) {
        let name = inner.name, spec = spec
        try inner.start(onFrames: onFrames, onClose: { [weak self] error in
            if let loss = StackLoss.from(error, transportName: name, spec: spec) { self?.lost(loss) }
            onClose(error)
        })
    }

    func send(_ frame: H4Frame) throws(HCITransportError) {
        try sending { () throws(HCITransportError) in try inner.send(frame) }
    }

    func send(frames: [H4Frame]) throws(HCITransportError) {
        try sending { () throws(HCITransportError) in try inner.send(frames: frames) }
    }

    private func sending(_ body: () throws(HCITransportError) -> Void) throws(HCITransportError) {
        do {
            try body()
        } catch {
            // A write that finds the peer gone is known here before the reader reports the end.
            if let loss = StackLoss.from(error, transportName: inner.name, spec: spec) { lost(loss) }
            throw error
        }
    }

    func close() {
        inner.close()
    }

    /// Calls `handler` once with the loss: now when it already happened, else when it does (on the transport's
    /// reader thread).
    func onLoss(_ handler: @escaping @Sendable (StackLoss) -> Void) {
        let already = state.withLock { state -> StackLoss? in
            if let loss = state.loss { return loss }
            state.handlers.append(handler)
            return nil
        }
        if let already { handler(already) }
    }

    private func lost(_ loss: StackLoss) {
        let handlers = state.withLock { state -> [@Sendable (StackLoss) -> Void] in
            guard state.loss == nil else { return [] }
            state.loss = loss
            defer { state.handlers = [] }
            return state.handlers
        }
        for handler in handlers { handler(loss) }
    }
}
