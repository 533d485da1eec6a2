/// The error the LE security toolbox throws: a machine-readable ``Code`` and a human-readable reason.
///
/// Raised for wrong input lengths, invalid or reflected P-256 public keys (Core 5.4 Vol 3 Part H §2.3.5.6.1),
/// AES-CCM MIC failures (Vol 6 Part E §2), signature mismatches (Vol 3 Part H §2.4.5), and — never expected with
/// valid key sizes — a failure reported by the underlying AES implementation.
public struct BluetoothCryptoError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// An input has the wrong number of octets.
        case invalidLength
        /// An input value is out of the range the specification allows (packet counter, address type...).
        case invalidValue
        /// A P-256 public key is not a point on the curve (or is the point at infinity).
        case invalidPublicKey
        /// The peer's public key has the same X coordinate as our own (reflection attack).
        case reflectedPublicKey
        /// A P-256 private key is zero or not below the group order.
        case invalidPrivateKey
        /// AES-CCM decryption: the MIC does not match (Vol 6 Part E §2.1 "authentication failure").
        case micFailure
        /// A signed-data signature does not match its message (Vol 3 Part H §2.4.5).
        case signatureMismatch
        /// The AES / ECDH primitive failed unexpectedly.
        case cryptoFailure
    }

    /// What kind of problem was found.
    public var code: Code
    /// What was expected, in words.
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code): \(reason)" }

    static func length(_ what: String, expected: Int, got: Int) -> BluetoothCryptoError {
        BluetoothCryptoError(.invalidLength, "\(what) has \(expected) octets, not \(got)")
    }
}
