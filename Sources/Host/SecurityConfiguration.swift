public import BluetoothCore
public import BluetoothCrypto
public import SMP

/// How the host's Security Manager pairs, bonds and protects attributes (Core 5.4 Vol 3 Part H §2.3 pairing,
/// §2.4 key distribution; Vol 3 Part C §10 security modes, §10.7 privacy; Vol 6 Part B §1.3.2.2 RPA generation).
///
/// Part of ``HostConfiguration`` (``HostConfiguration/security``). Read once per connection when its
/// ``SMPSession`` is created.
public struct HostSecurityConfiguration: Sendable {
    /// Run SMP on every connection (false: SMP payloads are only reported as ``HostEvent/securityManagerPDU(handle:_:)``
    /// and LE Long Term Key Requests only as ``HostEvent/longTermKeyRequest(handle:randomNumber:encryptedDiversifier:)``).
    public var enabled = true
    /// Our IO capability (§2.3.2).
    public var ioCapability: SMPIOCapability = .noInputNoOutput
    /// Ask for bonding (keys stored in ``bondStore``).
    public var bonding = true
    /// Ask for MITM protection (an authenticated method).
    public var mitm = false
    /// LE Secure Connections preferred, required, or legacy only.
    public var secureConnections: SMPSecureConnectionsPolicy = .preferred
    /// Maximum Encryption Key Size we offer (7...16) and the smallest we accept.
    public var maximumKeySize: UInt8 = 16
    public var minimumKeySize: UInt8 = 7
    /// A fixed passkey to display instead of a random one (scripts: `blue serve --passkey N`).
    public var fixedPasskey: UInt32?
    /// Ask the application (``PairingInteraction/confirmJustWorks``) before Just Works completes.
    public var justWorksConsent = false
    /// Our IRK (Identity Information). Nil: a random one per host instance (bonds then do not survive restarts
    /// for RPA resolution by the peer).
    public var identityResolvingKey: Block128?
    /// The identity address we distribute (Identity Address Information, Vol 3 Part H §3.6.5). Nil: the
    /// controller's own address (public, or the random static one of ``HostConfiguration/address``).
    public var identityAddress: BluetoothAddress?
    /// Our CSRK (Signing Information). Nil: none distributed.
    public var signatureKey: Block128?
    /// The keys the initiator (central) distributes in the key distribution phase (Initiator Key Distribution,
    /// Core 5.4 Vol 3 Part H §3.5.1, §3.6.1): as central, what we offer to send (sent in the Pairing
    /// Request, less what we cannot give: IdKey needs ``identityResolvingKey`` or the per-host IRK, SignKey
    /// ``signatureKey``); as peripheral, what we accept from the central (the Pairing Response carries the
    /// intersection with the request). The keys distributed are the AND of both sides' fields; LE Secure
    /// Connections ignores EncKey (the LTK comes from f5). Default: EncKey, IdKey and SignKey.
    public var initiatorKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey]
    /// The keys the responder (peripheral) distributes (Responder Key Distribution, §3.5.1, §3.6.1): as central,
    /// what we ask the peripheral for; as peripheral, what we offer to send (less what we cannot give). Default:
    /// EncKey, IdKey and SignKey.
    public var responderKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey]
    /// Where bonds live. Default: an in-memory store (tests); production passes a ``FileBondStore``.
    public var bondStore: any BondStore = InMemoryBondStore()
    /// Whether a peer that lost its bond (or a peer starting pairing again) may pair again; the old bond is
    /// replaced only after the new pairing succeeds. Called on the loop with the peer's identity address.
    public var allowRepairing: @Sendable (BluetoothAddress) -> Bool = { _ in false }
    /// As central, answer a peripheral's Security Request by encrypting with the bond or pairing.
    public var answersSecurityRequests = true
    /// On the GATT client: Insufficient Encryption / Authentication / Encryption Key Size start encryption with
    /// the bond (or pairing) and the request is retried once.
    public var retriesOnInsufficientSecurity = true
    /// Opt-in RPA rotation: a new resolvable private address from our IRK every interval (Vol 3 Part C §10.7.1.2:
    /// 15 minutes recommended). Postponed while advertising, scanning or connecting.
    public var privateAddressRotation: Duration?
    /// With ``privateAddressRotation``: let the controller make, rotate and resolve the addresses when it offers LL
    /// Privacy (Core 5.4 Vol 6 Part B §6): it rotates them while advertising too, and bonded peers' addresses reach
    /// us resolved. Off: the host does it with LE Set Random Address.
    public var usesControllerPrivacy = true
    /// Randoms and P-256 key pairs for SMP. ``SystemSMPKeySource`` in production; a seeded source makes pairings
    /// reproducible (each link then draws its own sub-seed from it).
    public var keySource: any SMPKeySource = SystemSMPKeySource()
    /// The SMP timeout (§3.4).
    public var smpTimeout: Duration = .seconds(30)
    /// Out-of-band data serves one pairing (Vol 3 Part H §2.3.5.6.4; §2.3.6 on changing the key pair): after a
    /// pairing that used the OOB method, the peer's data (its address's, or the any-peer data it used) is
    /// forgotten and our own data, if we had given any out, is replaced by a fresh key pair and r (read it again
    /// with ``HostStack/localOutOfBandData(completion:)``). Off: the data stays until removed by hand.
    public var outOfBandDataSingleUse = false

    public init() {}

    /// The SMP configuration of one link: our flags, key sizes and key distribution, with the link's addresses, our
    /// identity (address and IRK) and the link's key source.
    func pairing(local: BluetoothAddress, peer: BluetoothAddress, identity: BluetoothAddress?, irk: Block128?,
                 keySource: any SMPKeySource) -> SMPPairingConfiguration {
        SMPPairingConfiguration(
            ioCapability: ioCapability, bonding: bonding, mitm: mitm, secureConnections: secureConnections,
            maximumKeySize: maximumKeySize, minimumKeySize: minimumKeySize,
            initiatorKeys: initiatorKeys, responderKeys: responderKeys,
            localAddress: local, peerAddress: peer,
            identityAddress: identity, identityResolvingKey: irk, signatureKey: signatureKey,
            fixedPasskey: fixedPasskey, justWorksConsent: justWorksConsent, keySource: keySource, timeout: smpTimeout)
    }
}
