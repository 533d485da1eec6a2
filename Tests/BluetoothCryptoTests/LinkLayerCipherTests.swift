import BluetoothCore
import BluetoothCrypto
import TestSupport
import Testing

/// Vol 6 Part C §1 sample data (spec-vectors.md §1.11).
@Suite("Link-layer AES-CCM")
struct LinkLayerCipherTests {
    static let ltk = msb("4c68384139f574d836bcf34e9dfb01bf")
    static let skdm = UInt64(0xACBD_CEDF_E0F1_0213)
    static let skds = UInt64(0x0213_2435_4657_6879)

    static func cipher() throws -> LinkLayerCipher {
        try LinkLayerCipher(ltk: ltk, skdm: skdm, skds: skds, ivm: 0xBADC_AB24, ivs: 0xDEAF_BABE)
    }

    @Test func sessionKeyAndIV() throws {
        // SKDm / SKDs as they arrive in LL_ENC_REQ / LL_ENC_RSP.
        var request = ByteReader(hex("1302f1e0dfcebdac"))
        var response = ByteReader(hex("7968574635241302"))
        #expect(try request.readUInt64() == Self.skdm)
        #expect(try response.readUInt64() == Self.skds)
        let sk = try LinkLayerCipher.sessionKey(ltk: Self.ltk, skdm: Self.skdm, skds: Self.skds)
        #expect(sk == msb("99ad1b5226a37e3e058e3b8e27c2c666"))
        let cipher = try Self.cipher()
        #expect(cipher.sessionKey == sk)
        #expect(cipher.iv == hex("24abdcbabebaafde"))
        #expect(try cipher.nonce(packetCounter: 1, direction: .centralToPeripheral) == hex("0100000080 24abdcbabebaafde"))
        #expect(try cipher.nonce(packetCounter: 0, direction: .peripheralToCentral) == hex("0000000000 24abdcbabebaafde"))
    }

    @Test(arguments: [
        ("LL_START_ENC_RSP 1", LinkLayerDirection.centralToPeripheral, UInt64(0), "0f0106", "0f059fcda7f448"),
        ("LL_START_ENC_RSP 2", .peripheralToCentral, 0, "070106", "0705a34c13a415"),
        ("LL_DATA 1", .centralToPeripheral, 1,
         "0e1b1700636465666768696a6b6c6d6e6f707131323334353637383930",
         "0e1f7a70d66415226df26b17839a060405596bd6564f796b5b9ce6ff32f75a6d33"),
        ("LL_DATA 2", .peripheralToCentral, 1,
         "061b170037363534333231304142434445464748494a4b4c4d4e4f5051",
         "061ff38881e7bd94c9c369b9a66846dd4786aa8c39ce540d0dae3adcdf89b96088"),
    ])
    func samplePackets(name: String, direction: LinkLayerDirection, counter: UInt64, plain: String, sealed: String) throws {
        let cipher = try Self.cipher()
        #expect(try cipher.encryptPDU(hex(plain), packetCounter: counter, direction: direction) == hex(sealed), "\(name)")
        #expect(try cipher.decryptPDU(hex(sealed), packetCounter: counter, direction: direction) == hex(plain), "\(name)")
        // Payload-level API, and the AAD ignores NESN/SN/MD (header bits 2...4).
        let plainBytes = hex(plain)
        let sealedBytes = hex(sealed)
        let payload = try cipher.encrypt(
            header: plainBytes[0] ^ 0x1C, payload: Array(plainBytes.dropFirst(2)), packetCounter: counter, direction: direction
        )
        #expect(payload == Array(sealedBytes.dropFirst(2)))
    }

    @Test func flippedBitFailsMIC() throws {
        let cipher = try Self.cipher()
        let sealed = hex("0e1f7a70d66415226df26b17839a060405596bd6564f796b5b9ce6ff32f75a6d33")
        for byteIndex in 2..<sealed.count {
            for bit in 0..<8 {
                var bad = sealed
                bad[byteIndex] ^= 1 << bit
                do {
                    _ = try cipher.decryptPDU(bad, packetCounter: 1, direction: .centralToPeripheral)
                    Issue.record("flipped bit \(bit) of octet \(byteIndex) accepted")
                } catch {
                    #expect(error.code == .micFailure)
                }
            }
        }
        // The header's LLID / CP bits are authenticated too; NESN/SN/MD are not.
        var badHeader = sealed
        badHeader[0] ^= 0x01
        #expect(throws: BluetoothCryptoError.self) { try cipher.decryptPDU(badHeader, packetCounter: 1, direction: .centralToPeripheral) }
        var maskedBits = sealed
        maskedBits[0] ^= 0x1C
        #expect(try cipher.decryptPDU(maskedBits, packetCounter: 1, direction: .centralToPeripheral).count == 29)
        // Wrong counter, wrong direction, wrong key.
        #expect(throws: BluetoothCryptoError.self) { try cipher.decryptPDU(sealed, packetCounter: 2, direction: .centralToPeripheral) }
        #expect(throws: BluetoothCryptoError.self) { try cipher.decryptPDU(sealed, packetCounter: 1, direction: .peripheralToCentral) }
        let other = LinkLayerCipher(sessionKey: msb("99ad1b5226a37e3e058e3b8e27c2c667"), ivm: 0xBADC_AB24, ivs: 0xDEAF_BABE)
        #expect(throws: BluetoothCryptoError.self) { try other.decryptPDU(sealed, packetCounter: 1, direction: .centralToPeripheral) }
    }

    @Test func malformedInputThrows() throws {
        let cipher = try Self.cipher()
        #expect(throws: BluetoothCryptoError.self) { try cipher.decrypt(header: 0x02, encryptedPayload: [1, 2, 3], packetCounter: 0, direction: .centralToPeripheral) }
        #expect(throws: BluetoothCryptoError.self) { try cipher.decryptPDU([0x02], packetCounter: 0, direction: .centralToPeripheral) }
        #expect(throws: BluetoothCryptoError.self) { try cipher.decryptPDU([0x02, 0x05, 0x00], packetCounter: 0, direction: .centralToPeripheral) }
        #expect(throws: BluetoothCryptoError.self) { try cipher.encryptPDU([0x02, 0x01], packetCounter: 0, direction: .centralToPeripheral) }
        #expect(throws: BluetoothCryptoError.self) {
            try cipher.encryptPDU([0x02, 0xFC] + [UInt8](repeating: 0, count: 0xFC), packetCounter: 0, direction: .centralToPeripheral)
        }
        #expect(throws: BluetoothCryptoError.self) {
            try cipher.encrypt(header: 0x02, payload: [1], packetCounter: 1 << 39, direction: .centralToPeripheral)
        }
        #expect(try cipher.encrypt(header: 0x02, payload: [1], packetCounter: LinkLayerCipher.maximumPacketCounter, direction: .centralToPeripheral).count == 5)
        // Empty PDUs are never encrypted.
        #expect(try cipher.encryptPDU([0x01, 0x00], packetCounter: 3, direction: .centralToPeripheral) == [0x01, 0x00])
        #expect(try cipher.decryptPDU([0x01, 0x00], packetCounter: 3, direction: .centralToPeripheral) == [0x01, 0x00])
    }

    @Test func roundTripAndRandomBytes() throws {
        let cipher = try Self.cipher()
        var generator = SeededGenerator(seed: 0xCC_A4)
        for _ in 0..<500 {
            let length = Int.random(in: 0...251, using: &generator)
            let header = UInt8.random(in: 0...255, using: &generator)
            let counter = UInt64.random(in: 0...LinkLayerCipher.maximumPacketCounter, using: &generator)
            let direction: LinkLayerDirection = Bool.random(using: &generator) ? .centralToPeripheral : .peripheralToCentral
            let payload = generator.bytes(length)
            let sealed = try cipher.encrypt(header: header, payload: payload, packetCounter: counter, direction: direction)
            #expect(sealed.count == length + 4)
            #expect(try cipher.decrypt(header: header, encryptedPayload: sealed, packetCounter: counter, direction: direction) == payload)
        }
        for _ in 0..<2000 {
            let bytes = generator.bytes(Int.random(in: 0...40, using: &generator))
            _ = try? cipher.decryptPDU(bytes, packetCounter: 5, direction: .peripheralToCentral)
            _ = try? cipher.decrypt(header: bytes.first ?? 0, encryptedPayload: bytes, packetCounter: 5, direction: .centralToPeripheral)
        }
    }
}
