import BluetoothCore
import PropertyBased
import TestSupport
import Testing

@Suite struct HexTests {
    @Test func encodeAndDecode() throws {
        #expect(Hex.encode([0xDE, 0xAD], uppercase: true) == "DEAD")
        #expect(Hex.encode([]) == "")
        #expect(try Hex.decode("") == [])
        #expect(try Hex.decode("  0xDEad ") == [0xDE, 0xAD])
        #expect(throws: DecodeError.self) { try Hex.decode("d e") }
        #expect(throws: DecodeError.self) { try Hex.decode("0x0x00") }
        #expect(throws: DecodeError.self) { try Hex.decode("é0") }
    }

    @Test func roundTrips() async {
        await propertyCheck(input: Gen.uint8().array(of: 0...40)) { bytes throws in
            #expect(try Hex.decode(Hex.encode(bytes)) == bytes)
            #expect(try Hex.decode(Hex.encode(bytes, separator: " ", uppercase: true)) == bytes)
            #expect(try Hex.decode(Hex.encode(bytes, separator: ":")) == bytes)
        }
    }
}
