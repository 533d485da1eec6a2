public import BluetoothCore
import BluetoothRuntime
import SMP
public import BluetoothEngine

/// The user side of pairing (Core 5.4 Vol 3 Part H §2.3.5.1 association models): what a person would see and
/// answer. Set one with ``BluetoothStack/setPairingDelegate(_:)``; every `HostEvent/pairingInteraction(handle:_:)`
/// of the stack's links is routed to it and its answer goes back to the host
/// (`HostStack/answerPairing(connectionHandle:_:)`).
///
/// Which method runs depends on both sides' IO capabilities, MITM and Secure Connections flags
/// (`HostSecurityConfiguration`, §2.3.5.1 Tables 2.7/2.8). Without a delegate, numeric values are confirmed,
/// Just Works is accepted, and a passkey to enter is cancelled (pairing then fails with Passkey Entry Failed).
/// Each method is called in a task of its own, off the stack's loop; it may take as long as the user needs, up to
/// the 30 s SMP timeout (§3.4).
public protocol PairingDelegate: Sendable {
    /// Numeric Comparison (LE Secure Connections, §2.3.5.6.2): both sides show `value` (six digits); true when
    /// the user says they match.
    func confirmNumericValue(_ value: UInt32, peer: BluetoothAddress) async -> Bool
    /// Passkey Entry (§2.3.5.3, §2.3.5.6.3): the peer displays a passkey; return what the user typed
    /// (0...999999), nil to cancel.
    func enterPasskey(peer: BluetoothAddress) async -> UInt32?
    /// Passkey Entry: show `passkey` to be typed on the peer (no answer).
    func displayPasskey(_ passkey: UInt32, peer: BluetoothAddress) async
    /// Just Works (§2.3.5.6.1), when `HostSecurityConfiguration/justWorksConsent` asks for consent: true to
    /// accept an unauthenticated pairing.
    func acceptJustWorks(peer: BluetoothAddress) async -> Bool
}

extension PairingDelegate {
    public func confirmNumericValue(_ value: UInt32, peer: BluetoothAddress) async -> Bool { true }
    public func enterPasskey(peer: BluetoothAddress) async -> UInt32? { nil }
    public func displayPasskey(_ passkey: UInt32, peer: BluetoothAddress) async {}
    public func acceptJustWorks(peer: BluetoothAddress) async -> Bool { true }
}

/// Why ``Peripheral/pair(_:)`` failed (Core 5.4 Vol 3 Part H §3.5.5 Pairing Failed reasons, §3.4 SMP timeout;
/// Vol 4 Part E §7.7.8 encryption), with the host error behind it.
public struct PairingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure it was.
    public enum Code: String, Hashable, Sendable {
        /// SMP failed: see ``PairingError/smpReason`` and ``PairingError/isRemote`` (sent by the peer, or by us:
        /// detected here, or the ``PairingDelegate`` rejected or cancelled).
        case pairingFailed
        /// No SMP answer within 30 s: no more pairing on this link (§3.4).
        case timedOut
        /// The link ended (or was not there).
        case disconnected
        /// The host refused (security disabled, busy, not ready...).
        case refused
        /// Encryption failed: see ``PairingError/hciStatus`` (MIC Failure 0x3D...).
        case encryptionFailed
        /// The peer lost its bond with us (PIN or Key Missing, 0x06) and re-pairing was not allowed.
        case bondLost
    }

    /// What kind of failure it was.
    public var code: Code
    /// What happened, in words, for a person to read.
    public var reason: String
    /// The SMP Pairing Failed reason, when SMP gave one (Confirm Value Failed, Passkey Entry Failed...).
    public var smpReason: SMPPairingFailedReason?
    /// The host error behind the failure, if any.
    public var hostError: HostError?

    /// An error with a code, a reason and what lies behind it, if anything.
    public init(_ code: Code, _ reason: String, smpReason: SMPPairingFailedReason? = nil, hostError: HostError? = nil) {
        self.code = code
        self.reason = reason
        self.smpReason = smpReason
        self.hostError = hostError
    }

    public var description: String { "\(code.rawValue): \(reason)" }

    /// Whether the peer sent the Pairing Failed (false: we did), when pairing failed with an SMP reason.
    public var isRemote: Bool? {
        if case .pairingFailed(_, let remote)? = hostError?.security { return remote }
        return nil
    }

    /// The HCI status behind an encryption failure or a lost bond.
    public var hciStatus: HCIStatus? { hostError?.status }

    init(_ error: HostError, smpReason: SMPPairingFailedReason?) {
        let code: Code = switch (error.code, error.security) {
        case (_, .pairingFailed?): .pairingFailed
        case (_, .encryptionFailed?): .encryptionFailed
        case (_, .bondLost?): .bondLost
        case (_, .smpTimeout?), (.timedOut, _): .timedOut
        case (.disconnected, _), (.unknownConnection, _): .disconnected
        default: .refused
        }
        self.init(code, error.reason, smpReason: error.pairingFailedReason ?? smpReason, hostError: error)
    }
}

/// Routes a stack's pairing interactions to its ``PairingDelegate`` and keeps the last SMP failure reason per
/// link for ``Peripheral/pair(_:)`` (the host emits `HostEvent/pairingFailed(handle:reason:error:)` before it
/// completes the pair request). Events come on the host's loop; the lock makes the delegate settable from anywhere.
final class PairingRouter: Sendable {
    private struct State {
        var delegate: (any PairingDelegate)?
        var peers: [UInt16: BluetoothAddress] = [:]
        var failures: [UInt16: SMPPairingFailedReason] = [:]
    }

    private let state = LockedValue(State())
    let engine: any StackEngine

    init(engine: any StackEngine) {
        self.engine = engine
        Self.registry.withLock { registry in
            registry = registry.filter { $0.value.router != nil }
            registry[ObjectIdentifier(engine)] = WeakRouter(router: self)
        }
    }

    private struct WeakRouter: @unchecked Sendable {
        weak var router: PairingRouter?
    }

    /// The router of each wrapped host (weak), for ``Peripheral/pair(_:)``.
    private static let registry = LockedValue<[ObjectIdentifier: WeakRouter]>([:])

    static func router(for engine: any StackEngine) -> PairingRouter? {
        registry.withLock { $0[ObjectIdentifier(engine)]?.router }
    }

    func setDelegate(_ delegate: (any PairingDelegate)?) {
        state.withLock { $0.delegate = delegate }
    }

    /// Links and failure reasons held (0 when idle: leak checks).
    var heldCount: Int { state.withLock { $0.peers.count + $0.failures.count } }

    func takeFailure(_ handle: UInt16) -> SMPPairingFailedReason? {
        state.withLock { $0.failures.removeValue(forKey: handle) }
    }

    func handle(_ event: HostEvent) {
        switch event {
        case .connected(let connection):
            state.withLock { $0.peers[connection.handle] = connection.peer }
        case .disconnected(let handle, _):
            state.withLock {
                $0.peers[handle] = nil
                $0.failures[handle] = nil
            }
        case .pairingFailed(let handle, let reason, _):
            state.withLock { $0.failures[handle] = reason }
        case .pairingCompleted(let handle, _):
            state.withLock { $0.failures[handle] = nil }
        case .pairingInteraction(let handle, let interaction):
            let (delegate, peer) = state.withLock { ($0.delegate, $0.peers[handle]) }
            let address = peer ?? BluetoothAddress(0, type: .public)
            let engine = engine
            Task {
                switch interaction {
                case .confirmNumericValue(let value):
                    engine.answerPairing(connectionHandle: handle, .confirm(await delegate?.confirmNumericValue(value, peer: address) ?? true))
                case .enterPasskey:
                    engine.answerPairing(connectionHandle: handle, .passkey(await delegate?.enterPasskey(peer: address)))
                case .confirmJustWorks:
                    engine.answerPairing(connectionHandle: handle, .confirm(await delegate?.acceptJustWorks(peer: address) ?? true))
                case .displayPasskey(let passkey):
                    await delegate?.displayPasskey(passkey, peer: address)
                }
            }
        default:
            break
        }
    }
}

extension Peripheral {
    /// Pairs with the peripheral (or encrypts with an existing bond) and returns how the link became secure
    /// (Core 5.4 Vol 3 Part H §2.3, §2.4.4). The user side goes to the stack's ``PairingDelegate``.
    /// Throws ``PairingError`` (with the SMP reason, e.g. Confirm Value Failed on a passkey mismatch).
    public func pair(_ options: PairingOptions = PairingOptions()) async throws -> PairingOutcome {
        try await PairingRouter.secure(link) { engine, handle, completion in
            engine.pair(connectionHandle: handle, options: options, completion: completion)
        }
    }
}

extension Central {
    /// As peripheral, asks the central to secure the link (Security Request, Core 5.4 Vol 3 Part H §3.6.7) and
    /// returns once it paired or encrypted with its bond. Throws ``PairingError`` like ``Peripheral/pair(_:)``.
    public func requestSecurity(mitm: Bool? = nil) async throws -> PairingOutcome {
        try await PairingRouter.secure(link) { engine, handle, completion in
            engine.requestSecurity(connectionHandle: handle, mitm: mitm, completion: completion)
        }
    }
}

extension PairingRouter {
    /// Runs one way of securing `link` (a pairing, or a Security Request, Core 5.4 Vol 3 Part H §2.3, §3.6.7) to its
    /// outcome: `start` asks the link's host, which calls the completion once. A failure is thrown as
    /// ``PairingError`` with the SMP Pairing Failed reason recorded for the link (§3.5.5); the reason is taken
    /// either way, so none is left for the next procedure.
    static func secure(
        _ link: PeerLink,
        _ start: @escaping @Sendable (
            any StackEngine, UInt16, _ completion: @escaping @Sendable (Result<PairingOutcome, HostError>) -> Void
        ) -> Void
    ) async throws -> PairingOutcome {
        let engine = link.core.engine, handle = link.handle
        let pairingRouter = Self.router(for: engine)
        let result: Result<PairingOutcome, HostError> = try await PendingOperation.run { operation in
            start(engine, handle) { operation.succeed($0) }
        }
        switch result {
        case .success(let outcome):
            _ = pairingRouter?.takeFailure(handle)
            return outcome
        case .failure(let error):
            throw PairingError(error, smpReason: pairingRouter?.takeFailure(handle))
        }
    }
}
