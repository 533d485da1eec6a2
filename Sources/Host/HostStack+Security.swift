import ATT
public import BluetoothCore
public import BluetoothCrypto
import BluetoothRuntime
import GATT
import HCI
import L2CAP
import SMP
public import BluetoothEngine

/// The Security Manager of the host (Core 5.4 Vol 3 Part H): one ``SMPSession`` per connection on the host's
/// loop, fed SMP payloads (fixed channel 0x0006), Encryption Change and Encryption Key Refresh Complete; its PDUs
/// go out on the fixed channel, its encryption requests become LE Enable Encryption (central, Vol 4 Part E
/// §7.8.24), and the peripheral answers LE Long Term Key Request (§7.7.65.5) from the session during pairing or
/// from the bond store afterwards (legacy: the key we distributed, found by EDIV/Rand; LE SC: the shared key with
/// EDIV 0 / Rand 0), else with a Negative Reply (§7.8.26).
///
/// Bonds (``BondStore``) are written at bonding and on every CCCD change of a bonded peer; the old bond of a
/// peer is replaced only once a new pairing succeeded. A peer that lost its bond (encryption fails with PIN or
/// Key Missing, or it starts pairing on an unencrypted link while we hold its bond) is reported as
/// ``HostEvent/bondLost(handle:identity:)``; ``HostSecurityConfiguration/allowRepairing`` decides whether it may
/// pair again. GATT client requests answered with Insufficient Encryption / Authentication / Encryption Key Size
/// are held, the link is secured (bond or pairing), and the request is sent again once (Vol 3 Part C §10.3.2).
extension HostStack {
    // MARK: Public API

    /// Makes the link secure: as central, encrypts with the bond's key when there is one (unless
    /// `options.forcePairing`, or MITM is asked and the bond is unauthenticated), else pairs; as peripheral, sends
    /// a Security Request and waits for the central. Completes when the link is encrypted (and keys distributed),
    /// or fails (pairing failed, bond lost and re-pairing refused, SMP timeout, disconnection).
    public func pair(connectionHandle handle: UInt16, options: PairingOptions = PairingOptions(),
                     completion: @escaping @Sendable (Result<PairingOutcome, HostError>) -> Void) {
        onLoop { [self] in
            guard addWaiter(handle, completion) else { return }
            secure(handle, mitm: options.mitm ?? configuration.security.mitm, bonding: options.bonding,
                   force: options.forcePairing, ioCapability: options.ioCapability)
            armTimer()
        }
    }

    /// Central: encrypts the link with the stored bond of the peer (LE Enable Encryption with its LTK, EDIV and
    /// Rand). Fails with ``HostError/Code/invalidParameters`` when there is no bond or we are peripheral.
    public func encrypt(connectionHandle handle: UInt16,
                        completion: @escaping @Sendable (Result<PairingOutcome, HostError>) -> Void) {
        onLoop { [self] in
            guard let connection = connections[handle]?.connection, let link = connections[handle]?.session?.securityLink else {
                completion(.failure(noSecurity(handle)))
                return
            }
            guard connection.role == .central else {
                completion(.failure(HostError(.invalidParameters, "only the central starts encryption; use requestSecurity")))
                return
            }
            guard let bond = link.identity.flatMap({ securityState.bonds[$0] }), bond.centralEncryptionKey != nil else {
                completion(.failure(HostError(.invalidParameters, "no bond with \(connection.peer)")))
                return
            }
            _ = addWaiter(handle, completion)
            if link.bondEncryption == nil, !link.smp.isBusy { encryptWithBond(handle, bond) }
            armTimer()
        }
    }

    /// Peripheral: sends a Security Request (Vol 3 Part H §3.6.7); the central answers by encrypting with its bond
    /// or by pairing. The completion (optional) gets the outcome.
    public func requestSecurity(connectionHandle handle: UInt16, mitm: Bool? = nil,
                                completion: (@Sendable (Result<PairingOutcome, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            if let completion {
                guard addWaiter(handle, completion) else { return }
            } else if connections[handle]?.session?.securityLink == nil {
                return
            }
            secure(handle, mitm: mitm ?? configuration.security.mitm, bonding: nil, force: false)
            armTimer()
        }
    }

    /// The user's answer to a ``HostEvent/pairingInteraction(handle:_:)``. Always runs in a later job on the
    /// loop, so it may be called from the event handler.
    public func answerPairing(connectionHandle handle: UInt16, _ answer: PairingAnswer) {
        eventLoop.execute { [self] in
            guard let link = connections[handle]?.session?.securityLink, link.smp.isBusy else { return }
            let now = eventLoop.now
            let actions = withSecurityLink(handle) { link -> [SMPSession.Action] in
                switch answer {
                case .passkey(let passkey):
                    return link.smp.enterPasskey(passkey, now: now)
                case .confirm(let accepted):
                    if link.smp.method == .numericComparison { return link.smp.confirmNumericComparison(accepted, now: now) }
                    return link.smp.acceptJustWorks(accepted, now: now)
                }
            } ?? []
            performSMP(actions, handle)
        }
    }

    /// The bonds held now (completion on the loop).
    public func bonds(_ completion: @escaping @Sendable ([Bond]) -> Void) {
        onLoop { [self] in
            loadSecurityIfNeeded()
            completion(securityState.bonds.values.sorted { $0.identityAddress.value < $1.identityAddress.value })
        }
    }

    /// Forgets the bond of `identityAddress` (memory and store).
    public func removeBond(identityAddress: BluetoothAddress,
                           completion: (@Sendable (Result<Void, BondStoreError>) -> Void)? = nil) {
        onLoop { [self] in
            loadSecurityIfNeeded()
            if securityState.bonds.removeValue(forKey: identityAddress)?.peerIdentityResolvingKey != nil {
                securityState.resolvingListDirty = true
                syncResolvingList()
            }
            do throws(BondStoreError) {
                try configuration.security.bondStore.removeBond(identityAddress: identityAddress)
                completion?(.success(()))
            } catch {
                completion?(.failure(error))
            }
        }
    }

    /// The peer's identity address on this connection, when known (read on the loop).
    public func peerIdentity(connectionHandle handle: UInt16) -> BluetoothAddress? {
        connections[handle]?.session?.securityLink?.identity
    }

    /// The identity of a bonded device that uses `address` (its identity address, or an RPA one of our IRKs
    /// resolves), or nil (read on the loop): for advertising reports.
    public func resolveIdentity(of address: BluetoothAddress) -> BluetoothAddress? {
        securityState.bond(resolving: address)?.identityAddress
    }

    /// Our identity address (given in Identity Address Information) and IRK, once the stack is ready (read on
    /// the loop).
    public var localIdentityAddress: BluetoothAddress? { securityState.localIdentity }
    public var localIdentityResolvingKey: Block128? { securityState.localIRK }

    // MARK: Hooks (called by the wiring)

    /// Loads the bonds once the stack is ready (problems are reported as ``HostEvent/bondStoreError(_:)``) and
    /// fixes our identity.
    func loadSecurityIfNeeded() {
        guard !securityState.loaded, lifecycle == .ready, configuration.security.enabled else { return }
        securityState.loaded = true
        securityState.localIdentity = configuration.security.identityAddress ?? info.ownAddress
        if let irk = configuration.security.identityResolvingKey {
            securityState.localIRK = irk
        } else if configuration.security.keySource is SystemSMPKeySource {
            var generator = SystemRandomNumberGenerator()
            securityState.localIRK = Block128(high: generator.next(), low: generator.next())
        } else {
            securityState.localIRK = drawSeed()
        }
        let contents = configuration.security.bondStore.loadBonds()
        for bond in contents.bonds { securityState.bonds[bond.identityAddress] = bond }
        if configuration.security.privateAddressRotation != nil { securityState.rpaDeadline = eventLoop.now }
        for problem in contents.problems { emit(.bondStoreError(problem)) }
        startControllerPrivacyIfOffered()
    }

    /// A connection's session was created: its SMP session, and the peer's identity when we hold its bond.
    func securityLinkOpened(_ connection: Connection) {
        guard configuration.security.enabled, connections[connection.handle]?.session != nil else { return }
        loadSecurityIfNeeded()
        let bond = securityState.bond(resolving: connection.peer)
        // The addresses on the air (Vol 3 Part H §2.2.8): the controller's RPAs when it did our privacy.
        let record = info.usesControllerPrivacy ? connections[connection.handle] : nil
        let local = record?.localAirAddress ?? info.ownAddress
        let peerOnAir = record?.peerAirAddress ?? connection.peer
        var pairing = configuration.security.pairing(
            local: local, peer: peerOnAir, identity: securityState.localIdentity ?? info.ownAddress,
            irk: securityState.localIRK, keySource: nextKeySource())
        applyOutOfBand(&pairing, peer: connection.peer)
        let smp = SMPSession(role: connection.role == .central ? .central : .peripheral, configuration: pairing)
        connections[connection.handle]?.session?.securityLink = SecurityLink(smp: smp, identity: bond?.identityAddress)
        installSigning(connection.handle)
        if let identity = bond?.identityAddress, identity != connection.peer {
            let handle = connection.handle
            eventLoop.execute { [weak self] in
                guard let self, connections[handle]?.session?.securityLink?.identity == identity else { return }
                emit(.peerIdentityResolved(handle: handle, identity: identity))
            }
        }
    }

    /// Disconnection: everyone waiting fails; a pairing in progress is reported failed.
    func securityLinkClosed(_ link: SecurityLink?, handle: UInt16, error: HostError) {
        securityState.deferredPairings.remove(handle)
        guard let link else { return }
        if let deferred = link.deferredCompletion {
            // The pairing completed and its bond is stored; the link went before the controller acknowledged our
            // last PDUs (whether the peer got them is unknown): the outcome is announced as it stands.
            emit(.pairingCompleted(handle: handle, deferred.outcome))
            for completion in link.waiting { completion(.success(deferred.outcome)) }
            return
        }
        var error = error
        if error.status == .connectionTerminatedMICFailure, link.smp.isBusy || link.bondEncryption != nil {
            // The link ended because the two sides' keys differ (Vol 6 Part E §1; Vol 4 Part E §7.7.5).
            error = .security(.encryptionFailed(.connectionTerminatedMICFailure),
                              "encryption failed: the link ended with \(HCIStatus.connectionTerminatedMICFailure)")
        }
        if link.smp.isBusy || link.bondEncryption != nil || !link.waiting.isEmpty {
            emit(.pairingFailed(handle: handle, reason: nil, error: error))
        }
        for completion in link.waiting { completion(.failure(error)) }
    }

    /// An SMP payload arrived on the fixed channel.
    func securityReceive(_ payload: [UInt8], handle: UInt16) {
        guard let connection = connections[handle]?.connection, let link = connections[handle]?.session?.securityLink else { return }
        if connection.role == .peripheral, payload.first == SMPCode.pairingRequest.rawValue, !connection.isEncrypted,
           !link.smp.isBusy || link.securityRequested,
           let identity = link.identity, securityState.bonds[identity] != nil {
            // The central pairs although we hold its bond: it lost its keys.
            emit(.bondLost(handle: handle, identity: identity))
            guard connections[handle]?.session?.securityLink != nil else { return }
            if !configuration.security.allowRepairing(identity) {
                sendSMP(SMPPDU.pairingFailed(reason: .pairingNotSupported).encode(), handle)
                failSecurity(handle, .security(.bondLost(identity: identity),
                                               "\(identity) lost its bond and re-pairing is not allowed (Pairing Not Supported sent)"),
                             reason: .pairingNotSupported)
                return
            }
        }
        let now = eventLoop.now
        let actions = withSecurityLink(handle) { $0.smp.receive(payload, now: now) } ?? []
        performSMP(actions, handle)
    }

    /// Encryption Change or Encryption Key Refresh Complete, after the connection and GATT security were updated.
    func securityEncryptionChanged(handle: UInt16, status: HCIStatus, enabled: Bool) {
        guard let connection = connections[handle]?.connection, let link = connections[handle]?.session?.securityLink else { return }
        let now = eventLoop.now
        if let bond = link.bondEncryption {
            withSecurityLink(handle) { $0.bondEncryption = nil }
            if status == .success, enabled {
                withSecurityLink(handle) { link in
                    link.authenticated = bond.authenticated
                    link.keySize = bond.keySize
                    link.identity = bond.identityAddress
                    link.securityRequested = false
                }
                applyGATTSecurity(handle)
                restoreClientConfigurations(handle, bond)
                performSMP(withSecurityLink(handle) { $0.smp.encryptionChanged(enabled: true, now: now) } ?? [], handle)
                finishWaiting(handle, .success(PairingOutcome(bond: bond)))
                resumeHeld(handle)
            } else if connection.role == .central, status == .pinOrKeyMissing {
                bondLost(handle, bond)
            } else {
                failSecurity(handle, .security(.encryptionFailed(status),
                                               "encryption with the bond of \(bond.identityAddress) failed: \(status)"), reason: nil)
            }
            return
        }
        if status == .success {
            if enabled, let method = link.smp.method {
                withSecurityLink(handle) { $0.authenticated = method.isAuthenticated }
            }
            applyGATTSecurity(handle)
            performSMP(withSecurityLink(handle) { $0.smp.encryptionChanged(enabled: enabled, now: now) } ?? [], handle)
        } else if link.smp.isBusy {
            performSMP(withSecurityLink(handle) { $0.smp.encryptionChanged(enabled: false, now: now) } ?? [], handle,
                       encryptionStatus: status)
        }
    }

    /// LE Long Term Key Request: the session's key during pairing, the bond's afterwards, else a negative reply.
    /// Returns false when the security layer does not run on this connection (the event is then only reported).
    func securityLongTermKeyRequested(handle: UInt16, rand: UInt64, ediv: UInt16) {
        guard configuration.security.enabled, let link = connections[handle]?.session?.securityLink else { return }
        if let key = link.smp.longTermKeyRequested(ediv: ediv, rand: rand) {
            replyLongTermKey(handle, key)
            return
        }
        var bond = link.identity.flatMap { securityState.bonds[$0] }
        if bond?.peripheralKey(ediv: ediv, rand: rand) == nil, ediv != 0 || rand != 0 {
            bond = securityState.bonds.values.first { $0.localLongTermKey?.ediv == ediv && $0.localLongTermKey?.rand == rand }
        }
        if let bond, let key = bond.peripheralKey(ediv: ediv, rand: rand) {
            withSecurityLink(handle) { $0.bondEncryption = bond }
            replyLongTermKey(handle, key.key)
        } else {
            command(.leLongTermKeyRequestNegativeReply(handle: handle)) { [self] result in
                if case .failure(let error) = result { emit(.controllerError(error)) }
            }
        }
    }

    /// GATT server events of a request: CCCD changes of a bonded peer are stored.
    func securityServerEvents(_ events: [GATTServerEvent], handle: UInt16) {
        for event in events {
            guard case .subscriptionChanged(_, let valueHandle, let configuration) = event,
                  let identity = connections[handle]?.session?.securityLink?.identity,
                  var bond = securityState.bonds[identity] else { continue }
            if configuration.isEmpty {
                bond.clientConfigurations.removeValue(forKey: valueHandle)
            } else {
                bond.clientConfigurations[valueHandle] = configuration.rawValue
            }
            guard bond != securityState.bonds[identity] else { continue }
            securityState.bonds[identity] = bond
            persist(bond)
        }
    }

    /// A client request's answer: Insufficient Encryption / Authentication / Key Size is held (not given to the
    /// client) while the link is secured; returns true when held.
    /// `bearer` names the bearer the answer came on; the retry goes on the same bearer.
    func securityHoldsResponse(_ id: ATTBearerRequestID, _ result: Result<ATTPDU, ATTBearerError>, handle: UInt16,
                               bearer: ATTBearerKey) -> Bool {
        guard let link = connections[handle]?.session?.securityLink else { return false }
        if link.retriedRequest == id, link.retriedBearer == bearer {
            withSecurityLink(handle) { $0.retriedRequest = nil }
            return false
        }
        let answered: ATTErrorCode?
        switch result {
        case .success(.errorResponse(_, _, let error)): answered = error
        case .failure(let failure) where failure.code == .errorResponse: answered = failure.attError
        default: answered = nil
        }
        guard configuration.security.retriesOnInsufficientSecurity, let error = answered,
              [ATTErrorCode.insufficientEncryption, .insufficientAuthentication, .insufficientEncryptionKeySize].contains(error),
              link.held == nil, !link.smp.isDead,
              let request = connections[handle]?.session?.bearers[bearer]?.client.outstandingRequest,
              withBearer(handle, bearer, { $0.requests.remove(id) }) != nil else { return false }
        withSecurityLink(handle) {
            $0.held = SecurityLink.HeldRequest(request: request, answer: result, error: error, bearer: bearer)
        }
        let encrypted = connections[handle]?.connection.isEncrypted ?? false
        let mitm = error == .insufficientAuthentication || configuration.security.mitm
        secure(handle, mitm: mitm, bonding: nil, force: encrypted && error != .insufficientAuthentication)
        armTimer()
        return true
    }

    // MARK: SMP actions

    /// Performs the session's actions. `encryptionStatus`: the HCI status of a failed encryption that made SMP
    /// fail (kept in the error of the resulting Pairing Failed).
    func performSMP(_ actions: [SMPSession.Action], _ handle: UInt16, encryptionStatus: HCIStatus? = nil) {
        for action in actions {
            guard connections[handle]?.session?.securityLink != nil else { return }
            switch action {
            case .send(let bytes):
                sendSMP(bytes, handle)
            case .startEncryption(let ltk, let ediv, let rand):
                command(.leEnableEncryption(handle: handle, randomNumber: rand, encryptedDiversifier: ediv, longTermKey: ltk)) { [self] result in
                    guard case .failure(let error) = result else { return }
                    let now = eventLoop.now
                    performSMP(withSecurityLink(handle) { $0.smp.encryptionChanged(enabled: false, now: now) } ?? [], handle,
                               encryptionStatus: error.status ?? .unspecifiedError)
                }
            case .displayPasskey(let passkey):
                emit(.pairingInteraction(handle: handle, .displayPasskey(passkey)))
            case .requestPasskey:
                emit(.pairingInteraction(handle: handle, .enterPasskey))
            case .confirmNumericValue(let value):
                emit(.pairingInteraction(handle: handle, .confirmNumericValue(value)))
            case .requestJustWorksConsent:
                emit(.pairingInteraction(handle: handle, .confirmJustWorks))
            case .pairingComplete(let result):
                pairingCompleted(result, handle)
            case .pairingFailed(let reason, let locally):
                var error = HostError.security(.pairingFailed(reason, remote: !locally))
                if let encryptionStatus {
                    error.status = encryptionStatus
                    error.reason += " (encryption failed: \(encryptionStatus))"
                }
                failSecurity(handle, error, reason: reason)
            case .securityRequestReceived(let requirements):
                guard configuration.security.answersSecurityRequests else { continue }
                // A MITM request cannot be met when we have neither input nor output (Just Works is all we can
                // do): as Linux's SMP does, an unauthenticated bond then satisfies it and the link is encrypted with
                // it (Vol 3 Part H §2.4.6: encrypt with an LTK whose properties meet the request); pairing, when
                // needed, still mirrors the request's MITM flag. Found with bluetoothd as the peripheral
                // (Scripts/vm/scenarios/bluez-pairing.sh: it asked for MITM and refused our Just Works re-pairing).
                if requirements.contains(.mitm), !configuration.security.mitm, let bond = bondMeetingRequestWithoutMITM(handle) {
                    encryptWithBond(handle, bond)
                    continue
                }
                secure(handle, mitm: requirements.contains(.mitm) || configuration.security.mitm, bonding: nil, force: false)
            case .timedOut:
                failSecurity(handle, .security(.smpTimeout), reason: nil)
            }
        }
        armTimer()
    }

    func sendSMP(_ bytes: [UInt8], _ handle: UInt16) {
        guard let linkActions = try? connections[handle]?.session?.link.sendFixed(channel: .securityManager, payload: bytes) else { return }
        performLink(linkActions, handle)
    }

    // MARK: Internals

    @discardableResult
    func withSecurityLink<T>(_ handle: UInt16, _ body: (inout SecurityLink) -> T) -> T? {
        guard var link = connections[handle]?.session?.securityLink else { return nil }
        let result = body(&link)
        connections[handle]?.session?.securityLink = link
        return result
    }

    func noSecurity(_ handle: UInt16) -> HostError {
        connections[handle] == nil
            ? HostError(.unknownConnection, "no connection \(Dissection.hex16(handle))")
            : HostError(.unsupported, "no Security Manager on connection \(Dissection.hex16(handle)) (disabled or raw L2CAP)")
    }

    func addWaiter(_ handle: UInt16, _ completion: @escaping SecurityLink.Completion) -> Bool {
        guard connections[handle]?.session?.securityLink != nil else {
            completion(.failure(noSecurity(handle)))
            return false
        }
        withSecurityLink(handle) { $0.waiting.append(completion) }
        return true
    }

    /// Starts what makes the link secure, unless something already runs (its outcome completes the waiting).
    func secure(_ handle: UInt16, mitm: Bool, bonding: Bool?, force: Bool, ioCapability: SMPIOCapability? = nil) {
        guard let connection = connections[handle]?.connection, let link = connections[handle]?.session?.securityLink else { return }
        if link.smp.isDead {
            failSecurity(handle, .security(.smpTimeout, "SMP timed out earlier on this link; reconnect"), reason: nil)
            return
        }
        if link.bondEncryption != nil || (link.smp.isBusy && !(connection.role == .peripheral && link.securityRequested)) { return }
        let bond = link.identity.flatMap { securityState.bonds[$0] }
        if !force, connection.isEncrypted, !mitm || link.authenticated {
            finishWaiting(handle, .success(PairingOutcome(
                usedExistingBond: bond != nil, method: nil, secureConnections: bond?.secureConnections ?? false,
                authenticated: link.authenticated, keySize: link.keySize, bonded: bond != nil, identityAddress: link.identity)))
            resumeHeld(handle)
            return
        }
        let now = eventLoop.now
        switch connection.role {
        case .central:
            if !force, let bond, bond.centralEncryptionKey != nil, !mitm || bond.authenticated {
                encryptWithBond(handle, bond)
                return
            }
            let actions = withSecurityLink(handle) { link -> [SMPSession.Action] in
                link.smp.configuration.mitm = mitm
                if let bonding { link.smp.configuration.bonding = bonding }
                if let ioCapability { link.smp.configuration.ioCapability = ioCapability }
                return link.smp.startPairing(now: now)
            } ?? []
            performSMP(actions, handle)
        case .peripheral:
            guard !link.securityRequested else { return }
            let actions = withSecurityLink(handle) { link -> [SMPSession.Action] in
                link.smp.configuration.mitm = mitm
                if let bonding { link.smp.configuration.bonding = bonding }
                link.securityRequested = true
                return link.smp.requestSecurity(now: now)
            } ?? []
            performSMP(actions, handle)
        }
    }

    /// The bond to encrypt with when a peripheral asks for MITM protection that we, without input or output, could
    /// not give by pairing: the central's unencrypted link, idle, with a stored key.
    func bondMeetingRequestWithoutMITM(_ handle: UInt16) -> Bond? {
        guard let connection = connections[handle]?.connection, connection.role == .central, !connection.isEncrypted,
              let link = connections[handle]?.session?.securityLink, link.bondEncryption == nil, !link.smp.isBusy,
              link.smp.configuration.ioCapability == .noInputNoOutput,
              let bond = link.identity.flatMap({ securityState.bonds[$0] }), bond.centralEncryptionKey != nil
        else { return nil }
        return bond
    }

    func encryptWithBond(_ handle: UInt16, _ bond: Bond) {
        guard let key = bond.centralEncryptionKey else { return }
        withSecurityLink(handle) { $0.bondEncryption = bond }
        command(.leEnableEncryption(handle: handle, randomNumber: key.rand, encryptedDiversifier: key.ediv, longTermKey: key.key)) { [self] result in
            guard case .failure(var error) = result else { return }
            withSecurityLink(handle) { $0.bondEncryption = nil }
            if let status = error.status { error.security = .encryptionFailed(status) }
            failSecurity(handle, error, reason: nil)
        }
    }

    func replyLongTermKey(_ handle: UInt16, _ key: [UInt8]) {
        command(.leLongTermKeyRequestReply(handle: handle, longTermKey: key)) { [self] result in
            if case .failure(let error) = result { emit(.controllerError(error)) }
        }
    }

    /// Central: encryption with the bond failed with PIN or Key Missing.
    func bondLost(_ handle: UInt16, _ bond: Bond) {
        emit(.bondLost(handle: handle, identity: bond.identityAddress))
        guard connections[handle]?.session?.securityLink != nil else { return }
        if configuration.security.allowRepairing(bond.identityAddress) {
            let now = eventLoop.now
            let mitm = configuration.security.mitm
            let actions = withSecurityLink(handle) { link -> [SMPSession.Action] in
                link.smp.configuration.mitm = mitm
                return link.smp.startPairing(now: now)
            } ?? []
            performSMP(actions, handle)
        } else {
            failSecurity(handle, .security(.bondLost(identity: bond.identityAddress)), reason: nil)
        }
    }

    func pairingCompleted(_ result: SMPPairingResult, _ handle: UInt16) {
        guard let connection = connections[handle]?.connection, let link = connections[handle]?.session?.securityLink else { return }
        let previous = link.identity
        let identity = result.peerKeys.identityAddress ?? previous ?? connection.peer
        withSecurityLink(handle) { link in
            link.identity = identity
            link.authenticated = result.authenticated
            link.keySize = result.keySize
            link.securityRequested = false
        }
        if result.bonded {
            var bond = Bond(identityAddress: identity, keySize: result.keySize, authenticated: result.authenticated,
                            secureConnections: result.secureConnections)
            bond.peerIdentityResolvingKey = result.peerKeys.identityResolvingKey
            bond.sharedLongTermKey = result.sharedLongTermKey
            bond.peerLongTermKey = result.peerKeys.longTermKey
            bond.localLongTermKey = result.localKeys.longTermKey
            bond.peerSignatureKey = result.peerKeys.signatureKey
            bond.localSignatureKey = result.localKeys.signatureKey
            bond.clientConfigurations = currentClientConfigurations(handle)
            if connection.peer != identity, connection.peer.kind == .public || connection.peer.kind == .randomStatic {
                bond.connectionAddress = connection.peer
            }
            // Another bond paired from this address belongs to a peer that now gave this identity: it goes.
            for stale in securityState.bonds.values where stale.identityAddress != identity && stale.identityAddress != previous
                && bond.connectionAddress != nil && stale.connectionAddress == bond.connectionAddress {
                securityState.bonds[stale.identityAddress] = nil
                try? configuration.security.bondStore.removeBond(identityAddress: stale.identityAddress)
            }
            if let previous, previous != identity, securityState.bonds.removeValue(forKey: previous) != nil {
                try? configuration.security.bondStore.removeBond(identityAddress: previous)
            }
            securityState.bonds[identity] = bond
            persist(bond)
            installSigning(handle)
            if bond.peerIdentityResolvingKey != nil {
                securityState.resolvingListDirty = true
                syncResolvingList()
            }
        }
        applyGATTSecurity(handle)
        let outcome = PairingOutcome(
            usedExistingBond: false, method: result.method, secureConnections: result.secureConnections,
            authenticated: result.authenticated, keySize: result.keySize, bonded: result.bonded, identityAddress: identity,
            localKeys: result.localKeys, peerKeys: result.peerKeys)
        let resolved = identity != connection.peer && previous != identity ? identity : nil
        if outboundDrained(handle) {
            announcePairing(outcome, resolved: resolved, handle)
        } else {
            // Our last SMP PDUs (the central's key distribution) are still queued or unacknowledged: a caller
            // that disconnected now would lose them (HCI Disconnect drops the controller's buffers, Vol 4 Part E
            // §7.1.6), and the peer would store no bond. Completion waits for Number Of Completed Packets
            // (`announceDeliveredPairings`, from the ACL pump), or at most `keyDeliveryLimit`.
            let now = eventLoop.now
            withSecurityLink(handle) { link in
                link.deferredCompletion = SecurityLink.DeferredCompletion(
                    outcome: outcome, resolvedIdentity: resolved, giveUpAt: now + Self.keyDeliveryLimit)
            }
            securityState.deferredPairings.insert(handle)
            armTimer()
        }
    }

    /// How long a completed pairing waits at most for its PDUs to be acknowledged (a controller that never
    /// reports Number Of Completed Packets).
    static var keyDeliveryLimit: Duration { .seconds(1) }

    /// Nothing of the connection is queued for or unacknowledged by the controller.
    func outboundDrained(_ handle: UInt16) -> Bool {
        outbound.queuedPacketCount(for: handle) == 0 && outbound.inFlightPacketCount(for: handle) == 0
    }

    /// The pairing outcome goes to the event handler and the waiting callers; the held GATT request is retried.
    func announcePairing(_ outcome: PairingOutcome, resolved: BluetoothAddress?, _ handle: UInt16) {
        if outcome.method == .outOfBand, !outcome.usedExistingBond, let peer = connections[handle]?.connection.peer {
            consumeOutOfBandData(pairedWith: peer)
        }
        emit(.pairingCompleted(handle: handle, outcome))
        if let resolved { emit(.peerIdentityResolved(handle: handle, identity: resolved)) }
        finishWaiting(handle, .success(outcome))
        resumeHeld(handle)
    }

    /// The ACL pump ran (after Number Of Completed Packets freed controller buffers, Vol 4 Part E §7.7.19):
    /// deferred pairing completions whose connection has nothing queued or unacknowledged any more are announced.
    /// Costs nothing when no pairing waits.
    func announceDeliveredPairings() {
        guard !securityState.deferredPairings.isEmpty else { return }
        for handle in securityState.deferredPairings.sorted() where outboundDrained(handle) {
            announceDeferredPairing(handle)
        }
    }

    /// Deferred pairing completions whose time limit passed are announced (the host's timer).
    func checkDeferredPairings(now: StackInstant) {
        for handle in securityState.deferredPairings.sorted() {
            guard let deferred = connections[handle]?.session?.securityLink?.deferredCompletion else {
                securityState.deferredPairings.remove(handle)
                continue
            }
            if deferred.giveUpAt <= now || outboundDrained(handle) { announceDeferredPairing(handle) }
        }
    }

    func announceDeferredPairing(_ handle: UInt16) {
        securityState.deferredPairings.remove(handle)
        guard let deferred = connections[handle]?.session?.securityLink?.deferredCompletion else { return }
        withSecurityLink(handle) { $0.deferredCompletion = nil }
        announcePairing(deferred.outcome, resolved: deferred.resolvedIdentity, handle)
        armTimer()
    }

    func persist(_ bond: Bond) {
        do throws(BondStoreError) {
            try configuration.security.bondStore.saveBond(bond)
        } catch {
            emit(.bondStoreError(error))
        }
    }

    func failSecurity(_ handle: UInt16, _ error: HostError, reason: SMPPairingFailedReason?) {
        withSecurityLink(handle) { $0.securityRequested = false }
        emit(.pairingFailed(handle: handle, reason: reason, error: error))
        finishWaiting(handle, .failure(error))
        guard let held = connections[handle]?.session?.securityLink?.held else { return }
        withSecurityLink(handle) { $0.held = nil }
        emit(.gattSecurityFailed(handle: handle, attError: held.error, error: error))
        let failure = Self.gattSecurityFailure(error)
        guard let actions = withBearer(handle, held.bearer, { $0.client.receive(bearerResult: held.answer, securityFailure: failure) })
        else { return }
        performClient(actions, handle, held.bearer)
    }

    /// The GATT client's view of a security failure (GATT does not know ``HostError``).
    static func gattSecurityFailure(_ error: HostError) -> GATTSecurityFailure {
        switch error.security {
        case .pairingFailed(let reason, let remote)?: return .pairingFailed(reason, remote: remote)
        case .smpTimeout?: return .timedOut
        case .encryptionFailed(let status)?: return .encryptionFailed(status)
        case .bondLost?: return .bondLost
        case nil: return .other(error.description)
        }
    }

    func finishWaiting(_ handle: UInt16, _ result: Result<PairingOutcome, HostError>) {
        let waiting = withSecurityLink(handle) { link -> [SecurityLink.Completion] in
            let waiting = link.waiting
            link.waiting = []
            return waiting
        } ?? []
        for completion in waiting { completion(result) }
    }

    /// The held client request goes out again, once.
    func resumeHeld(_ handle: UInt16) {
        guard let held = connections[handle]?.session?.securityLink?.held else { return }
        let now = eventLoop.now
        let enqueued = withBearer(handle, held.bearer) { entry -> (ATTBearerRequestID, [ATTBearerAction]) in
            let (id, actions) = entry.bearer.enqueue(request: held.request, now: now)
            entry.requests.insert(id)
            return (id, actions)
        }
        withSecurityLink(handle) { link in
            link.held = nil
            link.retriedRequest = enqueued?.0
            link.retriedBearer = held.bearer
        }
        // An Enhanced ATT bearer closed meanwhile already failed its procedures.
        guard let (_, actions) = enqueued else { return }
        performBearer(actions, handle, held.bearer)
        armTimer()
    }

    /// The GATT server's view of the link: encrypted, authenticated and key size from SMP.
    func applyGATTSecurity(_ handle: UInt16) {
        guard let connection = connections[handle]?.connection, let session = connections[handle]?.session,
              let link = session.securityLink else { return }
        var security = session.security
        security.encrypted = connection.isEncrypted
        security.authenticated = connection.isEncrypted && link.authenticated
        security.keySize = connection.isEncrypted ? Int(link.keySize == 0 ? 16 : link.keySize) : 0
        connections[handle]?.session?.security = security
        gattServer.setSecurity(security, for: GATTConnectionID(handle))
    }

    func currentClientConfigurations(_ handle: UInt16) -> [UInt16: UInt16] {
        var values: [UInt16: UInt16] = [:]
        let id = GATTConnectionID(handle)
        for characteristic in gattServer.database.services.flatMap(\.characteristics) where characteristic.clientConfiguration != nil {
            let configuration = gattServer.clientConfiguration(valueHandle: characteristic.value, for: id)
            if !configuration.isEmpty { values[characteristic.value] = configuration.rawValue }
        }
        return values
    }

    func restoreClientConfigurations(_ handle: UInt16, _ bond: Bond) {
        let id = GATTConnectionID(handle)
        for characteristic in gattServer.database.services.flatMap(\.characteristics) {
            guard let descriptor = characteristic.clientConfiguration,
                  let raw = bond.clientConfigurations[characteristic.value] else { continue }
            gattServer.setClientConfiguration(GATTClientConfiguration(rawValue: raw), descriptor: descriptor, for: id)
        }
    }

    func drawSeed() -> Block128 {
        var source = securityState.keySource ?? configuration.security.keySource
        let seed = source.random128()
        securityState.keySource = source
        return seed
    }

    func nextKeySource() -> any SMPKeySource {
        if configuration.security.keySource is SystemSMPKeySource { return SystemSMPKeySource() }
        let seed = drawSeed()
        return SeededSMPKeySource(SplitMixGenerator(state: seed.high ^ seed.low))
    }

    // MARK: Timer (RPA rotation, deferred pairing completions)

    /// The RPA rotation deadline and the next look at deferred pairing completions (for the host's one timer).
    var securityNextDeadline: StackInstant? {
        // Asked after every packet (armTimer): no array built when nothing is deferred.
        var earliest: StackInstant?
        func consider(_ deadline: StackInstant?) {
            if let deadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        consider(securityState.rpaDeadline)
        consider(securityState.resolvingListRetry)
        for handle in securityState.deferredPairings {
            consider(connections[handle]?.session?.securityLink?.deferredCompletion?.giveUpAt)
        }
        return earliest
    }

    /// Our resolvable private address is due: a new one from our IRK with LE Set Random Address, unless
    /// advertising, scanning or connecting (then retried a second later).
    func securityTimerFired(now: StackInstant) {
        checkDeferredPairings(now: now)
        controllerPrivacyTimerFired(now: now)
        guard let deadline = securityState.rpaDeadline, deadline <= now else { return }
        guard let interval = configuration.security.privateAddressRotation, let irk = securityState.localIRK else {
            securityState.rpaDeadline = nil
            return
        }
        if isAdvertising || isScanning || pendingConnect != nil || securityState.rpaCommandPending {
            securityState.rpaDeadline = now + .seconds(1)
            return
        }
        securityState.rpaDeadline = now + interval
        guard let address = try? ResolvablePrivateAddress.generate(irk: irk) else { return }
        securityState.rpaCommandPending = true
        command(.leSetRandomAddress(address)) { [self] result in
            securityState.rpaCommandPending = false
            switch result {
            case .success:
                info.ownAddress = address
                emit(.privateAddressChanged(address))
            case .failure(let error):
                emit(.controllerError(error))
            }
        }
    }
}
