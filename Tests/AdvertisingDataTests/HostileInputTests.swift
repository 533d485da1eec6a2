import AdvertisingData
import BluetoothCore
import TestSupport
import Testing

/// Truncation at every length, random bytes, seeded structure generation: decoders throw, never trap, and what
/// decodes re-encodes to a value that decodes the same.
@Suite struct HostileInputTests {
    static let vectors = [
        "0201040503001801180d095054532d4741502d3036423803190000",
        "020104110700112233445566778899aabbccddeeff020a00",
        "0201061aff4c0002154142434445464748494041424344454600010002f8",
        "0201060303aafe1716aafe00e3123456789012346789010000000000010000",
        "0303aafe1316aafe10f8036769746875620063697472757a",
        "0201060303aafe1116aafe20000b1813000000146700002ac4",
        "0201060303aafe0d16aafe30e34549445f74657374",
    ]

    @Test(arguments: vectors)
    func truncationAtEveryLength(_ text: String) {
        let bytes = hex(text)
        // Structure boundaries: a prefix ending exactly on one decodes; any other prefix is a framing error.
        var boundaries: Set<Int> = [0]
        var index = 0
        while index < bytes.count {
            index += Int(bytes[index]) + 1
            boundaries.insert(index)
        }
        for length in 0..<bytes.count {
            let prefix = Array(bytes.prefix(length))
            if boundaries.contains(length) {
                #expect(throws: Never.self) { try AdvertisingData(decoding: prefix) }
            } else {
                #expect(throws: DecodeError.self, "prefix \(length)") { try AdvertisingData(decoding: prefix) }
            }
        }
    }

    @Test(arguments: vectors)
    func trailingBytesAreAnotherStructureOrAnError(_ text: String) throws {
        let bytes = hex(text)
        // A lone extra octet is a length with no type: framing error (unless it is the 0 terminator).
        #expect(throws: DecodeError.self) { try AdvertisingData(decoding: bytes + [0x01], kind: .extended) }
        #expect(try AdvertisingData(decoding: bytes + [0x00], kind: .extended).encode() == bytes)
    }

    @Test func randomBytesNeverTrap() {
        var generator = SeededGenerator(seed: 0xAD_0001)
        var decoded = 0
        for _ in 0..<4000 {
            let count = Int.random(in: 0...40, using: &generator)
            let bytes = generator.bytes(count)
            for lenient in [false, true] {
                guard let data = try? AdvertisingData(decoding: bytes, kind: .extended, lenient: lenient) else { continue }
                decoded += 1
                Self.checkStable(data)
                _ = data.dissection.renderText()
                _ = data.dissection.renderJSON()
                _ = data.localName; _ = data.serviceUUIDs; _ = data.serviceData; _ = data.manufacturerData
                _ = try? IBeacon(advertisement: data)
                _ = try? EddystoneFrame(advertisement: data)
            }
        }
        #expect(decoded > 100)
    }

    /// Random but well-framed structures of every known type with random contents: strict decoding either
    /// throws or gives a stable value; lenient decoding always succeeds and re-encodes byte for byte.
    @Test func randomWellFramedStructures() throws {
        var generator = SeededGenerator(seed: 0xAD_0002)
        let types: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0D, 0x12, 0x14, 0x15,
                              0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1F, 0x20, 0x21, 0x24, 0x27, 0x2F, 0x31, 0xFF, 0x3D]
        for _ in 0..<3000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let type = types[Int.random(in: 0..<types.count, using: &generator)]
                let dataLength = Int.random(in: 0...20, using: &generator)
                bytes += [UInt8(dataLength + 1), type] + generator.bytes(dataLength)
            }
            let lenient = try AdvertisingData(decoding: bytes, kind: .extended, lenient: true)
            Self.checkStable(lenient)
            if let strict = try? AdvertisingData(decoding: bytes, kind: .extended) {
                #expect(strict == lenient)
            }
            // Service data of 0xFEAA with random frames.
            let frame = [[UInt8(0x00), 0x10, 0x20, 0x30][Int.random(in: 0...3, using: &generator)]] + generator.bytes(Int.random(in: 0...20, using: &generator))
            _ = try? EddystoneFrame(serviceData: frame)
            if let decodedFrame = try? EddystoneFrame(serviceData: frame) {
                #expect(decodedFrame.encode() == frame)
            }
        }
    }

    static func checkStable(_ data: AdvertisingData) {
        let encoded = data.encode()
        do {
            let again = try AdvertisingData(decoding: encoded, kind: .extended, lenient: true)
            #expect(again == data)
            #expect(again.encode() == encoded)
        } catch {
            Issue.record("re-encoded data does not decode: \(error) \(Hex.encode(encoded))")
        }
    }

    @Test func exactRoundTripExceptDocumentedForms() throws {
        // For well-framed input, the only octets encode() changes are the two documented non-canonical forms.
        var generator = SeededGenerator(seed: 0xAD_0003)
        for _ in 0..<2000 {
            let type = UInt8.random(in: 0...255, using: &generator)
            guard type != 0x2F, type != 0x1B else { continue }
            let dataLength = Int.random(in: 0...24, using: &generator)
            let bytes = [UInt8(dataLength + 1), type] + generator.bytes(dataLength)
            if let data = try? AdvertisingData(decoding: bytes) {
                #expect(data.encode() == bytes)
            }
        }
    }
}
