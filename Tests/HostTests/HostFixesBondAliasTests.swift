import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import Foundation
import HCI
@testable import Host
import SMP
import Testing
import BluetoothEngine

/// A peer that pairs from a public or static address but distributes another identity (Bumble with an all-zero
/// IRK) is recognised when it connects from that address again: the pairing address is kept as an alias.
@Suite("bond alias: the address a peer paired from")
struct HostFixesBondAliasTests {
    static let distributedIdentity = BluetoothAddress(0x00_AA_BB_CC_DD_EE, type: .public)

    @Test("the peripheral gives another identity: the bond keeps its pairing address, reconnect finds it and encrypts")
    func reconnectFromPairingAddress() throws {
        let centralStore = InMemoryBondStore()
        var peripheralSecurity = security()
        peripheralSecurity.identityAddress = Self.distributedIdentity
        peripheralSecurity.identityResolvingKey = Block128(high: 0, low: 0)
        let s = SecureStacks(central: security(store: centralStore), peripheral: peripheralSecurity)
        #expect(s.stacks.connect())
        let onAir = s.stacks.peripheral.controllerInfo.ownAddress
        #expect(onAir.kind == .randomStatic && onAir != Self.distributedIdentity)
        let outcome = try #require(s.pair()).get()
        #expect(outcome.identityAddress == Self.distributedIdentity)
        let bond = try #require(centralStore.loadBonds().bonds.first)
        #expect(bond.identityAddress == Self.distributedIdentity)
        #expect(bond.connectionAddress == onAir)
        #expect(s.reconnect())
        #expect(s.stacks.central.peerIdentity(connectionHandle: s.stacks.centralHandle) == Self.distributedIdentity)
        #expect(s.stacks.central.resolveIdentity(of: onAir) == Self.distributedIdentity)
        let before = s.smpPDUs(s.stacks.centralEvents)
        let result = Recorder<Result<PairingOutcome, HostError>>()
        s.stacks.central.encrypt(connectionHandle: s.stacks.centralHandle) { result.append($0) }
        #expect(s.stacks.run(until: { result.count == 1 }))
        #expect(try result.last?.get().usedExistingBond == true)
        #expect(s.smpPDUs(s.stacks.centralEvents) == before)
        #expect(s.bondCount(s.stacks.central) == 1)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("no alias when the peer's address is its identity")
    func noAliasForIdentity() throws {
        let centralStore = InMemoryBondStore()
        let s = SecureStacks(central: security(store: centralStore), peripheral: security())
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        #expect(try #require(centralStore.loadBonds().bonds.first).connectionAddress == nil)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("the alias is persisted by FileBondStore and read back; an RPA is never used as a lookup alias")
    func persisted() throws {
        let directory = NSTemporaryDirectory() + "host-fixes-alias-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = FileBondStore(directory: directory)
        var bond = Bond(identityAddress: Self.distributedIdentity, keySize: 16, authenticated: false, secureConnections: true)
        bond.connectionAddress = BluetoothAddress(0xC1_02_03_04_05_06, type: .random)
        try store.saveBond(bond)
        let loaded = store.loadBonds()
        #expect(loaded.problems.isEmpty)
        #expect(loaded.bonds == [bond])
        var state = SecurityState()
        state.bonds[bond.identityAddress] = bond
        #expect(state.bond(resolving: BluetoothAddress(0xC1_02_03_04_05_06, type: .random)) == bond)
        #expect(state.bond(resolving: BluetoothAddress(0x41_02_03_04_05_06, type: .random)) == nil)
        // Old records without the field still load.
        let path = store.path(for: bond.identityAddress)
        let json = try String(contentsOfFile: path, encoding: .utf8)
        #expect(json.contains("connectionAddress"))
        var plain = bond
        plain.connectionAddress = nil
        try store.saveBond(plain)
        #expect(try !String(contentsOfFile: path, encoding: .utf8).contains("connectionAddress"))
        #expect(store.loadBonds().bonds == [plain])
    }
}
