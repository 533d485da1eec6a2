package import BluetoothCore
package import BluetoothCrypto
import SMP
package import BluetoothEngine

/// Pairing (Core 5.4 Vol 3 Part H §2.3) on bluetoothd: ``Peripheral/pair(_:)`` is Device1.Pair with an agent of ours
/// (org.bluez.Agent1, under the IO capability the options ask for, else KeyboardDisplay) whose prompts become the
/// host's `pairingInteraction` events, so that the stack's ``PairingDelegate`` answers them as on our host.
/// bluetoothd chooses LE Secure Connections or legacy pairing and the method, and keeps the bond; the outcome says
/// what the prompts showed (Numeric Comparison: Secure Connections and authenticated; a passkey: authenticated;
/// none: Just Works) and leaves nil what bluetoothd does not tell (key size, keys). A device bluetoothd holds a
/// bond with is not paired again (it encrypts with the bond as it connects) unless `forcePairing`, for which it
/// must forget the device first (``BlueZCentral/pair(_:capability:again:prompts:completion:)``).
extension BlueZEngine {
    package func pair(connectionHandle handle: UInt16, options: PairingOptions,
              completion: @escaping @Sendable (Result<PairingOutcome, HostError>) -> Void) {
        onLoop { [self] in
            guard let link = links[handle] else {
                return completion(.failure(HostError(.unknownConnection, "no connection has handle \(Dissection.hex16(handle))")))
            }
            guard link.connection.role == .central else {
                return completion(.failure(HostError(.unsupported, "through bluetoothd the central pairs (a Security Request has no call)")))
            }
            let peer = link.connection.peer
            // A bond bluetoothd holds: it encrypted the link with it as it connected (what it was not told is nil).
            if !options.forcePairing, central.deviceFlag(peer, "Paired") {
                return completion(.success(PairingOutcome(
                    usedExistingBond: true, method: nil, secureConnections: nil, authenticated: nil, keySize: nil,
                    bonded: true, identityAddress: peer, localKeys: nil, peerKeys: nil)))
            }
            pairingMethods[handle] = nil
            central.pair(peer, capability: Self.agentCapability(options.ioCapability), again: options.forcePairing, prompts: { [weak self] request, answer in
                guard let engine = self else { return answer(.reject) }
                engine.onLoop { engine.prompt(request, answer) }
            }, completion: { [weak self] result in
                guard let engine = self else { return }
                engine.onLoop {
                    let method = engine.pairingMethods.removeValue(forKey: handle) ?? .justWorks
                    engine.pendingPrompts.removeValue(forKey: handle)?(.reject)
                    switch result {
                    case .success:
                        // The prompts showed the method; Numeric Comparison exists only in LE Secure Connections.
                        completion(.success(PairingOutcome(
                            usedExistingBond: false, method: method, secureConnections: method == .numericComparison ? true : nil,
                            authenticated: method.isAuthenticated, keySize: nil,
                            bonded: engine.central.deviceFlag(peer, "Bonded") || engine.central.deviceFlag(peer, "Paired"),
                            identityAddress: peer, localKeys: nil, peerKeys: nil)))
                    case .failure(let error):
                        completion(.failure(HostError(.securityFailed, "\(error)")))
                    }
                }
            })
        }
    }

    /// The agent capability announcing `capability` (bluetoothd's names are the specification's); nil or a reserved
    /// value: KeyboardDisplay, which lets bluetoothd offer every method.
    static func agentCapability(_ capability: SMPIOCapability?) -> BlueZAgent.Capability {
        capability.flatMap { SMPIOCapability.names[$0.rawValue] }.flatMap(BlueZAgent.Capability.init(rawValue:)) ?? .keyboardDisplay
    }

    package func requestSecurity(connectionHandle handle: UInt16, mitm: Bool?,
                         completion: (@Sendable (Result<PairingOutcome, HostError>) -> Void)?) {
        completion?(.failure(HostError(.unsupported, "bluetoothd has no call for a Security Request: the central pairs")))
    }

    /// One of the agent's prompts (on the loop): to the delegate as the host's event, or answered here.
    private func prompt(_ request: BlueZAgent.Request, _ answer: @escaping @Sendable (BlueZAgent.Answer) -> Void) {
        let interaction: PairingInteraction
        let device: String
        switch request {
        case .confirmValue(let path, let value):
            (device, interaction) = (path, .confirmNumericValue(value))
        case .displayPasskey(let path, let passkey, let entered):
            guard entered == 0 else { return }
            (device, interaction) = (path, .displayPasskey(passkey))
        case .enterPasskey(let path):
            (device, interaction) = (path, .enterPasskey)
        case .authorizePairing(let path):
            (device, interaction) = (path, .confirmJustWorks)
        case .authorizeService:
            return answer(.accept)
        case .cancelled:
            for waiting in pendingPrompts.values { waiting(.reject) }
            pendingPrompts = [:]
            return
        case .enterPinCode, .displayPinCode:
            return answer(.reject)
        }
        let address = device.split(separator: "/").last.map { $0.dropFirst(4).replacingOccurrences(of: "_", with: ":") }
        // The link to that device: ours as central first (the pairing we asked for), else a central's link to us.
        let candidates = links.filter { $0.value.connection.peer.description.hasPrefix(address ?? "-") }
        guard let handle = (candidates.first { $0.value.connection.role == .central } ?? candidates.first)?.key else {
            return answer(.reject)
        }
        switch interaction {
        case .confirmNumericValue: pairingMethods[handle] = .numericComparison
        case .displayPasskey: pairingMethods[handle] = .passkeyEntry(.initiatorDisplays)
        case .enterPasskey: pairingMethods[handle] = .passkeyEntry(.responderDisplays)
        case .confirmJustWorks: pairingMethods[handle] = .justWorks
        }
        if case .displayPasskey = interaction {
            answer(.accept)
        } else {
            pendingPrompts.removeValue(forKey: handle)?(.reject)
            pendingPrompts[handle] = answer
        }
        emit(.pairingInteraction(handle: handle, interaction))
    }

    package func answerPairing(connectionHandle handle: UInt16, _ answer: PairingAnswer) {
        onLoop { [self] in
            guard let waiting = pendingPrompts.removeValue(forKey: handle) else { return }
            switch answer {
            case .confirm(let accepted): waiting(accepted ? .accept : .reject)
            case .passkey(let passkey?): waiting(.passkey(passkey))
            case .passkey(nil): waiting(.reject)
            }
        }
    }

    /// bluetoothd takes no out-of-band data from a client (its pairing methods are its own).
    package func localOutOfBandData(completion: @escaping @Sendable (Result<LocalOutOfBandData, HostError>) -> Void) {
        onLoop { completion(.failure(Self.refusal("out-of-band pairing data cannot be given: bluetoothd chooses the method"))) }
    }

    /// Nothing to keep: bluetoothd would not use it (``localOutOfBandData(completion:)`` says so to a caller).
    package func setPeerOutOfBandData(for address: BluetoothAddress, random: Block128, confirm: Block128) {}
    package func setLegacyOutOfBandKey(for address: BluetoothAddress, temporaryKey: Block128) {}
    package func removeOutOfBandData(for address: BluetoothAddress) {}
}
