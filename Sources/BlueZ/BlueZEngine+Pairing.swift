package import BluetoothCore
package import BluetoothCrypto
import BluetoothRuntime
import DBus
import SMP
package import BluetoothEngine

/// Pairing (Core 5.4 Vol 3 Part H §2.3) on bluetoothd: ``Peripheral/pair(_:)`` is Device1.Pair with an agent of ours
/// (org.bluez.Agent1, under the IO capability the options ask for, else KeyboardDisplay) whose prompts become the
/// host's `pairingInteraction` events, so that the stack's ``PairingDelegate`` answers them as on our host.
/// bluetoothd chooses LE Secure Connections or legacy pairing and the method, and keeps the bond; the outcome says
/// what the prompts showed (Numeric Comparison: Secure Connections and authenticated; a passkey: authenticated;
/// none: Just Works) and leaves nil what bluetoothd does not tell (key size, keys). A device bluetoothd holds a
/// bond with is not paired again (it encrypts with the bond as it connects) unless `forcePairing`, for which it
/// must forget the device first and find it again (``pairDevice(_:capability:again:completion:)``).
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
            if !options.forcePairing, deviceFlag(peer, "Paired") {
                return completion(.success(PairingOutcome(
                    usedExistingBond: true, method: nil, secureConnections: nil, authenticated: nil, keySize: nil,
                    bonded: true, identityAddress: peer, localKeys: nil, peerKeys: nil)))
            }
            pairingMethods[handle] = nil
            pairDevice(handle, capability: Self.agentCapability(options.ioCapability), again: options.forcePairing) { [self] result in
                let method = pairingMethods.removeValue(forKey: handle) ?? .justWorks
                pendingPrompts.removeValue(forKey: handle)?(.reject)
                switch result {
                case .success:
                    // The prompts showed the method; Numeric Comparison exists only in LE Secure Connections.
                    completion(.success(PairingOutcome(
                        usedExistingBond: false, method: method, secureConnections: method == .numericComparison ? true : nil,
                        authenticated: method.isAuthenticated, keySize: nil,
                        bonded: deviceFlag(peer, "Bonded") || deviceFlag(peer, "Paired"),
                        identityAddress: peer, localKeys: nil, peerKeys: nil)))
                case .failure(let error):
                    completion(.failure(HostError(.securityFailed, "\(error)")))
                }
            }
        }
    }

    /// Device1.Pair on the central link `handle` (at most ``pairLimit``): bluetoothd chooses the method and keeps
    /// the bond; its prompts come to ``prompt(_:_:)`` through an agent of ours registered under `capability` (not as
    /// the default: the desktop's agent keeps answering the rest), or go to the `OCB_BLUEZ_AGENT` agent when that
    /// one runs (bluetoothd takes one agent per client). Already paired: success (bluetoothd's AlreadyExists), unless
    /// `again`: bluetoothd pairs again only a device it holds no bond with, so the device is removed first
    /// (Adapter1.RemoveDevice, which drops the link), found again by discovery, and paired, which connects it again;
    /// the link stays the same one for the caller (completion on the loop).
    private func pairDevice(_ handle: UInt16, capability: BlueZAgent.Capability, again: Bool,
                            completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        guard let peer = links[handle]?.connection.peer, let connection = session?.tree.connection else {
            return completion(.failure(.notConnected("the link ended")))
        }
        let paired = deviceFlag(peer, "Paired"), prompts = agentHandler, ownAgent = environmentAgent == nil
        Task { [self] in
            if ownAgent {
                do throws(DBusError) {
                    try await registerPromptAgent(on: connection, capability: capability, prompts: prompts)
                } catch {
                    return onLoop { completion(.failure(.failed("bluetoothd did not take our pairing agent: \(error)"))) }
                }
            }
            if again, paired {
                do throws(BlueZCallError) {
                    try await forget(handle, peer)
                } catch {
                    return onLoop { [self] in
                        links[handle]?.replacing = false
                        linkEnded(handle, reason: .remoteUserTerminatedConnection)
                        completion(.failure(error))
                    }
                }
            }
            onLoop { [self] in callPair(handle, peer, completion) }
        }
    }

    /// Device1.Pair, then (on the loop) the link no longer replaced; a failure after a forgotten device ends it.
    private func callPair(_ handle: UInt16, _ peer: BluetoothAddress, _ completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        guard let path = devicePath(peer) else { return completion(.failure(.notConnected("bluetoothd does not know \(peer)"))) }
        links[handle]?.path = path
        // bluetoothd 5.66 answers Pair on a link whose services are resolved only after resolving them again, which
        // never ends (found in the VM: bonding completes, the reply never comes): the Paired property turning true is
        // the success too, whichever comes first (both on the loop).
        let finished = LockedValue(false)
        let finish: @Sendable (Result<Void, BlueZCallError>) -> Void = { [weak self] result in
            guard let engine = self, finished.withLock({ value in defer { value = true }; return !value }) else { return }
            let replaced = engine.links[handle]?.replacing == true
            engine.links[handle]?.replacing = false
            if replaced, case .failure = result { engine.linkEnded(handle, reason: .remoteUserTerminatedConnection) }
            completion(result)
        }
        let loop = loop
        @Sendable func watch() {
            loop.schedule(after: .milliseconds(200)) { [weak self] in
                guard let engine = self, !finished.load() else { return }
                if engine.deviceFlag(peer, "Paired") { return finish(.success(())) }
                watch()
            }
        }
        watch()
        call(path, BlueZDevice.interface, "Pair", timeout: Self.pairLimit) { result in
            switch result {
            case .success:
                finish(.success(()))
            case .failure(let error) where error.name == "org.bluez.Error.AlreadyExists":
                finish(.success(()))
            case .failure(let error):
                finish(.failure(error.code == .timedOut ? .timedOut("bluetoothd: \(error)") : .failed(Self.pairFailure(error))))
            }
        }
    }

    /// How long bluetoothd may take to pair (a person types a passkey within it).
    static let pairLimit: Duration = .seconds(90)

    /// How long a device forgotten to be paired again may take to be found again.
    static let rediscoveryLimit: Duration = .seconds(30)

    /// bluetoothd's pairing errors (doc/org.bluez.Device.rst, Pair) as one phrase, its own words after it.
    static func pairFailure(_ error: DBusError) -> String {
        let phrases = [
            "org.bluez.Error.AuthenticationFailed": "authentication failed",
            "org.bluez.Error.AuthenticationRejected": "the pairing was rejected",
            "org.bluez.Error.AuthenticationCanceled": "the pairing was cancelled",
            "org.bluez.Error.AuthenticationTimeout": "the pairing timed out",
            "org.bluez.Error.ConnectionAttemptFailed": "the connection attempt failed",
            "org.bluez.Error.InProgress": "a pairing is already in progress",
        ]
        guard let name = error.name, let phrase = phrases[name] else { return "bluetoothd: \(error)" }
        return "\(phrase) (bluetoothd: \(error.reason))"
    }

    /// Our agent for the pairings the engine asks for, registered under `capability` (again when another one is
    /// asked for).
    private func registerPromptAgent(on connection: DBusConnection, capability: BlueZAgent.Capability,
                                     prompts: @escaping BlueZAgent.Handler) async throws(DBusError) {
        if let current = promptAgent.load() {
            if current.capability == capability { return }
            promptAgent.store(nil)
            await current.unregister()
        }
        let agent = try await BlueZAgent.register(on: connection, path: root + "/pairing", capability: capability, handler: prompts)
        let keep = promptAgent.withLock { current -> Bool in
            guard current == nil, !closing.load() else { return false }
            current = agent
            return true
        }
        if !keep { await agent.unregister() }
    }

    /// Removes `peer` from bluetoothd (its bond with it) while keeping the link `handle` for the caller, and waits
    /// until discovery finds the device again (at most ``rediscoveryLimit``).
    private func forget(_ handle: UInt16, _ peer: BluetoothAddress) async throws(BlueZCallError) {
        let (path, adapter, discovering) = await onLoopAsync { [self] in
            links[handle]?.replacing = true
            return (devicePath(peer), session?.adapterPath, scanning)
        }
        guard let path, let adapter else { throw .notConnected("bluetoothd does not know \(peer)") }
        let adapterInterface = BlueZAdapterSession.adapterInterface
        do {
            _ = try await callAsync(adapter, adapterInterface, "RemoveDevice", [.objectPath(path)])
        } catch {
            throw .failed("bluetoothd did not remove the bond of \(peer): \(error)")
        }
        if !discovering {
            _ = try? await callAsync(adapter, adapterInterface, "SetDiscoveryFilter", [.properties(["Transport": .string("le")])])
            _ = try? await callAsync(adapter, adapterInterface, "StartDiscovery")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + Self.rediscoveryLimit
        while await onLoopAsync({ [self] in devicePath(peer) == nil }), clock.now < deadline, !closing.load() {
            try? await Task.sleep(for: .milliseconds(100))
        }
        if await onLoopAsync({ [self] in !discovering && !scanning }) { _ = try? await callAsync(adapter, adapterInterface, "StopDiscovery") }
        guard await onLoopAsync({ [self] in devicePath(peer) != nil }) else {
            throw .notConnected("bluetoothd did not find \(peer) again within \(Self.rediscoveryLimit) after forgetting it")
        }
    }

    /// `body`'s value, computed on the loop.
    private func onLoopAsync<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async -> Value {
        await withCheckedContinuation { continuation in onLoop { continuation.resume(returning: body()) } }
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

    /// Our agent's handler: each prompt goes onto the loop (``prompt(_:_:)``).
    private var agentHandler: BlueZAgent.Handler {
        { [weak self] request, answer in
            guard let engine = self else { return answer(.reject) }
            engine.onLoop { engine.prompt(request, answer) }
        }
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
        let address = device.split(separator: "/").last.map { String($0.dropFirst(4)).replacing("_", with: ":") }
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
