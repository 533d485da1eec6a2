import BluetoothCore
import BluetoothCrypto
import SMP
import TestSupport
import Testing

/// Two SMPSessions back to back: every `.send` of one is fed to the other (FIFO), `.startEncryption` is simulated by
/// asking the peripheral for its key (it must be the same) and telling both that the link is encrypted, and user
/// prompts are answered once the link is quiet.
struct SMPPairingLink {
    var central: SMPSession
    var peripheral: SMPSession
    var now = StackInstant.zero
    var queue: [(fromCentral: Bool, bytes: [UInt8])] = []
    var centralEvents: [SMPSession.Action] = []
    var peripheralEvents: [SMPSession.Action] = []
    var wire: [(fromCentral: Bool, bytes: [UInt8])] = []
    var displayedPasskey: UInt32?
    var pendingPasskey: [Bool] = []
    var pendingConfirm: [Bool] = []
    var pendingConsent: [Bool] = []
    var numericValues: [UInt32] = []
    /// Passkey typed when both input, or overriding the displayed one on the central when set.
    var typedPasskey: UInt32 = 123_456
    var centralTypesWrongPasskey = false
    var peripheralRejectsComparison = false
    var encryptionKeys: [(central: [UInt8], peripheral: [UInt8]?)] = []

    init(central: SMPPairingConfiguration, peripheral: SMPPairingConfiguration) {
        self.central = SMPSession(role: .central, configuration: central)
        self.peripheral = SMPSession(role: .peripheral, configuration: peripheral)
    }

    mutating func handle(_ actions: [SMPSession.Action], fromCentral: Bool) {
        for action in actions {
            switch action {
            case .send(let bytes):
                queue.append((fromCentral, bytes))
                wire.append((fromCentral, bytes))
            case .startEncryption(let ltk, let ediv, let rand):
                let key = peripheral.longTermKeyRequested(ediv: ediv, rand: rand)
                encryptionKeys.append((ltk, key))
                if key == ltk {
                    handle(peripheral.encryptionChanged(enabled: true, keySize: nil, now: now), fromCentral: false)
                    handle(central.encryptionChanged(enabled: true, keySize: nil, now: now), fromCentral: true)
                }
            case .displayPasskey(let passkey):
                displayedPasskey = passkey
                record(action, fromCentral)
            case .requestPasskey:
                pendingPasskey.append(fromCentral)
                record(action, fromCentral)
            case .confirmNumericValue(let value):
                numericValues.append(value)
                pendingConfirm.append(fromCentral)
                record(action, fromCentral)
            case .requestJustWorksConsent:
                pendingConsent.append(fromCentral)
                record(action, fromCentral)
            default:
                record(action, fromCentral)
            }
        }
    }

    mutating func record(_ action: SMPSession.Action, _ fromCentral: Bool) {
        if fromCentral { centralEvents.append(action) } else { peripheralEvents.append(action) }
    }

    mutating func run() {
        var steps = 0
        while steps < 1000 {
            steps += 1
            if !queue.isEmpty {
                let (fromCentral, bytes) = queue.removeFirst()
                now = now + .milliseconds(10)
                if fromCentral {
                    handle(peripheral.receive(bytes, now: now), fromCentral: false)
                } else {
                    handle(central.receive(bytes, now: now), fromCentral: true)
                }
            } else if !pendingPasskey.isEmpty {
                let isCentral = pendingPasskey.removeFirst()
                var passkey = displayedPasskey ?? typedPasskey
                if isCentral && centralTypesWrongPasskey { passkey = (passkey + 1) % 1_000_000 }
                if isCentral {
                    handle(central.enterPasskey(passkey, now: now), fromCentral: true)
                } else {
                    handle(peripheral.enterPasskey(passkey, now: now), fromCentral: false)
                }
            } else if !pendingConfirm.isEmpty {
                let isCentral = pendingConfirm.removeFirst()
                if isCentral {
                    handle(central.confirmNumericComparison(true, now: now), fromCentral: true)
                } else {
                    handle(
                        peripheral.confirmNumericComparison(!peripheralRejectsComparison, now: now), fromCentral: false)
                }
            } else if !pendingConsent.isEmpty {
                let isCentral = pendingConsent.removeFirst()
                if isCentral {
                    handle(central.acceptJustWorks(true, now: now), fromCentral: true)
                } else {
                    handle(peripheral.acceptJustWorks(true, now: now), fromCentral: false)
                }
            } else {
                return
            }
        }
    }

    var centralResult: SMPPairingResult? { Self.result(centralEvents) }
    var peripheralResult: SMPPairingResult? { Self.result(peripheralEvents) }

    static func result(_ events: [SMPSession.Action]) -> SMPPairingResult? {
        for case .pairingComplete(let result) in events { return result }
        return nil
    }

    static func failure(_ events: [SMPSession.Action]) -> (SMPPairingFailedReason, Bool)? {
        for case .pairingFailed(let reason, let locally) in events { return (reason, locally) }
        return nil
    }

    /// Nothing left behind: no timer, no procedure state.
    var isClean: Bool {
        central.nextDeadline == nil && peripheral.nextDeadline == nil && central.pendingStateCount == 0
            && peripheral.pendingStateCount == 0 && queue.isEmpty
    }
}

let smpCentralAddress = BluetoothAddress(0xC1_22_33_44_55_66, type: .random)
let smpPeripheralAddress = BluetoothAddress(0x00_1B_DC_07_32_EF, type: .public)

func smpConfiguration(
    central: Bool, io: SMPIOCapability, sc: SMPSecureConnectionsPolicy = .preferred, mitm: Bool = false,
    bonding: Bool = true, keys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey], seed: UInt64 = 1
) -> SMPPairingConfiguration {
    SMPPairingConfiguration(
        ioCapability: io, bonding: bonding, mitm: mitm, secureConnections: sc, initiatorKeys: keys,
        responderKeys: keys, localAddress: central ? smpCentralAddress : smpPeripheralAddress,
        peerAddress: central ? smpPeripheralAddress : smpCentralAddress,
        identityResolvingKey: Block128(high: central ? 0x1111 : 0x2222, low: seed),
        signatureKey: Block128(high: central ? 0x3333 : 0x4444, low: seed),
        keySource: SeededSMPKeySource(SeededGenerator(seed: seed &* (central ? 3 : 7))))
}

/// Core 5.4 Vol 3 Part H §2.3.5.1 Table 2.8, written out independently of the implementation: rows initiator,
/// columns responder (DisplayOnly, DisplayYesNo, KeyboardOnly, NoInputNoOutput, KeyboardDisplay).
/// J = Just Works, I = initiator displays, R = responder displays, B = both input, N = numeric comparison.
let table28Legacy = ["JJIJI", "JJIJI", "RRBJR", "JJJJJ", "RRIJR"]
let table28SecureConnections = ["JJIJI", "JNIJN", "RRBJR", "JJJJJ", "RNIJN"]

func expectedMethod(initiator: Int, responder: Int, sc: Bool, mitm: Bool) -> SMPPairingMethod {
    guard mitm else { return .justWorks }
    let row = Array((sc ? table28SecureConnections : table28Legacy)[initiator])
    switch row[responder] {
    case "I": return .passkeyEntry(.initiatorDisplays)
    case "R": return .passkeyEntry(.responderDisplays)
    case "B": return .passkeyEntry(.bothInput)
    case "N": return .numericComparison
    default: return .justWorks
    }
}

struct MatrixCase: CustomTestStringConvertible, Sendable {
    var initiator: Int
    var responder: Int
    var sc: Bool
    var mitm: Bool
    var bonding: Bool
    var keys: SMPKeyDistribution
    var testDescription: String {
        "I\(initiator) R\(responder) \(sc ? "SC" : "legacy") mitm=\(mitm) bond=\(bonding) keys=\(keys.rawValue)"
    }
}

let matrixCases: [MatrixCase] = {
    let distributions: [SMPKeyDistribution] = [[], [.encryptionKey], [.identityKey, .signingKey], [.encryptionKey, .identityKey, .signingKey]]
    var cases: [MatrixCase] = []
    for initiator in 0..<5 {
        for responder in 0..<5 {
            for sc in [false, true] {
                for mitm in [false, true] {
                    for bonding in [false, true] {
                        let keys = distributions[(initiator + responder + (bonding ? 1 : 0) + (sc ? 2 : 0)) % 4]
                        cases.append(MatrixCase(initiator: initiator, responder: responder, sc: sc, mitm: mitm, bonding: bonding, keys: keys))
                    }
                }
            }
        }
    }
    return cases
}()

@Suite("SMPSession: two sessions back to back over the IO capability matrix")
struct SMPSessionMatrixTests {
    @Test(arguments: matrixCases)
    func pairing(_ c: MatrixCase) {
        let policy: SMPSecureConnectionsPolicy = c.sc ? .preferred : .legacyOnly
        var link = SMPPairingLink(
            central: smpConfiguration(central: true, io: SMPIOCapability(UInt8(c.initiator)), sc: policy, mitm: c.mitm, bonding: c.bonding, keys: c.keys, seed: UInt64(c.initiator * 5 + c.responder + 1)),
            peripheral: smpConfiguration(central: false, io: SMPIOCapability(UInt8(c.responder)), sc: .preferred, mitm: c.mitm, bonding: c.bonding, keys: c.keys, seed: 99))
        link.handle(link.central.startPairing(now: link.now), fromCentral: true)
        link.run()
        let method = expectedMethod(initiator: c.initiator, responder: c.responder, sc: c.sc, mitm: c.mitm)
        if c.mitm && method == .justWorks {
            // MITM required by both but not achievable: the responder refuses at the feature exchange.
            #expect(SMPPairingLink.failure(link.peripheralEvents)?.0 == .authenticationRequirements)
            #expect(SMPPairingLink.failure(link.peripheralEvents)?.1 == true)
            #expect(SMPPairingLink.failure(link.centralEvents)?.0 == .authenticationRequirements)
            #expect(SMPPairingLink.failure(link.centralEvents)?.1 == false)
            #expect(link.wire.last?.bytes == [0x05, 0x03])
        } else {
            guard let central = link.centralResult, let peripheral = link.peripheralResult else {
                Issue.record("pairing did not complete: \(link.centralEvents) / \(link.peripheralEvents)")
                return
            }
            #expect(central.method == method)
            #expect(peripheral.method == method)
            #expect(central.secureConnections == c.sc)
            #expect(peripheral.secureConnections == c.sc)
            #expect(central.authenticated == (method != .justWorks))
            #expect(central.bonded == c.bonding)
            #expect(peripheral.bonded == c.bonding)
            #expect(central.keySize == 16)
            // The link key: the central's and the peripheral's are the same.
            #expect(link.encryptionKeys.count == 1)
            #expect(link.encryptionKeys.first?.central == link.encryptionKeys.first?.peripheral)
            #expect(central.sharedLongTermKey == peripheral.sharedLongTermKey)
            #expect((central.sharedLongTermKey != nil) == c.sc)
            if c.sc { #expect(central.sharedLongTermKey?.key == link.encryptionKeys.first?.central) }
            // Keys distributed both ways, as agreed.
            #expect(central.peerKeys == peripheral.localKeys)
            #expect(peripheral.peerKeys == central.localKeys)
            var expectedKeys = c.keys
            if c.sc { expectedKeys.remove(.encryptionKey) }
            #expect(central.peerKeys.distribution == expectedKeys)
            #expect(peripheral.peerKeys.distribution == expectedKeys)
            if c.keys.contains(.identityKey) {
                #expect(central.peerKeys.identityAddress == smpPeripheralAddress)
                #expect(peripheral.peerKeys.identityAddress == smpCentralAddress)
            }
            if method == .numericComparison {
                #expect(link.numericValues.count == 2)
                #expect(link.numericValues.first == link.numericValues.last)
            }
        }
        #expect(link.isClean)
    }
}
