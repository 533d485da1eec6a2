import BluetoothCore
import BluetoothCrypto
import TestSupport
import Testing

/// 128-bit value from spec (MSB-first) hex.
func msb(_ text: String) -> Block128 {
    (try? Block128(msbFirst: hex(text))) ?? Block128(high: 0xDEAD, low: 0xBEEF)
}

/// 128-bit value from wire (LE) hex.
func wire(_ text: String) -> Block128 {
    (try? Block128(littleEndian: hex(text))) ?? Block128(high: 0xDEAD, low: 0xBEEF)
}

@Suite("Security toolbox: spec-vectors.md §1.1 – §1.8")
struct ToolboxVectorTests {
    // §1.1
    @Test func aesFIPS197() throws {
        let c = try SecurityToolbox.e(msb("000102030405060708090a0b0c0d0e0f"), msb("00112233445566778899aabbccddeeff"))
        #expect(c == msb("69c4e0d86a7b0430d8cdb78070b4c55a"))
    }

    @Test func aesCoreSampleAndHCIForm() throws {
        let c = try SecurityToolbox.e(msb("4c68384139f574d836bcf34e9dfb01bf"), msb("0213243546576879acbdcedfe0f10213"))
        #expect(c == msb("99ad1b5226a37e3e058e3b8e27c2c666"))
        // HCI_LE_Encrypt command parameters and Command Complete return parameters (after status).
        let command = hex("bf01fb9d4ef3bc36d874f5394138684c 1302f1e0dfcebdac7968574635241302")
        let out = try SecurityToolbox.leEncrypt(
            keyLittleEndian: command[0..<16], plaintextLittleEndian: command[16..<32]
        )
        #expect(out == Array(hex("0217200066c6c2278e3b8e053e7ea326521bad99").dropFirst(4)))
    }

    @Test func leEncryptRejectsWrongLengths() {
        #expect(throws: BluetoothCryptoError.self) {
            try SecurityToolbox.leEncrypt(keyLittleEndian: [UInt8](repeating: 0, count: 15), plaintextLittleEndian: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: BluetoothCryptoError.self) {
            try SecurityToolbox.leEncrypt(keyLittleEndian: [UInt8](repeating: 0, count: 16), plaintextLittleEndian: [UInt8](repeating: 0, count: 17))
        }
    }

    // §1.2
    @Test func c1SpecExample() throws {
        // preq/pres in the spec are printed MSB-first; the function takes the PDUs as sent.
        let preq: [UInt8] = hex("07071000000101").reversed()
        let pres: [UInt8] = hex("05000800000302").reversed()
        #expect(preq == hex("01010000100707"))
        let ia = BluetoothAddress(0xA1A2_A3A4_A5A6, type: .random)  // iat = 01
        let ra = BluetoothAddress(0xB1B2_B3B4_B5B6, type: .public)  // rat = 00
        let c = try SecurityToolbox.c1(
            k: .zero, r: msb("5783d52156ad6f0e6388274ec6702ee0"), pairingRequest: preq, pairingResponse: pres,
            initiator: ia, responder: ra
        )
        #expect(c == msb("1e1e3fef878988ead2a74dc5bef13b86"))
        // Intermediate: e(k, r ⊕ p1).
        let step = try SecurityToolbox.e(.zero, msb("5783d52156ad6f0e6388274ec6702ee0") ^ msb("05000800000302070710000001010001"))
        #expect(step == msb("02c7aa2a9857ac866ff91232df0e3c95"))
    }

    @Test func c1RejectsWrongPDULengths() {
        #expect(throws: BluetoothCryptoError.self) {
            try SecurityToolbox.c1(k: .zero, r: .zero, pairingRequest: [1, 2], pairingResponse: [UInt8](repeating: 0, count: 7), initiator: .zero, responder: .zero)
        }
    }

    // §1.3
    @Test func s1SpecExample() throws {
        let stk = try SecurityToolbox.s1(
            k: .zero, r1: msb("000f0e0d0c0b0a091122334455667788"), r2: msb("010203040506070899aabbccddeeff00")
        )
        #expect(stk == msb("9a1fe1f0e8b0f49b5b4216ae796da062"))
    }

    // §1.4
    @Test(arguments: [
        (0, "bb1d6929e95937287fa37d129b756746"),
        (16, "070a16b46b4d4144f79bdd9dd04a287c"),
        (40, "dfa66747de9ae63030ca32611497c827"),
        (64, "51f0bebf7e3b9d92fc49741779363cfe"),
    ])
    func aesCMACRFC4493(length: Int, mac: String) throws {
        let result = try SecurityToolbox.aesCMAC(key: msb("2b7e151628aed2a6abf7158809cf4f3c"), message: Array(rfc4493Message.prefix(length)))
        #expect(result == msb(mac))
    }

    // §1.6
    static let u = hex("20b003d2f297be2c5e2c83a7e9f9a5b9eff49111acf4fddbcc0301480e359de6")
    static let v = hex("55188b3d32f6bb9a900afcfbeed4e72a59cb9ac2f19d7cfb6b4fdd49f47fc5fd")
    static let n1 = msb("d5cb8454d177733effffb2ec712baeab")
    static let n2 = msb("a6e8e7cc25a75f6e216583f7ff3dc4cf")
    static let w = hex("ec0234a357c8ad05341010a60a397d9b99796b13b4f866f1868d34f373bfa698")
    static let a1 = BluetoothAddress(0x5612_3737_BFCE, type: .public)
    static let a2 = BluetoothAddress(0xA713_702D_CFC1, type: .public)

    @Test func f4() throws {
        let result = try SecurityToolbox.f4(u: Self.u, v: Self.v, x: Self.n1, z: 0)
        #expect(result == msb("f2c916f107a9bd1cf1eda1bea974872d"))
        #expect(result.littleEndian == hex("2d8774a9bea1edf11cbda907f116c9f2"))
    }

    @Test func f5() throws {
        let dhKey = try DHKey(msbFirst: Self.w)
        #expect(try SecurityToolbox.aesCMAC(key: SecurityToolbox.f5Salt, message: Self.w) == msb("3c128f20de88328897624bdb8dac6989"))
        let keys = try SecurityToolbox.f5(w: dhKey, n1: Self.n1, n2: Self.n2, a1: Self.a1, a2: Self.a2)
        #expect(keys.macKey == msb("2965f176a1084a02fd3f6a20ce636e20"))
        #expect(keys.ltk == msb("6986791169d7cd23980522b594750a38"))
        #expect(keys.ltk.littleEndian == hex("380a7594b522059823cdd76911798669"))
    }

    @Test func f6() throws {
        let result = try SecurityToolbox.f6(
            w: msb("2965f176a1084a02fd3f6a20ce636e20"), n1: Self.n1, n2: Self.n2,
            r: msb("12a3343bb453bb5408da42d20c2d0fc8"),
            ioCap: .init(authReq: 0x01, oobDataFlag: 0x01, ioCapability: 0x02), a1: Self.a1, a2: Self.a2
        )
        #expect(result == msb("e3c473989cd0e8c5d26c0b09da958f61"))
        #expect(result.littleEndian == hex("618f95da090b6cd2c5e8d09c9873c4e3"))
    }

    @Test func g2() throws {
        let value = try SecurityToolbox.g2(u: Self.u, v: Self.v, x: Self.n1, y: Self.n2)
        #expect(value == 0x2F9E_D5BA)
        #expect(SecurityToolbox.numericComparisonValue(value) == 938_554)
    }

    @Test func h6AndH7() throws {
        let w = msb("ec0234a357c8ad05341010a60a397d9b")
        #expect(try SecurityToolbox.h6(w: w, keyID: .lebr) == msb("2d9ae102e76dc91ce8d3a9e280b16399"))
        #expect(SecurityToolbox.KeyID.tmp1.salt == msb("000000000000000000000000746d7031"))
        #expect(try SecurityToolbox.h7(salt: msb("000000000000000000000000746d7031"), w: w) == msb("fb173597c6a3c0ecd2998c2a75a57011"))
        #expect(SecurityToolbox.KeyID.brle.description == "brle")
    }

    @Test func ahAndRPA() throws {
        let irk = msb("ec0234a357c8ad05341010a60a397d9b")
        #expect(try SecurityToolbox.ah(k: irk, r: 0x708194) == 0x0DFBAA)
        let rpa = try ResolvablePrivateAddress.make(irk: irk, prand: 0x708194)
        #expect(rpa.string == "70:81:94:0D:FB:AA")
        #expect(rpa.kind == .resolvablePrivate)
        #expect(try ResolvablePrivateAddress.resolves(rpa, irk: irk))
        #expect(try !ResolvablePrivateAddress.resolves(rpa, irk: msb("ec0234a357c8ad05341010a60a397d9c")))
        // The same bits as a public address never resolve.
        #expect(try !ResolvablePrivateAddress.resolves(BluetoothAddress(rpa.value, type: .public), irk: irk))
    }

    @Test func ahExtraCSISVector() throws {
        let sirk = wire("cdcc72dd868ccdce22fda121097d7d45")
        let prand = hex("63f569").reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let hash = try SecurityToolbox.ah(k: sirk, r: prand)
        #expect([UInt8(hash & 0xFF), UInt8(hash >> 8 & 0xFF), UInt8(hash >> 16)] == hex("da4819"))
    }

    @Test func rpaGenerateAndResolve() throws {
        var generator = SeededGenerator(seed: 0x5EED)
        let irks = (0..<4).map { _ in (try? Block128(msbFirst: generator.bytes(16))) ?? .zero }
        for _ in 0..<200 {
            let pick = Int.random(in: 0..<irks.count, using: &generator)
            let address = try ResolvablePrivateAddress.generate(irk: irks[pick], using: &generator)
            #expect(address.kind == .resolvablePrivate)
            #expect(address.type == .random)
            let prandRandom = address.value >> 24 & 0x3F_FFFF
            #expect(prandRandom != 0 && prandRandom != 0x3F_FFFF)
            let found = try ResolvablePrivateAddress.resolve(address, irks: irks)
            #expect(found?.index == pick)
        }
        #expect(throws: BluetoothCryptoError.self) { try ResolvablePrivateAddress.make(irk: .zero, prand: 0xC00001) }
        let unrelated = try ResolvablePrivateAddress.make(irk: msb("00112233445566778899aabbccddeeff"), prand: 0x400001)
        #expect(try ResolvablePrivateAddress.resolve(unrelated, irks: irks) == nil)
    }

    // §1.7
    @Test func ltkToLinkKey() throws {
        let ltk = msb("368df9bce3264b58bd066c33334fbf64")
        #expect(try SecurityToolbox.h6(w: ltk, keyID: .tmp1) == msb("ce7f84caec73885bc7582a5fca68d763"))
        #expect(try SecurityToolbox.linkKey(fromLTK: ltk, ct2: false) == msb("bc1ca4ef633fc1bd0d8230afee388fb0"))
        #expect(try SecurityToolbox.h7(salt: SecurityToolbox.KeyID.tmp1.salt, w: ltk) == msb("5a95d55cf6e6bf44464db19dcbfc7a95"))
        #expect(try SecurityToolbox.linkKey(fromLTK: ltk, ct2: true) == msb("287ad379dca402530a39f1f43047b835"))
    }

    @Test func linkKeyToLTK() throws {
        let linkKey = msb("05040302010009080706050403020100")
        #expect(try SecurityToolbox.h6(w: linkKey, keyID: .tmp2) == msb("c993085abaff46a11d1666f1f82f6153"))
        #expect(try SecurityToolbox.ltk(fromLinkKey: linkKey, ct2: false) == msb("a813fb72f1a3dfa18a2c9a43f10d0a30"))
        #expect(try SecurityToolbox.h7(salt: SecurityToolbox.KeyID.tmp2.salt, w: linkKey) == msb("adb694694e2bc0338c87249b264fc359"))
        #expect(try SecurityToolbox.ltk(fromLinkKey: linkKey, ct2: true) == msb("e85e09eb5eccb3e269418a133211bc79"))
    }

    // §1.8
    @Test(arguments: [
        (0, "00000000b3a8594127ebc2c0"),
        (16, "00000000273974f4392a232a"),
        (40, "00000000b7ca94ab87c78218"),
        (64, "0000000044e1e6ce1df51368"),
    ])
    func signing(length: Int, signature: String) throws {
        let csrk = msb("2b7e151628aed2a6abf7158809cf4f3c")
        let message = Array(rfc4493Message.prefix(length))
        let produced = try DataSigning.sign(message: message, signCounter: 0, csrk: csrk)
        #expect(produced == hex(signature))
        #expect(try DataSigning.verify(message: message, signature: produced, csrk: csrk) == 0)
        let pdu = try DataSigning.verify(signedPDU: message + produced, csrk: csrk)
        #expect(pdu.message == message && pdu.signCounter == 0)
    }

    @Test func signingRejectsTamperingAndCountsCounter() throws {
        let csrk = msb("2b7e151628aed2a6abf7158809cf4f3c")
        let message = hex("d22a00 0102")  // Signed Write Command, handle 0x002A, value 01 02
        let signed = try DataSigning.sign(message: message, signCounter: 0x0102_0304, csrk: csrk)
        #expect(Array(signed.prefix(4)) == [0x04, 0x03, 0x02, 0x01])
        #expect(try DataSigning.verify(message: message, signature: signed, csrk: csrk) == 0x0102_0304)
        for index in 0..<signed.count {
            var bad = signed
            bad[index] ^= 0x01
            #expect(throws: BluetoothCryptoError(.signatureMismatch, "the signature's MAC does not match the message and CSRK")) {
                try DataSigning.verify(message: message, signature: bad, csrk: csrk)
            }
        }
        var badMessage = message
        badMessage[3] ^= 0x80
        #expect(throws: BluetoothCryptoError.self) { try DataSigning.verify(message: badMessage, signature: signed, csrk: csrk) }
        #expect(throws: BluetoothCryptoError.self) { try DataSigning.verify(message: message, signature: signed.dropLast(), csrk: csrk) }
        #expect(throws: BluetoothCryptoError.self) { try DataSigning.verify(signedPDU: [1, 2, 3], csrk: csrk) }
    }
}

let rfc4493Message = hex("""
    6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51 \
    30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710
    """)
