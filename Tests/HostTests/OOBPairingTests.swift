import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
@testable import Host
import SMP
import Testing
import BluetoothEngine

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
        #expect(outcome.method == .outOfBand && outcome.secureConnections == true && outcome.authenticated == true)
        let peripheralOutcome = try #require(s.completed(s.stacks.peripheralEvents).first)
        #expect(peripheralOutcome.method == .outOfBand && peripheralOutcome.authenticated == true)
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
            #expect(outcome.method == .outOfBand && outcome.authenticated == true, "central holds: \(centralHolds)")
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
                #expect(outcome.method == .outOfBand && outcome.secureConnections == false && outcome.authenticated == true)
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

    @Test("peer data for any peer (address unknown when received): used with a peer that has no data of its own; removable")
    func anyPeer() throws {
        let s = SecureStacks(central: security(), peripheral: security())
        #expect(s.stacks.connect())
        let c = try #require(s.localOOB(s.stacks.central))
        let centralAddress = s.stacks.central.controllerInfo.ownAddress
        s.stacks.peripheral.setPeerOutOfBandData(for: .anyPeer, random: c.random, confirm: c.confirm)
        s.stacks.loop.run()
        #expect(s.stacks.peripheral.hasOutOfBandData(for: centralAddress))
        #expect(s.stacks.peripheral.hasOutOfBandData(for: BluetoothAddress(0xC0FF_EE00_0001, type: .random)))
        #expect(s.stacks.peripheral.outOfBandPeerCount == 0)
        let outcome = try #require(s.pair()).get()
        #expect(outcome.method == .outOfBand && outcome.authenticated == true)
        #expect(s.completed(s.stacks.peripheralEvents).first?.method == .outOfBand)
        // Address-specific data wins over the any-peer data: a wrong C for this address fails the next pairing.
        s.stacks.peripheral.setPeerOutOfBandData(for: .address(centralAddress), random: c.random, confirm: Block128(high: 7, low: 7))
        s.stacks.loop.run()
        #expect(s.stacks.peripheral.securityState.outOfBand.data(for: centralAddress)?.peerConfirm == Block128(high: 7, low: 7))
        s.stacks.peripheral.removeOutOfBandData(for: .anyPeer)
        s.stacks.loop.run()
        #expect(s.stacks.peripheral.hasOutOfBandData(for: centralAddress))
        #expect(!s.stacks.peripheral.hasOutOfBandData(for: BluetoothAddress(0xC0FF_EE00_0001, type: .random)))
        s.stacks.peripheral.setLegacyOutOfBandKey(for: .anyPeer, temporaryKey: Block128(high: 1, low: 1))
        s.stacks.loop.run()
        #expect(s.stacks.peripheral.securityState.outOfBand.anyPeer?.legacyTemporaryKey == Block128(high: 1, low: 1))
        s.stacks.peripheral.removeAllPeerOutOfBandData()
        s.stacks.loop.run()
        #expect(!s.stacks.peripheral.hasOutOfBandData(for: centralAddress) && s.stacks.peripheral.outOfBandPeerCount == 0)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("regenerating our OOB data: new key pair and r, C matches the new key; a peer holding the old data fails with Confirm Value Failed")
    func regenerate() throws {
        let s = SecureStacks(central: security(), peripheral: security())
        #expect(s.stacks.connect())
        let old = try #require(s.localOOB(s.stacks.peripheral))
        let oldPair = try #require(s.stacks.peripheral.securityState.outOfBand.localKeyPair)
        let result = Recorder<Result<LocalOutOfBandData, HostError>>()
        s.stacks.peripheral.regenerateLocalOutOfBandData { result.append($0) }
        s.stacks.loop.run()
        let new = try #require(try result.last?.get())
        let newPair = try #require(s.stacks.peripheral.securityState.outOfBand.localKeyPair)
        #expect(new.random != old.random && new.confirm != old.confirm && newPair.publicKey != oldPair.publicKey)
        #expect(try SMPOutOfBandData.localConfirm(publicKey: newPair.publicKey, random: new.random) == new.confirm)
        #expect(s.localOOB(s.stacks.peripheral) == new)
        // The central still holds the data given out before: the peripheral's key no longer matches C.
        s.stacks.central.setPeerOutOfBandData(for: old.address, random: old.random, confirm: old.confirm)
        s.stacks.loop.run()
        #expect((try? #require(s.pair()).get()) == nil)
        #expect(s.failures(s.stacks.centralEvents) == [.confirmValueFailed])
        #expect(s.failures(s.stacks.peripheralEvents) == [.confirmValueFailed])
        s.stacks.disconnectAndCheckLeaks()

        // With the new data: OOB pairing succeeds.
        let t = SecureStacks(central: security(), peripheral: security())
        #expect(t.stacks.connect())
        let first = try #require(t.localOOB(t.stacks.peripheral))
        let again = Recorder<Result<LocalOutOfBandData, HostError>>()
        t.stacks.peripheral.regenerateLocalOutOfBandData { again.append($0) }
        t.stacks.loop.run()
        let fresh = try #require(try again.last?.get())
        #expect(fresh != first)
        t.stacks.central.setPeerOutOfBandData(for: fresh.address, random: fresh.random, confirm: fresh.confirm)
        t.stacks.loop.run()
        let outcome = try #require(t.pair()).get()
        #expect(outcome.method == .outOfBand && outcome.authenticated == true)
        t.stacks.disconnectAndCheckLeaks()
    }

    @Test("removing our OOB data: pairings use fresh key pairs again; a peer holding the old data fails")
    func removeLocal() throws {
        let s = SecureStacks(central: security(), peripheral: security())
        #expect(s.stacks.connect())
        let old = try #require(s.localOOB(s.stacks.peripheral))
        s.stacks.peripheral.removeLocalOutOfBandData()
        s.stacks.loop.run()
        #expect(s.stacks.peripheral.securityState.outOfBand.localKeyPair == nil)
        #expect(s.stacks.peripheral.securityState.outOfBand.localRandom == nil)
        s.stacks.central.setPeerOutOfBandData(for: old.address, random: old.random, confirm: old.confirm)
        s.stacks.loop.run()
        #expect((try? #require(s.pair()).get()) == nil)
        #expect(s.failures(s.stacks.centralEvents) == [.confirmValueFailed])
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("single-use OOB data: after an OOB pairing the peer's data is forgotten and the displayer's key pair and r replaced; the next pairing is not OOB")
    func singleUse() throws {
        var central = security(), peripheral = security()
        central.outOfBandDataSingleUse = true
        peripheral.outOfBandDataSingleUse = true
        let s = SecureStacks(central: central, peripheral: peripheral)
        #expect(s.stacks.connect())
        let given = try #require(s.localOOB(s.stacks.peripheral))
        let oldPair = try #require(s.stacks.peripheral.securityState.outOfBand.localKeyPair)
        s.stacks.central.setPeerOutOfBandData(for: given.address, random: given.random, confirm: given.confirm)
        s.stacks.loop.run()
        #expect(s.stacks.central.outOfBandPeerCount == 1)
        let first = try #require(s.pair()).get()
        #expect(first.method == .outOfBand && first.authenticated == true)
        // Consumed on both sides: the central forgot the peripheral's data, the peripheral has a new key pair and r.
        #expect(s.stacks.central.outOfBandPeerCount == 0)
        let fresh = try #require(s.localOOB(s.stacks.peripheral))
        #expect(fresh.random != given.random && fresh.confirm != given.confirm)
        #expect(s.stacks.peripheral.securityState.outOfBand.localKeyPair?.publicKey != oldPair.publicKey)
        #expect(try SMPOutOfBandData.localConfirm(publicKey: try #require(s.stacks.peripheral.securityState.outOfBand.localKeyPair).publicKey,
                                                  random: fresh.random) == fresh.confirm)
        // Pairing again without new data: Just Works (unauthenticated), not OOB.
        let second = try #require(s.pair(PairingOptions(forcePairing: true))).get()
        #expect(second.method == .justWorks && second.authenticated == false)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("without single use, OOB data stays for the next pairing")
    func dataStaysByDefault() throws {
        let s = SecureStacks(central: security(), peripheral: security())
        #expect(s.stacks.connect())
        let given = try #require(s.localOOB(s.stacks.peripheral))
        s.stacks.central.setPeerOutOfBandData(for: given.address, random: given.random, confirm: given.confirm)
        s.stacks.loop.run()
        #expect(try #require(s.pair()).get().method == .outOfBand)
        #expect(s.stacks.central.outOfBandPeerCount == 1 && s.localOOB(s.stacks.peripheral) == given)
        #expect(try #require(s.pair(PairingOptions(forcePairing: true))).get().method == .outOfBand)
        s.stacks.disconnectAndCheckLeaks()
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
