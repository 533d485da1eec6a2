@testable import BluetoothCore
import TestSupport
import Testing

/// The peer identifier (RFC 9562 §5.5 name-based UUID over SHA-1): FIPS 180-4's SHA-1 examples, the UUID's version
/// and variant bits, its text form.
struct PeerIdentifierTests {
    @Test func sha1MatchesFIPSExamples() {
        #expect(SHA1.hash(Array("abc".utf8)) == hex("a9993e364706816aba3e25717850c26c9cd0d89d"))
        #expect(SHA1.hash([]) == hex("da39a3ee5e6b4b0d3255bfef95601890afd80709"))
        #expect(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)) == hex("84983e441c3bd26ebaae4aa1f95129e5e54670f1"))
    }

    @Test func identifierIsAVersion5UUIDOfTheAddressAndItsType() {
        let address = BluetoothAddress(0xC0FFEE_123456, type: .public)
        let octets = PeerIdentifier.octets(for: address)
        #expect(octets.count == 16)
        #expect(octets[6] >> 4 == 5)
        #expect(octets[8] >> 6 == 0b10)
        #expect(octets == PeerIdentifier.octets(for: address))
        #expect(octets != PeerIdentifier.octets(for: BluetoothAddress(0xC0FFEE_123456, type: .random)))
        let text = PeerIdentifier.text(for: address)
        #expect(text.count == 36)
        #expect(text.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12])
        #expect(text == text.uppercased())
        #expect(hex(text.replacing("-", with: "")) == octets)
    }
}
