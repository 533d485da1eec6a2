import AdvertisingData
import ATT
import BluetoothCore
import Foundation
import GATT
import HCI
import Host
import SMP
import Testing

/// Issue 6 item 6, second half: a **Bumble central** (Interop/peers/pairing_peer.py) pairing with **our
/// peripheral** (HostStack over `SocketH4Transport`, `DispatchEventLoop`, advertising), on Bumble's stock controller
/// pair, on our virtual controller and on RootCanal (``SecurityInteropKinds``).
///
/// For every method: Bumble pairs (it initiates), both sides agree on the method's SC flag and authentication, the
/// numeric value both confirmed, both stored the bond; then Bumble reconnects and encrypts with its keystore's key
/// (a JSON file), which our peripheral answers from the bond store in the LE Long Term Key Request (Core 5.4 Vol 3
/// Part H §2.4.4.2; legacy: found by EDIV/Rand), with no new pairing. Pairings that must fail (passkey mismatch,
/// numeric comparison rejected by either side) end with the same Pairing Failed reason on both sides, no bond and
/// no encryption (``SecurityInteropFailureScenario``).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SecurityInteropPeripheralTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0012, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_0012, type: .random)

    static let cases: [(InteropControllerKind, SecurityInteropMethod)] =
        SecurityInteropKinds.all.flatMap { kind in SecurityInteropMethod.allCases.map { (kind, $0) } }

    @Test(.enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"), arguments: cases)
    func bumbleCentralPairsAndReconnects(_ kind: InteropControllerKind, _ method: SecurityInteropMethod) async throws {
        let run = try await SecurityInteropRun.start(kind, method: method, peerRole: "central", ourAddress: Self.ourAddress,
                                                     peerAddress: Self.peerAddress, connections: 2,
                                                     beforePeer: SecurityInteropRun.advertise)
        defer { run.stop() }
        do {
            try await pairAndReconnect(run, method)
        } catch {
            Issue.record("\(kind) \(method): \(error)\n\(run.transcript)")
        }
    }

    func pairAndReconnect(_ run: SecurityInteropRun, _ method: SecurityInteropMethod) async throws {
        let label = "\(run.kind) \(method)"
        try await run.ours.waitForEvents(30, "pairing completed or failed") { events in
            events.contains { event in
                switch event {
                case .pairingCompleted, .pairingFailed: true
                default: false
                }
            }
        }
        guard let (firstHandle, outcome) = run.ourCompletions.first else {
            throw InteropFailure("pairing failed: \(run.ourFailures)")
        }
        #expect(method.matches(outcome.method), "\(label): method \(String(describing: outcome.method))")
        #expect(outcome.secureConnections == method.secureConnections, "\(label)")
        #expect(outcome.authenticated == method.authenticated, "\(label)")
        #expect(outcome.bonded && !outcome.usedExistingBond, "\(label)")
        let paired = try await run.peer.waitForEvent("paired", seconds: 10)
        #expect(paired.bool("sc") == method.secureConnections, "\(label): Bumble says \(paired.object)")
        #expect(paired.bool("authenticated") == method.authenticated, "\(label): Bumble says \(paired.object)")
        if method == .numeric {
            let number = try await run.peer.waitForEvent("number", seconds: 5)
            #expect(run.numbersWeConfirmed.map(Int.init) == [number.int("number") ?? -1], "\(label)")
        }
        print("security interop \(label) peripheral: \(String(describing: outcome.method)), SC \(outcome.secureConnections.map { "\($0)" } ?? "not told"), "
              + "authenticated \(outcome.authenticated.map { "\($0)" } ?? "not told"), bonded \(outcome.bonded), Bumble's keys \(paired.strings("keys") ?? [])")

        // Bumble disconnects, we advertise again, Bumble reconnects and encrypts with its keystore.
        try await run.ours.waitForEvents(15, "the first disconnection") { events in
            events.contains { if case .disconnected(firstHandle, _) = $0 { true } else { false } }
        }
        try await SecurityInteropRun.advertise(run.ours)
        _ = try await run.peer.waitForEvent("done", seconds: 40)
        #expect(run.peerEvents("step_failed").isEmpty && run.peerEvents("step_timeout").isEmpty,
                "\(label): Bumble's steps \(run.peerEvents("step_failed").map(\.object))")
        #expect(run.peerEvents("encrypted").count == 2, "\(label): Bumble saw \(run.peerEvents("encrypted").count) encryptions")
        #expect(run.peerEvents("encryption_failed").isEmpty, "\(label)")
        #expect(run.peerEvents("pairing_start").count == 1, "\(label): Bumble paired again")
        let fresh = run.ourCompletions.filter { !$0.outcome.usedExistingBond }
        #expect(fresh.count == 1, "\(label): we paired \(fresh.count) times")
        let encryptions = run.ours.events.filter { if case .encryptionChanged(_, .success, true) = $0 { true } else { false } }
        #expect(encryptions.count == 2, "\(label): our encryptions \(encryptions)")
        #expect(run.ourFailures.isEmpty, "\(label): \(run.ourFailures)")
        // Both sides bonded: our store has Bumble's identity, Bumble's keystore ours.
        let bonds = try await run.ourBonds()
        #expect(bonds.map(\.identityAddress) == [outcome.identityAddress].compactMap { $0 }, "\(label): our bonds \(bonds)")
        let keystore = try run.peerKeystoreAddresses()
        #expect(keystore == [Self.ourAddress.string.uppercased()], "\(label): Bumble's keystore \(keystore)")
    }

    /// A pairing that must fail (passkey mismatch, SC and legacy; Numeric Comparison rejected by Bumble or by us):
    /// Pairing Failed with the same reason on both sides, no bond on either, no encryption
    /// (``SecurityInteropFailureScenario``).
    @Test(.enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"),
          arguments: SecurityInteropKinds.all, SecurityInteropFailure.allCases)
    func pairingFailureLeavesNoBond(_ kind: InteropControllerKind, _ failure: SecurityInteropFailure) async throws {
        try await SecurityInteropFailureScenario.run(kind, .ourPeripheral, failure, ourAddress: Self.ourAddress,
                                                     peerAddress: Self.peerAddress)
    }

    /// A Bumble central reads our characteristic that needs encryption: before pairing our server answers
    /// Insufficient Encryption (0x0F, Core 5.4 Vol 3 Part F §3.4.1.1; Vol 3 Part C §10.3.2), after Bumble paired the
    /// value comes back on the encrypted link. Bumble's GATT client does not pair by itself on that error: the
    /// script pairs between the two reads (`--read-secret`).
    @Test(.enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"),
          arguments: SecurityInteropKinds.all)
    func bumbleReadsOurEncryptedCharacteristicOnlyAfterPairing(_ kind: InteropControllerKind) async throws {
        let run = try await SecurityInteropRun.start(kind, method: .justWorks, peerRole: "central", ourAddress: Self.ourAddress,
                                                     peerAddress: Self.peerAddress, connections: 1,
                                                     peerOptions: ["--read-secret"], beforePeer: { ours in
            ours.host.setGATTDatabase(try Self.secureDatabase())
            try await SecurityInteropRun.advertise(ours)
        })
        defer { run.stop() }
        do {
            let refused = try await run.peer.waitForEvent("read_error", seconds: 30)
            #expect(refused.int("code") == Int(ATTErrorCode.insufficientEncryption.rawValue) && refused.bool("encrypted") == false,
                    "\(kind): Bumble's first read \(refused.object)")
            let read = try await run.peer.waitForEvent("read_value", seconds: 30)
            #expect(read.bytes("value") == SecurityInteropRun.secretValue && read.bool("encrypted") == true,
                    "\(kind): Bumble's second read \(read.object)")
            #expect(run.ourCompletions.count == 1 && run.ourFailures.isEmpty, "\(kind): \(run.ourFailures)")
            _ = try await run.peer.waitForEvent("done", seconds: 20)
        } catch {
            Issue.record("\(kind): \(error)\n\(run.transcript)")
        }
    }

    /// The secure service of pairing_peer.py on our side: SECRET readable only on an encrypted link, PLAIN open.
    static func secureDatabase() throws -> GATTDatabase {
        var database = GATTDatabase()
        try database.addGAPService(deviceName: "OCB-Secure")
        try database.addGATTService()
        try database.add(GATTServiceDefinition(uuid: SecurityInteropRun.secureService, characteristics: [
            GATTCharacteristicDefinition(uuid: SecurityInteropRun.secret, properties: [.read],
                                         permissions: GATTPermissions(readable: true, writable: false, read: .encrypted),
                                         value: .stored(SecurityInteropRun.secretValue)),
            GATTCharacteristicDefinition(uuid: SecurityInteropRun.plain, properties: [.read], value: .stored(Array("plain value".utf8))),
        ]))
        return database
    }
}
