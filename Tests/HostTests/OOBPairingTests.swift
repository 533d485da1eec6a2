import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
@testable import Host
import SMP
import Testing

extension SecureStacks {
    /// Each side's local OOB data (after start).
    func localOOB(_ host: HostStack) -> LocalOutOfBandData? {
        let result = Recorder<Result<LocalOutOfBandData, HostError>>()
        host.localOutOfBandData { result.append($0) }
        stacks.loop.run()
        return try? result.last?.get()
    }
}

@Suite("Out-of-band pairing through the host (Vol 3 Part H §2.3.5.4, §2.3.5.6.4)")
struct OOBPairingTests {
    @Test("LE SC OOB, both sides hold the other's data: OOB method, authenticated, equal keys; C = f4(PKx, PKx, r, 0)")
    func secureConnectionsBothSides() throws {
        let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
        let s = SecureStacks(central: security(store: centralStore), peripheral: security(store: peripheralStore))
        #expect(s.stacks.connect())
        let c = try #require(s.localOOB(s.stacks.central))
        let p = try #require(s.localOOB(s.stacks.peripheral))
        #expect(c.address == s.stacks.central.controllerInfo.ownAddress && p.address == s.stacks.peripheral.controllerInfo.ownAddress)
        // Asking again gives the same values (one key pair per stack).
        #expect(s.localOOB(s.stacks.central) == c)
        let pair = try #require(s.stacks.central.securityState.outOfBand.localKeyPair)
        #expect(try SMPOutOfBandData.localConfirm(publicKey: pair.publicKey, random: c.random) == c.confirm)
        s.stacks.central.setPeerOutOfBandData(for: p.address, random: p.random, confirm: p.confirm)
        s.stacks.peripheral.setPeerOutOfBandData(for: c.address, random: c.random, confirm: c.confirm)
        s.stacks.loop.run()
        let outcome = try #require(s.pair()).get()
        #expect(outcome.method == .outOfBand && outcome.secureConnections && outcome.authenticated)
        let peripheralOutcome = try #require(s.completed(s.stacks.peripheralEvents).first)
        #expect(peripheralOutcome.method == .outOfBand && peripheralOutcome.authenticated)
        let centralBond = try #require(centralStore.loadBonds().bonds.first)
        let peripheralBond = try #require(peripheralStore.loadBonds().bonds.first)
        #expect(centralBond.sharedLongTermKey != nil && centralBond.sharedLongTermKey == peripheralBond.sharedLongTermKey)
        #expect(centralBond.authenticated && peripheralBond.authenticated)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("LE SC OOB, only one side holds the other's data: still OOB (either flag suffices), both ways")
    func secureConnectionsOneSide() throws {
        for centralHolds in [true, false] {
            let s = SecureStacks(central: security(), peripheral: security())
            #expect(s.stacks.connect())
            let c = try #require(s.localOOB(s.stacks.central))
            let p = try #require(s.localOOB(s.stacks.peripheral))
            if centralHolds {
                s.stacks.central.setPeerOutOfBandData(for: p.address, random: p.random, confirm: p.confirm)
            } else {
                s.stacks.peripheral.setPeerOutOfBandData(for: c.address, random: c.random, confirm: c.confirm)
            }
            s.stacks.loop.run()
            let outcome = try #require(s.pair()).get()
            #expect(outcome.method == .outOfBand && outcome.authenticated, "central holds: \(centralHolds)")
            #expect(s.completed(s.stacks.peripheralEvents).first?.method == .outOfBand)
            s.stacks.disconnectAndCheckLeaks()
        }
    }

    @Test("LE SC OOB with a wrong peer confirm value: Confirm Value Failed")
    func secureConnectionsWrongConfirm() throws {
        let s = SecureStacks(central: security(), peripheral: security())
        #expect(s.stacks.connect())
        let p = try #require(s.localOOB(s.stacks.peripheral))
        s.stacks.central.setPeerOutOfBandData(for: p.address, random: p.random, confirm: Block128(high: 1, low: 2))
        s.stacks.loop.run()
        #expect((try? #require(s.pair()).get()) == nil)
        #expect(s.failures(s.stacks.centralEvents) == [.confirmValueFailed])
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("legacy OOB: the same TK on both → OOB, authenticated; different TKs → Confirm Value Failed on both")
    func legacy() throws {
        let tk = Block128(high: 0x0011_2233_4455_6677, low: 0x8899_AABB_CCDD_EEFF)
        for matching in [true, false] {
            let s = SecureStacks(central: security(sc: .legacyOnly), peripheral: security(sc: .legacyOnly))
            #expect(s.stacks.connect())
            let centralAddress = s.stacks.central.controllerInfo.ownAddress
            let peripheralAddress = s.stacks.peripheral.controllerInfo.ownAddress
            s.stacks.central.setLegacyOutOfBandKey(for: peripheralAddress, temporaryKey: tk)
            s.stacks.peripheral.setLegacyOutOfBandKey(for: centralAddress, temporaryKey: matching ? tk : Block128(high: 0, low: 1))
            s.stacks.loop.run()
            #expect(s.stacks.central.outOfBandPeerCount == 1)
            let result = try #require(s.pair())
            if matching {
                let outcome = try result.get()
                #expect(outcome.method == .outOfBand && !outcome.secureConnections && outcome.authenticated)
                #expect(s.completed(s.stacks.peripheralEvents).first?.method == .outOfBand)
            } else {
                #expect((try? result.get()) == nil)
                #expect(s.failures(s.stacks.centralEvents) == [.confirmValueFailed])
                #expect(s.failures(s.stacks.peripheralEvents) == [.confirmValueFailed])
                #expect(s.bondCount(s.stacks.central) == 0 && s.bondCount(s.stacks.peripheral) == 0)
            }
            s.stacks.central.removeOutOfBandData(for: peripheralAddress)
            s.stacks.loop.run()
            #expect(s.stacks.central.outOfBandPeerCount == 0)
            s.stacks.disconnectAndCheckLeaks()
        }
    }

    @Test("local OOB data before start: Not Ready")
    func notReady() {
        let s = SecureStacks()
        let result = Recorder<Result<LocalOutOfBandData, HostError>>()
        s.stacks.central.localOutOfBandData { result.append($0) }
        s.stacks.loop.run()
        #expect(result.count == 1)
        if case .failure(let error)? = result.last { #expect(error.code == .notReady) } else { Issue.record("expected a failure") }
    }
}
