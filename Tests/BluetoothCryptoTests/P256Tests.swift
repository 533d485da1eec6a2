import BluetoothCore
import BluetoothCrypto
import TestSupport
import Testing

@Suite("P-256 keys and ECDH: spec-vectors.md §1.5")
struct P256Tests {
    static let debugX = hex("20b003d2f297be2c5e2c83a7e9f9a5b9eff49111acf4fddbcc0301480e359de6")
    static let debugY = hex("dc809c49652aeb6d63329abf5a52155c766345c28fed3024741c8ed01589d28b")
    static let privateB = hex("55188b3d32f6bb9a900afcfbeed4e72a59cb9ac2f19d7cfb6b4fdd49f47fc5fd")
    static let publicBX = hex("1ea1f0f01faf1d9609592284f19e4c0047b58afd8615a69f559077b22faaa190")
    static let publicBY = hex("4c55f33e429dad377356703a9ab85160472d1130e28e36765f89aff915b1214a")
    static let dhKey = hex("ec0234a357c8ad05341010a60a397d9b99796b13b4f866f1868d34f373bfa698")

    @Test func debugKeyPair() throws {
        let debug = LEKeyPair.debug
        #expect(debug.privateKeyMSBFirst == hex("3f49f6d4a3c55f3874c9b3e3d2103f504aff607beb40b7995899b8a6cd3c1abd"))
        #expect(debug.publicKey.x == Self.debugX)
        #expect(debug.publicKey.y == Self.debugY)
        #expect(LEKeyPair.isDebugKey(debug.publicKey))
        // The Pairing Public Key PDU carrying the debug key (opcode 0x0C, then X and Y little-endian).
        let pdu = hex("0ce69d350e480103ccdbfdf4ac1191f4efb9a5f9e9a7832c5e2cbe97f2d203b0208bd28915d08e1c742430ed8fc24563765c15525abf9a32636deb2a65499c80dc")
        #expect([0x0C] + debug.publicKey.smpBytes == pdu)
        #expect(try LEPublicKey(smpBytes: pdu.dropFirst()) == debug.publicKey)
    }

    @Test func ecdhBothDirections() throws {
        let a = LEKeyPair.debug
        let b = try LEKeyPair(privateKeyMSBFirst: Self.privateB)
        #expect(b.publicKey.x == Self.publicBX)
        #expect(b.publicKey.y == Self.publicBY)
        #expect(try a.dhKey(peer: b.publicKey).msbFirst == Self.dhKey)
        #expect(try b.dhKey(peer: a.publicKey).msbFirst == Self.dhKey)
        #expect(!LEKeyPair.isDebugKey(b.publicKey))
    }

    @Test func generatedKeysAgree() throws {
        let a = LEKeyPair()
        let b = LEKeyPair()
        #expect(a.publicKey != b.publicKey)
        let roundTrip = try LEPublicKey(smpBytes: a.publicKey.smpBytes)
        #expect(roundTrip == a.publicKey)
        #expect(try a.dhKey(peer: b.publicKey) == b.dhKey(peer: a.publicKey))
        let restored = try LEKeyPair(privateKeyMSBFirst: a.privateKeyMSBFirst)
        #expect(restored.publicKey == a.publicKey)
    }

    @Test func offCurveKeyRejected() {
        var y = Self.debugY
        y[31] ^= 0x01  // bit-flipped Y (SM/*/KDU/BI-01-C)
        #expect(throws: BluetoothCryptoError.self) { try LEPublicKey(x: Self.debugX, y: y) }
        do {
            _ = try LEPublicKey(x: Self.debugX, y: y)
        } catch {
            #expect(error.code == .invalidPublicKey)
        }
        // y = 0
        #expect(throws: BluetoothCryptoError.self) { try LEPublicKey(x: Self.debugX, y: [UInt8](repeating: 0, count: 32)) }
        // Coordinates equal to the field prime p (not below p).
        let p = hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff")
        #expect(throws: BluetoothCryptoError.self) { try LEPublicKey(x: p, y: Self.debugY) }
        // Same point, but X + p: must not be reduced silently.
        #expect(throws: BluetoothCryptoError.self) { try LEPublicKey(x: [UInt8](repeating: 0xFF, count: 32), y: Self.debugY) }
    }

    @Test func pointAtInfinityAndLengthsRejected() {
        do {
            _ = try LEPublicKey(smpBytes: [UInt8](repeating: 0, count: 64))
            Issue.record("(0,0) accepted")
        } catch {
            #expect(error.code == .invalidPublicKey)
        }
        for length in [0, 1, 32, 63, 65, 128] {
            do {
                _ = try LEPublicKey(smpBytes: [UInt8](repeating: 0x11, count: length))
                Issue.record("length \(length) accepted")
            } catch {
                #expect(error.code == .invalidLength)
            }
        }
        #expect(throws: BluetoothCryptoError.self) { try LEPublicKey(x: [1, 2, 3], y: Self.debugY) }
        #expect(throws: BluetoothCryptoError.self) { try DHKey(msbFirst: [1]) }
    }

    @Test func reflectedKeyRejected() throws {
        let ours = try LEKeyPair(privateKeyMSBFirst: Self.privateB)
        do {
            _ = try ours.dhKey(peer: ours.publicKey)
            Issue.record("reflected key accepted")
        } catch {
            #expect(error.code == .reflectedPublicKey)
        }
        // The negated point (same X, Y' = p − Y) is a valid key and is rejected the same way.
        let negatedY = subtract(
            hex("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff"), ours.publicKey.y
        )
        let negated = try LEPublicKey(x: ours.publicKey.x, y: negatedY)
        do {
            _ = try ours.dhKey(peer: negated)
            Issue.record("negated own key accepted")
        } catch {
            #expect(error.code == .reflectedPublicKey)
        }
    }

    @Test func invalidPrivateKeysRejected() {
        #expect(throws: BluetoothCryptoError.self) { try LEKeyPair(privateKeyMSBFirst: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: BluetoothCryptoError.self) { try LEKeyPair(privateKeyMSBFirst: [UInt8](repeating: 0xFF, count: 32)) }
        #expect(throws: BluetoothCryptoError.self) { try LEKeyPair(privateKeyMSBFirst: [1]) }
    }

    @Test func randomSMPKeysNeverCrash() {
        var generator = SeededGenerator(seed: 0xEC_0256)
        var accepted = 0
        for _ in 0..<2000 {
            let length = Int.random(in: 60...68, using: &generator)
            let bytes = generator.bytes(length)
            if (try? LEPublicKey(smpBytes: bytes)) != nil { accepted += 1 }
        }
        #expect(accepted == 0)  // a random 64-octet string is on the curve with negligible probability
    }
}

/// a − b for 32-octet big-endian numbers with a ≥ b.
func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
    var result = [UInt8](repeating: 0, count: 32)
    var borrow = 0
    for index in stride(from: 31, through: 0, by: -1) {
        var digit = Int(a[index]) - Int(b[index]) - borrow
        borrow = digit < 0 ? 1 : 0
        if digit < 0 { digit += 256 }
        result[index] = UInt8(digit)
    }
    return result
}
