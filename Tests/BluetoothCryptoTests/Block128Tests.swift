import BluetoothCore
import BluetoothCrypto
import TestSupport
import Testing

@Suite("Block128 byte order, sessions")
struct Block128Tests {
    @Test func byteOrders() throws {
        let value = try Block128(msbFirst: hex("000102030405060708090a0b0c0d0e0f"))
        #expect(value.high == 0x0001_0203_0405_0607)
        #expect(value.low == 0x0809_0A0B_0C0D_0E0F)
        #expect(value.littleEndian == hex("0f0e0d0c0b0a09080706050403020100"))
        #expect(try Block128(littleEndian: value.littleEndian) == value)
        var reader = ByteReader(hex("0f0e0d0c0b0a09080706050403020100 aa"))
        #expect(try Block128(from: &reader) == value)
        #expect(reader.remaining == 1)
        #expect(value.description == "000102030405060708090a0b0c0d0e0f")
        #expect(Block128(0x1234).msbFirst.suffix(2) == [0x12, 0x34])
        #expect((value ^ value) == .zero)
    }

    @Test func wrongLengthsThrow() {
        for length in [0, 1, 15, 17, 32] {
            let bytes = [UInt8](repeating: 7, count: length)
            #expect(throws: BluetoothCryptoError.self) { try Block128(msbFirst: bytes) }
            #expect(throws: BluetoothCryptoError.self) { try Block128(littleEndian: bytes) }
        }
        var reader = ByteReader(hex("0102"))
        #expect(throws: DecodeError.self) { try Block128(from: &reader) }
    }

    @Test func roundTripProperty() throws {
        var generator = SeededGenerator(seed: 128)
        for _ in 0..<1000 {
            let bytes = generator.bytes(16)
            let value = try Block128(msbFirst: bytes)
            #expect(value.msbFirst == bytes)
            #expect(try Block128(littleEndian: bytes).msbFirst == bytes.reversed())
        }
    }

    @Test func encryptionSessionsTalk() throws {
        let cipher = try LinkLayerCipherTests.cipher()
        var central = LinkLayerEncryptionSession(cipher: cipher, role: .central)
        var peripheral = LinkLayerEncryptionSession(cipher: cipher, role: .peripheral)
        // Counter 0 each way: the two LL_START_ENC_RSP samples.
        #expect(try central.seal(hex("0f0106")) == hex("0f059fcda7f448"))
        #expect(try peripheral.open(hex("0f059fcda7f448")) == hex("0f0106"))
        #expect(try peripheral.seal(hex("070106")) == hex("0705a34c13a415"))
        #expect(try central.open(hex("0705a34c13a415")) == hex("070106"))
        // Empty PDUs don't use a counter.
        #expect(try central.seal([0x01, 0x00]) == [0x01, 0x00])
        #expect(try peripheral.open([0x01, 0x00]) == [0x01, 0x00])
        // Counter 1: the LL_DATA 1 sample.
        let data = hex("0e1b1700636465666768696a6b6c6d6e6f707131323334353637383930")
        let sealed = try central.seal(data)
        #expect(sealed == hex("0e1f7a70d66415226df26b17839a060405596bd6564f796b5b9ce6ff32f75a6d33"))
        #expect(central.transmitCounter == 2)
        // A replay of the counter-0 packet fails the MIC and doesn't advance the counter.
        #expect(throws: BluetoothCryptoError.self) { try peripheral.open(hex("0f059fcda7f448")) }
        #expect(peripheral.receiveCounter == 1)
        #expect(try peripheral.open(sealed) == data)
        #expect(peripheral.receiveCounter == 2)
    }
}
