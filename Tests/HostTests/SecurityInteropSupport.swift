import BluetoothCore
import BluetoothRuntime
import Foundation
import GATT
import HCI
import Host
import SMP
import Testing

/// The pairing methods the security interop tests prove against Bumble (Interop/peers/pairing_peer.py), and how
/// each configures our side: Bumble's side is in the script's METHODS table (change both together).
///
/// Core 5.4 Vol 3 Part H §2.3.5.1 (association models from IO capabilities and MITM).
enum SecurityInteropMethod: String, CaseIterable, Sendable, CustomStringConvertible {
    /// LE SC Just Works: both NoInputNoOutput.
    case justWorks = "jw"
    /// LE SC Numeric Comparison: both DisplayYesNo, MITM, both confirm automatically.
    case numeric
    /// LE SC Passkey Entry: we display the fixed passkey (DisplayOnly), Bumble types it (KeyboardOnly).
    case passkey
    /// Legacy Just Works.
    case legacyJustWorks = "legacy-jw"
    /// Legacy Passkey Entry: we display, Bumble types.
    case legacyPasskey = "legacy-passkey"

    var description: String { rawValue }

    static let passkeyValue: UInt32 = 123_456

    var secureConnections: Bool { self == .justWorks || self == .numeric || self == .passkey }
    var authenticated: Bool { self == .numeric || self == .passkey || self == .legacyPasskey }

    func matches(_ method: SMPPairingMethod?) -> Bool {
        switch (self, method) {
        case (.justWorks, .justWorks?), (.legacyJustWorks, .justWorks?), (.numeric, .numericComparison?): true
        case (.passkey, .passkeyEntry?), (.legacyPasskey, .passkeyEntry?): true
        default: false
        }
    }

    func configure(_ security: inout HostSecurityConfiguration) {
        security.secureConnections = secureConnections ? .preferred : .legacyOnly
        security.mitm = authenticated
        switch self {
        case .justWorks, .legacyJustWorks:
            security.ioCapability = .noInputNoOutput
        case .numeric:
            security.ioCapability = .displayYesNo
        case .passkey, .legacyPasskey:
            security.ioCapability = .displayOnly
            security.fixedPasskey = Self.passkeyValue
        }
    }
}

/// One run of our host against a Bumble pairing peer on one controller setup: starts the controllers, our host
/// (answering every pairing interaction automatically), and the peer script; ``stop()`` ends everything (SIGKILL).
final class SecurityInteropRun: @unchecked Sendable {
    static let secureService = InteropDatabase.uuid(0x5E1F_2001)
    static let secret = InteropDatabase.uuid(0x5E1F_2002)
    static let plain = InteropDatabase.uuid(0x5E1F_2003)
    static let secretValue = Array("secret behind encryption".utf8)

    let kind: InteropControllerKind
    let controllers: InteropControllers
    let ours: InteropHost
    let peer: InteropProcess
    let keystore: String
    private let shown: LockedValue<[UInt32]>

    private init(kind: InteropControllerKind, controllers: InteropControllers, ours: InteropHost, peer: InteropProcess,
                 keystore: String, shown: LockedValue<[UInt32]>) {
        self.kind = kind
        self.controllers = controllers
        self.ours = ours
        self.peer = peer
        self.keystore = keystore
        self.shown = shown
    }

    /// Our host at `ourAddress`, configured for `method`; the peer script in `role` (its own role) at
    /// `peerAddress`. `peerPasskey` is what Bumble types (the mismatch test gives another one).
    static func start(_ kind: InteropControllerKind, method: SecurityInteropMethod, peerRole: String,
                      ourAddress: BluetoothAddress, peerAddress: BluetoothAddress, connections: Int,
                      peerPasskey: UInt32 = SecurityInteropMethod.passkeyValue,
                      beforePeer: (InteropHost) async throws -> Void = { _ in }) async throws -> SecurityInteropRun {
        guard let python = InteropEnvironment.python else {
            throw InteropFailure("OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found (set OCB_PYTHON)")
        }
        let controllers = try InteropControllers.start(kind)
        var configuration = HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(ourAddress))
        method.configure(&configuration.security)
        let ours: InteropHost
        do {
            ours = try await InteropHost(port: controllers.hostPort, label: "security", configuration: configuration,
                                         controllerAlive: { controllers.isRunning })
        } catch {
            controllers.stop()
            throw error
        }
        let shown = LockedValue<[UInt32]>([])
        let host = ours.host
        ours.react { event in
            guard case .pairingInteraction(let handle, let interaction) = event else { return }
            switch interaction {
            case .confirmNumericValue(let value):
                shown.withLock { $0.append(value) }
                host.answerPairing(connectionHandle: handle, .confirm(true))
            case .confirmJustWorks:
                host.answerPairing(connectionHandle: handle, .confirm(true))
            case .enterPasskey:
                host.answerPairing(connectionHandle: handle, .passkey(SecurityInteropMethod.passkeyValue))
            case .displayPasskey:
                break
            }
        }
        let keystore = NSTemporaryDirectory() + "ocb-smp-interop-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        do {
            _ = try await ours.start()
            try await beforePeer(ours)
            var arguments = [
                InteropEnvironment.peersDirectory + "/pairing_peer.py", "--port", "\(controllers.peerPort)",
                "--address", peerAddress.string, "--role", peerRole, "--method", method.rawValue,
                "--passkey", "\(peerPasskey)", "--keystore", keystore, "--connections", "\(connections)",
                "--timeout", "90",
            ]
            if peerRole == "central" { arguments += ["--peer", ourAddress.string] }
            let peer = try InteropProcess("bumble-pairing-\(peerRole)", executable: python, arguments: arguments)
            return SecurityInteropRun(kind: kind, controllers: controllers, ours: ours, peer: peer, keystore: keystore,
                                      shown: shown)
        } catch {
            ours.shutdown()
            controllers.stop()
            throw error
        }
    }

    /// The numeric comparison values our host was shown (and confirmed).
    var numbersWeConfirmed: [UInt32] { shown.load() }

    func stop() {
        peer.kill()
        ours.shutdown()
        controllers.stop()
        try? FileManager.default.removeItem(atPath: keystore)
    }

    /// Everything both sides said, for failure messages.
    var transcript: String {
        let events = ours.events.map { "  \($0)" }.suffix(60).joined(separator: "\n")
        return "our host's events:\n\(events)\n\(peer.transcript)\n\(controllers.transcript)"
    }

    /// The peer's JSON events named `name`.
    func peerEvents(_ name: String) -> [InteropJSON] { peer.jsonLines.filter { $0.string("event") == name } }

    // MARK: Our host as central

    func connect(to peer: BluetoothAddress) async throws -> UInt16 {
        let options = ConnectOptions(timeout: .seconds(15))
        let connected: Result<Connection, HostError> = try await InteropHost.wait(20, "connect") { [ours] done in
            ours.host.connect(to: peer, options: options) { done($0) }
        }
        return try connected.get().handle
    }

    func pair(_ handle: UInt16, seconds: Double = 40) async throws -> Result<PairingOutcome, HostError> {
        try await InteropHost.wait(seconds, "pair") { [ours] done in
            ours.host.pair(connectionHandle: handle) { done($0) }
        }
    }

    func disconnect(_ handle: UInt16) async throws {
        let result: Result<HCIStatus, HostError> = try await InteropHost.wait(10, "disconnect") { [ours] done in
            ours.host.disconnect(connectionHandle: handle) { done($0) }
        }
        _ = try result.get()
    }

    /// The reasons of our host's Pairing Failed events.
    var ourFailures: [(reason: SMPPairingFailedReason?, error: HostError)] {
        ours.events.compactMap { event in
            if case .pairingFailed(_, let reason, let error) = event { (reason, error) } else { nil }
        }
    }

    var ourCompletions: [(handle: UInt16, outcome: PairingOutcome)] {
        ours.events.compactMap { event in
            if case .pairingCompleted(let handle, let outcome) = event { (handle, outcome) } else { nil }
        }
    }
}
