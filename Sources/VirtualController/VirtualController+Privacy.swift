import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import HCI

/// Link-layer privacy (Core 5.4 Vol 6 Part B §6; HCI Vol 4 Part E §7.8.38–§7.8.45): the resolving list, local
/// resolvable private addresses the controller generates and rotates for Own_Address_Type 0x02/0x03, and peers'
/// resolvable private addresses resolved to their identity before the host sees them (advertising reports with
/// address type 0x02/0x03, LE Enhanced Connection Complete with both RPAs, the filter accept list and the
/// initiator's peer matched on identities).
///
/// Also LE Read Resolving List Size, LE Read Peer/Local Resolvable Address and LE Set Privacy Mode (§7.8.41–§7.8.43,
/// §7.8.77): in network privacy mode (the default) a peer whose entry has an IRK is heard only through its RPAs, its
/// identity address is ignored (Vol 6 Part B §6.4); device privacy mode accepts both. The controller claims LL Privacy
/// (LE feature bit 6) and these commands.
struct ResolvingListEntry: Hashable {
    /// 0x00 public or 0x01 random (static) identity address.
    var peerIdentityType: LEAddressType
    var peerIdentity: BluetoothAddress
    var peerIRK: Block128?
    var localIRK: Block128?
    /// The local RPA in use with this peer (regenerated every RPA timeout).
    var localRPA: BluetoothAddress?
    /// The peer's RPA seen last (for LE Enhanced Connection Complete).
    var peerRPA: BluetoothAddress?
    /// LE Set Privacy Mode: false network privacy mode (the default), true device privacy mode.
    var devicePrivacyMode = false
}

/// A peer's address after resolution: its identity and type 0x02/0x03 when the resolving list resolved it.
struct ResolvedAddress {
    var address: BluetoothAddress
    var type: LEAddressType
    /// The RPA it was resolved from, nil when it was not resolved.
    var resolvedFrom: BluetoothAddress?
}

extension VirtualController {
    static let resolvingListSize = 16

    /// Whether advertising, scanning or initiating runs (the resolving list and address resolution may not change
    /// then while resolution is enabled, §7.8.38, §7.8.44).
    private var privacyBusy: Bool {
        settings.advertising || settings.scanning || settings.initiating != nil || settings.advertisingSets.values.contains(where: \.enabled)
    }

    func handlePrivacy(_ command: HCICommand) {
        switch command {
        case .leAddDeviceToResolvingList(let entry):
            guard !(settings.addressResolution && privacyBusy) else { return complete(command.opcode, .status(.commandDisallowed)) }
            guard entry.peerIdentityAddressType.rawValue <= 1, entry.peerIRK.count == 16, entry.localIRK.count == 16 else {
                return complete(command.opcode, .status(.invalidCommandParameters))
            }
            let identity = BluetoothAddress(entry.peerIdentityAddress.value, type: entry.peerIdentityAddressType.bluetoothAddressType)
            guard !settings.resolvingList.contains(where: { $0.peerIdentity == identity }) else {
                return complete(command.opcode, .status(.invalidCommandParameters))
            }
            guard settings.resolvingList.count < Self.resolvingListSize else {
                return complete(command.opcode, .status(.memoryCapacityExceeded))
            }
            settings.resolvingList.append(ResolvingListEntry(
                peerIdentityType: entry.peerIdentityAddressType, peerIdentity: identity,
                peerIRK: Self.irk(entry.peerIRK), localIRK: Self.irk(entry.localIRK)))
            if settings.addressResolution { refreshLocalAddresses(now: air.now) }
            complete(command.opcode, .status(.success))
        case .leRemoveDeviceFromResolvingList(let type, let address):
            guard !(settings.addressResolution && privacyBusy) else { return complete(command.opcode, .status(.commandDisallowed)) }
            let identity = BluetoothAddress(address.value, type: type.bluetoothAddressType)
            guard let index = settings.resolvingList.firstIndex(where: { $0.peerIdentity == identity }) else {
                return complete(command.opcode, .status(.unknownConnectionIdentifier))
            }
            settings.resolvingList.remove(at: index)
            complete(command.opcode, .status(.success))
        case .leClearResolvingList:
            guard !(settings.addressResolution && privacyBusy) else { return complete(command.opcode, .status(.commandDisallowed)) }
            settings.resolvingList = []
            complete(command.opcode, .status(.success))
        case .leSetAddressResolutionEnable(let enable):
            guard !privacyBusy else { return complete(command.opcode, .status(.commandDisallowed)) }
            settings.addressResolution = enable
            // The local RPAs exist from now on (LE Read Local Resolvable Address answers with them).
            if enable { refreshLocalAddresses(now: air.now) }
            complete(command.opcode, .status(.success))
        case .leSetResolvablePrivateAddressTimeout(let seconds):
            guard (1...0x0E10).contains(seconds) else { return complete(command.opcode, .status(.invalidCommandParameters)) }
            settings.rpaTimeout = seconds
            complete(command.opcode, .status(.success))
        case .leReadResolvingListSize:
            complete(command.opcode, .leReadResolvingListSize(status: .success, size: UInt8(Self.resolvingListSize)))
        case .leReadPeerResolvableAddress(let type, let address), .leReadLocalResolvableAddress(let type, let address):
            let peer = command.opcode == .leReadPeerResolvableAddress
            let none = BluetoothAddress(0, type: .random)
            func answer(_ status: HCIStatus, _ address: BluetoothAddress = none) {
                complete(command.opcode, peer ? .leReadPeerResolvableAddress(status: status, address: address)
                                              : .leReadLocalResolvableAddress(status: status, address: address))
            }
            guard type.rawValue <= 1 else { return answer(.invalidCommandParameters) }
            let identity = BluetoothAddress(address.value, type: type.bluetoothAddressType)
            guard let entry = settings.resolvingList.first(where: { $0.peerIdentity == identity }) else {
                return answer(.unknownConnectionIdentifier)
            }
            // No RPA in use yet (or no IRK to make one): "not available", as §7.8.42/§7.8.43 allow.
            guard let rpa = peer ? entry.peerRPA : entry.localRPA else { return answer(.unknownConnectionIdentifier) }
            answer(.success, rpa)
        case .leSetPrivacyMode(let type, let address, let mode):
            guard type.rawValue <= 1, mode <= 1 else { return complete(command.opcode, .status(.invalidCommandParameters)) }
            guard !(settings.addressResolution && privacyBusy) else { return complete(command.opcode, .status(.commandDisallowed)) }
            let identity = BluetoothAddress(address.value, type: type.bluetoothAddressType)
            guard let index = settings.resolvingList.firstIndex(where: { $0.peerIdentity == identity }) else {
                return complete(command.opcode, .status(.unknownConnectionIdentifier))
            }
            settings.resolvingList[index].devicePrivacyMode = mode == 1
            complete(command.opcode, .status(.success))
        default:
            complete(command.opcode, .status(.unknownCommand))
        }
    }

    /// An IRK as HCI carries it (least significant octet first), nil when all zeros (no IRK).
    private static func irk(_ bytes: [UInt8]) -> Block128? {
        guard bytes.contains(where: { $0 != 0 }) else { return nil }
        return try? Block128(littleEndian: bytes)
    }

    // MARK: Local addresses

    /// The address this controller uses for `type` towards `peer` (an identity, when known): for 0x02/0x03 with
    /// address resolution on and a resolving-list entry for the peer that has a local IRK, that entry's RPA,
    /// generated again when the RPA timeout has passed (§6.2.2); else the public (0x00, 0x02) or random (0x01,
    /// 0x03) address. nil when the random address is needed and not set.
    func ownAddress(_ type: LEAddressType, towards peer: BluetoothAddress?, now: StackInstant) -> BluetoothAddress? {
        ownAddress(type, random: settings.randomAddress, towards: peer, now: now)
    }

    /// As above with `random` as the random address (an advertising set's own, §7.8.52).
    func ownAddress(_ type: LEAddressType, random: BluetoothAddress?, towards peer: BluetoothAddress?, now: StackInstant) -> BluetoothAddress? {
        if type.rawValue >= 2, settings.addressResolution, let index = localEntryIndex(towards: peer) {
            refreshLocalAddresses(now: now)
            if let rpa = settings.resolvingList[index].localRPA { return rpa }
        }
        switch type.rawValue {
        case 0x00, 0x02: return publicAddress
        case 0x01, 0x03: return random
        default: return nil
        }
    }

    /// The entry whose local IRK gives the own address towards `peer` (any entry with a local IRK when the peer is
    /// not known, as for scanning).
    private func localEntryIndex(towards peer: BluetoothAddress?) -> Int? {
        if let peer {
            return settings.resolvingList.firstIndex { $0.peerIdentity == peer && $0.localIRK != nil }
        }
        return settings.resolvingList.firstIndex { $0.localIRK != nil }
    }

    /// New local RPAs for every entry with a local IRK once the RPA timeout passed since the last ones.
    func refreshLocalAddresses(now: StackInstant) {
        let timeout = Duration.seconds(Int(settings.rpaTimeout))
        if let generated = settings.rpaGenerated, now - generated < timeout,
           !settings.resolvingList.contains(where: { $0.localIRK != nil && $0.localRPA == nil }) { return }
        settings.rpaGenerated = now
        for index in settings.resolvingList.indices {
            guard let irk = settings.resolvingList[index].localIRK else { continue }
            settings.resolvingList[index].localRPA = air.withRandom { random in try? ResolvablePrivateAddress.generate(irk: irk, using: &random) }
        }
    }

    /// Whether `address` is one of the local RPAs in use (a directed advertisement's TargetA, §6.3).
    func isLocalResolvableAddress(_ address: BluetoothAddress) -> Bool {
        guard settings.addressResolution else { return false }
        return settings.resolvingList.contains { entry in
            entry.localRPA == address || entry.localIRK.map { (try? ResolvablePrivateAddress.resolves(address, irk: $0)) == true } ?? false
        }
    }

    // MARK: Peer addresses

    /// `address` as the host sees it: with address resolution on, a resolvable private address that a peer IRK of
    /// the resolving list resolves becomes that peer's identity, with type 0x02 (public identity) or 0x03 (random
    /// identity); anything else stays as it is.
    func resolve(_ address: BluetoothAddress) -> ResolvedAddress {
        let plain = ResolvedAddress(address: address, type: LEAddressType(address.type), resolvedFrom: nil)
        guard settings.addressResolution, address.kind == .resolvablePrivate else { return plain }
        for index in settings.resolvingList.indices {
            guard let irk = settings.resolvingList[index].peerIRK,
                  (try? ResolvablePrivateAddress.resolves(address, irk: irk)) == true else { continue }
            settings.resolvingList[index].peerRPA = address
            let entry = settings.resolvingList[index]
            return ResolvedAddress(address: entry.peerIdentity,
                                   type: entry.peerIdentityType == .public ? .publicIdentity : .randomIdentity,
                                   resolvedFrom: address)
        }
        return plain
    }

    /// Whether `address` is the identity address of a peer the resolving list holds an IRK for, in network privacy
    /// mode: such a peer must use its RPAs, so packets with its identity are ignored (§6.4).
    func isIgnoredIdentity(_ address: BluetoothAddress) -> Bool {
        guard settings.addressResolution, address.kind != .resolvablePrivate else { return false }
        return settings.resolvingList.contains { $0.peerIdentity == address && $0.peerIRK != nil && !$0.devicePrivacyMode }
    }

    /// Whether a peer named by the host (`type` 0x00...0x03 and `address`) is the device seen as `resolved`.
    static func names(_ address: BluetoothAddress, _ type: LEAddressType, _ resolved: ResolvedAddress) -> Bool {
        let kind: BluetoothAddress.AddressType = type.rawValue == 0x00 || type.rawValue == 0x02 ? .public : .random
        return resolved.address.value == address.value && resolved.address.type == kind
    }
}
