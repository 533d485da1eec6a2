public import BluetoothCore
import BluetoothCrypto
import DequeModule

/// The Security Manager of one LE link: pairing, key generation and key distribution in either role, sans-I/O
/// (Core 5.4 Vol 3 Part H §2.3 pairing methods, §2.4 key distribution, §3 SMP; timeout §3.4).
///
/// Design note. A plain struct owned by whoever owns the link (the Host's connection table), driven on that
/// owner's executor; no threads, clocks or I/O. Inputs: received SMP payloads (``receive(_:now:)``), the host's
/// commands (``startPairing(now:)`` as central, ``requestSecurity(now:)`` as peripheral), the user's answers
/// (``enterPasskey(_:now:)``, ``confirmNumericComparison(_:now:)``, ``acceptJustWorks(_:now:)``), the link's
/// encryption state (``encryptionChanged(enabled:keySize:now:)``) and timeouts (``nextDeadline``,
/// ``handleTimeout(now:)``). Outputs: ``Action`` values, performed by the owner in order. The peripheral's
/// controller asks for the key through the owner, which calls ``longTermKeyRequested(ediv:rand:)``.
///
/// The central is the initiator, the peripheral the responder. Phase 1 is the feature exchange (method, key size,
/// key distribution), phase 2 authenticates (legacy: TK, c1 confirms, s1 STK; LE Secure Connections: P-256 keys,
/// f4 commitments, 20 passkey rounds, f5 MacKey/LTK, f6 DHKey checks, g2 numeric value), the central then
/// encrypts the link and phase 3 distributes the agreed keys, responder first, in the order of §3.6.1.
///
/// Strictness: a PDU that is not the one expected in the current state fails pairing with Unspecified Reason; a
/// PDU the role never receives (Pairing Request at a central, Pairing Response or Security Request at a
/// peripheral) or a reserved code with Command Not Supported; a decode error (wrong length, key size outside
/// 7...16) or a reserved IO capability with Invalid Parameters. Outside a procedure these are answered with
/// Pairing Failed and no event. A peer public key that is off the curve, the point at infinity, or reflects our
/// own X coordinate fails with DHKey Check Failed (as Zephyr does; Bumble 0.0.236 answers Unspecified Reason
/// through its generic exception handler and does not check for reflection). After the 30 s SMP timeout the
/// session is dead: it sends nothing and ignores everything until the link is replaced.
///
/// Deviations: on receiving a Security Request the central starts no timer (its host may answer by encrypting
/// with a bond instead of pairing); received keypress notifications are ignored.
public struct SMPSession: Sendable {
    /// The side of the link: the central initiates pairing, the peripheral responds.
    public enum Role: Hashable, Sendable {
        case central
        case peripheral
    }

    /// What the owner must do, in order.
    public enum Action: Hashable, Sendable {
        /// Send this SMP PDU on the fixed channel 0x0006.
        case send([UInt8])
        /// Central: start link encryption (HCI LE Enable Encryption) with this key (wire order) and EDIV/Rand.
        case startEncryption(ltk: [UInt8], ediv: UInt16, rand: UInt64)
        /// Show this six-digit passkey to the user.
        case displayPasskey(UInt32)
        /// Ask the user for the passkey shown on the other device (answer with ``SMPSession/enterPasskey(_:now:)``).
        case requestPasskey
        /// Show this six-digit value and ask whether the other device shows the same
        /// (answer with ``SMPSession/confirmNumericComparison(_:now:)``).
        case confirmNumericValue(UInt32)
        /// Ask the user to accept pairing without authentication (answer with ``SMPSession/acceptJustWorks(_:now:)``).
        case requestJustWorksConsent
        /// Pairing (and key distribution) succeeded.
        case pairingComplete(SMPPairingResult)
        /// Pairing failed: `locally` when we detected it (and sent Pairing Failed), false when the peer sent it.
        case pairingFailed(SMPPairingFailedReason, locally: Bool)
        /// Central: the peripheral asks for security with these requirements; the host pairs or encrypts.
        case securityRequestReceived(SMPAuthenticationRequirements)
        /// The 30 s SMP timeout expired: SMP is over on this link until it is re-established.
        case timedOut
    }

    enum Step: Hashable, Sendable {
        case pairingResponse, publicKey, confirm, random, dhKeyCheck, encryption, keys
    }

    enum State: Hashable, Sendable {
        case idle
        case securityRequested
        case pairing(Step)
        case dead
    }

    struct Failure: Error {
        var reason: SMPPairingFailedReason
        init(_ reason: SMPPairingFailedReason) { self.reason = reason }
    }

    struct Pairing: Sendable {
        var request: SMPPairingParameters
        var preq: [UInt8]
        var response: SMPPairingParameters?
        var pres: [UInt8] = []
        var method: SMPPairingMethod = .justWorks
        var secureConnections = false
        var keySize: UInt8 = 16
        var initiatorKeys: SMPKeyDistribution = []
        var responderKeys: SMPKeyDistribution = []
        var localRandom: Block128 = .zero
        var peerRandom: Block128?
        var peerConfirm: Block128?
        var localConfirmSent = false
        var temporaryKey: Block128?
        var passkey: UInt32?
        var userConfirmed = true
        var keyPair: LEKeyPair?
        var peerPublicKey: LEPublicKey?
        var dhKey: DHKey?
        var round = 0
        var macKey: Block128?
        var peerCheck: Block128?
        var localCheckSent = false
        var encryptionKey: Block128?
        var expectedKeys: Deque<SMPCode> = []
        var pendingLongTermKey: [UInt8]?
        var localKeys = SMPDistributedKeys()
        var peerKeys = SMPDistributedKeys()

        init(request: SMPPairingParameters, preq: [UInt8]) {
            self.request = request
            self.preq = preq
        }
    }

    public let role: Role
    public var configuration: SMPPairingConfiguration
    var state: State = .idle
    var pairing: Pairing?
    var deadline: StackInstant?

    public init(role: Role, configuration: SMPPairingConfiguration) {
        self.role = role
        self.configuration = configuration
    }

    // MARK: Observation

    /// When ``handleTimeout(now:)`` has something to do (the SMP timeout), or nil.
    public var nextDeadline: StackInstant? { deadline }
    /// Whether the SMP timeout expired on this link.
    public var isDead: Bool { state == .dead }
    /// Whether a pairing (or a Security Request) is in progress.
    public var isBusy: Bool { pairing != nil || state == .securityRequested }
    /// The method of the pairing in progress, once the feature exchange is over.
    public var method: SMPPairingMethod? { pairing?.response != nil ? pairing?.method : nil }
    /// What is held for the procedure in progress (0 when idle): for leak checks.
    public var pendingStateCount: Int { (pairing == nil ? 0 : 1) + (deadline == nil ? 0 : 1) }

    var initiatorAddress: BluetoothAddress { role == .central ? configuration.localAddress : configuration.peerAddress }
    var responderAddress: BluetoothAddress { role == .central ? configuration.peerAddress : configuration.localAddress }

    // MARK: Host commands

    /// Central: sends a Pairing Request (§3.5.1). Ignored unless idle.
    public mutating func startPairing(now: StackInstant) -> [Action] {
        guard role == .central else { return [] }
        if state == .dead { return [.pairingFailed(.unspecifiedReason, locally: true)] }
        guard state == .idle else { return [] }
        let allKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey]
        let request = SMPPairingParameters(
            ioCapability: configuration.ioCapability, oobDataFlag: configuration.oobDataFlag,
            authenticationRequirements: configuration.authenticationRequirements,
            maximumEncryptionKeySize: Self.clampKeySize(configuration.maximumKeySize),
            initiatorKeyDistribution: configuration.initiatorKeys.intersection(configuration.distributableKeys),
            responderKeyDistribution: configuration.responderKeys.intersection(allKeys))
        let pdu = SMPPDU.pairingRequest(request)
        pairing = Pairing(request: request, preq: pdu.encode())
        state = .pairing(.pairingResponse)
        var actions: [Action] = []
        send(pdu, now: now, &actions)
        return actions
    }

    /// Peripheral: sends a Security Request (§3.6.7). Ignored unless idle.
    public mutating func requestSecurity(now: StackInstant) -> [Action] {
        guard role == .peripheral, state == .idle else { return [] }
        state = .securityRequested
        var actions: [Action] = []
        send(.securityRequest(configuration.authenticationRequirements), now: now, &actions)
        return actions
    }

    /// Aborts the pairing in progress with Pairing Failed `reason`.
    public mutating func cancelPairing(reason: SMPPairingFailedReason = .unspecifiedReason, now: StackInstant) -> [Action] {
        guard isBusy, state != .dead else { return [] }
        return fail(reason)
    }

    // MARK: User answers

    /// The passkey the user typed (0...999999), or nil when the user cancelled (Passkey Entry Failed).
    public mutating func enterPasskey(_ passkey: UInt32?, now: StackInstant) -> [Action] {
        guard var p = pairing, p.response != nil, case .passkeyEntry = p.method, p.passkey == nil else { return [] }
        guard let passkey, passkey <= 999_999 else { return fail(.passkeyEntryFailed) }
        p.passkey = passkey
        if !p.secureConnections { p.temporaryKey = Block128(UInt64(passkey)) }
        pairing = p
        return run(now: now) { (session: inout SMPSession, actions: inout [Action]) throws(Failure) in
            try session.proceedAfterUserInput(now: now, &actions)
        }
    }

    /// The user's answer to ``Action/confirmNumericValue(_:)``; false fails with Numeric Comparison Failed.
    public mutating func confirmNumericComparison(_ accepted: Bool, now: StackInstant) -> [Action] {
        guard let p = pairing, p.method == .numericComparison, !p.userConfirmed else { return [] }
        guard accepted else { return fail(.numericComparisonFailed) }
        pairing?.userConfirmed = true
        return run(now: now) { (session: inout SMPSession, actions: inout [Action]) throws(Failure) in
            try session.proceedAfterUserInput(now: now, &actions)
        }
    }

    /// The user's answer to ``Action/requestJustWorksConsent``; false fails with Unspecified Reason.
    public mutating func acceptJustWorks(_ accepted: Bool, now: StackInstant) -> [Action] {
        guard var p = pairing, p.method == .justWorks, !p.userConfirmed else { return [] }
        guard accepted else { return fail(.unspecifiedReason) }
        p.userConfirmed = true
        if !p.secureConnections { p.temporaryKey = .zero }
        pairing = p
        return run(now: now) { (session: inout SMPSession, actions: inout [Action]) throws(Failure) in
            try session.proceedAfterUserInput(now: now, &actions)
        }
    }

    // MARK: Link events

    /// The link's encryption changed. With the STK/LTK of this pairing in place, key distribution starts.
    public mutating func encryptionChanged(enabled: Bool, keySize: UInt8? = nil, now: StackInstant) -> [Action] {
        switch state {
        case .securityRequested:
            // The central answered our Security Request by encrypting with an existing bond.
            if enabled { reset() }
            return []
        case .pairing(.encryption):
            guard enabled else { return fail(.unspecifiedReason) }
            return run(now: now) { (session: inout SMPSession, actions: inout [Action]) throws(Failure) in
                try session.startKeyDistribution(now: now, &actions)
            }
        default:
            return []
        }
    }

    /// Peripheral: the controller asks for the key of an encryption the central started. During pairing that is
    /// the STK (legacy) or LTK (LE Secure Connections), with EDIV = 0 and Rand = 0; wire order. Nil otherwise (the
    /// owner then looks in its bonds).
    public func longTermKeyRequested(ediv: UInt16, rand: UInt64) -> [UInt8]? {
        guard role == .peripheral, state == .pairing(.encryption), ediv == 0, rand == 0,
            let key = pairing?.encryptionKey
        else { return nil }
        return key.littleEndian
    }

    /// The SMP timeout (§3.4): when `now` reaches ``nextDeadline`` the procedure fails and SMP is dead on this link.
    public mutating func handleTimeout(now: StackInstant) -> [Action] {
        guard let deadline, now >= deadline, state != .dead else { return [] }
        state = .dead
        pairing = nil
        self.deadline = nil
        return [.timedOut]
    }

    // MARK: Receiving

    /// One received SMP payload (the information payload of a B-frame on CID 0x0006).
    public mutating func receive(_ bytes: [UInt8], now: StackInstant) -> [Action] {
        guard state != .dead else { return [] }
        let pdu: SMPPDU
        do {
            pdu = try SMPPDU(decoding: bytes)
        } catch {
            return reject(.invalidParameters, now: now)
        }
        switch pdu {
        case .pairingFailed(let reason):
            guard isBusy else { return [] }
            reset()
            return [.pairingFailed(reason, locally: false)]
        case .pairingKeypressNotification:
            return []
        case .unknown:
            return reject(.commandNotSupported, now: now)
        case .securityRequest(let authReq):
            guard role == .central else { return reject(.commandNotSupported, now: now) }
            return pairing == nil ? [.securityRequestReceived(authReq)] : []
        case .pairingRequest(let request):
            guard role == .peripheral else { return reject(.commandNotSupported, now: now) }
            guard state == .idle || state == .securityRequested else { return reject(.unspecifiedReason, now: now) }
            deadline = now + configuration.timeout
            pairing = Pairing(request: request, preq: bytes)
            state = .pairing(.pairingResponse)
            return run(now: now) { (session: inout SMPSession, actions: inout [Action]) throws(Failure) in
                try session.handlePairingRequest(request, now: now, &actions)
            }
        case .pairingResponse(let response):
            guard role == .central else { return reject(.commandNotSupported, now: now) }
            guard state == .pairing(.pairingResponse) else { return reject(.unspecifiedReason, now: now) }
            return run(now: now) { (session: inout SMPSession, actions: inout [Action]) throws(Failure) in
                try session.handlePairingResponse(response, bytes: bytes, now: now, &actions)
            }
        default:
            guard case .pairing(let step) = state, pairing != nil else { return reject(.unspecifiedReason, now: now) }
            return run(now: now) { (session: inout SMPSession, actions: inout [Action]) throws(Failure) in
                try session.handle(pdu, step: step, now: now, &actions)
            }
        }
    }

    // MARK: Phase 1: feature exchange

    mutating func handlePairingRequest(
        _ request: SMPPairingParameters, now: StackInstant, _ actions: inout [Action]
    ) throws(Failure) {
        guard request.ioCapability.rawValue <= SMPIOCapability.keyboardDisplay.rawValue else {
            throw Failure(.invalidParameters)
        }
        let allKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey]
        let response = SMPPairingParameters(
            ioCapability: configuration.ioCapability, oobDataFlag: configuration.oobDataFlag,
            authenticationRequirements: configuration.authenticationRequirements,
            maximumEncryptionKeySize: Self.clampKeySize(configuration.maximumKeySize),
            initiatorKeyDistribution: request.initiatorKeyDistribution.intersection(configuration.initiatorKeys)
                .intersection(allKeys),
            responderKeyDistribution: request.responderKeyDistribution.intersection(configuration.responderKeys)
                .intersection(configuration.distributableKeys))
        try negotiate(request: request, response: response)
        let pdu = SMPPDU.pairingResponse(response)
        pairing?.pres = pdu.encode()
        send(pdu, now: now, &actions)
        try beginAuthentication(now: now, &actions)
    }

    mutating func handlePairingResponse(
        _ response: SMPPairingParameters, bytes: [UInt8], now: StackInstant, _ actions: inout [Action]
    ) throws(Failure) {
        guard let request = pairing?.request else { throw Failure(.unspecifiedReason) }
        guard response.ioCapability.rawValue <= SMPIOCapability.keyboardDisplay.rawValue,
            response.initiatorKeyDistribution.isSubset(of: request.initiatorKeyDistribution),
            response.responderKeyDistribution.isSubset(of: request.responderKeyDistribution)
        else { throw Failure(.invalidParameters) }
        try negotiate(request: request, response: response)
        pairing?.pres = bytes
        try beginAuthentication(now: now, &actions)
    }

    /// Method, key size and key distribution from the two feature PDUs; our requirements checked.
    mutating func negotiate(request: SMPPairingParameters, response: SMPPairingParameters) throws(Failure) {
        guard var p = pairing else { throw Failure(.unspecifiedReason) }
        let secureConnections =
            request.authenticationRequirements.contains(.secureConnections)
            && response.authenticationRequirements.contains(.secureConnections)
            && configuration.secureConnections != .legacyOnly
        if configuration.secureConnections == .required && !secureConnections {
            throw Failure(.authenticationRequirements)
        }
        let keySize = min(request.maximumEncryptionKeySize, response.maximumEncryptionKeySize)
        guard keySize >= configuration.minimumKeySize else { throw Failure(.encryptionKeySize) }
        let method = SMPPairingMethod.select(initiator: request, responder: response, secureConnections: secureConnections)
        if configuration.mitmRequired && !method.isAuthenticated { throw Failure(.authenticationRequirements) }
        if method == .outOfBand && !secureConnections && configuration.outOfBand.legacyTemporaryKey == nil {
            throw Failure(.oobNotAvailable)
        }
        let allKeys: SMPKeyDistribution = [.encryptionKey, .identityKey, .signingKey]
        p.response = response
        p.secureConnections = secureConnections
        p.keySize = keySize
        p.method = method
        p.initiatorKeys = response.initiatorKeyDistribution.intersection(allKeys)
        p.responderKeys = response.responderKeyDistribution.intersection(allKeys)
        if secureConnections {
            // The LTK comes from f5: EncKey is ignored (§3.6.1).
            p.initiatorKeys.remove(.encryptionKey)
            p.responderKeys.remove(.encryptionKey)
        }
        pairing = p
    }

    /// Phase 2 starts: prompts, then the first PDU of the method.
    mutating func beginAuthentication(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard var p = pairing else { throw Failure(.unspecifiedReason) }
        switch p.method {
        case .justWorks:
            if configuration.justWorksConsent {
                p.userConfirmed = false
                if !p.secureConnections { actions.append(.requestJustWorksConsent) }
            } else if !p.secureConnections {
                p.temporaryKey = .zero
            }
        case .numericComparison:
            p.userConfirmed = false
        case .passkeyEntry(let roles):
            let weDisplay =
                (roles == .initiatorDisplays && role == .central) || (roles == .responderDisplays && role == .peripheral)
            if weDisplay {
                let passkey =
                    configuration.fixedPasskey.map { $0 % 1_000_000 }
                    ?? UInt32(truncatingIfNeeded: configuration.keySource.random128().low % 1_000_000)
                p.passkey = passkey
                if !p.secureConnections { p.temporaryKey = Block128(UInt64(passkey)) }
                actions.append(.displayPasskey(passkey))
            } else {
                actions.append(.requestPasskey)
            }
        case .outOfBand:
            if !p.secureConnections { p.temporaryKey = configuration.outOfBand.legacyTemporaryKey }
        }
        pairing = p
        if p.secureConnections {
            if role == .central {
                try sendPublicKey(now: now, &actions)
            }
            state = .pairing(.publicKey)
        } else {
            state = .pairing(.confirm)
            if role == .central, p.temporaryKey != nil { try sendLegacyConfirm(now: now, &actions) }
        }
    }

    /// After a passkey, a numeric comparison or Just Works consent: the step that was waiting for it.
    mutating func proceedAfterUserInput(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard let p = pairing, case .pairing(let step) = state else { return }
        if !p.secureConnections {
            guard step == .confirm, p.temporaryKey != nil, !p.localConfirmSent else { return }
            if role == .central {
                try sendLegacyConfirm(now: now, &actions)
            } else if p.peerConfirm != nil {
                try sendLegacyConfirm(now: now, &actions)
                state = .pairing(.random)
            }
            return
        }
        switch step {
        case .confirm where p.passkey != nil && !p.localConfirmSent:
            if role == .central {
                try sendPasskeyConfirm(now: now, &actions)
            } else if p.peerConfirm != nil {
                try sendPasskeyConfirm(now: now, &actions)
                state = .pairing(.random)
            }
        case .dhKeyCheck where p.userConfirmed:
            if role == .central {
                if !p.localCheckSent { try sendDHKeyCheck(now: now, &actions) }
            } else if p.peerCheck != nil {
                try answerDHKeyCheck(now: now, &actions)
            }
        default:
            break
        }
    }

    // MARK: Phase 2

    mutating func handle(_ pdu: SMPPDU, step: Step, now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard let p = pairing else { throw Failure(.unspecifiedReason) }
        switch (step, pdu) {
        case (.keys, _):
            try receiveKey(pdu, now: now, &actions)
        case (.publicKey, .pairingPublicKey(let x, let y)) where p.secureConnections:
            try receivePublicKey(x + y, now: now, &actions)
        case (.confirm, .pairingConfirm(let value)):
            let confirm = try Self.block(value)
            if p.secureConnections {
                try receiveSecureConnectionsConfirm(confirm, now: now, &actions)
            } else {
                try receiveLegacyConfirm(confirm, now: now, &actions)
            }
        case (.random, .pairingRandom(let value)):
            let random = try Self.block(value)
            if p.secureConnections {
                try receiveSecureConnectionsRandom(random, now: now, &actions)
            } else {
                try receiveLegacyRandom(random, now: now, &actions)
            }
        case (.dhKeyCheck, .pairingDHKeyCheck(let value)) where p.secureConnections:
            try receiveDHKeyCheck(try Self.block(value), now: now, &actions)
        default:
            throw Failure(.unspecifiedReason)
        }
    }

    // Legacy (§2.3.5.5)

    mutating func sendLegacyConfirm(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard var p = pairing, let tk = p.temporaryKey else { throw Failure(.unspecifiedReason) }
        p.localRandom = configuration.keySource.random128()
        let confirm = try legacyConfirm(p, random: p.localRandom, tk: tk)
        p.localConfirmSent = true
        pairing = p
        send(.pairingConfirm(confirmValue: confirm.littleEndian), now: now, &actions)
    }

    func legacyConfirm(_ p: Pairing, random: Block128, tk: Block128) throws(Failure) -> Block128 {
        try crypto {
            try SecurityToolbox.c1(
                k: tk, r: random, pairingRequest: p.preq, pairingResponse: p.pres, initiator: initiatorAddress,
                responder: responderAddress)
        }
    }

    mutating func receiveLegacyConfirm(_ confirm: Block128, now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard var p = pairing, p.peerConfirm == nil else { throw Failure(.unspecifiedReason) }
        if role == .central {
            guard p.localConfirmSent else { throw Failure(.unspecifiedReason) }
            p.peerConfirm = confirm
            pairing = p
            send(.pairingRandom(randomValue: p.localRandom.littleEndian), now: now, &actions)
            state = .pairing(.random)
        } else {
            p.peerConfirm = confirm
            pairing = p
            if p.temporaryKey != nil {
                try sendLegacyConfirm(now: now, &actions)
                state = .pairing(.random)
            }
        }
    }

    mutating func receiveLegacyRandom(_ random: Block128, now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard var p = pairing, let tk = p.temporaryKey, let peerConfirm = p.peerConfirm else {
            throw Failure(.unspecifiedReason)
        }
        guard try legacyConfirm(p, random: random, tk: tk) == peerConfirm else { throw Failure(.confirmValueFailed) }
        p.peerRandom = random
        let (initiatorRandom, responderRandom) = role == .central ? (p.localRandom, random) : (random, p.localRandom)
        let stk = try crypto { try SecurityToolbox.s1(k: tk, r1: responderRandom, r2: initiatorRandom) }
        p.encryptionKey = Self.mask(stk, keySize: p.keySize)
        pairing = p
        state = .pairing(.encryption)
        if role == .central {
            actions.append(.startEncryption(ltk: Self.mask(stk, keySize: p.keySize).littleEndian, ediv: 0, rand: 0))
        } else {
            send(.pairingRandom(randomValue: p.localRandom.littleEndian), now: now, &actions)
        }
    }

    // LE Secure Connections (§2.3.5.6)

    mutating func ourKeyPair() -> LEKeyPair {
        if let pair = pairing?.keyPair { return pair }
        let pair = configuration.localKeyPair ?? configuration.keySource.keyPair()
        pairing?.keyPair = pair
        return pair
    }

    mutating func sendPublicKey(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        let bytes = ourKeyPair().publicKey.smpBytes
        send(.pairingPublicKey(x: Array(bytes.prefix(32)), y: Array(bytes.dropFirst(32))), now: now, &actions)
    }

    mutating func receivePublicKey(_ bytes: [UInt8], now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        let pair = ourKeyPair()
        let peerKey: LEPublicKey
        let dhKey: DHKey
        do {
            peerKey = try LEPublicKey(smpBytes: bytes)
            dhKey = try pair.dhKey(peer: peerKey)
        } catch {
            throw Failure(.dhKeyCheckFailed)
        }
        guard var p = pairing else { throw Failure(.unspecifiedReason) }
        p.peerPublicKey = peerKey
        p.dhKey = dhKey
        pairing = p
        if role == .peripheral { try sendPublicKey(now: now, &actions) }
        switch p.method {
        case .outOfBand:
            if configuration.outOfBand.hasPeerSecureConnectionsData, let r = configuration.outOfBand.peerRandom {
                let expected = try crypto { try SMPOutOfBandData.localConfirm(publicKey: peerKey, random: r) }
                guard expected == configuration.outOfBand.peerConfirm else { throw Failure(.confirmValueFailed) }
            }
            if role == .central { try sendNonce(now: now, &actions) }
            state = .pairing(.random)
        case .justWorks, .numericComparison:
            if role == .central {
                state = .pairing(.confirm)
            } else {
                // Cb = f4(PKbx, PKax, Nb, 0)
                pairing?.localRandom = configuration.keySource.random128()
                let confirm = try commitment(z: 0)
                send(.pairingConfirm(confirmValue: confirm.littleEndian), now: now, &actions)
                state = .pairing(.random)
            }
        case .passkeyEntry:
            state = .pairing(.confirm)
            if role == .central, p.passkey != nil { try sendPasskeyConfirm(now: now, &actions) }
        }
    }

    /// f4(our PKx, peer PKx, our current nonce, z).
    func commitment(z: UInt8) throws(Failure) -> Block128 {
        guard let p = pairing, let ours = p.keyPair?.publicKey, let peer = p.peerPublicKey else {
            throw Failure(.unspecifiedReason)
        }
        return try crypto { try SecurityToolbox.f4(u: ours.x, v: peer.x, x: p.localRandom, z: z) }
    }

    /// f4(peer PKx, our PKx, `nonce`, z): what the peer's commitment must be.
    func peerCommitment(nonce: Block128, z: UInt8) throws(Failure) -> Block128 {
        guard let p = pairing, let ours = p.keyPair?.publicKey, let peer = p.peerPublicKey else {
            throw Failure(.unspecifiedReason)
        }
        return try crypto { try SecurityToolbox.f4(u: peer.x, v: ours.x, x: nonce, z: z) }
    }

    var passkeyBit: UInt8 {
        guard let p = pairing, let passkey = p.passkey, p.round < 20 else { return 0x80 }
        return 0x80 | UInt8(truncatingIfNeeded: (passkey >> UInt32(p.round)) & 1)
    }

    mutating func sendPasskeyConfirm(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        pairing?.localRandom = configuration.keySource.random128()
        let confirm = try commitment(z: passkeyBit)
        pairing?.localConfirmSent = true
        send(.pairingConfirm(confirmValue: confirm.littleEndian), now: now, &actions)
    }

    mutating func sendNonce(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        pairing?.localRandom = configuration.keySource.random128()
        send(.pairingRandom(randomValue: (pairing?.localRandom ?? .zero).littleEndian), now: now, &actions)
    }

    mutating func receiveSecureConnectionsConfirm(
        _ confirm: Block128, now: StackInstant, _ actions: inout [Action]
    ) throws(Failure) {
        guard let p = pairing, p.peerConfirm == nil else { throw Failure(.unspecifiedReason) }
        switch (p.method, role) {
        case (.justWorks, .central), (.numericComparison, .central):
            pairing?.peerConfirm = confirm
            try sendNonce(now: now, &actions)
            state = .pairing(.random)
        case (.passkeyEntry, .central):
            guard p.localConfirmSent else { throw Failure(.unspecifiedReason) }
            pairing?.peerConfirm = confirm
            send(.pairingRandom(randomValue: p.localRandom.littleEndian), now: now, &actions)
            state = .pairing(.random)
        case (.passkeyEntry, .peripheral):
            pairing?.peerConfirm = confirm
            if p.passkey != nil {
                try sendPasskeyConfirm(now: now, &actions)
                state = .pairing(.random)
            }
        default:
            throw Failure(.unspecifiedReason)
        }
    }

    mutating func receiveSecureConnectionsRandom(
        _ nonce: Block128, now: StackInstant, _ actions: inout [Action]
    ) throws(Failure) {
        guard let p = pairing else { throw Failure(.unspecifiedReason) }
        switch (p.method, role) {
        case (.justWorks, .central), (.numericComparison, .central):
            guard let peerConfirm = p.peerConfirm else { throw Failure(.unspecifiedReason) }
            guard try peerCommitment(nonce: nonce, z: 0) == peerConfirm else { throw Failure(.confirmValueFailed) }
            pairing?.peerRandom = nonce
            try finishAuthenticationStage1(now: now, &actions)
        case (.justWorks, .peripheral), (.numericComparison, .peripheral):
            pairing?.peerRandom = nonce
            send(.pairingRandom(randomValue: p.localRandom.littleEndian), now: now, &actions)
            try finishAuthenticationStage1(now: now, &actions)
        case (.passkeyEntry, _):
            guard p.localConfirmSent, let peerConfirm = p.peerConfirm else { throw Failure(.unspecifiedReason) }
            guard try peerCommitment(nonce: nonce, z: passkeyBit) == peerConfirm else {
                throw Failure(.confirmValueFailed)
            }
            pairing?.peerRandom = nonce
            if role == .peripheral {
                send(.pairingRandom(randomValue: p.localRandom.littleEndian), now: now, &actions)
            }
            let round = p.round + 1
            if round < 20 {
                pairing?.round = round
                pairing?.peerConfirm = nil
                pairing?.localConfirmSent = false
                state = .pairing(.confirm)
                if role == .central { try sendPasskeyConfirm(now: now, &actions) }
            } else {
                pairing?.round = round
                try finishAuthenticationStage1(now: now, &actions)
            }
        case (.outOfBand, .central):
            pairing?.peerRandom = nonce
            try finishAuthenticationStage1(now: now, &actions)
        case (.outOfBand, .peripheral):
            pairing?.peerRandom = nonce
            try sendNonce(now: now, &actions)
            try finishAuthenticationStage1(now: now, &actions)
        }
    }

    /// Nonces exchanged: MacKey and LTK (f5), the numeric value (g2) or consent prompt, then the DHKey checks.
    mutating func finishAuthenticationStage1(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard var p = pairing, let dhKey = p.dhKey, let peerRandom = p.peerRandom, let ours = p.keyPair?.publicKey,
            let peer = p.peerPublicKey
        else { throw Failure(.unspecifiedReason) }
        let (na, nb) = role == .central ? (p.localRandom, peerRandom) : (peerRandom, p.localRandom)
        let keys = try crypto {
            try SecurityToolbox.f5(w: dhKey, n1: na, n2: nb, a1: initiatorAddress, a2: responderAddress)
        }
        p.macKey = keys.macKey
        p.encryptionKey = Self.mask(keys.ltk, keySize: p.keySize)
        state = .pairing(.dhKeyCheck)
        if p.method == .numericComparison {
            let (pka, pkb) = role == .central ? (ours.x, peer.x) : (peer.x, ours.x)
            let value = try crypto { try SecurityToolbox.g2(u: pka, v: pkb, x: na, y: nb) }
            actions.append(.confirmNumericValue(SecurityToolbox.numericComparisonValue(value)))
        } else if p.method == .justWorks && !p.userConfirmed {
            actions.append(.requestJustWorksConsent)
        }
        pairing = p
        if role == .central && p.userConfirmed { try sendDHKeyCheck(now: now, &actions) }
    }

    /// The r of f6 for our check value and for the peer's (§2.3.5.6.5).
    func checkRandoms(_ p: Pairing) -> (ours: Block128, peers: Block128) {
        switch p.method {
        case .passkeyEntry:
            let r = Block128(UInt64(p.passkey ?? 0))
            return (r, r)
        case .outOfBand:
            let oob = configuration.outOfBand
            let peerFlag = role == .central ? p.response?.oobDataFlag : p.request.oobDataFlag
            let ours = oob.hasPeerSecureConnectionsData ? (oob.peerRandom ?? .zero) : .zero
            let peers = peerFlag == .present ? (oob.localRandom ?? .zero) : .zero
            return (ours, peers)
        default:
            return (.zero, .zero)
        }
    }

    /// Our DHKey check (local) and the one we expect from the peer.
    func dhKeyChecks(_ p: Pairing) throws(Failure) -> (local: Block128, expected: Block128) {
        guard let macKey = p.macKey, let peerRandom = p.peerRandom else { throw Failure(.unspecifiedReason) }
        let r = checkRandoms(p)
        let ioCapA = try crypto { try SecurityToolbox.IOCap(pairingPDU: p.preq) }
        let ioCapB = try crypto { try SecurityToolbox.IOCap(pairingPDU: p.pres) }
        let (na, nb) = role == .central ? (p.localRandom, peerRandom) : (peerRandom, p.localRandom)
        let a = initiatorAddress
        let b = responderAddress
        if role == .central {
            let ea = try crypto { try SecurityToolbox.f6(w: macKey, n1: na, n2: nb, r: r.ours, ioCap: ioCapA, a1: a, a2: b) }
            let eb = try crypto { try SecurityToolbox.f6(w: macKey, n1: nb, n2: na, r: r.peers, ioCap: ioCapB, a1: b, a2: a) }
            return (ea, eb)
        }
        let eb = try crypto { try SecurityToolbox.f6(w: macKey, n1: nb, n2: na, r: r.ours, ioCap: ioCapB, a1: b, a2: a) }
        let ea = try crypto { try SecurityToolbox.f6(w: macKey, n1: na, n2: nb, r: r.peers, ioCap: ioCapA, a1: a, a2: b) }
        return (eb, ea)
    }

    mutating func sendDHKeyCheck(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard let p = pairing else { throw Failure(.unspecifiedReason) }
        let checks = try dhKeyChecks(p)
        pairing?.localCheckSent = true
        send(.pairingDHKeyCheck(checkValue: checks.local.littleEndian), now: now, &actions)
    }

    mutating func receiveDHKeyCheck(_ check: Block128, now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard let p = pairing, p.peerCheck == nil else { throw Failure(.unspecifiedReason) }
        if role == .central {
            guard p.localCheckSent, let key = p.encryptionKey else { throw Failure(.unspecifiedReason) }
            guard try dhKeyChecks(p).expected == check else { throw Failure(.dhKeyCheckFailed) }
            pairing?.peerCheck = check
            state = .pairing(.encryption)
            actions.append(.startEncryption(ltk: key.littleEndian, ediv: 0, rand: 0))
        } else {
            pairing?.peerCheck = check
            if p.userConfirmed { try answerDHKeyCheck(now: now, &actions) }
        }
    }

    /// Peripheral: verifies Ea and answers Eb.
    mutating func answerDHKeyCheck(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard let p = pairing, let check = p.peerCheck else { throw Failure(.unspecifiedReason) }
        let checks = try dhKeyChecks(p)
        guard checks.expected == check else { throw Failure(.dhKeyCheckFailed) }
        pairing?.localCheckSent = true
        send(.pairingDHKeyCheck(checkValue: checks.local.littleEndian), now: now, &actions)
        state = .pairing(.encryption)
    }

    // MARK: Phase 3: key distribution (§3.6.1)

    mutating func startKeyDistribution(now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard var p = pairing else { throw Failure(.unspecifiedReason) }
        let peerKeys = role == .central ? p.responderKeys : p.initiatorKeys
        var expected: [SMPCode] = []
        if peerKeys.contains(.encryptionKey) && !p.secureConnections {
            expected += [.encryptionInformation, .centralIdentification]
        }
        if peerKeys.contains(.identityKey) { expected += [.identityInformation, .identityAddressInformation] }
        if peerKeys.contains(.signingKey) { expected.append(.signingInformation) }
        p.expectedKeys = Deque(expected)
        pairing = p
        state = .pairing(.keys)
        if role == .peripheral { distributeOurKeys(now: now, &actions) }
        if expected.isEmpty { finishKeyDistribution(now: now, &actions) }
    }

    mutating func distributeOurKeys(now: StackInstant, _ actions: inout [Action]) {
        guard var p = pairing else { return }
        let ours = role == .central ? p.initiatorKeys : p.responderKeys
        if ours.contains(.encryptionKey) && !p.secureConnections {
            let ltk = Self.mask(configuration.keySource.random128(), keySize: p.keySize)
            let identifier = configuration.keySource.random128()
            let ediv = UInt16(truncatingIfNeeded: identifier.high)
            let rand = identifier.low
            p.localKeys.longTermKey = SMPLongTermKey(key: ltk.littleEndian, ediv: ediv, rand: rand)
            send(.encryptionInformation(longTermKey: ltk.littleEndian), now: now, &actions)
            send(.centralIdentification(ediv: ediv, rand: Self.littleEndian(rand)), now: now, &actions)
        }
        if ours.contains(.identityKey), let irk = configuration.identityResolvingKey {
            let address = configuration.identityAddress ?? configuration.localAddress
            p.localKeys.identityResolvingKey = irk
            p.localKeys.identityAddress = address
            send(.identityInformation(identityResolvingKey: irk.littleEndian), now: now, &actions)
            send(.identityAddressInformation(address), now: now, &actions)
        }
        if ours.contains(.signingKey), let csrk = configuration.signatureKey {
            p.localKeys.signatureKey = csrk
            send(.signingInformation(signatureKey: csrk.littleEndian), now: now, &actions)
        }
        pairing = p
    }

    mutating func receiveKey(_ pdu: SMPPDU, now: StackInstant, _ actions: inout [Action]) throws(Failure) {
        guard var p = pairing, let next = p.expectedKeys.first, pdu.code == next else {
            throw Failure(.unspecifiedReason)
        }
        p.expectedKeys.removeFirst()
        switch pdu {
        case .encryptionInformation(let key):
            p.pendingLongTermKey = key
        case .centralIdentification(let ediv, let rand):
            guard let key = p.pendingLongTermKey else { throw Failure(.unspecifiedReason) }
            let randValue = rand.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            p.peerKeys.longTermKey = SMPLongTermKey(key: key, ediv: ediv, rand: randValue)
            p.pendingLongTermKey = nil
        case .identityInformation(let irk):
            p.peerKeys.identityResolvingKey = try Self.block(irk)
        case .identityAddressInformation(let address):
            guard address.type == .public || address.isValidRandomStatic else { throw Failure(.invalidParameters) }
            p.peerKeys.identityAddress = address
        case .signingInformation(let csrk):
            p.peerKeys.signatureKey = try Self.block(csrk)
        default:
            throw Failure(.unspecifiedReason)
        }
        pairing = p
        if p.expectedKeys.isEmpty { finishKeyDistribution(now: now, &actions) }
    }

    mutating func finishKeyDistribution(now: StackInstant, _ actions: inout [Action]) {
        if role == .central { distributeOurKeys(now: now, &actions) }
        guard let p = pairing else { return }
        let bothBond =
            p.request.authenticationRequirements.bondingFlags == 1
            && p.response?.authenticationRequirements.bondingFlags == 1
        let shared = p.secureConnections ? p.encryptionKey.map { SMPLongTermKey(key: $0.littleEndian, ediv: 0, rand: 0) } : nil
        let result = SMPPairingResult(
            method: p.method, secureConnections: p.secureConnections, authenticated: p.method.isAuthenticated,
            keySize: p.keySize, bonded: bothBond, sharedLongTermKey: shared, localKeys: p.localKeys,
            peerKeys: p.peerKeys)
        reset()
        actions.append(.pairingComplete(result))
    }

    // MARK: Helpers

    mutating func send(_ pdu: SMPPDU, now: StackInstant, _ actions: inout [Action]) {
        actions.append(.send(pdu.encode()))
        deadline = now + configuration.timeout
    }

    mutating func reset() {
        state = .idle
        pairing = nil
        deadline = nil
    }

    /// Ends the procedure with Pairing Failed sent to the peer.
    mutating func fail(_ reason: SMPPairingFailedReason) -> [Action] {
        reset()
        return [.send(SMPPDU.pairingFailed(reason: reason).encode()), .pairingFailed(reason, locally: true)]
    }

    /// A PDU that has no place here: fails the procedure in progress, or, outside one, answers Pairing Failed alone.
    mutating func reject(_ reason: SMPPairingFailedReason, now: StackInstant) -> [Action] {
        if isBusy { return fail(reason) }
        return [.send(SMPPDU.pairingFailed(reason: reason).encode())]
    }

    /// Runs a step; a failure keeps the actions already produced and appends Pairing Failed.
    mutating func run(
        now: StackInstant, _ body: (inout SMPSession, inout [Action]) throws(Failure) -> Void
    ) -> [Action] {
        var actions: [Action] = []
        do {
            try body(&self, &actions)
        } catch {
            actions += fail(error.reason)
        }
        return actions
    }

    func crypto<T>(_ body: () throws -> T) throws(Failure) -> T {
        do {
            return try body()
        } catch {
            throw Failure(.unspecifiedReason)
        }
    }

    static func block(_ bytes: [UInt8]) throws(Failure) -> Block128 {
        do {
            return try Block128(littleEndian: bytes)
        } catch {
            throw Failure(.invalidParameters)
        }
    }

    /// The key with its most significant octets zeroed down to `keySize` octets (§2.3.4).
    static func mask(_ key: Block128, keySize: UInt8) -> Block128 {
        let size = Int(min(max(keySize, 7), 16))
        var bytes = key.littleEndian
        for index in size..<16 { bytes[index] = 0 }
        return (try? Block128(littleEndian: bytes)) ?? key
    }

    static func clampKeySize(_ size: UInt8) -> UInt8 { min(max(size, 7), 16) }

    static func littleEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
