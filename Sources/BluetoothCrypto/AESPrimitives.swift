import Crypto
import CryptoExtras

/// The AES-128 block function and AES-CMAC of the LE security toolbox.
///
/// Core 5.4 Vol 3 Part H §2.2.1 (security function `e`, FIPS-197 AES-128), §2.2.5 (AES-CMAC, RFC 4493), and the
/// HCI_LE_Encrypt command's octet order (Vol 4 Part E §7.8.22).
public enum SecurityToolbox {
    /// `e(key, plaintextData)`: AES-128 encryption of one block (Vol 3 Part H §2.2.1). Both values are numbers;
    /// their most significant octet is the first octet AES sees.
    public static func e(_ key: Block128, _ plaintext: Block128) throws(BluetoothCryptoError) -> Block128 {
        var block = plaintext.msbFirst
        try aesEncrypt(block: &block, keyMSBFirst: key.msbFirst)
        return try Block128(msbFirst: block)
    }

    /// The HCI_LE_Encrypt form of `e` (Vol 4 Part E §7.8.22): key, plaintext and result are 16 octets each in HCI
    /// order, least significant octet first.
    public static func leEncrypt(
        keyLittleEndian key: some Collection<UInt8>, plaintextLittleEndian plaintext: some Collection<UInt8>
    ) throws(BluetoothCryptoError) -> [UInt8] {
        guard key.count == 16 else { throw .length("the HCI_LE_Encrypt key", expected: 16, got: key.count) }
        guard plaintext.count == 16 else {
            throw .length("the HCI_LE_Encrypt plaintext", expected: 16, got: plaintext.count)
        }
        return try e(Block128(littleEndian: key), Block128(littleEndian: plaintext)).littleEndian
    }

    /// AES-CMAC with a 128-bit key over a byte string (Vol 3 Part H §2.2.5, RFC 4493). The message is in the order
    /// the functions built on it define: their concatenations are written most significant octet first.
    public static func aesCMAC(key: Block128, message: [UInt8]) throws(BluetoothCryptoError) -> Block128 {
        do {
            var cmac = try AES.CMAC(key: SymmetricKey(data: key.msbFirst))
            message.withUnsafeBytes { cmac.update(bufferPointer: $0) }
            let tag: [UInt8] = cmac.finalize().withUnsafeBytes { Array($0) }
            return try Block128(msbFirst: tag)
        } catch let error as BluetoothCryptoError {
            throw error
        } catch {
            throw BluetoothCryptoError(.cryptoFailure, "AES-CMAC failed: \(error)")
        }
    }

    /// Encrypts one 16-octet block in place with AES-128 (byte-string order, FIPS-197).
    static func aesEncrypt(block: inout [UInt8], keyMSBFirst key: [UInt8]) throws(BluetoothCryptoError) {
        guard block.count == 16 else { throw .length("an AES block", expected: 16, got: block.count) }
        guard key.count == 16 else { throw .length("an AES-128 key", expected: 16, got: key.count) }
        do {
            try AES.permute(&block, key: SymmetricKey(data: key))
        } catch {
            throw BluetoothCryptoError(.cryptoFailure, "AES-128 block encryption failed: \(error)")
        }
    }
}
