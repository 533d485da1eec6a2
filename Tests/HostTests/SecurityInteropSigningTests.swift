import ATT
import BluetoothCore
import BluetoothCrypto
import Foundation
import GATT
import HCI
import Host
import SMP
import Testing

/// Issue 6, signed writes against **Bumble 0.0.236** (Interop/peers/oob_signing_peer.py --mode sign), on Bumble's
/// controller pair and on our virtual controller (Core 5.4 Vol 3 Part H §2.4.5 data signing, Vol 3 Part F §3.4.5.4
/// Signed Write Command, Vol 3 Part G §4.9.2, Vol 3 Part C §10.4.2: checked on unencrypted links only).
///
/// Both sides pair (LE SC Just Works) distributing CSRKs, disconnect, and reconnect without encryption.
/// - Bumble's client → our server: Bumble cannot sign, so the script builds the Signed Write Commands (0xD2) with
///   Bumble's AES-CMAC and the CSRK Bumble distributed: a valid one (counter 0), a replay of counter 0, a bad MAC
///   (counter 7), a valid one (counter 1). Our server applies the two valid ones and reports the other two to the
///   host's owner as ``GATTServerEvent/signedWriteRejected(connection:handle:reason:)`` with
///   ``GATTSignedWriteRejection/replayedCounter`` and ``GATTSignedWriteRejection/badSignature``; the counter
///   accepted last is in our bond; Bumble reads back the last valid value.
/// - Our client → Bumble's server: two signed writes from our GATT client; the script checks each MAC with the
///   CSRK our host distributed (read from Bumble's keystore) and that the counters increase (0, 1).
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SecurityInteropSigningTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0031, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_0031, type: .random)
    static let signedService = InteropDatabase.uuid(0x5E1F_3001)
    static let signedCharacteristic = InteropDatabase.uuid(0x5E1F_3002)
    static let ourCSRK = Block128(high: 0x0C5B_C5B0_0102_0304, low: 0x0506_0708_090A_0B0C)

    static func configure(_ security: inout HostSecurityConfiguration) {
        security.secureConnections = .preferred
        security.ioCapability = .noInputNoOutput
        security.signatureKey = ourCSRK
    }

    /// Our database with the signed characteristic; its value handle.
    static func database() throws -> (GATTDatabase, UInt16) {
        var database = GATTDatabase()
        try database.addGAPService(deviceName: "OCB-Signed")
        try database.addGATTService()
        let service = try database.add(GATTServiceDefinition(uuid: signedService, characteristics: [
            GATTCharacteristicDefinition(uuid: signedCharacteristic,
                                         properties: [.read, .writeWithoutResponse, .authenticatedSignedWrites],
                                         value: .stored([])),
        ]))
        return (database, service.characteristics[0].value)
    }

    @Test("Bumble's client signs (its own 0xD2, its CSRK): our server accepts valid ones, rejects replay and bad MAC with reasons",
          .enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.bumble, .ourAir])
    func bumbleSignsOurServerVerifies(_ kind: InteropControllerKind) async throws {
        let clock = ContinuousClock.now
        let (database, handle) = try Self.database()
        let run = try await OOBSigningInteropRun.start(
            kind, ourAddress: Self.ourAddress, peerAddress: Self.peerAddress, peerRole: "central",
            configure: Self.configure,
            prepare: { ours in
                ours.host.setGATTDatabase(database)
                try await OOBSigningInteropRun.advertise(ours)
                return ["--mode", "sign"]
            })
        defer { run.stop() }
        do {
            try await run.waitForOurPairing()
            guard let outcome = run.ourCompletions.first?.outcome else { throw InteropFailure("pairing failed: \(run.ourFailures)") }
            #expect(outcome.bonded && outcome.secureConnections == true, "\(kind): \(outcome)")
            #expect(outcome.localKeys?.signatureKey == Self.ourCSRK, "\(kind): we distributed \(String(describing: outcome.localKeys?.signatureKey))")
            let bumbleCSRK = try #require(outcome.peerKeys?.signatureKey, "\(kind): Bumble distributed no CSRK")
            try await run.ours.waitForEvents(15, "the first disconnection") { events in
                events.contains { if case .disconnected = $0 { true } else { false } }
            }
            try await OOBSigningInteropRun.advertise(run.ours)
            _ = try await run.peer.waitForEvent("done", seconds: 40)
            #expect(run.peerEvents("step_failed").isEmpty && run.peerEvents("step_timeout").isEmpty,
                    "\(kind): \(run.peerEvents("step_failed").map(\.object))")
            // What Bumble signed with is what we hold as its CSRK; its keystore holds ours.
            let csrk = try await run.peer.waitForEvent("csrk", seconds: 5)
            #expect(csrk.string("ours") == OOBHex.wire(bumbleCSRK), "\(kind): \(csrk.object)")
            #expect(csrk.string("peer") == OOBHex.wire(Self.ourCSRK), "\(kind): \(csrk.object)")
            #expect(run.peerEvents("encrypted").count == 1, "\(kind): the second link must stay unencrypted")
            #expect(run.peerEvents("sent").map { $0.int("counter") } == [0, 0, 7, 1], "\(kind)")

            let serverEvents = run.ours.events.compactMap { event -> String? in
                switch event {
                case .gattServer(.valueWritten(_, handle, let value)): "written \(Hex.encode(value))"
                case .gattServer(.signedWriteRejected(_, handle, let reason)): "rejected \(reason)"
                default: nil
                }
            }
            let first = Hex.encode([0x01] + Array("signed-one".utf8)), second = Hex.encode([0x04] + Array("signed-two".utf8))
            #expect(serverEvents == ["written \(first)", "rejected \(GATTSignedWriteRejection.replayedCounter)",
                                     "rejected \(GATTSignedWriteRejection.badSignature)", "written \(second)"],
                    "\(kind): \(serverEvents)")
            #expect(run.peerEvents("read_back").first?.string("value") == second, "\(kind)")
            let bond = run.store.loadBonds().bonds.first
            #expect(bond?.peerSignCounter == 1 && bond?.peerSignatureKey == bumbleCSRK, "\(kind): \(String(describing: bond))")
            print("signing interop \(kind) Bumble → our server: \(ContinuousClock.now - clock)")
        } catch {
            Issue.record("\(kind): \(error)\n\(run.transcript)")
        }
    }

    @Test("our client signs: Bumble's script verifies the MAC with our CSRK from its keystore, counters 0 then 1",
          .enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.bumble, .ourAir])
    func weSignBumbleVerifies(_ kind: InteropControllerKind) async throws {
        let clock = ContinuousClock.now
        let run = try await OOBSigningInteropRun.start(
            kind, ourAddress: Self.ourAddress, peerAddress: Self.peerAddress, peerRole: "peripheral",
            configure: Self.configure, prepare: { _ in ["--mode", "sign"] })
        defer { run.stop() }
        do {
            _ = try await run.peer.waitForEvent("ready", seconds: 30)
            let first = try await run.connect(to: Self.peerAddress)
            let outcome = try await run.pair(first).get()
            #expect(outcome.bonded && outcome.localKeys?.signatureKey == Self.ourCSRK, "\(kind): \(outcome)")
            _ = try await run.peer.waitForEvent("paired", seconds: 10)
            try await run.disconnect(first)
            _ = try await run.peer.waitForEvent("advertising", seconds: 15)
            let handle = try await run.connect(to: Self.peerAddress)
            guard case .services(let services) = try await run.ours.gatt(handle, .discoverPrimaryServices(uuid: Self.signedService)),
                  let service = services.first,
                  case .characteristics(let characteristics) = try await run.ours.gatt(handle, .discoverAllCharacteristics(of: service)),
                  let characteristic = characteristics.first(where: { $0.uuid == Self.signedCharacteristic }) else {
                throw InteropFailure("the signed characteristic was not discovered")
            }
            #expect(characteristic.properties.contains(.authenticatedSignedWrites), "\(kind)")
            let values: [[UInt8]] = [Array("our-first".utf8), Array("our-second".utf8)]
            for value in values {
                let result = try await run.ours.gatt(handle, .signedWriteWithoutResponse(handle: characteristic.valueHandle, value: value))
                #expect(result == .written, "\(kind)")
            }
            _ = try await run.peer.waitForEvent("signed_write", seconds: 10, where: { _ in run.peerEvents("signed_write").count >= 2 })
            let writes = run.peerEvents("signed_write")
            #expect(writes.map { $0.int("counter") } == [0, 1], "\(kind): \(writes.map(\.object))")
            #expect(writes.allSatisfy { $0.bool("valid") == true && $0.bool("fresh") == true && $0.bool("encrypted") == false },
                    "\(kind): \(writes.map(\.object))")
            #expect(writes.map { $0.string("value") } == values.map { Hex.encode($0) }, "\(kind)")
            #expect(writes.allSatisfy { $0.int("handle") == Int(characteristic.valueHandle) }, "\(kind)")
            let csrk = try await run.peer.waitForEvent("csrk", seconds: 5)
            #expect(csrk.string("peer") == OOBHex.wire(Self.ourCSRK), "\(kind): Bumble's keystore \(csrk.object)")
            #expect(run.store.loadBonds().bonds.first?.localSignCounter == 2, "\(kind)")
            try await run.disconnect(handle)
            print("signing interop \(kind) our client → Bumble: \(ContinuousClock.now - clock)")
        } catch {
            Issue.record("\(kind): \(error)\n\(run.transcript)")
        }
    }
}
