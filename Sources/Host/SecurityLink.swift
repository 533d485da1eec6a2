import ATT
import BluetoothCore
import BluetoothRuntime
import SMP
import BluetoothEngine

/// The Security Manager state of one connection (Core 5.4 Vol 3 Part H §3): its ``SMPSession``, the identity of
/// the peer, the callers waiting for the link to become secure, and the GATT client request held while security
/// is being established (Vol 3 Part C §10.3.2: retry after pairing). Kept in ``ConnectionSession`` and mutated
/// only on the host's event loop (`HostStack+Security.swift`).
struct SecurityLink {
    typealias Completion = (Result<PairingOutcome, HostError>) -> Void

    /// An ATT request answered with Insufficient Encryption / Authentication / Key Size, held for one retry.
    struct HeldRequest {
        var request: ATTPDU
        /// The bearer's answer (the Error Response), given to the client when security fails.
        var answer: Result<ATTPDU, ATTBearerError>
        var error: ATTErrorCode
        /// The bearer it was sent on; the retry goes there too.
        var bearer: ATTBearerKey
    }

    var smp: SMPSession
    /// The peer's identity (bond key): resolved from its RPA, its own address, or Identity Address Information.
    var identity: BluetoothAddress?
    /// Callers of `pair` / `encrypt` / `requestSecurity` waiting for the outcome.
    var waiting: [Completion] = []
    /// Central: LE Enable Encryption with this bond's key is in progress. Peripheral: we answered the LTK
    /// request with this bond's key.
    var bondEncryption: Bond?
    /// The key of the current encryption is authenticated / its size / LE SC.
    var authenticated = false
    var keySize: UInt8 = 0
    /// A GATT client request held until security is up, then retried once.
    var held: HeldRequest?
    /// The bearer id of that retry (its answer goes to the client, whatever it is).
    var retriedRequest: ATTBearerRequestID?
    /// The bearer of that retry; request ids are per bearer.
    var retriedBearer = ATTBearerKey.fixed
    /// The peripheral sent a Security Request and waits for the central.
    var securityRequested = false

    /// A pairing that completed while our own SMP PDUs were still queued or unacknowledged by the controller:
    /// announced once Number Of Completed Packets drained the connection (no polling: the ACL pump announces
    /// it), or at `giveUpAt`.
    struct DeferredCompletion {
        let outcome: PairingOutcome
        let resolvedIdentity: BluetoothAddress?
        let giveUpAt: StackInstant
    }

    var deferredCompletion: DeferredCompletion?

    init(smp: SMPSession, identity: BluetoothAddress?) {
        self.smp = smp
        self.identity = identity
    }

    /// What is held here (leak checks).
    var pendingCount: Int { waiting.count + (held == nil ? 0 : 1) + smp.pendingStateCount + (bondEncryption == nil ? 0 : 1)
        + (deferredCompletion == nil ? 0 : 1) }
}
