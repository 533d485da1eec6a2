import ATT
import BluetoothCore
import BluetoothCrypto
import Foundation
import GATT
@testable import Host
import SMP
import Testing

/// Signed writes end to end (Core 5.4 Vol 3 Part H §2.4.5, Vol 3 Part F §3.4.5.4, Vol 3 Part G §4.9.2).
@Suite("Data signing: signed writes from a bonded peer on an unencrypted link, counters persisted")
struct SigningTests {
    static let database: (GATTDatabase, UInt16) = {
        var database = GATTDatabase()
        do {
            try database.addGAPService(deviceName: "signing")
            try database.addGATTService()
            let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFD0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFD1),
                                             properties: [.read, .writeWithoutResponse, .authenticatedSignedWrites],
                                             value: .stored([0])),
            ]))
            return (database, service.characteristics[0].value)
        } catch {
            Issue.record("database: \(error)")
            return (database, 0)
        }
    }()

    func configuration(csrk: Block128, directory: String) -> HostSecurityConfiguration {
        var configuration = HostSecurityConfiguration()
        configuration.signatureKey = csrk
        configuration.bondStore = FileBondStore(directory: directory)
        return configuration
    }

    func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "ocb-signing-\(UInt64.random(in: 0...UInt64.max))/bonds"
    }

    func storedValue(_ s: SecureStacks, _ handle: UInt16) -> [UInt8]? {
        s.stacks.peripheral.localGATTServer.database.attribute(handle)?.storedValue
    }

    @Test("pair with SignKey, reconnect unencrypted: signed writes applied; replayed counter and bad MAC dropped; counters persisted")
    func signedWritesEndToEnd() throws {
        let centralCSRK = try Block128(msbFirst: (0..<16).map { UInt8($0) })
        let peripheralCSRK = try Block128(msbFirst: (0..<16).map { UInt8(0xF0 | $0) })
        let centralDirectory = temporaryDirectory(), peripheralDirectory = temporaryDirectory()
        defer {
            for directory in [centralDirectory, peripheralDirectory] {
                try? FileManager.default.removeItem(atPath: (directory as NSString).deletingLastPathComponent)
            }
        }
        let s = SecureStacks(central: configuration(csrk: centralCSRK, directory: centralDirectory),
                             peripheral: configuration(csrk: peripheralCSRK, directory: peripheralDirectory))
        let (database, handle) = Self.database
        s.stacks.peripheral.setGATTDatabase(database)
        #expect(s.stacks.connect())
        let outcome = try #require(s.pair()).get()
        #expect(outcome.bonded && outcome.localKeys?.signatureKey == centralCSRK && outcome.peerKeys?.signatureKey == peripheralCSRK)
        let centralIdentity = try #require(s.completed(s.stacks.peripheralEvents).first?.identityAddress)
        let peripheralIdentity = try #require(outcome.identityAddress)

        #expect(s.reconnect())
        #expect(s.stacks.central.openConnections.first?.isEncrypted == false)
        #expect(s.stacks.peripheral.openConnections.first?.isEncrypted == false)

        // First signed write: counter 0, applied.
        #expect(try #require(s.stacks.gatt(.signedWriteWithoutResponse(handle: handle, value: [0xAB]))).get() == .written)
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(storedValue(s, handle) == [0xAB])
        #expect(s.stacks.central.securityState.bonds[peripheralIdentity]?.localSignCounter == 1)
        #expect(s.stacks.peripheral.securityState.bonds[centralIdentity]?.peerSignCounter == 0)

        // Second: counter 1, applied.
        _ = s.stacks.gatt(.signedWriteWithoutResponse(handle: handle, value: [0xCD]))
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(storedValue(s, handle) == [0xCD])
        #expect(s.stacks.peripheral.securityState.bonds[centralIdentity]?.peerSignCounter == 1)

        // Replay: the client's counter reset to 0 (valid MAC, old counter) → dropped silently.
        s.stacks.central.securityState.bonds[peripheralIdentity]?.localSignCounter = 0
        _ = s.stacks.gatt(.signedWriteWithoutResponse(handle: handle, value: [0xEE]))
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(storedValue(s, handle) == [0xCD])
        #expect(s.stacks.peripheral.securityState.bonds[centralIdentity]?.peerSignCounter == 1)
        // Counter 1 again (equal to the last accepted) → dropped too.
        _ = s.stacks.gatt(.signedWriteWithoutResponse(handle: handle, value: [0xEF]))
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(storedValue(s, handle) == [0xCD])

        // Bad MAC: a fresh counter signed with the wrong CSRK → dropped.
        s.stacks.central.securityState.bonds[peripheralIdentity]?.localSignatureKey = peripheralCSRK
        s.stacks.central.securityState.bonds[peripheralIdentity]?.localSignCounter = 50
        _ = s.stacks.gatt(.signedWriteWithoutResponse(handle: handle, value: [0x0B]))
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(storedValue(s, handle) == [0xCD])
        #expect(s.stacks.peripheral.securityState.bonds[centralIdentity]?.peerSignCounter == 1)

        // Right key, counter 51 > 1 → applied.
        s.stacks.central.securityState.bonds[peripheralIdentity]?.localSignatureKey = centralCSRK
        _ = s.stacks.gatt(.signedWriteWithoutResponse(handle: handle, value: [0x51]))
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(storedValue(s, handle) == [0x51])
        #expect(s.stacks.peripheral.securityState.bonds[centralIdentity]?.peerSignCounter == 51)
        #expect(s.stacks.peripheral.openConnections.count == 1)

        // Each dropped command reached the host's owner with its reason, in order.
        let rejections = s.stacks.peripheralEvents.values.compactMap { event -> GATTSignedWriteRejection? in
            if case .gattServer(.signedWriteRejected(_, handle, let reason)) = event { reason } else { nil }
        }
        #expect(rejections == [.replayedCounter, .replayedCounter, .badSignature])

        // Counters survive a FileBondStore round trip.
        let peripheralBond = try #require(FileBondStore(directory: peripheralDirectory).loadBonds().bonds.first)
        #expect(peripheralBond.peerSignatureKey == centralCSRK && peripheralBond.peerSignCounter == 51)
        let centralBond = try #require(FileBondStore(directory: centralDirectory).loadBonds().bonds.first)
        #expect(centralBond.localSignatureKey == centralCSRK && centralBond.localSignCounter == 52)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("a peer without a bond: no signer (the procedure fails locally), and the server drops signed writes")
    func unbondedPeer() throws {
        let s = SecureStacks()
        let (database, handle) = Self.database
        s.stacks.peripheral.setGATTDatabase(database)
        #expect(s.stacks.connect())
        let result = try #require(s.stacks.gatt(.signedWriteWithoutResponse(handle: handle, value: [0x77])))
        #expect((try? result.get()) == nil)
        s.stacks.loop.advance(by: .milliseconds(200))
        #expect(s.stacks.peripheral.localGATTServer.database.attribute(handle)?.storedValue == [0])
        s.stacks.disconnectAndCheckLeaks()
    }
}
