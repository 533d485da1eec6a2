/// Signed data for ATT Signed Write Command (Core 5.4 Vol 3 Part H §2.4.5, Vol 3 Part F §3.4.5.4).
///
/// The signature is 12 octets on the wire: SignCounter (4 octets, least significant first) followed by the
/// 64 most significant bits of `MAC = AES-CMAC_CSRK(m ‖ SignCounter)`, least significant octet first. The CMAC
/// input is the message with the counter appended, taken as a number whose least significant octet is the first
/// octet on the wire (so the byte string fed to CMAC is that sequence reversed).
public enum DataSigning {
    /// The length of a signature on the wire.
    public static let signatureLength = 12

    /// Signs `message` (for ATT: the Signed Write Command's opcode, handle and value, as sent).
    public static func sign(message: [UInt8], signCounter: UInt32, csrk: Block128) throws(BluetoothCryptoError) -> [UInt8] {
        let counter = (0..<4).map { UInt8(truncatingIfNeeded: signCounter >> (8 * $0)) }
        let mac = try SecurityToolbox.aesCMAC(key: csrk, message: (message + counter).reversed())
        return counter + mac.msbFirst.prefix(8).reversed()
    }

    /// Checks a 12-octet signature against `message`; returns the SignCounter it carries. The caller keeps the
    /// last counter per bond and rejects counters that do not increase (replay).
    ///
    /// Throws ``BluetoothCryptoError/Code/invalidLength`` for a signature that is not 12 octets and
    /// ``BluetoothCryptoError/Code/signatureMismatch`` when the MAC is wrong.
    public static func verify(
        message: [UInt8], signature: some Collection<UInt8>, csrk: Block128
    ) throws(BluetoothCryptoError) -> UInt32 {
        let signature = Array(signature)
        guard signature.count == signatureLength else {
            throw .length("a data signature", expected: signatureLength, got: signature.count)
        }
        let counter = signature[0..<4].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let expected = try sign(message: message, signCounter: counter, csrk: csrk)
        var difference: UInt8 = 0
        for (a, b) in zip(expected, signature) { difference |= a ^ b }
        guard difference == 0 else {
            throw BluetoothCryptoError(.signatureMismatch, "the signature's MAC does not match the message and CSRK")
        }
        return counter
    }

    /// Splits a signed PDU (message ‖ 12-octet signature) and verifies it; returns the message and the SignCounter.
    public static func verify(
        signedPDU: [UInt8], csrk: Block128
    ) throws(BluetoothCryptoError) -> (message: [UInt8], signCounter: UInt32) {
        guard signedPDU.count >= signatureLength else {
            throw BluetoothCryptoError(.invalidLength, "a signed PDU ends with a 12-octet signature; \(signedPDU.count) octets")
        }
        let message = Array(signedPDU.dropLast(signatureLength))
        let counter = try verify(message: message, signature: signedPDU.suffix(signatureLength), csrk: csrk)
        return (message, counter)
    }
}
