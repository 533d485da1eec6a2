import BluetoothCore
import PropertyBased
import TestSupport
import Testing

@Suite struct BluetoothAddressTests {
    @Test func parseAndPrint() throws {
        let address = try BluetoothAddress(string: "00:1a:7D:DA:71:13")
        #expect(address.value == 0x001A_7DDA_7113)
        #expect(address.type == .public)
        #expect(address.string == "00:1A:7D:DA:71:13")
        #expect(address.description == "00:1A:7D:DA:71:13")
        #expect(try BluetoothAddress(string: "00-1A-7D-DA-71-13") == address)
        #expect(try BluetoothAddress(string: "  00:1A:7D:DA:71:13\n") == address)
        let random = try BluetoothAddress(string: "C0:11:22:33:44:55/random")
        #expect(random.type == .random)
        #expect(random.description == "C0:11:22:33:44:55 (random static)")
        #expect(try BluetoothAddress(string: "C0:11:22:33:44:55/r") == random)
        #expect(try BluetoothAddress(string: "C0:11:22:33:44:55", type: .random) == random)
        #expect(try BluetoothAddress(string: "C0:11:22:33:44:55/public").type == .public)
        #expect(random != BluetoothAddress(random.value, type: .public))
    }

    @Test func badStringsThrow() {
        for text in ["", "00:11:22:33:44", "00:11:22:33:44:55:66", "0:11:22:33:44:55", "000:11:22:33:44:55",
                     "GG:11:22:33:44:55", "00:11:22:33:44:55/other", "00112233 4455", "00:11::22:33:44"] {
            #expect(throws: DecodeError.self, "\(text)") { try BluetoothAddress(string: text) }
        }
    }

    /// `UInt8(_:radix:)` accepts a leading "+" or "-": each part must be exactly two hex digits.
    @Test func signCharactersAreNotHexDigits() {
        #expect(throws: DecodeError.self) { try BluetoothAddress(string: "+1:22:33:44:55:66") }
        #expect(throws: DecodeError.self) { try BluetoothAddress(string: "11:22:33:44:55:-6") }
    }

    @Test func fourKindsFromTheTopBits() {
        #expect(BluetoothAddress(0xC011_2233_4455, type: .public).kind == .public)
        #expect(BluetoothAddress(0xC011_2233_4455, type: .random).kind == .randomStatic)
        #expect(BluetoothAddress(0x4011_2233_4455, type: .random).kind == .resolvablePrivate)
        #expect(BluetoothAddress(0x0011_2233_4455, type: .random).kind == .nonResolvablePrivate)
        #expect(BluetoothAddress(0x8011_2233_4455, type: .random).kind == .reservedRandom)
        #expect(BluetoothAddress(0xC011_2233_4455, type: .random).isValidRandomStatic)
        #expect(!BluetoothAddress(0xC000_0000_0000, type: .random).isValidRandomStatic)
        #expect(!BluetoothAddress(0xFFFF_FFFF_FFFF, type: .random).isValidRandomStatic)
        #expect(!BluetoothAddress(0x4011_2233_4455, type: .random).isValidRandomStatic)
        #expect(BluetoothAddress(0x4011_2233_4455, type: .random).description == "40:11:22:33:44:55 (resolvable private)")
        // Spec-vectors §1.6: ah() gives the RPA 70:81:94:0D:FB:AA, whose top bits are 0b01.
        #expect(BluetoothAddress(0x7081_940D_FBAA, type: .random).kind == .resolvablePrivate)
    }

    @Test func wireOrderIsLeastSignificantFirst() throws {
        let address = BluetoothAddress(0x5612_3737_BFCE)
        #expect(address.littleEndianBytes == [0xCE, 0xBF, 0x37, 0x37, 0x12, 0x56])
        #expect(try BluetoothAddress(littleEndianBytes: [0xCE, 0xBF, 0x37, 0x37, 0x12, 0x56]) == address)
        #expect(try BluetoothAddress(littleEndianBytes: address.littleEndianBytes, type: .random).type == .random)
        for count in [0, 5, 7] {
            #expect(throws: DecodeError.self) { try BluetoothAddress(littleEndianBytes: [UInt8](repeating: 0, count: count)) }
        }
        // Values wider than 48 bits are masked.
        #expect(BluetoothAddress(0xFFFF_0011_2233_4455).value == 0x0011_2233_4455)
        #expect(BluetoothAddress.zero.string == "00:00:00:00:00:00")
    }

    @Test func ordering() {
        #expect(BluetoothAddress(1) < BluetoothAddress(2))
        #expect(BluetoothAddress(1, type: .public) < BluetoothAddress(1, type: .random))
    }

    @Test func roundTrips() async {
        await propertyCheck(input: Gen.uint64(in: 0...0xFFFF_FFFF_FFFF), Gen.bool) { value, isRandom throws in
            let address = BluetoothAddress(value, type: isRandom ? .random : .public)
            #expect(try BluetoothAddress(string: address.string, type: address.type) == address)
            #expect(try BluetoothAddress(string: address.string + (isRandom ? "/random" : "/public")) == address)
            #expect(try BluetoothAddress(littleEndianBytes: address.littleEndianBytes, type: address.type) == address)
        }
    }
}
