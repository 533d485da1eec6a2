import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import GATT
@testable import Host
import SMP
import Testing
import BluetoothEngine

/// The pairing matrix between two full host stacks (each on its own virtual controller, one virtual air, one
/// manual loop): IO capabilities × LE Secure Connections support / Secure Connections Only × MITM × bonding × key
/// distribution × key size × who starts, the expected outcome computed from Core 5.4 Vol 3 Part H §2.3.5.1
/// Table 2.8, §3.5.1 and §3.6.1 (``PairingMatrixExpectation``), checked on both stacks: the pairing events, the
/// feature exchange on the wire, the prompts, Encryption Change, the bond stores, and for a sample of bonded cases a
/// reconnection encrypted with the bond, a signed write and identity resolution.
@Suite("Pairing matrix between two host stacks")
struct HostPairingMatrixTests {
    @Test("the cases hold the full product IO × IO × SC × MITM × bonding, and every pair of levels of any two factors")
    func covering() {
        let levels = MatrixFactor.allCases.map(\.levelCount)
        #expect(PairwiseCovering.missingPairs(pairingMatrixCases.map(\.levels), levels: levels).isEmpty)
        let product = Set(pairingMatrixCases.map { c in pairingMatrixFullFactors.map { c.level($0) } })
        #expect(product.count == pairingMatrixFullFactors.map(\.levelCount).reduce(1, *))
        #expect(pairingMatrixCases.count == product.count)
        // Deterministic: the same cases every run.
        #expect(PairwiseCovering.rows(levels: levels, full: pairingMatrixFullFactors.map(\.rawValue)) == pairingMatrixCases.map(\.levels))
        // Every outcome kind occurs.
        let expectations = pairingMatrixCases.map(PairingMatrixExpectation.init)
        let methods: [SMPPairingMethod] = [.justWorks, .numericComparison, .passkeyEntry(.initiatorDisplays),
                                           .passkeyEntry(.responderDisplays), .passkeyEntry(.bothInput)]
        for method in methods {
            for sc in [false, true] where method != .numericComparison || sc {
                #expect(expectations.contains { if case .success(method, sc, _, _, _, _) = $0 { true } else { false } }, "\(method) \(sc)")
            }
        }
        #expect(expectations.contains(.failure(.authenticationRequirements, detectedByPeripheral: true)))
        #expect(expectations.contains(.failure(.authenticationRequirements, detectedByPeripheral: false)))
        // The reconnection sample meets every branch: LE SC, legacy with and without the peripheral's LTK; the
        // central's CSRK and each side's IRK distributed or not.
        let sample = pairingMatrixCases.compactMap { c -> (sc: Bool, i: SMPKeyDistribution, r: SMPKeyDistribution)? in
            guard Self.reconnects(c), case .success(_, let sc, _, true, let i, let r) = PairingMatrixExpectation(c) else { return nil }
            return (sc, i, r)
        }
        #expect(sample.contains { $0.sc } && sample.contains { !$0.sc && $0.r.contains(.encryptionKey) }
            && sample.contains { !$0.sc && !$0.r.contains(.encryptionKey) })
        for key in [SMPKeyDistribution.signingKey, .identityKey] {
            #expect(sample.contains { $0.i.contains(key) } && sample.contains { !$0.i.contains(key) })
            #expect(sample.contains { $0.r.contains(key) } && sample.contains { !$0.r.contains(key) })
        }
    }

    /// The deterministic sample of bonded cases that also reconnect: a third, drawn by a hash of the index.
    static func reconnects(_ c: PairingMatrixCase) -> Bool {
        var hash = SplitMixGenerator(state: UInt64(c.index))
        return hash.next() % 3 == 0
    }

    @Test("key distribution is configurable and passed to each link's SMP configuration; defaults unchanged")
    func keyDistributionConfiguration() {
        var configuration = HostSecurityConfiguration()
        #expect(configuration.initiatorKeys == [.encryptionKey, .identityKey, .signingKey])
        #expect(configuration.responderKeys == [.encryptionKey, .identityKey, .signingKey])
        configuration.initiatorKeys = [.identityKey]
        configuration.responderKeys = [.encryptionKey, .signingKey]
        let local = BluetoothAddress(0xC0_00_00_00_00_01, type: .random), peer = BluetoothAddress(0x00_00_00_00_00_02, type: .public)
        let pairing = configuration.pairing(local: local, peer: peer, identity: nil, irk: nil, keySource: SystemSMPKeySource())
        #expect(pairing.initiatorKeys == [.identityKey])
        #expect(pairing.responderKeys == [.encryptionKey, .signingKey])
        #expect(pairing.localAddress == local && pairing.peerAddress == peer)
    }

    @Test(arguments: pairingMatrixCases)
    func pairing(_ c: PairingMatrixCase) throws {
        let expected = PairingMatrixExpectation(c)
        let m = MatrixStacks(c)
        let s = m.stacks
        try #require(s.connect())
        let completion = Recorder<Result<PairingOutcome, HostError>>()
        if c.peripheralInitiates {
            s.peripheral.requestSecurity(connectionHandle: s.peripheralHandle) { completion.append($0) }
        } else {
            s.central.pair(connectionHandle: s.centralHandle) { completion.append($0) }
        }
        #expect(s.run(until: { m.settled && completion.count == 1 }, limit: .seconds(60)), "\(expected)")
        s.loop.advance(by: .milliseconds(200))
        checkFeatureExchange(c, m, expected)

        switch expected {
        case .failure(let reason, let detectedByPeripheral):
            checkFailure(c, m, reason: reason, detectedByPeripheral: detectedByPeripheral, completion: completion.last)
        case .success(let method, let secureConnections, let keySize, let bonded, let initiatorKeys, let responderKeys):
            let outcomes = checkSuccess(c, m, method: method, secureConnections: secureConnections, keySize: keySize,
                                        bonded: bonded, initiatorKeys: initiatorKeys, responderKeys: responderKeys,
                                        completion: completion.last)
            if bonded {
                checkBonds(m, secureConnections: secureConnections, keySize: keySize, authenticated: method != .justWorks,
                           initiatorKeys: initiatorKeys, responderKeys: responderKeys)
            } else {
                #expect(m.centralStore.loadBonds().bonds.isEmpty && m.peripheralStore.loadBonds().bonds.isEmpty)
            }
            checkIdentityResolution(m, bonded: bonded, initiatorKeys: initiatorKeys, responderKeys: responderKeys)
            if bonded, Self.reconnects(c), let outcomes {
                checkReconnection(m, outcome: outcomes.central, secureConnections: secureConnections,
                                  initiatorKeys: initiatorKeys, responderKeys: responderKeys)
            }
        }
        s.disconnectAndCheckLeaks()
    }

    // MARK: Checks

    /// The Security Request, Pairing Request and Pairing Response each side received (§3.5.1, §3.5.2, §3.6.7):
    /// our configuration as the spec lays it out, the response's key fields a subset (AND) of the request's.
    func checkFeatureExchange(_ c: PairingMatrixCase, _ m: MatrixStacks, _ expected: PairingMatrixExpectation) {
        let policies = c.secureConnections.policies
        func authReq(bonding: Bool, mitm: Bool, policy: SMPSecureConnectionsPolicy) -> UInt8 {
            (bonding ? 0x01 : 0) | (mitm ? 0x04 : 0) | (policy != .legacyOnly ? 0x08 : 0)
        }
        let toPeripheral = received(m.stacks.peripheralEvents), toCentral = received(m.stacks.centralEvents)
        // A Security Request carries the peripheral's AuthReq; the central then also asks for MITM when it did.
        let centralMITM = c.mitm.central || (c.peripheralInitiates && c.mitm.peripheral)
        if c.peripheralInitiates {
            #expect(toCentral.first == [0x0B, authReq(bonding: c.bonding.peripheral, mitm: c.mitm.peripheral, policy: policies.peripheral)])
        }
        let request: [UInt8] = [0x01, c.centralIO.rawValue, 0x00,
                                authReq(bonding: c.bonding.central, mitm: centralMITM, policy: policies.central),
                                c.keySizes.central, c.centralKeys.initiatorKeys.rawValue, c.centralKeys.responderKeys.rawValue]
        #expect(toPeripheral.first == request, "Pairing Request")
        let response: [UInt8] = [0x02, c.peripheralIO.rawValue, 0x00,
                                 authReq(bonding: c.bonding.peripheral, mitm: c.mitm.peripheral, policy: policies.peripheral),
                                 c.keySizes.peripheral,
                                 c.centralKeys.initiatorKeys.intersection(c.peripheralKeys.initiatorKeys).rawValue,
                                 c.centralKeys.responderKeys.intersection(c.peripheralKeys.responderKeys).rawValue]
        let responses = toCentral.filter { $0.first == 0x02 }
        if case .failure(_, detectedByPeripheral: true) = expected {
            #expect(responses.isEmpty, "the peripheral refuses before answering")
        } else {
            #expect(responses == [response], "Pairing Response")
        }
    }

    func checkFailure(_ c: PairingMatrixCase, _ m: MatrixStacks, reason: SMPPairingFailedReason, detectedByPeripheral: Bool,
                      completion: Result<PairingOutcome, HostError>?) {
        let s = m.stacks
        for (events, side) in [(s.centralEvents, "central"), (s.peripheralEvents, "peripheral")] {
            #expect(MatrixStacks.failures(events).map(\.0) == [reason], "\(side)")
            #expect(MatrixStacks.completed(events).isEmpty, "\(side)")
            #expect(MatrixStacks.encryptionChanges(events).isEmpty, "\(side)")
        }
        // No prompt on the side that refused; the peripheral, having answered before the central refused, may
        // already have shown or asked for its part of the method.
        let detecting = detectedByPeripheral ? s.peripheralEvents : s.centralEvents
        let other = detectedByPeripheral ? s.centralEvents : s.peripheralEvents
        #expect(MatrixStacks.interactions(detecting).isEmpty)
        #expect(MatrixStacks.interactions(other).count <= (detectedByPeripheral ? 0 : 1))
        // Pairing Failed with the reason went from the side that found its requirements unmet to the other.
        let failed: [UInt8] = [0x05, reason.rawValue]
        let toCentral = received(s.centralEvents), toPeripheral = received(s.peripheralEvents)
        #expect(toCentral.contains(failed) == detectedByPeripheral)
        #expect(toPeripheral.contains(failed) == !detectedByPeripheral)
        #expect(s.central.openConnections.first?.isEncrypted == false && s.peripheral.openConnections.first?.isEncrypted == false)
        #expect(completion.map { (try? $0.get()) == nil } == true)
        #expect(m.centralStore.loadBonds().bonds.isEmpty && m.peripheralStore.loadBonds().bonds.isEmpty)
    }

    func checkSuccess(_ c: PairingMatrixCase, _ m: MatrixStacks, method: SMPPairingMethod, secureConnections: Bool,
                      keySize: UInt8, bonded: Bool, initiatorKeys: SMPKeyDistribution, responderKeys: SMPKeyDistribution,
                      completion: Result<PairingOutcome, HostError>?) -> (central: PairingOutcome, peripheral: PairingOutcome)? {
        let s = m.stacks
        for (events, side) in [(s.centralEvents, "central"), (s.peripheralEvents, "peripheral")] {
            #expect(MatrixStacks.failures(events).isEmpty, "\(side): \(MatrixStacks.failures(events))")
            let changes = MatrixStacks.encryptionChanges(events)
            #expect(changes.count == 1 && changes.allSatisfy { $0.success && $0.enabled }, "\(side)")
        }
        #expect(s.central.openConnections.first?.isEncrypted == true && s.peripheral.openConnections.first?.isEncrypted == true)
        guard let central = MatrixStacks.completed(s.centralEvents).first, let peripheral = MatrixStacks.completed(s.peripheralEvents).first else {
            Issue.record("pairing did not complete on both sides")
            return nil
        }
        #expect(MatrixStacks.completed(s.centralEvents).count == 1 && MatrixStacks.completed(s.peripheralEvents).count == 1)
        for (outcome, side) in [(central, "central"), (peripheral, "peripheral")] {
            #expect(outcome.method == method, "\(side)")
            #expect(outcome.secureConnections == secureConnections, "\(side)")
            #expect(outcome.authenticated == (method != .justWorks), "\(side)")
            #expect(outcome.keySize == keySize, "\(side)")
            #expect(outcome.bonded == bonded, "\(side)")
            #expect(!outcome.usedExistingBond, "\(side)")
        }
        #expect((try? completion?.get()) == (c.peripheralInitiates ? peripheral : central))
        // The keys: distributed as agreed, received as sent.
        #expect(central.localKeys?.distribution == initiatorKeys && peripheral.peerKeys == central.localKeys)
        #expect(peripheral.localKeys?.distribution == responderKeys && central.peerKeys == peripheral.localKeys)
        #expect(central.identityAddress == s.peripheral.localIdentityAddress)
        #expect(peripheral.identityAddress == s.central.localIdentityAddress)
        if responderKeys.contains(.identityKey) {
            #expect(central.peerKeys?.identityResolvingKey == s.peripheral.localIdentityResolvingKey)
            #expect(central.peerKeys?.identityAddress == s.peripheral.localIdentityAddress)
        }
        if initiatorKeys.contains(.identityKey) {
            #expect(peripheral.peerKeys?.identityResolvingKey == s.central.localIdentityResolvingKey)
        }
        #expect(central.localKeys?.signatureKey == (initiatorKeys.contains(.signingKey) ? m.centralCSRK : nil))
        #expect(peripheral.localKeys?.signatureKey == (responderKeys.contains(.signingKey) ? m.peripheralCSRK : nil))
        for key in [central.localKeys?.longTermKey, peripheral.localKeys?.longTermKey].compactMap({ $0 }) {
            #expect(isMasked(key.key, to: keySize), "\(key)")
        }
        checkPrompts(m, method: method)
        // The link is encrypted for the GATT server too: an encrypted-only read succeeds without pairing again.
        #expect((try? s.gatt(.readCharacteristicValue(handle: MatrixStacks.database.encrypted))?.get()) == .value([0x3C]))
        #expect(MatrixStacks.completed(s.centralEvents).count == 1)
        return (central, peripheral)
    }

    /// The prompts each side got (§2.3.5.1): none for Just Works; the same six digits on both for Numeric
    /// Comparison; the displaying side shows, the other types (both type when both are KeyboardOnly).
    func checkPrompts(_ m: MatrixStacks, method: SMPPairingMethod) {
        let central = MatrixStacks.interactions(m.stacks.centralEvents)
        let peripheral = MatrixStacks.interactions(m.stacks.peripheralEvents)
        switch method {
        case .justWorks, .outOfBand:
            #expect(central.isEmpty && peripheral.isEmpty)
        case .numericComparison:
            #expect(central.count == 1 && central == peripheral)
            if case .confirmNumericValue(let value)? = central.first { #expect(value < 1_000_000) } else { Issue.record("\(central)") }
        case .passkeyEntry(.initiatorDisplays):
            #expect(central.count == 1 && peripheral == [.enterPasskey])
            if case .displayPasskey(let value)? = central.first { #expect(value < 1_000_000) } else { Issue.record("\(central)") }
        case .passkeyEntry(.responderDisplays):
            #expect(peripheral.count == 1 && central == [.enterPasskey])
            if case .displayPasskey(let value)? = peripheral.first { #expect(value < 1_000_000) } else { Issue.record("\(peripheral)") }
        case .passkeyEntry(.bothInput):
            #expect(central == [.enterPasskey] && peripheral == [.enterPasskey])
        }
    }

    /// Both bond stores hold exactly the negotiated keys (§2.4.1, §3.6): LE SC one shared LTK (EDIV 0, Rand 0);
    /// legacy each distributed LTK with its EDIV/Rand, stored by who distributed it; IRK with the identity address;
    /// CSRKs.
    func checkBonds(_ m: MatrixStacks, secureConnections: Bool, keySize: UInt8, authenticated: Bool,
                    initiatorKeys: SMPKeyDistribution, responderKeys: SMPKeyDistribution) {
        let s = m.stacks
        let centralBonds = m.centralStore.loadBonds().bonds, peripheralBonds = m.peripheralStore.loadBonds().bonds
        #expect(centralBonds.count == 1 && peripheralBonds.count == 1)
        guard let central = centralBonds.first, let peripheral = peripheralBonds.first else { return }
        #expect(central.identityAddress == s.peripheral.localIdentityAddress)
        #expect(peripheral.identityAddress == s.central.localIdentityAddress)
        for bond in [central, peripheral] {
            #expect(bond.keySize == keySize && bond.authenticated == authenticated && bond.secureConnections == secureConnections, "\(bond)")
        }
        if secureConnections {
            let shared = central.sharedLongTermKey
            #expect(shared != nil && shared == peripheral.sharedLongTermKey)
            #expect(shared?.ediv == 0 && shared?.rand == 0)
            #expect(shared.map { isMasked($0.key, to: keySize) && $0.key.contains { $0 != 0 } } == true)
            #expect(central.peerLongTermKey == nil && central.localLongTermKey == nil)
            #expect(peripheral.peerLongTermKey == nil && peripheral.localLongTermKey == nil)
        } else {
            #expect(central.sharedLongTermKey == nil && peripheral.sharedLongTermKey == nil)
            // The peripheral's LTK (Responder EncKey): the central uses it, the peripheral answers with it.
            #expect((central.peerLongTermKey != nil) == responderKeys.contains(.encryptionKey))
            #expect(central.peerLongTermKey == peripheral.localLongTermKey)
            // The central's LTK (Initiator EncKey): kept for when the roles are reversed.
            #expect((central.localLongTermKey != nil) == initiatorKeys.contains(.encryptionKey))
            #expect(central.localLongTermKey == peripheral.peerLongTermKey)
            for key in [central.peerLongTermKey, central.localLongTermKey].compactMap({ $0 }) {
                #expect(isMasked(key.key, to: keySize), "\(key)")
            }
        }
        #expect(central.peerIdentityResolvingKey == (responderKeys.contains(.identityKey) ? s.peripheral.localIdentityResolvingKey : nil))
        #expect(peripheral.peerIdentityResolvingKey == (initiatorKeys.contains(.identityKey) ? s.central.localIdentityResolvingKey : nil))
        #expect(central.localSignatureKey == (initiatorKeys.contains(.signingKey) ? m.centralCSRK : nil))
        #expect(peripheral.peerSignatureKey == central.localSignatureKey)
        #expect(central.peerSignatureKey == (responderKeys.contains(.signingKey) ? m.peripheralCSRK : nil))
        #expect(peripheral.localSignatureKey == central.peerSignatureKey)
    }

    /// A resolvable private address made from a peer's IRK resolves to its identity exactly when that IRK was
    /// distributed and bonded (Vol 6 Part B §1.3.2.3).
    func checkIdentityResolution(_ m: MatrixStacks, bonded: Bool, initiatorKeys: SMPKeyDistribution, responderKeys: SMPKeyDistribution) {
        let s = m.stacks
        var generator = SplitMixGenerator(state: 77)
        guard let peripheralIRK = s.peripheral.localIdentityResolvingKey, let centralIRK = s.central.localIdentityResolvingKey,
              let peripheralRPA = try? ResolvablePrivateAddress.generate(irk: peripheralIRK, using: &generator),
              let centralRPA = try? ResolvablePrivateAddress.generate(irk: centralIRK, using: &generator) else {
            Issue.record("no IRK")
            return
        }
        #expect(s.central.resolveIdentity(of: peripheralRPA)
            == (bonded && responderKeys.contains(.identityKey) ? s.peripheral.localIdentityAddress : nil))
        #expect(s.peripheral.resolveIdentity(of: centralRPA)
            == (bonded && initiatorKeys.contains(.identityKey) ? s.central.localIdentityAddress : nil))
    }

    /// Reconnects: a signed write on the unencrypted link (applied when the central's CSRK was distributed, else
    /// refused locally: no signer), then encryption with the bond without any SMP PDU (when the central holds an
    /// LTK to start encryption with: LE SC, or the peripheral's legacy EncKey).
    func checkReconnection(_ m: MatrixStacks, outcome: PairingOutcome, secureConnections: Bool,
                           initiatorKeys: SMPKeyDistribution, responderKeys: SMPKeyDistribution) {
        let s = m.stacks
        guard m.reconnect() else {
            Issue.record("reconnection failed")
            return
        }
        #expect(s.central.openConnections.first?.isEncrypted == false)
        let pdus = (MatrixStacks.smpPDUs(s.centralEvents), MatrixStacks.smpPDUs(s.peripheralEvents))
        let signed = MatrixStacks.database.signed
        let written = s.gatt(.signedWriteWithoutResponse(handle: signed, value: [0x5A]))
        s.loop.advance(by: .milliseconds(200))
        let stored = s.peripheral.localGATTServer.database.attribute(signed)?.storedValue
        if initiatorKeys.contains(.signingKey) {
            #expect(written.map { (try? $0.get()) == .written } == true)
            #expect(stored == [0x5A])
        } else {
            #expect(written.map { (try? $0.get()) == nil } == true)
            #expect(stored == [0])
        }
        let encrypted = Recorder<Result<PairingOutcome, HostError>>()
        s.central.encrypt(connectionHandle: s.centralHandle) { encrypted.append($0) }
        #expect(s.run(until: { encrypted.count == 1 }))
        s.loop.advance(by: .milliseconds(100))
        if secureConnections || responderKeys.contains(.encryptionKey) {
            let again = try? encrypted.last?.get()
            #expect(again?.usedExistingBond == true && again?.method == nil)
            #expect(again?.authenticated == outcome.authenticated && again?.keySize == outcome.keySize)
            #expect(again?.secureConnections == secureConnections)
            #expect(s.central.openConnections.first?.isEncrypted == true && s.peripheral.openConnections.first?.isEncrypted == true)
            #expect(MatrixStacks.encryptionChanges(s.centralEvents).count == 2 && MatrixStacks.encryptionChanges(s.peripheralEvents).count == 2)
            #expect((try? s.gatt(.readCharacteristicValue(handle: MatrixStacks.database.encrypted))?.get()) == .value([0x3C]))
        } else {
            // Legacy without the peripheral's LTK: nothing to encrypt with as central.
            #expect(encrypted.last.map { if case .failure(let error) = $0 { error.code == .invalidParameters } else { false } } == true)
        }
        #expect((MatrixStacks.smpPDUs(s.centralEvents), MatrixStacks.smpPDUs(s.peripheralEvents)) == pdus)
    }

    /// The SMP PDUs a side received, in order.
    func received(_ events: Recorder<HostEvent>) -> [[UInt8]] {
        events.values.compactMap { if case .securityManagerPDU(_, let bytes) = $0 { bytes } else { nil } }
    }
}
