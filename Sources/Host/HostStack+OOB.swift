public import BluetoothCore
public import BluetoothCrypto
import BluetoothRuntime
import SMP
public import BluetoothEngine

/// The out-of-band state of a ``HostStack`` (Core 5.4 Vol 3 Part H §2.3.5.4 legacy TK, §2.3.5.6.4 LE Secure
/// Connections): our fixed key pair and r once ``HostStack/localOutOfBandData(completion:)`` was asked, and the
/// data received from peers, by peer address. Mutated only on the host's event loop.
struct OutOfBandState {
    /// Our key pair and r (nil until asked for).
    var localKeyPair: LEKeyPair?
    var localRandom: Block128?
    var localConfirm: Block128?
    /// Peer data by the peer's address on the link (legacy TK and/or the peer's SC r and C).
    var peers: [BluetoothAddress: SMPOutOfBandData] = [:]
    /// Data for a peer whose address was not known when it was received (``OutOfBandPeer/anyPeer``): used with
    /// every peer that has no data of its own.
    var anyPeer: SMPOutOfBandData?

    /// The data for a link with `peer`: its own, else the any-peer data.
    func data(for peer: BluetoothAddress) -> SMPOutOfBandData? { peers[peer] ?? anyPeer }
}

/// Whom out-of-band data received from a peer is for (Core 5.4 Vol 3 Part H §2.3.5.6.4, Vol 3 Part C §5.2.2.7:
/// the OOB channel may carry the peer's address, or not, e.g. a QR code printed before the device knows its
/// address).
public enum OutOfBandPeer: Hashable, Sendable, CustomStringConvertible {
    /// The peer at this address on the link.
    case address(BluetoothAddress)
    /// Any peer for which no address-specific data is held (the next pairing with an unknown device).
    case anyPeer

    public var description: String {
        switch self {
        case .address(let address): address.description
        case .anyPeer: "any peer"
        }
    }
}

/// Out-of-band pairing through the host (Core 5.4 Vol 3 Part H §2.3.5.4, §2.3.5.6.4; method selection §2.3.5.1
/// Table 2.6: legacy pairing uses OOB when both sides set the OOB flag, LE Secure Connections when either does).
///
/// The data given here is put into the ``SMPPairingConfiguration`` of each connection's ``SMPSession`` when the
/// session is created, and into existing sessions with that peer that are not pairing yet. Peer data is kept per
/// address (``OutOfBandPeer/address(_:)``) or for any peer (``OutOfBandPeer/anyPeer``, when the OOB channel did not
/// name the device); address-specific data wins. OOB data is meant for one pairing: after
/// ``HostEvent/pairingCompleted(handle:_:)`` with the OOB method, forget the peer's data
/// (`removeOutOfBandData(for:)`) and give out fresh data of ours
/// (``regenerateLocalOutOfBandData(completion:)``), so a key pair handed out once is not used again (§2.3.6);
/// ``HostSecurityConfiguration/outOfBandDataSingleUse`` does both automatically.
extension HostStack {
    /// Our LE Secure Connections OOB data (address, r, C). Generated once per stack on first call; from then on
    /// every pairing of this stack uses the same P-256 key pair (the one C commits to) and offers r to peers that
    /// say they hold our data. Fails with ``HostError/Code/notReady`` before ``start(completion:)`` completed or
    /// when the security layer is disabled. Completion on the loop.
    public func localOutOfBandData(completion: @escaping @Sendable (Result<LocalOutOfBandData, HostError>) -> Void) {
        onLoop { [self] in
            guard lifecycle == .ready, configuration.security.enabled else {
                completion(.failure(HostError(.notReady, "the stack is not ready or security is disabled")))
                return
            }
            loadSecurityIfNeeded()
            if securityState.outOfBand.localKeyPair == nil {
                var source = nextKeySource()
                let pair = source.keyPair()
                let random = source.random128()
                do throws(BluetoothCryptoError) {
                    let confirm = try SMPOutOfBandData.localConfirm(publicKey: pair.publicKey, random: random)
                    securityState.outOfBand.localKeyPair = pair
                    securityState.outOfBand.localRandom = random
                    securityState.outOfBand.localConfirm = confirm
                } catch {
                    completion(.failure(HostError(.protocolError, "OOB confirm value: \(error)")))
                    return
                }
                refreshOutOfBand(peer: nil)
            }
            guard let random = securityState.outOfBand.localRandom, let confirm = securityState.outOfBand.localConfirm else {
                completion(.failure(HostError(.notReady, "no local OOB data")))
                return
            }
            completion(.success(LocalOutOfBandData(address: info.ownAddress, random: random, confirm: confirm)))
        }
    }

    /// The peer's LE Secure Connections OOB data (its r and C), received out of band, for pairings with `address`
    /// (the peer's address on the link). A later pairing with it then uses the OOB method.
    public func setPeerOutOfBandData(for address: BluetoothAddress, random: Block128, confirm: Block128) {
        onLoop { [self] in
            var data = securityState.outOfBand.peers[address] ?? SMPOutOfBandData()
            data.peerRandom = random
            data.peerConfirm = confirm
            securityState.outOfBand.peers[address] = data
            refreshOutOfBand(peer: address)
        }
    }

    /// The legacy OOB temporary key (16 octets, §2.3.5.4) shared with `address`: LE legacy pairing with it uses
    /// the OOB method when the peer also has a TK.
    public func setLegacyOutOfBandKey(for address: BluetoothAddress, temporaryKey: Block128) {
        onLoop { [self] in
            var data = securityState.outOfBand.peers[address] ?? SMPOutOfBandData()
            data.legacyTemporaryKey = temporaryKey
            securityState.outOfBand.peers[address] = data
            refreshOutOfBand(peer: address)
        }
    }

    /// Forgets the OOB data given for `address`.
    public func removeOutOfBandData(for address: BluetoothAddress) {
        onLoop { [self] in
            securityState.outOfBand.peers.removeValue(forKey: address)
            refreshOutOfBand(peer: address)
        }
    }

    /// How many peers we hold OOB data for (read on the loop; the any-peer data not counted).
    public var outOfBandPeerCount: Int { securityState.outOfBand.peers.count }

    /// Replaces our LE Secure Connections OOB data: a new P-256 key pair and a new r (Core 5.4 Vol 3 Part H
    /// §2.3.5.6.4; §2.3.6 recommends changing the key pair between pairings, so a key pair given away once cannot
    /// track the device). Data previously handed out stops matching: a peer still using it fails with Confirm
    /// Value Failed. Sessions not pairing yet take the new data. Same failures as
    /// ``localOutOfBandData(completion:)``.
    public func regenerateLocalOutOfBandData(completion: @escaping @Sendable (Result<LocalOutOfBandData, HostError>) -> Void) {
        onLoop { [self] in
            securityState.outOfBand.localKeyPair = nil
            securityState.outOfBand.localRandom = nil
            securityState.outOfBand.localConfirm = nil
            localOutOfBandData(completion: completion)
        }
    }

    /// Forgets our LE Secure Connections OOB data: later pairings use a fresh key pair each and offer no r (a
    /// peer that holds our old data fails with Confirm Value Failed). Peer data is kept.
    public func removeLocalOutOfBandData() {
        onLoop { [self] in
            securityState.outOfBand.localKeyPair = nil
            securityState.outOfBand.localRandom = nil
            securityState.outOfBand.localConfirm = nil
            refreshOutOfBand(peer: nil)
        }
    }

    /// The peer's LE Secure Connections OOB data (r and C) for `peer`: an address, or ``OutOfBandPeer/anyPeer``
    /// when the OOB channel did not say which device it came from (used with every peer without data of its own).
    public func setPeerOutOfBandData(for peer: OutOfBandPeer, random: Block128, confirm: Block128) {
        switch peer {
        case .address(let address): setPeerOutOfBandData(for: address, random: random, confirm: confirm)
        case .anyPeer:
            onLoop { [self] in
                var data = securityState.outOfBand.anyPeer ?? SMPOutOfBandData()
                data.peerRandom = random
                data.peerConfirm = confirm
                securityState.outOfBand.anyPeer = data
                refreshOutOfBand(peer: nil)
            }
        }
    }

    /// The legacy OOB temporary key for `peer` (an address or ``OutOfBandPeer/anyPeer``).
    public func setLegacyOutOfBandKey(for peer: OutOfBandPeer, temporaryKey: Block128) {
        switch peer {
        case .address(let address): setLegacyOutOfBandKey(for: address, temporaryKey: temporaryKey)
        case .anyPeer:
            onLoop { [self] in
                var data = securityState.outOfBand.anyPeer ?? SMPOutOfBandData()
                data.legacyTemporaryKey = temporaryKey
                securityState.outOfBand.anyPeer = data
                refreshOutOfBand(peer: nil)
            }
        }
    }

    /// Forgets the OOB data given for `peer` (an address, or the any-peer data).
    public func removeOutOfBandData(for peer: OutOfBandPeer) {
        switch peer {
        case .address(let address): removeOutOfBandData(for: address)
        case .anyPeer:
            onLoop { [self] in
                securityState.outOfBand.anyPeer = nil
                refreshOutOfBand(peer: nil)
            }
        }
    }

    /// Forgets all peer OOB data (per address and any-peer); our own data is kept.
    public func removeAllPeerOutOfBandData() {
        onLoop { [self] in
            securityState.outOfBand.peers.removeAll()
            securityState.outOfBand.anyPeer = nil
            refreshOutOfBand(peer: nil)
        }
    }

    /// Whether we hold OOB data usable with `peer` (its own or the any-peer data), read on the loop.
    public func hasOutOfBandData(for peer: BluetoothAddress) -> Bool { securityState.outOfBand.data(for: peer) != nil }

    // MARK: Internals

    /// After a pairing with `peer` that used the OOB method, under
    /// ``HostSecurityConfiguration/outOfBandDataSingleUse``: forgets the data it used (its own, else the any-peer
    /// data) and replaces our key pair and r when we had handed them out. On the loop.
    func consumeOutOfBandData(pairedWith peer: BluetoothAddress) {
        guard configuration.security.outOfBandDataSingleUse else { return }
        if securityState.outOfBand.peers.removeValue(forKey: peer) == nil { securityState.outOfBand.anyPeer = nil }
        if securityState.outOfBand.localKeyPair != nil {
            securityState.outOfBand.localKeyPair = nil
            securityState.outOfBand.localRandom = nil
            securityState.outOfBand.localConfirm = nil
            localOutOfBandData { _ in }
        }
        refreshOutOfBand(peer: nil)
    }

    /// Puts our OOB key pair and r and the peer's data into a link's SMP configuration.
    func applyOutOfBand(_ configuration: inout SMPPairingConfiguration, peer: BluetoothAddress) {
        var data = securityState.outOfBand.data(for: peer) ?? SMPOutOfBandData()
        data.localRandom = securityState.outOfBand.localRandom
        configuration.outOfBand = data
        configuration.localKeyPair = securityState.outOfBand.localKeyPair
    }

    /// Updates the sessions not pairing yet with `peer` (all peers when nil).
    func refreshOutOfBand(peer: BluetoothAddress?) {
        for (handle, entry) in connections {
            let connection = entry.connection
            guard peer == nil || connection.peer == peer,
                  let link = entry.session?.securityLink, !link.smp.isBusy else { continue }
            var pairing = link.smp.configuration
            applyOutOfBand(&pairing, peer: connection.peer)
            connections[handle]?.session?.securityLink?.smp.configuration = pairing
        }
    }
}
