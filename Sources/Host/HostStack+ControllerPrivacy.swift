public import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import HCI

/// Privacy done by the controller (LL Privacy, Core 5.4 Vol 6 Part B §6; HCI Vol 4 Part E §7.8.38–§7.8.45), used
/// instead of the host's own RPA rotation when ``HostSecurityConfiguration/privateAddressRotation`` asks for privacy
/// and the controller offers it (``ControllerInfo/hasLLPrivacy``, ``HostSecurityConfiguration/usesControllerPrivacy``).
///
/// The resolving list holds one entry per bonded peer with an IRK (its identity, its IRK, our IRK) and one entry
/// for everyone else (the all-zero public identity, no peer IRK, our IRK): advertising names that entry as its
/// Peer_Address (the default), so the controller advertises with an RPA of our IRK and makes a new one every RPA
/// timeout, even while advertising (the host's rotation has to wait for advertising to stop). Own_Address_Type is
/// 0x03 everywhere (an RPA, else the random static address); a bonded peer's RPAs reach the host as its identity
/// (address type 0x02/0x03). The list can only change while nothing advertises, scans or initiates (§7.8.38): a
/// change that comes while something does is made at the next quiet moment (checked every second).
extension HostStack {
    /// The identity of the resolving-list entry that stands for every peer without a bond.
    static let anyPeerIdentity = BluetoothAddress(0, type: .public)

    /// Decides, once security is loaded, whether the controller does our privacy, and loads the resolving list.
    func startControllerPrivacyIfOffered() {
        guard configuration.security.privateAddressRotation != nil, configuration.security.usesControllerPrivacy,
              info.hasLLPrivacy, securityState.localIRK != nil else { return }
        info.usesControllerPrivacy = true
        securityState.rpaDeadline = nil
        securityState.resolvingListDirty = true
        syncResolvingList()
    }

    /// Whether the resolving list may change now (§7.8.38, §7.8.44). Advertising the host did not stop may still be
    /// enabled in the controller's books (legacy advertising ends with a connection without an event): the reload
    /// then starts by disabling it.
    private var resolvingListIsChangeable: Bool {
        !isAdvertising && !isScanning && pendingConnect == nil && !securityState.resolvingListCommandsPending
            && !gapLane(.advertising).busy && !gapLane(.scanning).busy && !gapLane(.scanning).controllerEnabled
    }

    /// Loads the resolving list again if it changed (a bond came or went), now or at the next quiet moment.
    func syncResolvingList() {
        guard info.usesControllerPrivacy, securityState.resolvingListDirty else { return }
        guard resolvingListIsChangeable else {
            securityState.resolvingListRetry = eventLoop.now + .seconds(1)
            armTimer()
            return
        }
        securityState.resolvingListDirty = false
        securityState.resolvingListRetry = nil
        securityState.resolvingListCommandsPending = true
        var commands = resolvingListCommands()
        if gapLane(.advertising).controllerEnabled {
            commands.insert(info.usesExtendedAdvertising ? Self.extendedAdvertisingDisable : .leSetAdvertisingEnable(false), at: 0)
            withGAPLane(.advertising) { $0.controllerEnabled = false }
        }
        runSequence(commands) { [self] result in
            securityState.resolvingListCommandsPending = false
            if case .failure(let error) = result {
                emit(.controllerError(error))
                securityState.resolvingListDirty = true
                securityState.resolvingListRetry = eventLoop.now + .seconds(1)
                armTimer()
            }
        }
    }

    /// Resolution off, the list cleared, our entry and one per bonded peer with an IRK (as many as the list takes
    /// besides ours), the RPA timeout, resolution on.
    private func resolvingListCommands() -> [HCICommand] {
        guard let localIRK = securityState.localIRK else { return [] }
        let local = localIRK.littleEndian
        let zeros = [UInt8](repeating: 0, count: 16)
        var commands: [HCICommand] = [.leSetAddressResolutionEnable(false), .leClearResolvingList,
                                      .leAddDeviceToResolvingList(LEResolvingListEntry(
                                          peerIdentityAddressType: .public, peerIdentityAddress: Self.anyPeerIdentity,
                                          peerIRK: zeros, localIRK: local))]
        let bonded = securityState.bonds.values.filter { $0.peerIdentityResolvingKey != nil }
            .sorted { $0.identityAddress.value < $1.identityAddress.value }
        for bond in bonded.prefix(Self.resolvingListBondLimit) {
            guard let irk = bond.peerIdentityResolvingKey else { continue }
            commands.append(.leAddDeviceToResolvingList(LEResolvingListEntry(
                peerIdentityAddressType: bond.identityAddress.type == .public ? .public : .random,
                peerIdentityAddress: bond.identityAddress, peerIRK: irk.littleEndian, localIRK: local)))
        }
        let seconds = configuration.security.privateAddressRotation.map { $0.components.seconds } ?? 900
        commands.append(.leSetResolvablePrivateAddressTimeout(UInt16(clamping: min(max(seconds, 1), 0x0E10))))
        commands.append(.leSetAddressResolutionEnable(true))
        return commands
    }

    /// Bonded peers in the resolving list besides our own entry (controllers have 8 to 16 entries; Linux asks the
    /// size, we keep to the smallest common one).
    static let resolvingListBondLimit = 7

    /// The timer: a list change that waited for a quiet moment.
    func controllerPrivacyTimerFired(now: StackInstant) {
        guard let retry = securityState.resolvingListRetry, retry <= now else { return }
        securityState.resolvingListRetry = nil
        syncResolvingList()
    }

    /// Our current resolvable private address as the controller uses it towards peers without a bond (LE Read Local
    /// Resolvable Address, §7.8.43), or ``ControllerInfo/ownAddress`` when the host does privacy itself (or none).
    public func currentPrivateAddress(completion: @escaping @Sendable (BluetoothAddress) -> Void) {
        onLoop { [self] in
            guard info.usesControllerPrivacy else { return completion(info.ownAddress) }
            command(.leReadLocalResolvableAddress(addressType: .public, address: Self.anyPeerIdentity)) { [self] result in
                if case .success(.leReadLocalResolvableAddress(.success, let address)) = result {
                    completion(address)
                } else {
                    completion(info.ownAddress)
                }
            }
        }
    }
}
