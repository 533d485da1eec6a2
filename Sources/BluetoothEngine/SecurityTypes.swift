public import BluetoothCore
public import SMP

/// What a caller of ``HostStack/pair(connectionHandle:options:completion:)`` asks for (Core 5.4 Vol 3 Part H
/// §2.3.1 pairing request parameters; Vol 3 Part C §10.3 security mode 1 levels).
public struct PairingOptions: Hashable, Sendable, Codable {
    /// Ask for MITM protection (an authenticated key); nil = the configuration's.
    public var mitm: Bool?
    /// Ask for bonding; nil = the configuration's.
    public var bonding: Bool?
    /// Pair even when a bond exists (otherwise the central encrypts with the bond's key).
    public var forcePairing: Bool
    /// The IO capability this pairing announces (§2.3.2); nil = the configuration's.
    public var ioCapability: SMPIOCapability?

    public init(mitm: Bool? = nil, bonding: Bool? = nil, forcePairing: Bool = false, ioCapability: SMPIOCapability? = nil) {
        self.mitm = mitm
        self.bonding = bonding
        self.forcePairing = forcePairing
        self.ioCapability = ioCapability
    }
}

/// How a link became secure: a new pairing, or encryption with the keys of an existing bond
/// (Core 5.4 Vol 3 Part H §2.3, §2.4.4 "Encrypted session setup").
///
/// An engine that keeps the keys itself (bluetoothd) does not tell everything: what it was not told is nil.
public struct PairingOutcome: Hashable, Sendable, Codable {
    /// The link was encrypted with a stored bond, no pairing took place.
    public var usedExistingBond: Bool
    /// The association model of the pairing (nil when a bond was used).
    public var method: SMPPairingMethod?
    /// LE Secure Connections (nil: not told).
    public var secureConnections: Bool?
    /// The key is authenticated (MITM protection; nil: not told).
    public var authenticated: Bool?
    /// The encryption key size in octets (nil: not told).
    public var keySize: UInt8?
    /// The keys are stored in the bond store.
    public var bonded: Bool
    /// The peer's identity address, when known (bond, or Identity Address Information).
    public var identityAddress: BluetoothAddress?
    /// The keys we distributed and those the peer distributed (empty when a bond was used; nil: not told).
    public var localKeys: SMPDistributedKeys?
    public var peerKeys: SMPDistributedKeys?

    public init(usedExistingBond: Bool, method: SMPPairingMethod?, secureConnections: Bool?, authenticated: Bool?,
                keySize: UInt8?, bonded: Bool, identityAddress: BluetoothAddress?,
                localKeys: SMPDistributedKeys? = SMPDistributedKeys(), peerKeys: SMPDistributedKeys? = SMPDistributedKeys()) {
        self.usedExistingBond = usedExistingBond
        self.method = method
        self.secureConnections = secureConnections
        self.authenticated = authenticated
        self.keySize = keySize
        self.bonded = bonded
        self.identityAddress = identityAddress
        self.localKeys = localKeys
        self.peerKeys = peerKeys
    }
}

/// What pairing needs from the user (Core 5.4 Vol 3 Part H §2.3.5.1 association models), delivered as
/// ``HostEvent/pairingInteraction(handle:_:)`` and answered with ``HostStack/answerPairing(connectionHandle:_:)``.
public enum PairingInteraction: Hashable, Sendable, Codable {
    /// Numeric Comparison: show the six digits; answer ``PairingAnswer/confirm(_:)``.
    case confirmNumericValue(UInt32)
    /// Passkey Entry: show this passkey to be typed on the peer (no answer).
    case displayPasskey(UInt32)
    /// Passkey Entry: the user types the passkey shown on the peer; answer ``PairingAnswer/passkey(_:)``.
    case enterPasskey
    /// Just Works needs consent (``HostSecurityConfiguration/justWorksConsent``); answer ``PairingAnswer/confirm(_:)``.
    case confirmJustWorks
}

/// The user's answer to a ``PairingInteraction``.
public enum PairingAnswer: Hashable, Sendable, Codable {
    /// Accept (true) or reject the numeric value / Just Works.
    case confirm(Bool)
    /// The typed passkey (0...999999), nil when the user cancelled.
    case passkey(UInt32?)
}
