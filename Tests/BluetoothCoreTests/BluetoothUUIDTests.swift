import BluetoothCore
import PropertyBased
import TestSupport
import Testing

@Suite struct BluetoothUUIDTests {
    @Test func baseUUIDEquality() throws {
        #expect(try BluetoothUUID(string: "0000180D-0000-1000-8000-00805F9B34FB") == BluetoothUUID(0x180D))
        #expect(try BluetoothUUID(string: "0000180d-0000-1000-8000-00805f9b34fb") == BluetoothUUID(0x180D))
        #expect(BluetoothUUID(uuid32: 0x0000_180D) == BluetoothUUID(0x180D))
        #expect(try BluetoothUUID(string: "0000180D") == BluetoothUUID(0x180D))
        #expect(try BluetoothUUID(string: "0x180D") == BluetoothUUID(0x180D))
        #expect(try BluetoothUUID(string: " 180d ") == BluetoothUUID(0x180D))
        #expect(Set([BluetoothUUID(0x180D), BluetoothUUID(uuid32: 0x180D)]).count == 1)
        #expect(BluetoothUUID(0x180D) != BluetoothUUID(0x180F))
        // Off the base: same low bits, different UUID.
        let offBase = try BluetoothUUID(string: "0000180D-0000-1000-8000-00805F9B34FC")
        #expect(offBase != BluetoothUUID(0x180D))
        #expect(offBase.uuid16 == nil)
        #expect(offBase.uuid32 == nil)
        #expect(!offBase.isOnBase)
    }

    @Test func stringsAsCoreBluetoothPrintsThem() throws {
        #expect(BluetoothUUID(0x180D).uuidString == "180D")
        #expect(BluetoothUUID(0x180D).description == "180D")
        #expect(BluetoothUUID(0x0001).uuidString == "0001")
        #expect(BluetoothUUID(uuid32: 0x1234_5678).uuidString == "12345678")
        let full = try BluetoothUUID(string: "0cdbe648-eed0-11e6-bc64-92361f002671")
        #expect(full.uuidString == "0CDBE648-EED0-11E6-BC64-92361F002671")
        #expect(full.fullString == "0CDBE648-EED0-11E6-BC64-92361F002671")
        #expect(BluetoothUUID(0x180D).fullString == "0000180D-0000-1000-8000-00805F9B34FB")
        #expect(try BluetoothUUID(string: "0CDBE648EED011E6BC6492361F002671") == full)
    }

    @Test func littleEndianWireForms() throws {
        #expect(BluetoothUUID(0x180D).littleEndianBytes == [0x0D, 0x18])
        #expect(try BluetoothUUID(littleEndianBytes: [0x0D, 0x18]) == BluetoothUUID(0x180D))
        #expect(try BluetoothUUID(littleEndianBytes: [0x78, 0x56, 0x34, 0x12]) == BluetoothUUID(uuid32: 0x1234_5678))
        #expect(BluetoothUUID(uuid32: 0x1234_5678).littleEndianBytes(size: 4) == [0x78, 0x56, 0x34, 0x12])
        #expect(BluetoothUUID(uuid32: 0x1234_5678).littleEndianBytes(size: 2) == nil)
        #expect(BluetoothUUID(uuid32: 0x1234_5678).littleEndianBytes.count == 16)
        #expect(BluetoothUUID(0x180D).littleEndianBytes(size: 4) == [0x0D, 0x18, 0x00, 0x00])
        #expect(BluetoothUUID(0x180D).littleEndianBytes(size: 3) == nil)
        #expect(BluetoothUUID(0x180D).littleEndianBytes128 == hex("fb349b5f80000080001000000d180000"))
        let full = try BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")
        #expect(full.littleEndianBytes == hex("7126001f3692 64bc e611 d0ee 48e6db0c"))
        #expect(try BluetoothUUID(littleEndianBytes: full.littleEndianBytes) == full)
        #expect(full.littleEndianBytes(size: 16) == full.littleEndianBytes)
        #expect(full.littleEndianBytes(size: 2) == nil)
        #expect(full.shortestByteCount == 16)
        #expect(BluetoothUUID(uuid32: 0x10000).shortestByteCount == 4)
        #expect(BluetoothUUID(0xFFFF).shortestByteCount == 2)
        // The 128-bit wire form of a base UUID is the short one.
        #expect(try BluetoothUUID(littleEndianBytes: BluetoothUUID(0x2A37).littleEndianBytes128) == BluetoothUUID(0x2A37))
        for count in [0, 1, 3, 5, 15, 17] {
            #expect(throws: DecodeError.self) { try BluetoothUUID(littleEndianBytes: [UInt8](repeating: 0, count: count)) }
        }
        #expect(BluetoothUUID(bigEndianBytes: [1, 2, 3]) == nil)
    }

    @Test func badStringsSayWhy() {
        let cases: [(String, String)] = [
            ("", "is not a UUID"),
            ("180", "is not a UUID"),
            ("180D1", "is not a UUID"),
            ("ZZZZ", "'Z' is not a hex digit"),
            ("0000180G", "'G' is not a hex digit"),
            ("0000180D_0000-1000-8000-00805F9B34FB", "expected '-' at position 8"),
            ("0000180D-0000-1000-8000-00805F9B34F", "is not a UUID"),
            ("0000180D-0000-1000-8000-00805F9B34FBA", "is not a UUID"),
            ("0000180D-0000-1000-8000-00805F9B34FX", "'X' is not a hex digit"),
        ]
        for (text, reason) in cases {
            do {
                _ = try BluetoothUUID(string: text)
                Issue.record("\"\(text)\" parsed")
            } catch {
                #expect(error.code == .malformedText, "\(text)")
                #expect(error.reason.contains(reason), "\(text): \(error.reason)")
            }
        }
        // Non-ASCII digits are refused, not crashed on.
        #expect(throws: DecodeError.self) { try BluetoothUUID(string: "１８０Ｄ") }
        #expect(throws: DecodeError.self) { try BluetoothUUID(string: "😀😀😀😀") }
    }

    @Test func assignedNames() {
        #expect(BluetoothUUID(0x2A37).assignedName == "Heart Rate Measurement")
        #expect(BluetoothUUID(0x180D).assignedName == "Heart Rate")
        #expect(BluetoothUUID(0x1800).assignedName != nil)
        #expect(BluetoothUUID(0x2902).assignedName == "Client Characteristic Configuration")
        #expect(BluetoothUUID(uuid32: 0x1_0000).assignedName == nil)
        #expect(Dissection.uuid(BluetoothUUID(0x180D)) == "Heart Rate (0x180D)")
        #expect(Dissection.uuid(BluetoothUUID(uuid32: 0x1234_5678)) == "12345678")
    }

    @Test func ordering() {
        #expect(BluetoothUUID(0x1800) < BluetoothUUID(0x1801))
        #expect([BluetoothUUID(0x2A37), BluetoothUUID(0x1800)].sorted() == [BluetoothUUID(0x1800), BluetoothUUID(0x2A37)])
    }

    // MARK: Properties

    @Test func uuid16RoundTrips() async {
        await propertyCheck(input: Gen.uint16()) { value throws in
            let uuid = BluetoothUUID(value)
            #expect(uuid.uuid16 == value)
            #expect(try BluetoothUUID(string: uuid.uuidString) == uuid)
            #expect(try BluetoothUUID(string: uuid.fullString) == uuid)
            #expect(try BluetoothUUID(littleEndianBytes: uuid.littleEndianBytes) == uuid)
            #expect(try BluetoothUUID(littleEndianBytes: uuid.littleEndianBytes128) == uuid)
            #expect(uuid.uuidString.count == 4)
        }
    }

    @Test func uuid32RoundTrips() async {
        await propertyCheck(input: Gen.uint32()) { value throws in
            let uuid = BluetoothUUID(uuid32: value)
            #expect(uuid.uuid32 == value)
            #expect(try BluetoothUUID(string: uuid.uuidString) == uuid)
            #expect(try BluetoothUUID(string: uuid.fullString) == uuid)
            #expect(try BluetoothUUID(littleEndianBytes: uuid.littleEndianBytes(size: 4) ?? []) == uuid)
            #expect(uuid.uuidString.count == (value <= 0xFFFF ? 4 : 8))
        }
    }

    @Test func uuid128RoundTrips() async {
        await propertyCheck(input: Gen.uint8().array(of: 16)) { bytes throws in
            guard let uuid = BluetoothUUID(bigEndianBytes: bytes) else {
                Issue.record("16 bytes refused")
                return
            }
            #expect(try BluetoothUUID(string: uuid.fullString) == uuid)
            #expect(try BluetoothUUID(string: uuid.uuidString) == uuid)
            #expect(try BluetoothUUID(string: uuid.fullString.lowercased()) == uuid)
            #expect(try BluetoothUUID(littleEndianBytes: uuid.littleEndianBytes) == uuid)
            #expect(uuid.littleEndianBytes128 == bytes.reversed())
        }
    }

    @Test func randomStringsNeverTrap() throws {
        var generator = SeededGenerator(seed: 0x0001_0D1D)
        let alphabet = Array("0123456789abcdefABCDEFxX- gG:/\u{0}é😀")
        for _ in 0..<3000 {
            let length = Int.random(in: 0...40, using: &generator)
            let text = String((0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] })
            if let uuid = try? BluetoothUUID(string: text) {
                #expect(try BluetoothUUID(string: uuid.fullString) == uuid)
            }
        }
    }
}
