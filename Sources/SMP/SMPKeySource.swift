public import BluetoothCrypto

/// Where an ``SMPSession`` gets its random values and its P-256 key pair (Core 5.4 Vol 3 Part H §2.3.5.5 Mrand and
/// Srand, §2.3.5.6 Na/Nb and the key pair, §2.4.2 the legacy LTK, EDIV and Rand, random passkeys).
///
/// Injectable so that a test can replay a pairing exactly (spec-vectors.md §1.9 and §1.10). Production uses
/// ``SystemSMPKeySource``. The session draws, in order of need: the key pair (LE Secure Connections, once per
/// pairing, unless the configuration holds one), then one 128-bit value per nonce, random, passkey, legacy LTK
/// and EDIV/Rand pair.
public protocol SMPKeySource: Sendable {
    /// A fresh 128-bit random value.
    mutating func random128() -> Block128
    /// A fresh P-256 key pair.
    mutating func keyPair() -> LEKeyPair
}

/// Random values from the system's secure generator and fresh key pairs.
public struct SystemSMPKeySource: SMPKeySource {
    public init() {}

    public mutating func random128() -> Block128 {
        var generator = SystemRandomNumberGenerator()
        return Block128(high: generator.next(), low: generator.next())
    }

    public mutating func keyPair() -> LEKeyPair { LEKeyPair() }
}

/// A deterministic source driven by any seeded generator: the same seed gives the same pairing (tests, the
/// deterministic simulation). Not for production.
public struct SeededSMPKeySource<Generator: RandomNumberGenerator & Sendable>: SMPKeySource {
    public var generator: Generator

    public init(_ generator: Generator) {
        self.generator = generator
    }

    public mutating func random128() -> Block128 {
        Block128(high: generator.next(), low: generator.next())
    }

    public mutating func keyPair() -> LEKeyPair {
        // A random 256-bit value is a valid private key with overwhelming probability; retry otherwise.
        for _ in 0..<16 {
            let bytes = random128().msbFirst + random128().msbFirst
            if let pair = try? LEKeyPair(privateKeyMSBFirst: bytes) { return pair }
        }
        return LEKeyPair.debug
    }
}

/// A source that returns scripted values first (the randoms of a recorded exchange), then falls back to a seeded
/// counter. For replaying specification sample exchanges.
public struct ScriptedSMPKeySource: SMPKeySource {
    public var randoms: [Block128]
    public var scriptedKeyPair: LEKeyPair?
    private var fallback: UInt64 = 0x5EED

    public init(randoms: [Block128], keyPair: LEKeyPair? = nil) {
        self.randoms = randoms
        self.scriptedKeyPair = keyPair
    }

    public mutating func random128() -> Block128 {
        if !randoms.isEmpty { return randoms.removeFirst() }
        fallback &+= 0x9E37_79B9_7F4A_7C15
        return Block128(high: fallback, low: ~fallback)
    }

    public mutating func keyPair() -> LEKeyPair {
        scriptedKeyPair ?? LEKeyPair.debug
    }
}
