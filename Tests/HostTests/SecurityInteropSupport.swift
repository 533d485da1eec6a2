import AdvertisingData
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
final class SecurityInteropRun: BumbleSecurityRun, @unchecked Sendable {
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
    /// `peerAddress`. `peerPasskey` is what Bumble types (the mismatch test gives another one); `peerRejectsNumeric`
    /// makes Bumble answer "no" to the numeric comparison, `weRejectNumeric` makes our host answer
    /// `.confirm(false)` to ``PairingInteraction/confirmNumericValue(_:)``.
    static func start(_ kind: InteropControllerKind, method: SecurityInteropMethod, peerRole: String,
                      ourAddress: BluetoothAddress, peerAddress: BluetoothAddress, connections: Int,
                      peerPasskey: UInt32 = SecurityInteropMethod.passkeyValue,
                      peerRejectsNumeric: Bool = false, weRejectNumeric: Bool = false,
                      peerOptions: [String] = [],
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
                host.answerPairing(connectionHandle: handle, .confirm(!weRejectNumeric))
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
            if peerRejectsNumeric { arguments.append("--reject-numeric") }
            arguments += peerOptions
            let peer = try InteropProcess("bumble-pairing-\(peerRole)", executable: python, arguments: arguments)
            return SecurityInteropRun(kind: kind, controllers: controllers, ours: ours, peer: peer, keystore: keystore,
                                      shown: shown)
        } catch {
            ours.shutdown()
            controllers.stop()
            throw error
        }
    }

    /// The numeric comparison values our host was shown (and confirmed, or rejected with `weRejectNumeric`).
    var numbersWeConfirmed: [UInt32] { shown.load() }

    /// Our peripheral advertises connectably (before the Bumble central starts, and again for its reconnect).
    static func advertise(_ ours: InteropHost) async throws { try await ours.advertise(name: "OCB-Secure") }

    /// The bonds our host holds now.
    func ourBonds() async throws -> [Bond] {
        try await InteropHost.wait(10, "our bonds") { [ours] done in ours.host.bonds { done($0) } }
    }

    /// The addresses Bumble's keystore (its JSON file: namespace -> address -> keys) holds keys for, without
    /// Bumble's "/P" type suffix; empty when Bumble never wrote the file (it writes at pairing only).
    func peerKeystoreAddresses() throws -> [String] {
        guard let data = FileManager.default.contents(atPath: keystore) else { return [] }
        guard let database = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw InteropFailure("Bumble's keystore is not a JSON object: \(String(decoding: data, as: UTF8.self))")
        }
        return database.values.compactMap { $0 as? [String: Any] }.flatMap(\.keys)
            .map { String($0.prefix(17)).uppercased() }.sorted()
    }
}

/// Which side of the link our host takes in a security interop run; the Bumble peer takes the other.
///
/// Core 5.4 Vol 3 Part H §2.3 (the central initiates pairing, the peripheral responds).
enum SecurityInteropRole: String, CaseIterable, Sendable, CustomStringConvertible {
    /// Our central pairs with a Bumble peripheral.
    case ourCentral
    /// A Bumble central pairs with our (advertising) peripheral.
    case ourPeripheral

    var description: String { rawValue }

    /// The peer script's `--role`.
    var peerRole: String { self == .ourCentral ? "peripheral" : "central" }
}

/// A pairing that must fail, how it is provoked, and the Pairing Failed reason both sides must report (Core 5.4
/// Vol 3 Part H §3.5.5; Passkey Entry §2.3.5.6.3, Numeric Comparison §2.3.5.6.2, legacy confirm check §2.3.5.5).
enum SecurityInteropFailure: String, CaseIterable, Sendable, CustomStringConvertible {
    /// LE SC Passkey Entry, Bumble types another passkey than the one we display: Confirm Value Failed.
    case passkeyMismatch
    /// Legacy Passkey Entry, Bumble types another passkey: Confirm Value Failed.
    case legacyPasskeyMismatch
    /// LE SC Numeric Comparison, Bumble's user answers "no" (`--reject-numeric`).
    case peerRejectsNumeric
    /// LE SC Numeric Comparison, our user answers `.confirm(false)`: Numeric Comparison Failed.
    case weRejectNumeric

    var description: String { rawValue }

    var method: SecurityInteropMethod {
        switch self {
        case .passkeyMismatch: .passkey
        case .legacyPasskeyMismatch: .legacyPasskey
        case .peerRejectsNumeric, .weRejectNumeric: .numeric
        }
    }

    /// What Bumble types.
    var peerPasskey: UInt32 {
        switch self {
        case .passkeyMismatch, .legacyPasskeyMismatch: SecurityInteropMethod.passkeyValue + 1
        case .peerRejectsNumeric, .weRejectNumeric: SecurityInteropMethod.passkeyValue
        }
    }

    /// The reason of the one Pairing Failed both sides report.
    var reason: SMPPairingFailedReason {
        switch self {
        case .passkeyMismatch, .legacyPasskeyMismatch: .confirmValueFailed
        // Bumble 0.0.236 answers a rejected comparison with Confirm Value Failed (0x04), not Numeric Comparison
        // Failed (0x0C) as §3.5.5 names it: bumble/smp.py, Session.prompt_user_for_numeric_comparison, calls
        // send_pairing_failed(ErrorCode.CONFIRM_VALUE_FAILED) when compare_numbers returns False. Asserted as
        // Bumble's behaviour; our own rejection (weRejectNumeric) proves 0x0C.
        case .peerRejectsNumeric: .confirmValueFailed
        case .weRejectNumeric: .numericComparisonFailed
        }
    }
}

/// One failing pairing between our host and Bumble, in either role, on any controller: both sides report Pairing
/// Failed with the failure's reason, nothing is bonded (our bond store empty, Bumble's keystore without us) and
/// the link never got encrypted.
enum SecurityInteropFailureScenario {
    static func run(_ kind: InteropControllerKind, _ role: SecurityInteropRole, _ failure: SecurityInteropFailure,
                    ourAddress: BluetoothAddress, peerAddress: BluetoothAddress) async throws {
        let label = "\(kind) \(role) \(failure)"
        let run = try await SecurityInteropRun.start(
            kind, method: failure.method, peerRole: role.peerRole, ourAddress: ourAddress, peerAddress: peerAddress,
            connections: 1, peerPasskey: failure.peerPasskey, peerRejectsNumeric: failure == .peerRejectsNumeric,
            weRejectNumeric: failure == .weRejectNumeric,
            beforePeer: role == .ourPeripheral ? SecurityInteropRun.advertise : { _ in })
        defer { run.stop() }
        do {
            switch role {
            case .ourCentral:
                _ = try await run.peer.waitForEvent("ready", seconds: 30)
                let handle = try await run.connect(to: peerAddress)
                if case .success(let outcome) = try await run.pair(handle) {
                    Issue.record("\(label): pairing succeeded: \(outcome)\n\(run.transcript)")
                    return
                }
                try await run.disconnect(handle)
            case .ourPeripheral:
                // Bumble pairs, fails, disconnects.
                try await run.ours.waitForEvents(30, "our pairing failure") { events in
                    events.contains { if case .pairingFailed = $0 { true } else { false } }
                }
            }
            // The peer's session is over (disconnected): its keystore is final.
            _ = try await run.peer.waitForEvent("done", seconds: 20)
            let failed = run.peerEvents("pairing_failed").map { $0.int("reason") ?? -1 }
            #expect(failed == [Int(failure.reason.rawValue)], "\(label): Bumble's reasons \(failed)")
            #expect(run.ourFailures.map(\.reason) == [failure.reason], "\(label): ours \(run.ourFailures)")
            #expect(run.ourCompletions.isEmpty && run.peerEvents("paired").isEmpty, "\(label): paired")
            switch failure {
            case .passkeyMismatch, .legacyPasskeyMismatch:
                let typed = run.peerEvents("passkey_entered").map { $0.int("passkey") ?? -1 }
                #expect(typed == [Int(failure.peerPasskey)], "\(label): Bumble typed \(typed)")
            case .peerRejectsNumeric:
                let numbers = run.peerEvents("number")
                #expect(numbers.count == 1 && numbers.first?.bool("accepted") == false, "\(label): \(numbers.map(\.object))")
            case .weRejectNumeric:
                #expect(run.numbersWeConfirmed.count == 1, "\(label): we were shown \(run.numbersWeConfirmed)")
            }
            // No bond on either side, no encryption.
            let bonds = try await run.ourBonds()
            #expect(bonds.isEmpty, "\(label): our bonds \(bonds.map(\.identityAddress))")
            let keystore = try run.peerKeystoreAddresses()
            #expect(!keystore.contains(ourAddress.string.uppercased()), "\(label): Bumble's keystore \(keystore)")
            #expect(keystore.isEmpty, "\(label): Bumble's keystore \(keystore)")
            #expect(run.ourEncryptions.isEmpty, "\(label): our encryptions \(run.ourEncryptions)")
            #expect(run.peerEvents("encrypted").isEmpty, "\(label): Bumble encrypted \(run.peerEvents("encrypted").map(\.object))")
        } catch {
            Issue.record("\(label): \(error)\n\(run.transcript)")
        }
    }
}

/// The controllers the security interop runs on: Bumble's, ours, and RootCanal (when its wheel is there, or
/// interop is required).
enum SecurityInteropKinds {
    static let all: [InteropControllerKind] =
        InteropControllerKind.allCases.filter { $0 != .rootCanal || InteropEnvironment.rootCanalEnabled }
}
