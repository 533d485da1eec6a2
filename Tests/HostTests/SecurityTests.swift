import ATT
import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import GATT
import HCI
@testable import Host
import SMP
import Testing
import BluetoothEngine

/// Two stacks whose event handlers also answer pairing questions as told, and count SMP PDUs.
final class SecureStacks: @unchecked Sendable {
    let stacks: TwoStacks
    /// What each side answers: numeric comparison / Just Works consent, and the passkey it types (nil: the one
    /// the other side displayed).
    var centralConfirms = true, peripheralConfirms = true
    var centralPasskey: UInt32?, peripheralPasskey: UInt32?
    let displayed = Recorder<UInt32>()
    var waitingEntry: (HostStack, UInt16)?

    static let database: (GATTDatabase, UInt16) = {
        var database = GATTDatabase()
        do {
            try database.addGAPService(deviceName: "secure")
            try database.addGATTService()
            let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFF0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFF1), properties: [.read, .notify],
                                             permissions: GATTPermissions(readable: true, writable: false, read: .encrypted),
                                             value: .stored([0x5E, 0xC2])),
            ]))
            return (database, service.characteristics[0].value)
        } catch {
            Issue.record("database: \(error)")
            return (database, 0)
        }
    }()

    init(central: HostSecurityConfiguration = HostSecurityConfiguration(),
         peripheral: HostSecurityConfiguration = HostSecurityConfiguration(),
         configure: (inout HostConfiguration, _ role: String) -> Void = { _, _ in }) {
        var c = HostConfiguration(address: .randomStatic(seed: 2))
        configure(&c, "central")
        c.security = central
        if c.security.keySource is SystemSMPKeySource { c.security.keySource = SeededSMPKeySource(SplitMixGenerator(state: 11)) }
        var p = HostConfiguration(address: .randomStatic(seed: 1))
        configure(&p, "peripheral")
        p.security = peripheral
        if p.security.keySource is SystemSMPKeySource { p.security.keySource = SeededSMPKeySource(SplitMixGenerator(state: 22)) }
        stacks = TwoStacks(database: Self.database.0, central: c, peripheral: p)
        let ce = stacks.centralEvents, pe = stacks.peripheralEvents
        stacks.central.setEventHandler { [unowned self] event in
            ce.append(event)
            answer(event, host: stacks.central, confirms: centralConfirms, passkey: centralPasskey)
        }
        stacks.peripheral.setEventHandler { [unowned self] event in
            pe.append(event)
            answer(event, host: stacks.peripheral, confirms: peripheralConfirms, passkey: peripheralPasskey)
        }
    }

    func answer(_ event: HostEvent, host: HostStack, confirms: Bool, passkey: UInt32?) {
        guard case .pairingInteraction(let handle, let interaction) = event else { return }
        switch interaction {
        case .confirmNumericValue, .confirmJustWorks: host.answerPairing(connectionHandle: handle, .confirm(confirms))
        case .displayPasskey(let value):
            displayed.append(value)
            if let (waitingHost, waitingHandle) = waitingEntry {
                waitingEntry = nil
                waitingHost.answerPairing(connectionHandle: waitingHandle, .passkey(value))
            }
        case .enterPasskey:
            // Typed: the given passkey, or the one the other side shows (once it shows it).
            if let value = passkey ?? displayed.last {
                host.answerPairing(connectionHandle: handle, .passkey(value))
            } else {
                waitingEntry = (host, handle)
            }
        }
    }

    /// Pairs from the central; returns both sides' results.
    func pair(_ options: PairingOptions = PairingOptions()) -> Result<PairingOutcome, HostError>? {
        let result = Recorder<Result<PairingOutcome, HostError>>()
        stacks.central.pair(connectionHandle: stacks.centralHandle, options: options) { result.append($0) }
        stacks.run(until: { result.count == 1 }, limit: .seconds(60))
        stacks.loop.advance(by: .milliseconds(200))
        return result.last
    }

    func completed(_ events: Recorder<HostEvent>) -> [PairingOutcome] {
        events.values.compactMap { if case .pairingCompleted(_, let outcome) = $0 { outcome } else { nil } }
    }

    func failures(_ events: Recorder<HostEvent>) -> [SMPPairingFailedReason?] {
        events.values.compactMap { if case .pairingFailed(_, let reason, _) = $0 { reason } else { nil } }
    }

    func smpPDUs(_ events: Recorder<HostEvent>) -> Int {
        events.values.filter { if case .securityManagerPDU = $0 { true } else { false } }.count
    }

    /// Disconnects, then the peripheral advertises again and the central reconnects.
    func reconnect() -> Bool { stacks.reconnect(advertisingAs: "secure") }

    func bondCount(_ host: HostStack) -> Int {
        let bonds = Recorder<[Bond]>()
        host.bonds { bonds.append($0) }
        stacks.loop.run()
        return bonds.last?.count ?? -1
    }
}

func security(io: SMPIOCapability = .noInputNoOutput, mitm: Bool = false,
              sc: SMPSecureConnectionsPolicy = .preferred, store: InMemoryBondStore = InMemoryBondStore()) -> HostSecurityConfiguration {
    var configuration = HostSecurityConfiguration()
    configuration.ioCapability = io
    configuration.mitm = mitm
    configuration.secureConnections = sc
    configuration.bondStore = store
    return configuration
}

@Suite("SMP in the host: pairing methods, bonds, re-encryption, attribute security")
struct SecurityTests {
    @Test("LE SC Just Works: both sides complete, keys distributed and stored, GATT security set")
    func secureConnectionsJustWorks() throws {
        let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
        let s = SecureStacks(central: security(store: centralStore), peripheral: security(store: peripheralStore))
        #expect(s.stacks.connect())
        let outcome = try #require(s.pair()).get()
        #expect(outcome.method == .justWorks && outcome.secureConnections == true && outcome.authenticated == false && outcome.bonded)
        #expect(outcome.keySize == 16 && !outcome.usedExistingBond)
        #expect(outcome.peerKeys?.identityResolvingKey == s.stacks.peripheral.localIdentityResolvingKey)
        #expect(outcome.peerKeys?.identityAddress == s.stacks.peripheral.localIdentityAddress)
        let peripheralOutcome = try #require(s.completed(s.stacks.peripheralEvents).first)
        #expect(peripheralOutcome.peerKeys?.identityResolvingKey == s.stacks.central.localIdentityResolvingKey)
        #expect(s.stacks.central.openConnections.first?.isEncrypted == true)
        #expect(s.stacks.peripheral.connections[s.stacks.peripheralHandle]?.session?.security
            == GATTLinkSecurity(encrypted: true, authenticated: false, keySize: 16))
        let centralBond = try #require(centralStore.loadBonds().bonds.first)
        let peripheralBond = try #require(peripheralStore.loadBonds().bonds.first)
        #expect(centralBond.sharedLongTermKey != nil && centralBond.sharedLongTermKey == peripheralBond.sharedLongTermKey)
        #expect(centralBond.sharedLongTermKey?.ediv == 0 && centralBond.sharedLongTermKey?.rand == 0)
        #expect(centralBond.identityAddress == s.stacks.peripheral.localIdentityAddress)
        #expect(peripheralBond.identityAddress == s.stacks.central.localIdentityAddress)
        #expect(centralBond.secureConnections && !centralBond.authenticated)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("numeric comparison: both confirm → authenticated; one rejects → Numeric Comparison Failed on both")
    func numericComparison() throws {
        let s = SecureStacks(central: security(io: .displayYesNo, mitm: true), peripheral: security(io: .displayYesNo, mitm: true))
        #expect(s.stacks.connect())
        let outcome = try #require(s.pair()).get()
        #expect(outcome.method == .numericComparison && outcome.authenticated == true)
        let values = s.stacks.centralEvents.values.compactMap { if case .pairingInteraction(_, .confirmNumericValue(let v)) = $0 { v } else { nil } }
        let peerValues = s.stacks.peripheralEvents.values.compactMap { if case .pairingInteraction(_, .confirmNumericValue(let v)) = $0 { v } else { nil } }
        #expect(values.count == 1 && values == peerValues)
        s.stacks.disconnectAndCheckLeaks()

        let r = SecureStacks(central: security(io: .displayYesNo, mitm: true), peripheral: security(io: .displayYesNo, mitm: true))
        r.peripheralConfirms = false
        #expect(r.stacks.connect())
        let failed = try #require(r.pair())
        #expect((try? failed.get()) == nil)
        #expect(r.failures(r.stacks.centralEvents) == [.numericComparisonFailed])
        #expect(r.failures(r.stacks.peripheralEvents) == [.numericComparisonFailed])
        #expect(r.bondCount(r.stacks.central) == 0 && r.bondCount(r.stacks.peripheral) == 0)
        r.stacks.disconnectAndCheckLeaks()
    }

    @Test("passkey entry, either side displaying, SC and legacy; mismatch → Confirm Value Failed on both")
    func passkey() throws {
        for sc in [SMPSecureConnectionsPolicy.preferred, .legacyOnly] {
            // Responder displays, initiator types.
            let a = SecureStacks(central: security(io: .keyboardOnly, mitm: true, sc: sc), peripheral: security(io: .displayOnly, mitm: true, sc: sc))
            #expect(a.stacks.connect())
            let outcome = try #require(a.pair()).get()
            #expect(outcome.method == .passkeyEntry(.responderDisplays) && outcome.authenticated == true)
            #expect(outcome.secureConnections == (sc == .preferred))
            #expect(a.displayed.count == 1)
            a.stacks.disconnectAndCheckLeaks()
            // Initiator displays, responder types.
            let b = SecureStacks(central: security(io: .displayOnly, mitm: true, sc: sc), peripheral: security(io: .keyboardOnly, mitm: true, sc: sc))
            #expect(b.stacks.connect())
            #expect(try #require(b.pair()).get().method == .passkeyEntry(.initiatorDisplays))
            b.stacks.disconnectAndCheckLeaks()
            // Wrong passkey typed.
            let c = SecureStacks(central: security(io: .keyboardOnly, mitm: true, sc: sc), peripheral: security(io: .displayOnly, mitm: true, sc: sc))
            #expect(c.stacks.connect())
            c.centralPasskey = 1
            #expect((try? #require(c.pair()).get()) == nil)
            #expect(c.failures(c.stacks.centralEvents) == [.confirmValueFailed], "\(sc)")
            #expect(c.failures(c.stacks.peripheralEvents) == [.confirmValueFailed], "\(sc)")
            c.stacks.disconnectAndCheckLeaks()
        }
    }

    @Test("legacy Just Works: each side's LTK with EDIV/Rand stored by who distributed it; reconnect re-encrypts without SMP")
    func legacyJustWorksAndBondedReconnect() throws {
        let centralStore = InMemoryBondStore(), peripheralStore = InMemoryBondStore()
        let s = SecureStacks(central: security(sc: .legacyOnly, store: centralStore), peripheral: security(sc: .legacyOnly, store: peripheralStore))
        #expect(s.stacks.connect())
        let outcome = try #require(s.pair()).get()
        #expect(outcome.method == .justWorks && outcome.secureConnections == false)
        let centralBond = try #require(centralStore.loadBonds().bonds.first)
        let peripheralBond = try #require(peripheralStore.loadBonds().bonds.first)
        #expect(centralBond.sharedLongTermKey == nil)
        #expect(centralBond.peerLongTermKey != nil && centralBond.peerLongTermKey == peripheralBond.localLongTermKey)
        #expect(centralBond.localLongTermKey != nil && centralBond.localLongTermKey == peripheralBond.peerLongTermKey)
        #expect(centralBond.peerLongTermKey != centralBond.localLongTermKey)
        #expect(centralBond.peerSignatureKey == nil)

        #expect(s.reconnect())
        let before = (s.smpPDUs(s.stacks.centralEvents), s.smpPDUs(s.stacks.peripheralEvents))
        let again = try #require(s.pair()).get()
        #expect(again.usedExistingBond && again.method == nil)
        #expect(s.stacks.central.openConnections.first?.isEncrypted == true)
        #expect(s.stacks.peripheral.openConnections.first?.isEncrypted == true)
        #expect((s.smpPDUs(s.stacks.centralEvents), s.smpPDUs(s.stacks.peripheralEvents)) == before)
        #expect(s.stacks.peripheral.connections[s.stacks.peripheralHandle]?.session?.security.encrypted == true)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("LE SC bonded reconnect: encrypt(connectionHandle:) uses the shared key, no SMP PDU on the second link")
    func secureConnectionsReconnect() throws {
        let s = SecureStacks()
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        #expect(s.reconnect())
        let before = (s.smpPDUs(s.stacks.centralEvents), s.smpPDUs(s.stacks.peripheralEvents))
        let result = Recorder<Result<PairingOutcome, HostError>>()
        s.stacks.central.encrypt(connectionHandle: s.stacks.centralHandle) { result.append($0) }
        #expect(s.stacks.run(until: { result.count == 1 }))
        #expect(try result.last?.get().usedExistingBond == true)
        #expect((s.smpPDUs(s.stacks.centralEvents), s.smpPDUs(s.stacks.peripheralEvents)) == before)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("encrypted-only read: Insufficient Encryption, pairing starts by itself, the read is retried once and succeeds")
    func encryptedReadRetried() throws {
        let s = SecureStacks()
        #expect(s.stacks.connect())
        let read = s.stacks.gatt(.readCharacteristicValue(handle: SecureStacks.database.1))
        #expect(try read?.get() == .value([0x5E, 0xC2]))
        #expect(s.completed(s.stacks.centralEvents).count == 1)
        // Without the retry: the error reaches the caller.
        let errors = s.stacks.centralEvents.values.filter { if case .gattSecurityFailed = $0 { true } else { false } }
        #expect(errors.isEmpty)
        s.stacks.disconnectAndCheckLeaks()

        // Pairing refused by the peer: the read fails with the original ATT error and why securing failed.
        let r = SecureStacks(central: security(), peripheral: { var c = security(); c.justWorksConsent = true; return c }())
        r.peripheralConfirms = false
        #expect(r.stacks.connect())
        let refused = r.stacks.gatt(.readCharacteristicValue(handle: SecureStacks.database.1))
        #expect(refused.map { if case .failure(.securityFailed(.insufficientEncryption, _, _)) = $0 { true } else { false } } == true)
        #expect(refused.map { if case .failure(let error) = $0 { error.attErrorCode == .insufficientEncryption } else { false } } == true)
        #expect(r.stacks.centralEvents.values.contains { if case .gattSecurityFailed(_, .insufficientEncryption, _) = $0 { true } else { false } })
        r.stacks.disconnectAndCheckLeaks()
    }

    @Test("a peer that lost its bond is reported; re-pairing allowed by policy replaces the bond, refused otherwise")
    func bondLost() throws {
        // The peripheral forgets: the central's encryption fails with PIN or Key Missing.
        let centralStore = InMemoryBondStore()
        var central = security(store: centralStore)
        central.allowRepairing = { _ in true }
        let s = SecureStacks(central: central)
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        let oldKey = centralStore.loadBonds().bonds.first?.sharedLongTermKey
        s.stacks.peripheral.removeBond(identityAddress: try #require(s.stacks.central.localIdentityAddress))
        #expect(s.reconnect())
        let outcome = try #require(s.pair()).get()
        #expect(!outcome.usedExistingBond && outcome.bonded)
        #expect(s.stacks.centralEvents.values.contains { if case .bondLost = $0 { true } else { false } })
        let newKey = centralStore.loadBonds().bonds.first?.sharedLongTermKey
        #expect(newKey != nil && newKey != oldKey && centralStore.loadBonds().bonds.count == 1)
        s.stacks.disconnectAndCheckLeaks()

        // The central forgets and pairs again: the peripheral refuses by default.
        let t = SecureStacks()
        #expect(t.stacks.connect())
        _ = try #require(t.pair()).get()
        t.stacks.central.removeBond(identityAddress: try #require(t.stacks.peripheral.localIdentityAddress))
        #expect(t.reconnect())
        let refused = try #require(t.pair())
        #expect((try? refused.get()) == nil)
        #expect(t.stacks.peripheralEvents.values.contains { if case .bondLost = $0 { true } else { false } })
        #expect(t.failures(t.stacks.centralEvents).last == .pairingNotSupported)
        #expect(t.bondCount(t.stacks.peripheral) == 1)
        t.stacks.disconnectAndCheckLeaks()
    }

    @Test("CCCDs of a bonded peer are stored on change and restored when its encrypted link comes up")
    func clientConfigurationsRestored() throws {
        let peripheralStore = InMemoryBondStore()
        let s = SecureStacks(peripheral: security(store: peripheralStore))
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        let value = SecureStacks.database.1
        #expect(try s.stacks.gatt(.writeDescriptor(handle: value + 1, value: [0x01, 0x00]))?.get() == .written)
        #expect(peripheralStore.loadBonds().bonds.first?.clientConfigurations == [value: 0x0001])
        #expect(s.reconnect())
        let id = GATTConnectionID(s.stacks.peripheralHandle)
        #expect(s.stacks.peripheral.localGATTServer.clientConfiguration(valueHandle: value, for: id).isEmpty)
        _ = try #require(s.pair()).get()
        #expect(s.stacks.peripheral.localGATTServer.clientConfiguration(valueHandle: value, for: id) == .notification)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("resolvable private addresses of a bonded peer resolve to its identity")
    func resolvesPrivateAddresses() throws {
        let s = SecureStacks()
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        let irk = try #require(s.stacks.peripheral.localIdentityResolvingKey)
        var generator = SplitMixGenerator(state: 5)
        let rpa = try ResolvablePrivateAddress.generate(irk: irk, using: &generator)
        #expect(s.stacks.central.resolveIdentity(of: rpa) == s.stacks.peripheral.localIdentityAddress)
        #expect(s.stacks.peripheral.resolveIdentity(of: rpa) == nil)
        s.stacks.disconnectAndCheckLeaks()
    }
}

@Suite("Our own RPA rotation")
struct PrivateAddressRotationTests {
    @Test("opt-in: an RPA from our IRK at start, a new one each interval; postponed while advertising")
    func rotation() throws {
        var configuration = HostConfiguration(address: .randomStatic(seed: 3))
        configuration.security.privateAddressRotation = .seconds(900)
        configuration.security.usesControllerPrivacy = false  // the host's own rotation (ControllerPrivacyTests: the controller's)
        let stacks = TwoStacks(peripheral: configuration)
        let started = Recorder<Bool>()
        stacks.peripheral.start { started.append((try? $0.get()) != nil) }
        #expect(stacks.run(until: { started.count == 1 }))
        stacks.loop.advance(by: .milliseconds(100))
        let irk = try #require(stacks.peripheral.localIdentityResolvingKey)
        let first = stacks.peripheral.controllerInfo.ownAddress
        #expect(first != stacks.peripheral.localIdentityAddress)
        #expect(try ResolvablePrivateAddress.resolves(first, irk: irk))
        stacks.loop.advance(by: .seconds(900))
        let second = stacks.peripheral.controllerInfo.ownAddress
        #expect(second != first)
        #expect(try ResolvablePrivateAddress.resolves(second, irk: irk))
        let advertising = Recorder<Bool>()
        stacks.peripheral.startAdvertising(AdvertisingContent(localName: "rpa")) { advertising.append((try? $0.get()) != nil) }
        stacks.loop.advance(by: .seconds(901))
        #expect(stacks.peripheral.controllerInfo.ownAddress == second)
        let changes = stacks.peripheralEvents.values.filter { if case .privateAddressChanged = $0 { true } else { false } }
        #expect(changes.count == 2)
        let stopped = Recorder<Bool>()
        stacks.peripheral.stopAdvertising { stopped.append((try? $0.get()) != nil) }
        #expect(stacks.run(until: { stopped.count == 1 }))
        // Rotation resumes once advertising stopped.
        stacks.loop.advance(by: .seconds(2))
        #expect(stacks.peripheral.controllerInfo.ownAddress != second)
        stacks.peripheral.shutdown()
        stacks.central.shutdown()
        stacks.loop.run()
        #expect(stacks.loop.pendingWorkDescription == "nothing")
    }
}

/// Security failures as error values (Core 5.4 Vol 3 Part H §3.5.5 Pairing Failed, §3.4 SMP timeout; Vol 4 Part E
/// §7.7.8 encryption): ``HostError/Code/securityFailed`` (or `.timedOut`) with ``HostError/security``; the
/// completion of `pair` and the `pairingFailed` event carry the same error; a GATT request whose retry could not
/// be secured fails with ``GATTClientError/securityFailed(_:handle:_:)``.
@Suite("security failures as error values")
struct SecurityErrorValueTests {
    /// The errors of the `pairingFailed` events.
    static func failedErrors(_ events: Recorder<HostEvent>) -> [HostError] {
        events.values.compactMap { if case .pairingFailed(_, _, let error) = $0 { error } else { nil } }
    }

    @Test("peer rejects numeric comparison: central gets Numeric Comparison Failed, remote; the peripheral, local")
    func remoteRejection() throws {
        let s = SecureStacks(central: security(io: .displayYesNo, mitm: true), peripheral: security(io: .displayYesNo, mitm: true))
        s.peripheralConfirms = false
        #expect(s.stacks.connect())
        let result = try #require(s.pair())
        guard case .failure(let error) = result else { Issue.record("pairing succeeded"); return }
        #expect(error.code == .securityFailed)
        #expect(error.security == .pairingFailed(.numericComparisonFailed, remote: true))
        #expect(error.pairingFailedReason == .numericComparisonFailed)
        #expect(error.reason == "pairing failed: Numeric Comparison Failed (0x0C), remote")
        #expect(error.status == nil)
        // The event carries the same error as the completion.
        #expect(Self.failedErrors(s.stacks.centralEvents) == [error])
        let peripheralErrors = Self.failedErrors(s.stacks.peripheralEvents)
        #expect(peripheralErrors.map(\.security) == [.pairingFailed(.numericComparisonFailed, remote: false)])
        #expect(peripheralErrors.map(\.code) == [.securityFailed])
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("we reject (central declines the value): Numeric Comparison Failed, local; the peer hears it, remote")
    func localRejection() throws {
        let s = SecureStacks(central: security(io: .displayYesNo, mitm: true), peripheral: security(io: .displayYesNo, mitm: true))
        s.centralConfirms = false
        #expect(s.stacks.connect())
        guard case .failure(let error)? = s.pair() else { Issue.record("pairing succeeded"); return }
        #expect(error.security == .pairingFailed(.numericComparisonFailed, remote: false))
        #expect(Self.failedErrors(s.stacks.centralEvents) == [error])
        #expect(Self.failedErrors(s.stacks.peripheralEvents).map(\.security) == [.pairingFailed(.numericComparisonFailed, remote: true)])
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("passkey mismatch: Confirm Value Failed on both sides, detected by the responder, remote for the central")
    func passkeyMismatch() throws {
        let s = SecureStacks(central: security(io: .keyboardOnly, mitm: true), peripheral: security(io: .displayOnly, mitm: true))
        s.centralPasskey = 1
        #expect(s.stacks.connect())
        guard case .failure(let error)? = s.pair() else { Issue.record("pairing succeeded"); return }
        let peripheral = Self.failedErrors(s.stacks.peripheralEvents)
        #expect(error.pairingFailedReason == .confirmValueFailed)
        #expect(peripheral.map(\.pairingFailedReason) == [.confirmValueFailed])
        // The responder checks the initiator's confirm value first (§2.3.5.6.3): it detects the mismatch and tells us.
        #expect(error.security == .pairingFailed(.confirmValueFailed, remote: true))
        #expect(peripheral.first?.security == .pairingFailed(.confirmValueFailed, remote: false))
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("SMP timeout (virtual time): .timedOut with .smpTimeout on both sides; SMP is dead, a new pair fails at once")
    func smpTimeout() throws {
        // Both sides type a passkey nobody displays: neither answers, the 30 s timer runs out.
        let s = SecureStacks(central: security(io: .keyboardOnly, mitm: true), peripheral: security(io: .keyboardOnly, mitm: true))
        #expect(s.stacks.connect())
        let result = Recorder<Result<PairingOutcome, HostError>>()
        let start = s.stacks.loop.now
        s.stacks.central.pair(connectionHandle: s.stacks.centralHandle) { result.append($0) }
        s.stacks.loop.advance(by: .seconds(29))
        #expect(result.count == 0)
        #expect(s.stacks.run(until: { result.count == 1 }, limit: .seconds(5)))
        #expect(s.stacks.loop.now - start >= .seconds(30))
        guard case .failure(let error)? = result.last else { Issue.record("pairing succeeded"); return }
        #expect(error.code == .timedOut && error.security == .smpTimeout)
        #expect(Self.failedErrors(s.stacks.centralEvents) == [error])
        // The peripheral's timer started with the Pairing Request, a moment later.
        s.stacks.loop.advance(by: .seconds(1))
        #expect(Self.failedErrors(s.stacks.peripheralEvents).map(\.security) == [.smpTimeout])
        let again = Recorder<Result<PairingOutcome, HostError>>()
        s.stacks.central.pair(connectionHandle: s.stacks.centralHandle) { again.append($0) }
        s.stacks.loop.run()
        guard case .failure(let second)? = again.last else { Issue.record("no immediate failure"); return }
        #expect(second.code == .timedOut && second.security == .smpTimeout)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("the peer lost its bond (LTK negative reply → PIN or Key Missing), re-pairing refused: .bondLost, status 0x06")
    func bondLostRefused() throws {
        let s = SecureStacks()
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        let identity = try #require(s.stacks.peripheral.localIdentityAddress)
        s.stacks.peripheral.removeBond(identityAddress: try #require(s.stacks.central.localIdentityAddress))
        #expect(s.reconnect())
        guard case .failure(let error)? = s.pair() else { Issue.record("encryption succeeded"); return }
        #expect(error.code == .securityFailed)
        #expect(error.security == .bondLost(identity: identity))
        #expect(error.status == .pinOrKeyMissing)
        #expect(Self.failedErrors(s.stacks.centralEvents).last == error)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("keys that differ (MIC failure, 0x3D): .encryptionFailed with the HCI status, not a plain disconnection")
    func micFailure() throws {
        let s = SecureStacks()
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        let identity = try #require(s.stacks.peripheral.localIdentityAddress)
        // The central's copy of the key is damaged: the peripheral answers with its own, the keys differ.
        var bond = try #require(s.stacks.central.securityState.bonds[identity])
        bond.sharedLongTermKey?.key[0] ^= 0xFF
        s.stacks.central.securityState.bonds[identity] = bond
        #expect(s.reconnect())
        guard case .failure(let error)? = s.pair() else { Issue.record("encryption succeeded"); return }
        #expect(error.code == .securityFailed)
        #expect(error.security == .encryptionFailed(.connectionTerminatedMICFailure))
        #expect(error.status == .connectionTerminatedMICFailure)
        #expect(Self.failedErrors(s.stacks.centralEvents).last == error)
        #expect(s.stacks.central.openConnections.isEmpty)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("an encrypted read whose pairing the peer refuses fails with .securityFailed keeping the ATT error")
    func gattRetryFailure() throws {
        let s = SecureStacks(central: security(), peripheral: { var c = security(); c.justWorksConsent = true; return c }())
        s.peripheralConfirms = false
        #expect(s.stacks.connect())
        let handle = SecureStacks.database.1
        let result = try #require(s.stacks.gatt(.readCharacteristicValue(handle: handle)))
        guard case .failure(let error) = result else { Issue.record("read succeeded"); return }
        guard case .securityFailed(.insufficientEncryption, let failedHandle, let failure) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(failedHandle == handle)
        #expect(error.attErrorCode == .insufficientEncryption)
        let hostError = try #require(Self.failedErrors(s.stacks.centralEvents).last)
        guard case .pairingFailed(let reason, remote: true)? = hostError.security else {
            Issue.record("unexpected \(hostError)")
            return
        }
        #expect(failure == .pairingFailed(reason, remote: true))
        #expect(error.securityFailure == failure)
        #expect(s.stacks.centralEvents.values.contains {
            if case .gattSecurityFailed(_, .insufficientEncryption, let e) = $0 { e == hostError } else { false }
        })
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("an encrypted read on a link whose peer lost the bond fails with .securityFailed(.bondLost)")
    func gattRetryBondLost() throws {
        let s = SecureStacks()
        #expect(s.stacks.connect())
        _ = try #require(s.pair()).get()
        s.stacks.peripheral.removeBond(identityAddress: try #require(s.stacks.central.localIdentityAddress))
        #expect(s.reconnect())
        let result = try #require(s.stacks.gatt(.readCharacteristicValue(handle: SecureStacks.database.1)))
        guard case .failure(.securityFailed(let code, _, .bondLost)) = result else { Issue.record("unexpected \(result)"); return }
        #expect(code == .insufficientEncryption)
        s.stacks.disconnectAndCheckLeaks()
    }

    @Test("descriptions name the reason and the side")
    func descriptions() {
        #expect(HostSecurityFailure.pairingFailed(.confirmValueFailed, remote: true).description
            == "pairing failed: Confirm Value Failed (0x04), remote")
        #expect(HostError.security(.encryptionFailed(.connectionTerminatedMICFailure)).status == .connectionTerminatedMICFailure)
        #expect(HostError.security(.smpTimeout).code == .timedOut)
        #expect(HostError.security(.pairingFailed(.passkeyEntryFailed, remote: false)).code == .securityFailed)
        #expect(HostStack.gattSecurityFailure(.security(.bondLost(identity: BluetoothAddress(1, type: .public)))) == .bondLost)
        #expect(HostStack.gattSecurityFailure(HostError(.disconnected, "gone")) == .other("disconnected: gone"))
    }
}
