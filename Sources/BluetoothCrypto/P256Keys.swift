import BluetoothCore
import Crypto

/// A P-256 public key as LE Secure Connections exchanges it (Core 5.4 Vol 3 Part H §3.5.6 Pairing Public Key,
/// §2.3.5.6.1): two 256-bit coordinates.
///
/// Every value of this type is a validated point on the curve: the initializers reject wrong lengths, coordinates
/// not below the field prime, points off the curve and the point at infinity (which has no affine form; its
/// customary encoding (0,0) is off the curve).
public struct LEPublicKey: Hashable, Sendable, CustomStringConvertible {
    /// The X coordinate, 32 octets, most significant first (the U/V input of f4 and g2).
    public let x: [UInt8]
    /// The Y coordinate, 32 octets, most significant first.
    public let y: [UInt8]

    /// From the coordinates, most significant octet first.
    public init(x: [UInt8], y: [UInt8]) throws(BluetoothCryptoError) {
        guard x.count == 32 else { throw .length("a P-256 X coordinate", expected: 32, got: x.count) }
        guard y.count == 32 else { throw .length("a P-256 Y coordinate", expected: 32, got: y.count) }
        guard x.contains(where: { $0 != 0 }) || y.contains(where: { $0 != 0 }) else {
            throw BluetoothCryptoError(.invalidPublicKey, "the public key (0,0) is the point at infinity")
        }
        do {
            _ = try P256.KeyAgreement.PublicKey(rawRepresentation: x + y)
        } catch {
            throw BluetoothCryptoError(.invalidPublicKey, "the public key is not a point on the P-256 curve")
        }
        self.x = x
        self.y = y
    }

    /// From the 64 octets of the SMP Pairing Public Key PDU's parameters: X then Y, each least significant
    /// octet first.
    public init(smpBytes bytes: some Collection<UInt8>) throws(BluetoothCryptoError) {
        let bytes = Array(bytes)
        guard bytes.count == 64 else { throw .length("an SMP public key", expected: 64, got: bytes.count) }
        try self.init(x: bytes[0..<32].reversed(), y: bytes[32..<64].reversed())
    }

    /// Trusted internal construction from swift-crypto's raw representation (X ‖ Y, most significant first).
    init(validatedRaw raw: [UInt8]) {
        self.x = Array(raw.prefix(32))
        self.y = Array(raw.dropFirst(32).prefix(32))
    }

    /// The 64 octets of the SMP Pairing Public Key PDU: X then Y, each least significant octet first.
    public var smpBytes: [UInt8] { x.reversed() + y.reversed() }

    /// "x=… y=…" in hexadecimal, most significant first.
    public var description: String { "x=\(Hex.encode(x)) y=\(Hex.encode(y))" }
}

/// The 256-bit Diffie-Hellman key of LE Secure Connections (Vol 3 Part H §2.3.5.6.1): the X coordinate of the
/// shared point, the W input of f5.
public struct DHKey: Hashable, Sendable, CustomStringConvertible {
    /// 32 octets, most significant first.
    public let msbFirst: [UInt8]

    /// From 32 octets, most significant first.
    public init(msbFirst bytes: [UInt8]) throws(BluetoothCryptoError) {
        guard bytes.count == 32 else { throw .length("a DHKey", expected: 32, got: bytes.count) }
        self.msbFirst = bytes
    }

    /// From 32 octets, least significant first (HCI LE Generate DHKey Complete order).
    public init(littleEndian bytes: [UInt8]) throws(BluetoothCryptoError) {
        try self.init(msbFirst: bytes.reversed())
    }

    /// 32 octets, least significant first.
    public var littleEndian: [UInt8] { msbFirst.reversed() }

    public var description: String { Hex.encode(msbFirst) }
}

/// A P-256 key pair for LE Secure Connections (Core 5.4 Vol 3 Part H §2.3.5.6.1) and the ECDH that produces the
/// DHKey, with the checks the specification requires of the peer's key.
public struct LEKeyPair: Sendable {
    private let privateKey: P256.KeyAgreement.PrivateKey
    /// Our public key.
    public let publicKey: LEPublicKey

    /// A fresh key pair from the system's secure random generator.
    public init() {
        self.init(wrapping: P256.KeyAgreement.PrivateKey())
    }

    /// From a private key: 32 octets, most significant first. Throws unless 0 < key < n.
    public init(privateKeyMSBFirst bytes: [UInt8]) throws(BluetoothCryptoError) {
        guard bytes.count == 32 else { throw .length("a P-256 private key", expected: 32, got: bytes.count) }
        do {
            self.init(wrapping: try P256.KeyAgreement.PrivateKey(rawRepresentation: bytes))
        } catch {
            throw BluetoothCryptoError(.invalidPrivateKey, "the private key must be in 1..<n of P-256")
        }
    }

    private init(wrapping key: P256.KeyAgreement.PrivateKey) {
        self.privateKey = key
        self.publicKey = LEPublicKey(validatedRaw: key.publicKey.rawRepresentation.withUnsafeBytes { Array($0) })
    }

    /// The private key, 32 octets, most significant first.
    public var privateKeyMSBFirst: [UInt8] { privateKey.rawRepresentation.withUnsafeBytes { Array($0) } }

    /// The debug key pair of Vol 3 Part H §2.3.5.6.1 (a sniffer can decrypt links paired with it; accept a peer's
    /// debug key only in debug mode).
    public static let debug: LEKeyPair = {
        let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: debugPrivateKeyMSBFirst)
        return LEKeyPair(wrapping: key ?? P256.KeyAgreement.PrivateKey())
    }()

    /// The debug private key, most significant octet first.
    public static let debugPrivateKeyMSBFirst: [UInt8] = [
        0x3F, 0x49, 0xF6, 0xD4, 0xA3, 0xC5, 0x5F, 0x38, 0x74, 0xC9, 0xB3, 0xE3, 0xD2, 0x10, 0x3F, 0x50,
        0x4A, 0xFF, 0x60, 0x7B, 0xEB, 0x40, 0xB7, 0x99, 0x58, 0x99, 0xB8, 0xA6, 0xCD, 0x3C, 0x1A, 0xBD,
    ]

    /// Whether `key` is the specification's debug public key.
    public static func isDebugKey(_ key: LEPublicKey) -> Bool { key == debug.publicKey }

    /// Computes the DHKey with the peer's public key (Vol 3 Part H §2.3.5.6.1).
    ///
    /// Throws ``BluetoothCryptoError/Code/reflectedPublicKey`` when the peer's key has the same X coordinate as ours
    /// (our own key sent back, or its negation: the reflection attack that SM/*/KDU/BI-04-C tests). Off-curve keys
    /// cannot reach here: ``LEPublicKey`` validates on construction.
    public func dhKey(peer: LEPublicKey) throws(BluetoothCryptoError) -> DHKey {
        guard peer.x != publicKey.x else {
            throw BluetoothCryptoError(
                .reflectedPublicKey, "the peer's public key has the same X coordinate as ours (reflection)"
            )
        }
        let shared: [UInt8]
        do {
            let peerKey = try P256.KeyAgreement.PublicKey(rawRepresentation: peer.x + peer.y)
            shared = try privateKey.sharedSecretFromKeyAgreement(with: peerKey).withUnsafeBytes { Array($0) }
        } catch {
            throw BluetoothCryptoError(.invalidPublicKey, "ECDH with the peer's public key failed: \(error)")
        }
        return try DHKey(msbFirst: shared)
    }
}
