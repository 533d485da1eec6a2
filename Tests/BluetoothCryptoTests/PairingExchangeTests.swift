import BluetoothCore
import BluetoothCrypto
import TestSupport
import Testing

/// The two complete pairings of spec-vectors.md §1.9 and §1.10, replayed through the toolbox from the SMP wire
/// bytes down to the keys.
@Suite("Complete pairing exchanges")
struct PairingExchangeTests {
    /// The parameters of an SMP PDU (the octets after the opcode), as a 128-bit value sent little-endian.
    func value(_ pdu: String, opcode: UInt8) throws -> Block128 {
        let bytes = hex(pdu)
        #expect(bytes.first == opcode)
        return try Block128(littleEndian: bytes.dropFirst())
    }

    // §1.9: legacy Just Works, NimBLE ble_sm_lgcy_peer_jw_iio4_rio3_b1_iat0_rat0_ik7_rk7.
    @Test func legacyJustWorks() throws {
        let initiator = try BluetoothAddress(littleEndianBytes: hex("e1fcdaf4b76c"), type: .public)
        let responder = try BluetoothAddress(littleEndianBytes: hex("33221100450a"), type: .public)
        #expect(initiator.string == "6C:B7:F4:DA:FC:E1")
        let preq = hex("01040005100707")
        let pres = hex("02030009100707")
        let tk = Block128.zero
        let mrand = try value("047f42c02f1d0737fc045b059aed67a568", opcode: 0x04)
        let srand = try value("04421a58a23b80deef950df7ca0605013c", opcode: 0x04)

        let mconfirm = try SecurityToolbox.c1(
            k: tk, r: mrand, pairingRequest: preq, pairingResponse: pres, initiator: initiator, responder: responder
        )
        #expect([0x03] + mconfirm.littleEndian == hex("03cd5b7929533156232c08ed8116558e01"))
        let sconfirm = try SecurityToolbox.c1(
            k: tk, r: srand, pairingRequest: preq, pairingResponse: pres, initiator: initiator, responder: responder
        )
        #expect([0x03] + sconfirm.littleEndian == hex("034939220f7b1b80cdbe89d14cbd6fda2c"))
        // A wrong TK gives a different confirm (Confirm Value Failed).
        let wrong = try SecurityToolbox.c1(
            k: Block128(1), r: srand, pairingRequest: preq, pairingResponse: pres, initiator: initiator, responder: responder
        )
        #expect(wrong != sconfirm)

        let stk = try SecurityToolbox.s1(k: tk, r1: srand, r2: mrand)
        #expect(stk.littleEndian == hex("1cd7b63548fc9fef0e2f5177edddbcaf"))
    }

    // §1.10: LE Secure Connections Just Works, NimBLE ble_sm_sc_peer_jw_iio3_rio3_b1_iat0_rat0_ik5_rk7.
    @Test func secureConnectionsJustWorks() throws {
        let a = try BluetoothAddress(string: "E0:94:67:A0:61:CA")
        let b = try BluetoothAddress(string: "0A:45:00:11:22:33")
        let pairingRequest = hex("01030009100d0f")
        let pairingResponse = hex("02030009100507")
        let pka = hex("0cbcf2d8a5dba3956c99f9110d4d2ef0bdee9b69b6cd8874be40e8e5ccdc884453bfa9820e187a14f877fd8e922af85d39d16d921f387499dc6c2c9423f97256ab")
        let pkb = hex("0c728cd188d7be49b2c55c95b364e01232b6c9476337385b9c1e1b1a0609e23185193a296962d630e7e84863dc00730a707d2e29cc917771b175b8f7dcb0e29110")

        // B (the responder, our side) from its private key; its public key is what it sent.
        let deviceB = try LEKeyPair(
            privateKeyMSBFirst: hex("fbd912eaf158e65ab4e0608b177ac1556ad474606f10ad9a43bc0b97b8208d54")
        )
        #expect([0x0C] + deviceB.publicKey.smpBytes == pkb)
        let publicKeyA = try LEPublicKey(smpBytes: pka.dropFirst())
        let dhKey = try deviceB.dhKey(peer: publicKeyA)
        #expect(dhKey.msbFirst == hex("5d6ba83a2a8f82375ababe350a7872645e64431ca15cd59eedb83828fd9ef575"))

        let na = try value("04a4345fb3af734364cd191b5b87583166", opcode: 0x04)
        let nb = try value("04c091fbb377a2020bc6cd6c0451454539", opcode: 0x04)
        // Cb = f4(PKbx, PKax, Nb, 0).
        let cb = try SecurityToolbox.f4(u: deviceB.publicKey.x, v: publicKeyA.x, x: nb, z: 0)
        #expect([0x03] + cb.littleEndian == hex("0382edd062913d967f13c50d022b5e4316"))

        let keys = try SecurityToolbox.f5(w: dhKey, n1: na, n2: nb, a1: a, a2: b)
        #expect(keys.macKey == msb("a45c4482b6908bba820ce5a5a16baf09"))

        let ioCapA = try SecurityToolbox.IOCap(pairingPDU: pairingRequest)
        let ioCapB = try SecurityToolbox.IOCap(pairingPDU: pairingResponse)
        #expect(ioCapA.msbFirst == [0x09, 0x00, 0x03])
        let ea = try SecurityToolbox.f6(w: keys.macKey, n1: na, n2: nb, r: .zero, ioCap: ioCapA, a1: a, a2: b)
        #expect([0x0D] + ea.littleEndian == hex("0d82651d02ed891344041a147c329a1e7d"))
        let eb = try SecurityToolbox.f6(w: keys.macKey, n1: nb, n2: na, r: .zero, ioCap: ioCapB, a1: b, a2: a)
        #expect([0x0D] + eb.littleEndian == hex("0d063c284ae5484b51654e145e2fddfa22"))

        #expect(keys.ltk == msb("6ca30286535eaeff6e944b09148a5963"))
        #expect(keys.ltk.littleEndian == hex("63598a14094b946effae5e538602a36c"))
    }
}
