import AdvertisingData
import BluetoothCore
import BluetoothCrypto
import Foundation
import HCI
import Host
import SMP
import Testing
import BluetoothEngine

/// One run of our host against Interop/peers/oob_signing_peer.py on one controller setup: the controllers, our
/// host (started, with an in-memory bond store), then the peer script with the arguments `prepare` returns (it
/// runs after our host started, e.g. to hand over our OOB data). ``stop()`` ends everything (SIGKILL).
final class OOBSigningInteropRun: BumbleSecurityRun, @unchecked Sendable {
    let kind: InteropControllerKind
    let controllers: InteropControllers
    let ours: InteropHost
    let peer: InteropProcess
    let store: InMemoryBondStore
    let keystore: String

    private init(kind: InteropControllerKind, controllers: InteropControllers, ours: InteropHost, peer: InteropProcess,
                 store: InMemoryBondStore, keystore: String) {
        self.kind = kind
        self.controllers = controllers
        self.ours = ours
        self.peer = peer
        self.store = store
        self.keystore = keystore
    }

    static func start(_ kind: InteropControllerKind, ourAddress: BluetoothAddress, peerAddress: BluetoothAddress,
                      peerRole: String, configure: (inout HostSecurityConfiguration) -> Void,
                      prepare: (InteropHost) async throws -> [String]) async throws -> OOBSigningInteropRun {
        guard let python = InteropEnvironment.python else {
            throw InteropFailure("OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found (set OCB_PYTHON)")
        }
        let controllers = try InteropControllers.start(kind)
        var configuration = HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(ourAddress))
        let store = InMemoryBondStore()
        configuration.security.bondStore = store
        configure(&configuration.security)
        let ours: InteropHost
        do {
            ours = try await InteropHost(port: controllers.hostPort, label: "oob-signing", configuration: configuration,
                                         controllerAlive: { controllers.isRunning })
        } catch {
            controllers.stop()
            throw error
        }
        let host = ours.host
        ours.react { event in
            if case .pairingInteraction(let handle, .confirmJustWorks) = event {
                host.answerPairing(connectionHandle: handle, .confirm(true))
            }
        }
        let keystore = NSTemporaryDirectory() + "ocb-oob-sign-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).json"
        do {
            _ = try await ours.start()
            var arguments = [
                InteropEnvironment.peersDirectory + "/oob_signing_peer.py", "--port", "\(controllers.peerPort)",
                "--address", peerAddress.string, "--role", peerRole, "--keystore", keystore, "--timeout", "60",
            ]
            if peerRole == "central" { arguments += ["--peer", ourAddress.string] }
            arguments += try await prepare(ours)
            let peer = try InteropProcess("bumble-oob-signing-\(peerRole)", executable: python, arguments: arguments)
            return OOBSigningInteropRun(kind: kind, controllers: controllers, ours: ours, peer: peer, store: store,
                                        keystore: keystore)
        } catch {
            ours.shutdown()
            controllers.stop()
            throw error
        }
    }

    static func advertise(_ ours: InteropHost) async throws { try await ours.advertise(name: "OCB-OOB") }
}

/// 128-bit OOB values as the script takes and prints them: hex, least significant octet first (the wire order).
enum OOBHex {
    static func wire(_ value: Block128) -> String { Hex.encode(value.littleEndian) }

    static func block(_ text: String?) throws -> Block128 {
        guard let text, let bytes = try? Hex.decode(text), let block = try? Block128(littleEndian: bytes) else {
            throw InteropFailure("not a 128-bit hex value: \(String(describing: text))")
        }
        return block
    }
}

/// Issue 6, out-of-band pairing against **Bumble 0.0.236** (Interop/peers/oob_signing_peer.py, bumble.pairing
/// `PairingConfig.OobConfig`), on Bumble's controller pair and on our virtual controller.
///
/// LE Secure Connections OOB (Core 5.4 Vol 3 Part H §2.3.5.6.4; Table 2.6: OOB when either side has the peer's
/// data) in both roles with the data passed one way (only we hold Bumble's r and C; only Bumble holds ours) and
/// both ways; legacy OOB (§2.3.5.4, a shared TK; OOB only when both flags are set) in both roles. Each: both
/// sides report the OOB method and LE SC (or not), our outcome is authenticated and bonded, the link encrypts,
/// the bond is in our store and Bumble's keystore got the keys. The data travels through the test: our
/// ``HostStack/localOutOfBandData(completion:)`` → the script's arguments; the script's `{"event": "oob"}` →
/// ``HostStack/setPeerOutOfBandData(for:random:confirm:)`` (as peripheral: the ``OutOfBandPeer/anyPeer`` form,
/// the address not given). Mismatched data fails with Confirm Value Failed (0x04) on both sides.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct SecurityInteropOOBTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0021, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_0021, type: .random)
    static let temporaryKey = Block128(high: 0x0123_4567_89AB_CDEF, low: 0xFEDC_BA98_7654_3210)

    /// Who holds the other's LE SC OOB data.
    enum Direction: String, CaseIterable, Sendable, CustomStringConvertible {
        /// Only we hold Bumble's data (Bumble's OOB flag is 0, ours 1).
        case weHoldPeers = "we-hold-peer's"
        /// Only Bumble holds ours.
        case peerHoldsOurs = "peer-holds-ours"
        case both
        var description: String { rawValue }
        var weHold: Bool { self != .peerHoldsOurs }
        var peerHolds: Bool { self != .weHoldPeers }
    }

    static let scCases: [(InteropControllerKind, String, Direction)] =
        [InteropControllerKind.bumble, .ourAir].flatMap { kind in
            ["central", "peripheral"].flatMap { role in Direction.allCases.map { (kind, role, $0) } }
        }

    static let legacyCases: [(InteropControllerKind, String)] =
        [InteropControllerKind.bumble, .ourAir].flatMap { kind in ["central", "peripheral"].map { (kind, $0) } }

    /// Starts a run for `ourRole`; `peerArguments` get our local OOB data when asked.
    func start(_ kind: InteropControllerKind, ourRole: String, legacy: Bool,
               peerArguments: @escaping @Sendable (LocalOutOfBandData?) -> [String],
               needsOurData: Bool, setUp: @escaping @Sendable (HostStack) -> Void = { _ in }) async throws -> OOBSigningInteropRun {
        try await OOBSigningInteropRun.start(
            kind, ourAddress: Self.ourAddress, peerAddress: Self.peerAddress,
            peerRole: ourRole == "central" ? "peripheral" : "central",
            configure: { security in
                security.secureConnections = legacy ? .legacyOnly : .preferred
                security.ioCapability = .noInputNoOutput
            },
            prepare: { ours in
                setUp(ours.host)
                var local: LocalOutOfBandData?
                if needsOurData {
                    let result: Result<LocalOutOfBandData, HostError> = try await InteropHost.wait(10, "local OOB data") { done in
                        ours.host.localOutOfBandData { done($0) }
                    }
                    local = try result.get()
                }
                if ourRole == "peripheral" { try await OOBSigningInteropRun.advertise(ours) }
                return ["--mode", "oob", "--pairing", legacy ? "legacy" : "sc"] + peerArguments(local)
            })
    }

    /// Pairs (our central) or waits for Bumble's pairing (our peripheral); returns our outcome or failure.
    func pairing(_ run: OOBSigningInteropRun, ourRole: String) async throws -> Result<PairingOutcome, HostError>? {
        _ = try await run.peer.waitForEvent("ready", seconds: 30)
        if ourRole == "central" {
            let handle = try await run.connect(to: Self.peerAddress)
            return try await run.pair(handle)
        }
        try await run.waitForOurPairing()
        return run.ourCompletions.first.map { .success($0.outcome) }
    }

    @Test("LE SC OOB with Bumble: data one way, the other, both; both roles; both controllers",
          .enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"), arguments: scCases)
    func secureConnectionsOOB(_ kind: InteropControllerKind, _ ourRole: String, _ direction: Direction) async throws {
        let label = "\(kind) our \(ourRole) \(direction)"
        let clock = ContinuousClock.now
        // Bumble as central connects only once our host holds its data (else it may pair first: Just Works).
        let goFile = NSTemporaryDirectory() + "ocb-oob-go-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let run = try await start(kind, ourRole: ourRole, legacy: false, peerArguments: { local in
            var arguments = ourRole == "peripheral" ? ["--go-file", goFile] : []
            guard direction.peerHolds, let local else { return arguments }
            arguments += ["--peer-oob", OOBHex.wire(local.confirm) + ":" + OOBHex.wire(local.random)]
            return arguments
        }, needsOurData: direction.peerHolds)
        defer {
            run.stop()
            try? FileManager.default.removeItem(atPath: goFile)
        }
        do {
            let shared = try await run.peer.waitForEvent("oob", seconds: 30)
            if direction.weHold {
                let random = try OOBHex.block(shared.string("r")), confirm = try OOBHex.block(shared.string("c"))
                if ourRole == "central" {
                    run.ours.host.setPeerOutOfBandData(for: Self.peerAddress, random: random, confirm: confirm)
                } else {
                    run.ours.host.setPeerOutOfBandData(for: .anyPeer, random: random, confirm: confirm)
                }
            }
            if ourRole == "peripheral" {
                let held = run.ours.loop.sync { [host = run.ours.host] in host.hasOutOfBandData(for: Self.peerAddress) }
                #expect(held == direction.weHold, "\(label)")
                #expect(FileManager.default.createFile(atPath: goFile, contents: nil), "\(label)")
            }
            guard case .success(let outcome)? = try await pairing(run, ourRole: ourRole) else {
                throw InteropFailure("pairing failed: \(run.ourFailures)")
            }
            #expect(outcome.method == .outOfBand && outcome.secureConnections == true && outcome.authenticated == true && outcome.bonded,
                    "\(label): \(outcome)")
            let method = try await run.peer.waitForEvent("method", seconds: 10)
            #expect(method.string("method") == "OOB" && method.bool("sc") == true, "\(label): Bumble says \(method.object)")
            let paired = try await run.peer.waitForEvent("paired", seconds: 10)
            #expect(paired.bool("sc") == true && paired.bool("authenticated") == true, "\(label): Bumble says \(paired.object)")
            #expect(paired.strings("keys")?.contains("ltk") == true, "\(label): Bumble's keys \(paired.object)")
            _ = try await run.peer.waitForEvent("encrypted", seconds: 10)
            #expect(run.ourEncryptions.count >= 1, "\(label)")
            let bond = run.store.loadBonds().bonds.first
            #expect(bond?.sharedLongTermKey != nil && bond?.authenticated == true && bond?.identityAddress == Self.peerAddress,
                    "\(label): our bond \(String(describing: bond))")
            #expect(run.ourFailures.isEmpty, "\(label): \(run.ourFailures)")
            print("OOB interop \(label): \(ContinuousClock.now - clock)")
        } catch {
            Issue.record("\(label): \(error)\n\(run.transcript)")
        }
    }

    @Test("legacy OOB with Bumble: one shared TK; both roles; both controllers",
          .enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"), arguments: legacyCases)
    func legacyOOB(_ kind: InteropControllerKind, _ ourRole: String) async throws {
        let label = "\(kind) our \(ourRole) legacy"
        let clock = ContinuousClock.now
        // The key is ours before Bumble starts (as central, Bumble pairs as soon as it is connected).
        let run = try await start(kind, ourRole: ourRole, legacy: true, peerArguments: { _ in
            ["--tk", OOBHex.wire(Self.temporaryKey)]
        }, needsOurData: false, setUp: { host in
            host.setLegacyOutOfBandKey(for: Self.peerAddress, temporaryKey: Self.temporaryKey)
        })
        defer { run.stop() }
        do {
            guard case .success(let outcome)? = try await pairing(run, ourRole: ourRole) else {
                throw InteropFailure("pairing failed: \(run.ourFailures)")
            }
            #expect(outcome.method == .outOfBand && outcome.secureConnections == false && outcome.authenticated == true && outcome.bonded,
                    "\(label): \(outcome)")
            let method = try await run.peer.waitForEvent("method", seconds: 10)
            #expect(method.string("method") == "OOB" && method.bool("sc") == false, "\(label): Bumble says \(method.object)")
            let paired = try await run.peer.waitForEvent("paired", seconds: 10)
            #expect(paired.bool("authenticated") == true, "\(label): Bumble says \(paired.object)")
            let keys = paired.strings("keys") ?? []
            #expect(keys.contains("ltk_central") && keys.contains("ltk_peripheral"), "\(label): Bumble's keys \(keys)")
            _ = try await run.peer.waitForEvent("encrypted", seconds: 10)
            #expect(run.ourEncryptions.count >= 1, "\(label)")
            let bond = run.store.loadBonds().bonds.first
            #expect(bond?.authenticated == true && bond?.identityAddress == Self.peerAddress, "\(label): \(String(describing: bond))")
            #expect(run.ourFailures.isEmpty, "\(label): \(run.ourFailures)")
            print("OOB interop \(label): \(ContinuousClock.now - clock)")
        } catch {
            Issue.record("\(label): \(error)\n\(run.transcript)")
        }
    }

    /// Mismatched OOB data: LE SC with a confirm value that does not commit to the key the other side sends
    /// (we hold a wrong C for Bumble; Bumble holds a wrong C for us), legacy with different TKs. Confirm Value
    /// Failed on both sides, no bond.
    @Test("mismatched OOB data with Bumble: Confirm Value Failed on both sides",
          .enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"),
          arguments: ["sc-ours-wrong", "sc-bumble's-wrong", "legacy"])
    func mismatch(_ variant: String) async throws {
        let legacy = variant == "legacy"
        let clock = ContinuousClock.now
        let bogus = Block128(high: 0x1111_2222_3333_4444, low: 0x5555_6666_7777_8888)
        let run = try await start(.bumble, ourRole: "central", legacy: legacy, peerArguments: { local in
            switch variant {
            case "legacy": return ["--tk", OOBHex.wire(Self.temporaryKey)]
            case "sc-bumble's-wrong": return ["--peer-oob", OOBHex.wire(bogus) + ":" + OOBHex.wire(local?.random ?? .zero)]
            default: return []
            }
        }, needsOurData: variant == "sc-bumble's-wrong")
        defer { run.stop() }
        do {
            if legacy {
                run.ours.host.setLegacyOutOfBandKey(for: Self.peerAddress, temporaryKey: bogus)
            } else if variant == "sc-ours-wrong" {
                let shared = try await run.peer.waitForEvent("oob", seconds: 30)
                run.ours.host.setPeerOutOfBandData(for: Self.peerAddress, random: try OOBHex.block(shared.string("r")), confirm: bogus)
            }
            guard case .failure? = try await pairing(run, ourRole: "central") else {
                Issue.record("\(variant): pairing with mismatched OOB data succeeded\n\(run.transcript)")
                return
            }
            let failed = try await run.peer.waitForEvent("pairing_failed", seconds: 10)
            #expect(failed.int("reason") == Int(SMPPairingFailedReason.confirmValueFailed.rawValue), "\(variant): Bumble \(failed.object)")
            #expect(run.ourFailures.map(\.reason) == [.confirmValueFailed], "\(variant): ours \(run.ourFailures)")
            #expect(run.store.loadBonds().bonds.isEmpty && run.peerEvents("paired").isEmpty, "\(variant)")
            print("OOB interop mismatch \(variant): \(ContinuousClock.now - clock)")
        } catch {
            Issue.record("\(variant): \(error)\n\(run.transcript)")
        }
    }
}
