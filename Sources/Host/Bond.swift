public import BluetoothCore
public import BluetoothCrypto
public import SMP
import BluetoothEngine

/// What we keep about a bonded peer (Core 5.4 Vol 3 Part H §2.4.1 "bonding", §3.6 key distribution; Vol 3
/// Part G §7.1/§3.3.3.3: the CCCD values of bonded clients persist across connections).
///
/// Keyed by the peer's identity address (its Identity Address Information, or the address it paired from when it
/// sent none). Legacy pairing leaves up to two LTKs, one per distributing side: the one the peer distributed is
/// used when we are central (LE Enable Encryption with its EDIV/Rand), the one we distributed answers the
/// controller's LE Long Term Key Request when we are peripheral (looked up by EDIV/Rand). LE Secure Connections
/// leaves one symmetric LTK with EDIV = 0 and Rand = 0.
public struct Bond: Hashable, Sendable, CustomStringConvertible {
    /// The peer's identity address (public or random static).
    public var identityAddress: BluetoothAddress
    /// The peer's IRK, to resolve its resolvable private addresses.
    public var peerIdentityResolvingKey: Block128?
    /// LE Secure Connections: the LTK both sides derived (EDIV 0, Rand 0).
    public var sharedLongTermKey: SMPLongTermKey?
    /// Legacy: the LTK the peer distributed (used by us as central).
    public var peerLongTermKey: SMPLongTermKey?
    /// Legacy: the LTK we distributed (answers the peer's LTK request when we are peripheral).
    public var localLongTermKey: SMPLongTermKey?
    /// The peer's CSRK and the last SignCounter we accepted from it.
    public var peerSignatureKey: Block128?
    public var peerSignCounter: UInt32?
    /// Our CSRK given to the peer and the next SignCounter we use.
    public var localSignatureKey: Block128?
    public var localSignCounter: UInt32 = 0
    /// The negotiated key size (7...16).
    public var keySize: UInt8
    /// MITM-protected keys.
    public var authenticated: Bool
    /// Made by LE Secure Connections.
    public var secureConnections: Bool
    /// The CCCD values the peer's client wrote to our server, by characteristic value handle.
    public var clientConfigurations: [UInt16: UInt16] = [:]
    /// The address the peer connected from when it paired, when that was a public or random static address other
    /// than its identity (a peer may distribute an identity it never uses on air, as Bumble does with an all-zero
    /// IRK): an alias under which the bond is found when the peer connects from that address again. Never an RPA.
    public var connectionAddress: BluetoothAddress?

    public init(identityAddress: BluetoothAddress, keySize: UInt8, authenticated: Bool, secureConnections: Bool) {
        self.identityAddress = identityAddress
        self.keySize = keySize
        self.authenticated = authenticated
        self.secureConnections = secureConnections
    }

    /// The key for LE Enable Encryption when we are central.
    public var centralEncryptionKey: SMPLongTermKey? { sharedLongTermKey ?? peerLongTermKey }

    /// The key answering an LE Long Term Key Request with this EDIV and Rand when we are peripheral.
    public func peripheralKey(ediv: UInt16, rand: UInt64) -> SMPLongTermKey? {
        if ediv == 0, rand == 0, let shared = sharedLongTermKey { return shared }
        if let local = localLongTermKey, local.ediv == ediv, local.rand == rand { return local }
        return nil
    }

    public var description: String {
        "bond with \(identityAddress) (\(secureConnections ? "LE SC" : "legacy"), \(authenticated ? "authenticated" : "unauthenticated"), key size \(keySize))"
    }
}

/// The JSON form of a ``Bond`` (one file per bond in a ``FileBondStore``): keys as hex, most significant octet
/// first; addresses as "AA:BB:CC:DD:EE:FF" with their type.
struct BondRecord: Codable, Equatable {
    struct LongTermKey: Codable, Equatable {
        var key: String
        var ediv: UInt16
        var rand: UInt64
    }

    var version = 1
    var identityAddress: String
    var identityAddressType: String
    var peerIRK: String?
    var sharedLTK: LongTermKey?
    var peerLTK: LongTermKey?
    var localLTK: LongTermKey?
    var peerCSRK: String?
    var peerSignCounter: UInt32?
    var localCSRK: String?
    var localSignCounter: UInt32
    var keySize: UInt8
    var authenticated: Bool
    var secureConnections: Bool
    var clientConfigurations: [String: UInt16]
    /// ``Bond/connectionAddress`` and its type ("public" / "random"); absent in records written before it.
    var connectionAddress: String?
    var connectionAddressType: String?

    init(_ bond: Bond) {
        identityAddress = bond.identityAddress.string
        identityAddressType = bond.identityAddress.type == .public ? "public" : "random"
        peerIRK = bond.peerIdentityResolvingKey.map { Hex.encode($0.msbFirst) }
        sharedLTK = bond.sharedLongTermKey.map(Self.record)
        peerLTK = bond.peerLongTermKey.map(Self.record)
        localLTK = bond.localLongTermKey.map(Self.record)
        peerCSRK = bond.peerSignatureKey.map { Hex.encode($0.msbFirst) }
        peerSignCounter = bond.peerSignCounter
        localCSRK = bond.localSignatureKey.map { Hex.encode($0.msbFirst) }
        localSignCounter = bond.localSignCounter
        keySize = bond.keySize
        authenticated = bond.authenticated
        secureConnections = bond.secureConnections
        clientConfigurations = Dictionary(uniqueKeysWithValues: bond.clientConfigurations.map { (String($0.key), $0.value) })
        connectionAddress = bond.connectionAddress?.string
        connectionAddressType = bond.connectionAddress.map { $0.type == .public ? "public" : "random" }
    }

    static func record(_ key: SMPLongTermKey) -> LongTermKey {
        LongTermKey(key: Hex.encode(key.key.reversed()), ediv: key.ediv, rand: key.rand)
    }

    /// The bond, or why the record is unusable.
    func bond() throws(BondStoreError) -> Bond {
        guard version == 1 else { throw BondStoreError(.corrupt, "unknown bond record version \(version)") }
        let type: BluetoothAddress.AddressType
        switch identityAddressType {
        case "public": type = .public
        case "random": type = .random
        default: throw BondStoreError(.corrupt, "identityAddressType \"\(identityAddressType)\" is neither public nor random")
        }
        let address: BluetoothAddress
        do {
            address = try BluetoothAddress(string: identityAddress, type: type)
        } catch {
            throw BondStoreError(.corrupt, "identityAddress: \(error)")
        }
        guard (7...16).contains(keySize) else { throw BondStoreError(.corrupt, "keySize \(keySize) is outside 7...16") }
        var bond = Bond(identityAddress: address, keySize: keySize, authenticated: authenticated,
                        secureConnections: secureConnections)
        bond.peerIdentityResolvingKey = try peerIRK.map { key throws(BondStoreError) in try Self.block(key, "peerIRK") }
        bond.sharedLongTermKey = try sharedLTK.map { key throws(BondStoreError) in try Self.longTermKey(key, "sharedLTK") }
        bond.peerLongTermKey = try peerLTK.map { key throws(BondStoreError) in try Self.longTermKey(key, "peerLTK") }
        bond.localLongTermKey = try localLTK.map { key throws(BondStoreError) in try Self.longTermKey(key, "localLTK") }
        bond.peerSignatureKey = try peerCSRK.map { key throws(BondStoreError) in try Self.block(key, "peerCSRK") }
        bond.peerSignCounter = peerSignCounter
        bond.localSignatureKey = try localCSRK.map { key throws(BondStoreError) in try Self.block(key, "localCSRK") }
        bond.localSignCounter = localSignCounter
        if let connectionAddress {
            let aliasType: BluetoothAddress.AddressType
            switch connectionAddressType {
            case "public": aliasType = .public
            case "random": aliasType = .random
            default: throw BondStoreError(.corrupt, "connectionAddressType \"\(connectionAddressType ?? "")\" is neither public nor random")
            }
            do {
                bond.connectionAddress = try BluetoothAddress(string: connectionAddress, type: aliasType)
            } catch {
                throw BondStoreError(.corrupt, "connectionAddress: \(error)")
            }
        }
        for (handle, value) in clientConfigurations {
            guard let valueHandle = UInt16(handle) else {
                throw BondStoreError(.corrupt, "clientConfigurations: \"\(handle)\" is not a handle")
            }
            bond.clientConfigurations[valueHandle] = value
        }
        return bond
    }

    static func block(_ hex: String, _ field: String) throws(BondStoreError) -> Block128 {
        guard let bytes = try? Hex.decode(hex), let block = try? Block128(msbFirst: bytes) else {
            throw BondStoreError(.corrupt, "\(field): not 16 octets of hex")
        }
        return block
    }

    static func longTermKey(_ record: LongTermKey, _ field: String) throws(BondStoreError) -> SMPLongTermKey {
        let block = try block(record.key, field)
        return SMPLongTermKey(key: block.littleEndian, ediv: record.ediv, rand: record.rand)
    }
}

extension PairingOutcome {
    /// The outcome of securing a link with a bond already held (no pairing happened).
    init(bond: Bond) {
        self.init(usedExistingBond: true, method: nil, secureConnections: bond.secureConnections,
                  authenticated: bond.authenticated, keySize: bond.keySize, bonded: true, identityAddress: bond.identityAddress)
    }
}
