import BluetoothCore
import BluetoothCrypto
import SMP
import TestSupport
import Testing

private func wireBlock(_ text: String) -> Block128 {
    (try? Block128(littleEndian: hex(text))) ?? .zero
}

private func sends(_ actions: [SMPSession.Action]) -> [[UInt8]] {
    actions.compactMap { if case .send(let bytes) = $0 { bytes } else { nil } }
}

private let t0 = StackInstant.zero

@Suite("SMPSession: spec exchanges replayed and scripted peers")
struct SMPSessionScriptedTests {
    // spec-vectors.md §1.9, legacy Just Works, NimBLE ble_sm_lgcy_peer_jw_iio4_rio3_b1_iat0_rat0_ik7_rk7.
    let legacyInitiator = (try? BluetoothAddress(littleEndianBytes: hex("e1fcdaf4b76c"), type: .public)) ?? .zero
    let legacyResponder = (try? BluetoothAddress(littleEndianBytes: hex("33221100450a"), type: .public)) ?? .zero

    @Test func legacyJustWorksAsCentralProducesTheSpecBytes() {
        var session = SMPSession(
            role: .central,
            configuration: SMPPairingConfiguration(
                ioCapability: .keyboardDisplay, mitm: true, mitmRequired: false, secureConnections: .legacyOnly,
                localAddress: legacyInitiator, peerAddress: legacyResponder,
                identityResolvingKey: Block128(1), signatureKey: Block128(2),
                keySource: ScriptedSMPKeySource(randoms: [wireBlock("7f42c02f1d0737fc045b059aed67a568")])))
        #expect(session.startPairing(now: t0) == [.send(hex("01040005100707"))])
        #expect(session.receive(hex("02030009100707"), now: t0) == [.send(hex("03cd5b7929533156232c08ed8116558e01"))])
        #expect(session.method == .justWorks)
        #expect(session.receive(hex("034939220f7b1b80cdbe89d14cbd6fda2c"), now: t0) == [.send(hex("047f42c02f1d0737fc045b059aed67a568"))])
        #expect(
            session.receive(hex("04421a58a23b80deef950df7ca0605013c"), now: t0)
                == [.startEncryption(ltk: hex("1cd7b63548fc9fef0e2f5177edddbcaf"), ediv: 0, rand: 0)])
        // Encrypted: the responder distributes first; then ours go out and pairing completes.
        #expect(session.encryptionChanged(enabled: true, keySize: 16, now: t0).isEmpty)
        #expect(session.receive(hex("06d707227924c6cb4da3dd01fb4887d4cf"), now: t0).isEmpty)
        #expect(session.receive(hex("07399a0102030405060708"), now: t0).isEmpty)
        #expect(session.receive(hex("08") + [UInt8](repeating: 0xAA, count: 16), now: t0).isEmpty)
        #expect(session.receive(hex("0900") + legacyResponder.littleEndianBytes, now: t0).isEmpty)
        let last = session.receive(hex("0a") + [UInt8](repeating: 0xBB, count: 16), now: t0)
        let sent = sends(last)
        #expect(sent.map(\.first) == [0x06, 0x07, 0x08, 0x09, 0x0A])
        #expect(sent.dropFirst(2).first == [0x08] + Block128(1).littleEndian)
        #expect(sent.dropFirst(3).first == [0x09, 0x00] + legacyInitiator.littleEndianBytes)
        guard case .pairingComplete(let result)? = last.last else {
            Issue.record("no completion: \(last)")
            return
        }
        #expect(result.peerKeys.longTermKey == SMPLongTermKey(key: hex("d707227924c6cb4da3dd01fb4887d4cf"), ediv: 0x9A39, rand: 0x0807_0605_0403_0201))
        #expect(result.peerKeys.identityAddress == legacyResponder)
        #expect(result.method == .justWorks && !result.secureConnections && !result.authenticated && result.bonded)
        #expect(session.nextDeadline == nil && session.pendingStateCount == 0)
    }

    @Test func legacyJustWorksAsPeripheralProducesTheSpecBytes() {
        var session = SMPSession(
            role: .peripheral,
            configuration: SMPPairingConfiguration(
                ioCapability: .noInputNoOutput, localAddress: legacyResponder, peerAddress: legacyInitiator,
                identityResolvingKey: Block128(3), signatureKey: Block128(4),
                keySource: ScriptedSMPKeySource(randoms: [
                    wireBlock("421a58a23b80deef950df7ca0605013c"), wireBlock("d707227924c6cb4da3dd01fb4887d4cf"),
                    Block128(high: 0x9A39, low: 0x0807_0605_0403_0201),
                ])))
        #expect(session.receive(hex("01040005100707"), now: t0) == [.send(hex("02030009100707"))])
        #expect(session.receive(hex("03cd5b7929533156232c08ed8116558e01"), now: t0) == [.send(hex("034939220f7b1b80cdbe89d14cbd6fda2c"))])
        #expect(session.receive(hex("047f42c02f1d0737fc045b059aed67a568"), now: t0) == [.send(hex("04421a58a23b80deef950df7ca0605013c"))])
        #expect(session.longTermKeyRequested(ediv: 0, rand: 0) == hex("1cd7b63548fc9fef0e2f5177edddbcaf"))
        #expect(session.longTermKeyRequested(ediv: 1, rand: 0) == nil)
        let distributed = sends(session.encryptionChanged(enabled: true, keySize: 16, now: t0))
        #expect(distributed.first == hex("06d707227924c6cb4da3dd01fb4887d4cf"))
        #expect(distributed.dropFirst().first == hex("07399a0102030405060708"))
        #expect(distributed.map(\.first) == [0x06, 0x07, 0x08, 0x09, 0x0A])
    }

    // spec-vectors.md §1.10, LE Secure Connections Just Works, NimBLE ble_sm_sc_peer_jw_iio3_rio3_b1_iat0_rat0_ik5_rk7.
    @Test func secureConnectionsJustWorksAsPeripheralProducesTheSpecBytes() throws {
        let a = try BluetoothAddress(string: "E0:94:67:A0:61:CA")
        let b = try BluetoothAddress(string: "0A:45:00:11:22:33")
        let keyPair = try LEKeyPair(privateKeyMSBFirst: hex("fbd912eaf158e65ab4e0608b177ac1556ad474606f10ad9a43bc0b97b8208d54"))
        var session = SMPSession(
            role: .peripheral,
            configuration: SMPPairingConfiguration(
                ioCapability: .noInputNoOutput, localAddress: b, peerAddress: a, identityResolvingKey: Block128(5),
                signatureKey: Block128(6),
                keySource: ScriptedSMPKeySource(randoms: [wireBlock("c091fbb377a2020bc6cd6c0451454539")], keyPair: keyPair)))
        #expect(session.receive(hex("01030009100d0f"), now: t0) == [.send(hex("02030009100507"))])
        let pka = hex("0cbcf2d8a5dba3956c99f9110d4d2ef0bdee9b69b6cd8874be40e8e5ccdc884453bfa9820e187a14f877fd8e922af85d39d16d921f387499dc6c2c9423f97256ab")
        let pkb = hex("0c728cd188d7be49b2c55c95b364e01232b6c9476337385b9c1e1b1a0609e23185193a296962d630e7e84863dc00730a707d2e29cc917771b175b8f7dcb0e29110")
        #expect(session.receive(pka, now: t0) == [.send(pkb), .send(hex("0382edd062913d967f13c50d022b5e4316"))])
        #expect(session.receive(hex("04a4345fb3af734364cd191b5b87583166"), now: t0) == [.send(hex("04c091fbb377a2020bc6cd6c0451454539"))])
        #expect(session.receive(hex("0d82651d02ed891344041a147c329a1e7d"), now: t0) == [.send(hex("0d063c284ae5484b51654e145e2fddfa22"))])
        #expect(session.longTermKeyRequested(ediv: 0, rand: 0) == hex("63598a14094b946effae5e538602a36c"))
        // SC: no LTK distributed; IdKey and SignKey of the responder, then the initiator's SignKey (05 = Enc+Sign).
        let distributed = sends(session.encryptionChanged(enabled: true, keySize: 16, now: t0))
        #expect(distributed.map(\.first) == [0x08, 0x09, 0x0A])
        let done = session.receive(hex("0a") + [UInt8](repeating: 0xCC, count: 16), now: t0)
        guard case .pairingComplete(let result)? = done.last else {
            Issue.record("no completion: \(done)")
            return
        }
        #expect(result.sharedLongTermKey?.key == hex("63598a14094b946effae5e538602a36c"))
        #expect(result.secureConnections && result.method == .justWorks)
        #expect(result.peerKeys.signatureKey == Block128(high: 0xCCCC_CCCC_CCCC_CCCC, low: 0xCCCC_CCCC_CCCC_CCCC))
        #expect(session.nextDeadline == nil)
    }

    // Out of order, wrong role, wrong lengths.

    func peripheral(_ sc: SMPSecureConnectionsPolicy = .preferred, keyPair: LEKeyPair? = nil) -> SMPSession {
        var configuration = smpConfiguration(central: false, io: .noInputNoOutput, sc: sc)
        configuration.localKeyPair = keyPair
        return SMPSession(role: .peripheral, configuration: configuration)
    }

    @Test func commandsOutsideAProcedureAreAnsweredWithoutAnEvent() {
        var session = peripheral()
        #expect(session.receive(hex("03") + [UInt8](repeating: 0, count: 16), now: t0) == [.send([0x05, 0x08])])
        #expect(session.receive(hex("0b01"), now: t0) == [.send([0x05, 0x07])])  // Security Request at a peripheral
        #expect(session.receive(hex("0201000010"), now: t0) == [.send([0x05, 0x0A])])  // truncated
        #expect(session.receive(hex("2001"), now: t0) == [.send([0x05, 0x07])])  // reserved code
        #expect(session.receive(hex("0508"), now: t0).isEmpty)  // Pairing Failed outside pairing
        #expect(session.nextDeadline == nil && !session.isBusy)
        var central = SMPSession(role: .central, configuration: smpConfiguration(central: true, io: .noInputNoOutput))
        #expect(central.receive(hex("01030009100707"), now: t0) == [.send([0x05, 0x07])])
        #expect(central.receive(hex("0b0d"), now: t0) == [.securityRequestReceived([.bonding, .mitm, .secureConnections])])
    }

    @Test func outOfOrderCommandFailsThePairing() {
        var session = peripheral()
        #expect(sends(session.receive(hex("01030009100707"), now: t0)).count == 1)
        #expect(session.nextDeadline == t0 + .seconds(30))
        // SC: a Pairing Random where the public key is expected.
        let actions = session.receive(hex("04") + [UInt8](repeating: 1, count: 16), now: t0)
        #expect(actions == [.send([0x05, 0x08]), .pairingFailed(.unspecifiedReason, locally: true)])
        #expect(session.nextDeadline == nil && session.pendingStateCount == 0)
        // A new pairing may follow.
        #expect(sends(session.receive(hex("01030009100707"), now: t0)).count == 1)
    }

    @Test func wrongLengthDuringPairingFailsWithInvalidParameters() {
        var session = peripheral(.legacyOnly)
        _ = session.receive(hex("01030000100707"), now: t0)
        let actions = session.receive(hex("03") + [UInt8](repeating: 0, count: 15), now: t0)
        #expect(actions == [.send([0x05, 0x0A]), .pairingFailed(.invalidParameters, locally: true)])
        var other = peripheral()
        #expect(other.receive(hex("0103000910070700"), now: t0) == [.send([0x05, 0x0A])])
        #expect(other.receive(hex("01030009060707"), now: t0) == [.send([0x05, 0x0A])])  // key size 6
        #expect(other.receive(hex("01070009100707"), now: t0) == [.send([0x05, 0x0A]), .pairingFailed(.invalidParameters, locally: true)])
    }

    @Test func peerPairingFailedEndsThePairing() {
        var central = SMPSession(role: .central, configuration: smpConfiguration(central: true, io: .noInputNoOutput))
        _ = central.startPairing(now: t0)
        #expect(central.receive(hex("0505"), now: t0) == [.pairingFailed(.pairingNotSupported, locally: false)])
        #expect(central.nextDeadline == nil && central.pendingStateCount == 0)
    }

    @Test func reflectedAndInvalidPublicKeysFailWithDHKeyCheckFailed() throws {
        let ours = try LEKeyPair(privateKeyMSBFirst: hex("fbd912eaf158e65ab4e0608b177ac1556ad474606f10ad9a43bc0b97b8208d54"))
        let negatedY: [UInt8] = {
            // Reflection with the negated point (same X): p - y.
            let p: [UInt8] = hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
            var result = [UInt8](repeating: 0, count: 32)
            var borrow = 0
            for index in (0..<32).reversed() {
                var value = Int(p[index]) - Int(ours.publicKey.y[index]) - borrow
                borrow = value < 0 ? 1 : 0
                if value < 0 { value += 256 }
                result[index] = UInt8(value)
            }
            return result
        }()
        let keys: [[UInt8]] = [
            ours.publicKey.smpBytes,  // our own key sent back
            ours.publicKey.x.reversed() + negatedY.reversed(),  // its negation
            [UInt8](repeating: 0, count: 64),  // the point at infinity
            [1] + [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 31),  // off the curve
        ]
        for key in keys {
            var session = peripheral(keyPair: ours)
            _ = session.receive(hex("01030009100707"), now: t0)
            let actions = session.receive([0x0C] + key, now: t0)
            #expect(actions == [.send([0x05, 0x0B]), .pairingFailed(.dhKeyCheckFailed, locally: true)])
            #expect(session.pendingStateCount == 0)
        }
    }

    @Test func theSMPTimeoutKillsSMPOnTheLink() {
        var central = SMPSession(role: .central, configuration: smpConfiguration(central: true, io: .noInputNoOutput))
        _ = central.startPairing(now: t0)
        #expect(central.nextDeadline == t0 + .seconds(30))
        // Every PDU sent restarts the timer.
        let later = t0 + .seconds(10)
        #expect(sends(central.receive(hex("02030009100707"), now: later)).count == 1)  // our public key
        #expect(central.nextDeadline == later + .seconds(30))
        #expect(central.handleTimeout(now: later + .seconds(29)).isEmpty)
        #expect(central.handleTimeout(now: later + .seconds(30)) == [.timedOut])
        #expect(central.isDead && central.nextDeadline == nil && central.pendingStateCount == 0)
        #expect(central.receive(hex("0505"), now: later + .seconds(31)).isEmpty)
        #expect(central.receive(hex("01030009100707"), now: later + .seconds(31)).isEmpty)
        #expect(central.startPairing(now: later + .seconds(32)) == [.pairingFailed(.unspecifiedReason, locally: true)])
        #expect(central.handleTimeout(now: later + .seconds(90)).isEmpty)
    }

    @Test func securityRequestStartsAndEncryptionEndsTheProcedure() {
        var session = peripheral()
        #expect(session.requestSecurity(now: t0) == [.send([0x0B, 0x09])])
        #expect(session.nextDeadline == t0 + .seconds(30))
        #expect(session.encryptionChanged(enabled: true, keySize: 16, now: t0 + .seconds(1)).isEmpty)
        #expect(session.nextDeadline == nil && !session.isBusy)
        #expect(session.requestSecurity(now: t0) == [.send([0x0B, 0x09])])
        #expect(session.handleTimeout(now: t0 + .seconds(30)) == [.timedOut])
    }

    @Test func keySizeBelowOurMinimumFails() {
        var centralConfiguration = smpConfiguration(central: true, io: .noInputNoOutput)
        centralConfiguration.minimumKeySize = 16
        var peripheralConfiguration = smpConfiguration(central: false, io: .noInputNoOutput)
        peripheralConfiguration.maximumKeySize = 7
        var link = SMPPairingLink(central: centralConfiguration, peripheral: peripheralConfiguration)
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(SMPPairingLink.failure(link.centralEvents)! == (.encryptionKeySize, true))
        #expect(SMPPairingLink.failure(link.peripheralEvents)! == (.encryptionKeySize, false))
        #expect(link.isClean)
    }

    @Test func shortKeySizeMasksTheKey() {
        var peripheralConfiguration = smpConfiguration(central: false, io: .noInputNoOutput)
        peripheralConfiguration.maximumKeySize = 7
        var link = SMPPairingLink(central: smpConfiguration(central: true, io: .noInputNoOutput), peripheral: peripheralConfiguration)
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(link.centralResult?.keySize == 7)
        #expect(link.encryptionKeys.first?.central.suffix(9) == [UInt8](repeating: 0, count: 9)[...])
        #expect(link.isClean)
    }

    @Test func secureConnectionsRequiredRejectsALegacyPeer() {
        var link = SMPPairingLink(
            central: smpConfiguration(central: true, io: .noInputNoOutput, sc: .legacyOnly),
            peripheral: smpConfiguration(central: false, io: .noInputNoOutput, sc: .required))
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(SMPPairingLink.failure(link.centralEvents)! == (.authenticationRequirements, false))
        #expect(link.isClean)
    }

    @Test(arguments: [SMPSecureConnectionsPolicy.legacyOnly, .preferred])
    func passkeyMismatchFailsWithConfirmValueFailedOnBothSides(_ sc: SMPSecureConnectionsPolicy) {
        var link = SMPPairingLink(
            central: smpConfiguration(central: true, io: .keyboardOnly, sc: sc, mitm: true),
            peripheral: smpConfiguration(central: false, io: .displayOnly, mitm: true))
        link.centralTypesWrongPasskey = true
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(SMPPairingLink.failure(link.centralEvents)?.0 == .confirmValueFailed)
        #expect(SMPPairingLink.failure(link.peripheralEvents)?.0 == .confirmValueFailed)
        #expect(link.encryptionKeys.isEmpty)
        #expect(link.isClean)
    }

    @Test func numericComparisonRejectionFails() {
        var link = SMPPairingLink(
            central: smpConfiguration(central: true, io: .displayYesNo, mitm: true),
            peripheral: smpConfiguration(central: false, io: .displayYesNo, mitm: true))
        link.peripheralRejectsComparison = true
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(SMPPairingLink.failure(link.peripheralEvents)! == (.numericComparisonFailed, true))
        #expect(SMPPairingLink.failure(link.centralEvents)! == (.numericComparisonFailed, false))
        #expect(link.isClean)
    }

    @Test func justWorksConsentIsAskedOnBothSides() {
        var centralConfiguration = smpConfiguration(central: true, io: .noInputNoOutput)
        centralConfiguration.justWorksConsent = true
        var peripheralConfiguration = smpConfiguration(central: false, io: .noInputNoOutput, sc: .legacyOnly)
        peripheralConfiguration.justWorksConsent = true
        var link = SMPPairingLink(central: centralConfiguration, peripheral: peripheralConfiguration)
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(link.centralEvents.contains(.requestJustWorksConsent))
        #expect(link.peripheralEvents.contains(.requestJustWorksConsent))
        #expect(link.centralResult != nil && link.peripheralResult != nil)
        #expect(link.isClean)
    }

    @Test(arguments: [(true, true), (true, false), (false, true)])
    func secureConnectionsOutOfBand(_ centralHasPeerData: Bool, _ peripheralHasPeerData: Bool) throws {
        let centralPair = try LEKeyPair(privateKeyMSBFirst: [UInt8](repeating: 0x11, count: 32))
        let peripheralPair = try LEKeyPair(privateKeyMSBFirst: [UInt8](repeating: 0x22, count: 32))
        let centralRandom = Block128(high: 1, low: 2)
        let peripheralRandom = Block128(high: 3, low: 4)
        var centralConfiguration = smpConfiguration(central: true, io: .noInputNoOutput, mitm: true)
        centralConfiguration.localKeyPair = centralPair
        centralConfiguration.outOfBand.localRandom = centralRandom
        if centralHasPeerData {
            centralConfiguration.outOfBand.peerRandom = peripheralRandom
            centralConfiguration.outOfBand.peerConfirm = try SMPOutOfBandData.localConfirm(publicKey: peripheralPair.publicKey, random: peripheralRandom)
        }
        var peripheralConfiguration = smpConfiguration(central: false, io: .noInputNoOutput, mitm: true)
        peripheralConfiguration.localKeyPair = peripheralPair
        peripheralConfiguration.outOfBand.localRandom = peripheralRandom
        if peripheralHasPeerData {
            peripheralConfiguration.outOfBand.peerRandom = centralRandom
            peripheralConfiguration.outOfBand.peerConfirm = try SMPOutOfBandData.localConfirm(publicKey: centralPair.publicKey, random: centralRandom)
        }
        var link = SMPPairingLink(central: centralConfiguration, peripheral: peripheralConfiguration)
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(link.centralResult?.method == .outOfBand)
        #expect(link.centralResult?.authenticated == true)
        #expect(link.centralResult?.sharedLongTermKey == link.peripheralResult?.sharedLongTermKey)
        #expect(link.isClean)
    }

    @Test func legacyOutOfBandUsesTheSharedTK() {
        var centralConfiguration = smpConfiguration(central: true, io: .noInputNoOutput, sc: .legacyOnly, mitm: true)
        centralConfiguration.outOfBand.legacyTemporaryKey = Block128(high: 9, low: 9)
        var peripheralConfiguration = smpConfiguration(central: false, io: .noInputNoOutput, mitm: true)
        peripheralConfiguration.outOfBand.legacyTemporaryKey = Block128(high: 9, low: 9)
        var link = SMPPairingLink(central: centralConfiguration, peripheral: peripheralConfiguration)
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        #expect(link.centralResult?.method == .outOfBand)
        #expect(link.peripheralResult?.method == .outOfBand)
        #expect(link.isClean)
        // A different TK on one side: Confirm Value Failed.
        peripheralConfiguration.outOfBand.legacyTemporaryKey = Block128(high: 9, low: 8)
        var bad = SMPPairingLink(central: centralConfiguration, peripheral: peripheralConfiguration)
        bad.handle(bad.central.startPairing(now: bad.now), fromCentral: true)
        bad.run()
        #expect(SMPPairingLink.failure(bad.peripheralEvents)?.0 == .confirmValueFailed)
        #expect(SMPPairingLink.failure(bad.centralEvents)?.0 == .confirmValueFailed)
    }
}
