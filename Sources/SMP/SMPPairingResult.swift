public import BluetoothCore
public import BluetoothCrypto

/// A long-term key with the EDIV and Rand that identify it (Core 5.4 Vol 3 Part H §2.4.2; LE Enable Encryption /
/// LE Long Term Key Request Reply parameters).
public struct SMPLongTermKey: Hashable, Sendable, CustomStringConvertible, Codable {
    /// 16 octets, wire order (least significant first), already masked to the negotiated key size.
    public var key: [UInt8]
    public var ediv: UInt16
    public var rand: UInt64

    public init(key: [UInt8], ediv: UInt16, rand: UInt64) {
        self.key = key
        self.ediv = ediv
        self.rand = rand
    }

    public var description: String { "LTK \(Hex.encode(key.reversed())) EDIV \(ediv) Rand \(rand)" }
}

/// The keys one side distributed during the key distribution phase (Core 5.4 Vol 3 Part H §3.6).
public struct SMPDistributedKeys: Hashable, Sendable, Codable {
    /// Legacy pairing only: Encryption Information + Central Identification.
    public var longTermKey: SMPLongTermKey?
    /// Identity Information.
    public var identityResolvingKey: Block128?
    /// Identity Address Information.
    public var identityAddress: BluetoothAddress?
    /// Signing Information.
    public var signatureKey: Block128?

    public init(
        longTermKey: SMPLongTermKey? = nil, identityResolvingKey: Block128? = nil,
        identityAddress: BluetoothAddress? = nil, signatureKey: Block128? = nil
    ) {
        self.longTermKey = longTermKey
        self.identityResolvingKey = identityResolvingKey
        self.identityAddress = identityAddress
        self.signatureKey = signatureKey
    }

    /// Which keys are present, as the key distribution bits.
    public var distribution: SMPKeyDistribution {
        var keys: SMPKeyDistribution = []
        if longTermKey != nil { keys.insert(.encryptionKey) }
        if identityResolvingKey != nil || identityAddress != nil { keys.insert(.identityKey) }
        if signatureKey != nil { keys.insert(.signingKey) }
        return keys
    }
}

/// The outcome of a successful pairing (Core 5.4 Vol 3 Part H §2.3, §2.4).
public struct SMPPairingResult: Hashable, Sendable {
    /// The association model used.
    public var method: SMPPairingMethod
    /// LE Secure Connections (true) or LE legacy pairing.
    public var secureConnections: Bool
    /// MITM protection: the keys are authenticated.
    public var authenticated: Bool
    /// The negotiated encryption key size in octets (7...16).
    public var keySize: UInt8
    /// Both sides asked for bonding: the keys are to be stored.
    public var bonded: Bool
    /// LE Secure Connections: the LTK both sides derived (EDIV = 0, Rand = 0); nil for legacy pairing.
    public var sharedLongTermKey: SMPLongTermKey?
    /// The keys we distributed.
    public var localKeys: SMPDistributedKeys
    /// The keys the peer distributed.
    public var peerKeys: SMPDistributedKeys

    public init(
        method: SMPPairingMethod, secureConnections: Bool, authenticated: Bool, keySize: UInt8, bonded: Bool,
        sharedLongTermKey: SMPLongTermKey?, localKeys: SMPDistributedKeys, peerKeys: SMPDistributedKeys
    ) {
        self.method = method
        self.secureConnections = secureConnections
        self.authenticated = authenticated
        self.keySize = keySize
        self.bonded = bonded
        self.sharedLongTermKey = sharedLongTermKey
        self.localKeys = localKeys
        self.peerKeys = peerKeys
    }
}
