public import BluetoothCore
public import BluetoothCrypto

/// Whether LE Secure Connections is offered, required or left out (Core 5.4 Vol 3 Part H §2.3.5, §3.5.1 SC flag;
/// "Secure Connections Only mode", Vol 3 Part C §10.2.4).
public enum SMPSecureConnectionsPolicy: Hashable, Sendable {
    /// Set the SC flag; fall back to legacy pairing when the peer does not set it.
    case preferred
    /// Set the SC flag and fail with Authentication Requirements when the peer does not support it.
    case required
    /// Do not set the SC flag: LE legacy pairing only.
    case legacyOnly
}

/// Out-of-band data for pairing (Core 5.4 Vol 3 Part H §2.3.5.6.4 for LE Secure Connections, §2.3.5.4 for the
/// legacy OOB TK).
public struct SMPOutOfBandData: Hashable, Sendable {
    /// Legacy OOB: the 128-bit TK both devices received out of band.
    public var legacyTemporaryKey: Block128?
    /// LE Secure Connections: our random value r, already given to the peer out of band with
    /// ``localConfirm(publicKey:random:)`` (our key pair must then be fixed: ``SMPPairingConfiguration/localKeyPair``).
    public var localRandom: Block128?
    /// LE Secure Connections: the peer's r and C = f4(PKx, PKx, r, 0), received out of band.
    public var peerRandom: Block128?
    public var peerConfirm: Block128?

    public init(
        legacyTemporaryKey: Block128? = nil, localRandom: Block128? = nil, peerRandom: Block128? = nil,
        peerConfirm: Block128? = nil
    ) {
        self.legacyTemporaryKey = legacyTemporaryKey
        self.localRandom = localRandom
        self.peerRandom = peerRandom
        self.peerConfirm = peerConfirm
    }

    /// The confirm value C = f4(PKx, PKx, r, 0) to send out of band with `random` (§2.3.5.6.4).
    public static func localConfirm(publicKey: LEPublicKey, random: Block128) throws(BluetoothCryptoError) -> Block128 {
        try SecurityToolbox.f4(u: publicKey.x, v: publicKey.x, x: random, z: 0)
    }

    /// Whether we hold LE Secure Connections data from the peer.
    public var hasPeerSecureConnectionsData: Bool { peerRandom != nil && peerConfirm != nil }
}

/// What an ``SMPSession`` offers and accepts on one link (Core 5.4 Vol 3 Part H §2.3, §3.5.1).
public struct SMPPairingConfiguration: Sendable {
    /// Our IO capability (§2.3.2).
    public var ioCapability: SMPIOCapability
    /// Set Bonding_Flags = Bonding.
    public var bonding: Bool
    /// Set the MITM flag (ask for an authenticated method).
    public var mitm: Bool
    /// Fail with Authentication Requirements when the chosen method is Just Works (MITM cannot be met).
    public var mitmRequired: Bool
    /// LE Secure Connections or legacy pairing.
    public var secureConnections: SMPSecureConnectionsPolicy
    /// Set the Keypress flag (we ignore received keypress notifications either way).
    public var keypressNotifications: Bool
    /// The Maximum Encryption Key Size we send (7...16).
    public var maximumKeySize: UInt8
    /// The smallest negotiated key size we accept (fail with Encryption Key Size below it).
    public var minimumKeySize: UInt8
    /// The keys the initiator (central) distributes: as central, what we offer; as peripheral, what we accept.
    public var initiatorKeys: SMPKeyDistribution
    /// The keys the responder (peripheral) distributes: as central, what we ask for; as peripheral, what we offer.
    public var responderKeys: SMPKeyDistribution
    /// The address we use on this link (c1's ia/ra, f5/f6's A1/A2).
    public var localAddress: BluetoothAddress
    /// The peer's address on this link.
    public var peerAddress: BluetoothAddress
    /// Our identity address (Identity Address Information); nil = ``localAddress``.
    public var identityAddress: BluetoothAddress?
    /// Our IRK; without it IdKey is neither offered nor sent.
    public var identityResolvingKey: Block128?
    /// Our CSRK; without it SignKey is neither offered nor sent.
    public var signatureKey: Block128?
    /// OOB data, if any.
    public var outOfBand: SMPOutOfBandData
    /// The passkey to display instead of a random one (scripts: `blue serve --passkey N`).
    public var fixedPasskey: UInt32?
    /// Ask the user (``SMPSession/Action/requestJustWorksConsent``) before Just Works completes.
    public var justWorksConsent: Bool
    /// Our P-256 key pair for LE Secure Connections; nil = a fresh one from ``keySource`` per pairing.
    public var localKeyPair: LEKeyPair?
    /// Randoms and key pairs.
    public var keySource: any SMPKeySource
    /// The SMP timeout (§3.4): 30 s.
    public var timeout: Duration

    public init(
        ioCapability: SMPIOCapability = .noInputNoOutput, bonding: Bool = true, mitm: Bool = false,
        mitmRequired: Bool? = nil, secureConnections: SMPSecureConnectionsPolicy = .preferred,
        keypressNotifications: Bool = false, maximumKeySize: UInt8 = 16, minimumKeySize: UInt8 = 7,
        initiatorKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey],
        responderKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey],
        localAddress: BluetoothAddress, peerAddress: BluetoothAddress, identityAddress: BluetoothAddress? = nil,
        identityResolvingKey: Block128? = nil, signatureKey: Block128? = nil,
        outOfBand: SMPOutOfBandData = SMPOutOfBandData(), fixedPasskey: UInt32? = nil, justWorksConsent: Bool = false,
        localKeyPair: LEKeyPair? = nil, keySource: any SMPKeySource = SystemSMPKeySource(),
        timeout: Duration = .seconds(30)
    ) {
        self.ioCapability = ioCapability
        self.bonding = bonding
        self.mitm = mitm
        self.mitmRequired = mitmRequired ?? mitm
        self.secureConnections = secureConnections
        self.keypressNotifications = keypressNotifications
        self.maximumKeySize = maximumKeySize
        self.minimumKeySize = minimumKeySize
        self.initiatorKeys = initiatorKeys
        self.responderKeys = responderKeys
        self.localAddress = localAddress
        self.peerAddress = peerAddress
        self.identityAddress = identityAddress
        self.identityResolvingKey = identityResolvingKey
        self.signatureKey = signatureKey
        self.outOfBand = outOfBand
        self.fixedPasskey = fixedPasskey
        self.justWorksConsent = justWorksConsent
        self.localKeyPair = localKeyPair
        self.keySource = keySource
        self.timeout = timeout
    }

    /// The AuthReq we send.
    var authenticationRequirements: SMPAuthenticationRequirements {
        var authReq: SMPAuthenticationRequirements = []
        if bonding { authReq.insert(.bonding) }
        if mitm { authReq.insert(.mitm) }
        if secureConnections != .legacyOnly { authReq.insert(.secureConnections) }
        if keypressNotifications { authReq.insert(.keypress) }
        return authReq
    }

    /// The keys we are able to distribute ourselves (IdKey needs an IRK, SignKey a CSRK; no BR/EDR link key).
    var distributableKeys: SMPKeyDistribution {
        var keys: SMPKeyDistribution = [.encryptionKey]
        if identityResolvingKey != nil { keys.insert(.identityKey) }
        if signatureKey != nil { keys.insert(.signingKey) }
        return keys
    }

    /// The OOB data flag we send.
    var oobDataFlag: SMPOOBDataFlag {
        let secureConnectionsData = secureConnections != .legacyOnly && outOfBand.hasPeerSecureConnectionsData
        return secureConnectionsData || outOfBand.legacyTemporaryKey != nil ? .present : .notPresent
    }
}
