import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import GATT
@testable import Host
import SMP
import Testing
import BluetoothEngine

// The pairing matrix between two full host stacks (Core 5.4 Vol 3 Part H §2.3.5.1 association models, §2.3.5.6 /
// Vol 3 Part C §10.2.4 Secure Connections Only mode, §3.5.1 feature exchange, §3.6.1 key distribution): the factors,
// a deterministic covering array over them, the outcome the spec's tables give for each case (computed here, not by
// our SMP's selection code), and two stacks that answer the pairing prompts like a user would.

// MARK: Factors

/// Who supports / requires LE Secure Connections: (central policy, peripheral policy).
enum MatrixSecureConnections: Int, CaseIterable, Sendable, CustomStringConvertible {
    case bothPreferred, centralLegacy, peripheralLegacy, centralRequiredPeripheralLegacy,
         centralLegacyPeripheralRequired, centralRequiredPeripheralPreferred

    var policies: (central: SMPSecureConnectionsPolicy, peripheral: SMPSecureConnectionsPolicy) {
        switch self {
        case .bothPreferred: (.preferred, .preferred)
        case .centralLegacy: (.legacyOnly, .preferred)
        case .peripheralLegacy: (.preferred, .legacyOnly)
        case .centralRequiredPeripheralLegacy: (.required, .legacyOnly)
        case .centralLegacyPeripheralRequired: (.legacyOnly, .required)
        case .centralRequiredPeripheralPreferred: (.required, .preferred)
        }
    }

    var description: String {
        let names: (SMPSecureConnectionsPolicy) -> String = {
            switch $0 {
            case .preferred: "SC"
            case .required: "SC-only"
            case .legacyOnly: "legacy"
            }
        }
        return "\(names(policies.central))/\(names(policies.peripheral))"
    }
}

/// One side's key distribution fields (Initiator Key Distribution, Responder Key Distribution), as configured.
struct MatrixKeyProfile: Sendable, CustomStringConvertible {
    var initiatorKeys: SMPKeyDistribution
    var responderKeys: SMPKeyDistribution

    static let all: [MatrixKeyProfile] = [
        MatrixKeyProfile(initiatorKeys: [.encryptionKey, .identityKey, .signingKey], responderKeys: [.encryptionKey, .identityKey, .signingKey]),
        MatrixKeyProfile(initiatorKeys: [], responderKeys: []),
        MatrixKeyProfile(initiatorKeys: [.encryptionKey], responderKeys: [.encryptionKey]),
        MatrixKeyProfile(initiatorKeys: [.identityKey, .signingKey], responderKeys: [.encryptionKey, .identityKey]),
        MatrixKeyProfile(initiatorKeys: [.encryptionKey, .identityKey], responderKeys: [.signingKey]),
        MatrixKeyProfile(initiatorKeys: [.signingKey], responderKeys: [.identityKey, .signingKey]),
    ]

    var description: String { "i\(initiatorKeys.rawValue)r\(responderKeys.rawValue)" }
}

/// The Maximum Encryption Key Size each side offers: (central, peripheral).
let matrixKeySizes: [(central: UInt8, peripheral: UInt8)] = [(16, 16), (16, 12), (7, 16)]

/// The factors of the matrix and their number of levels, in the order of ``PairingMatrixCase/levels``.
enum MatrixFactor: Int, CaseIterable {
    case centralIO, peripheralIO, secureConnections, mitm, bonding, centralKeys, peripheralKeys, keySize, initiation

    var levelCount: Int {
        switch self {
        case .centralIO, .peripheralIO: 5
        case .secureConnections: MatrixSecureConnections.allCases.count
        case .mitm, .bonding: 4
        case .centralKeys, .peripheralKeys: MatrixKeyProfile.all.count
        case .keySize: matrixKeySizes.count
        case .initiation: 2
        }
    }
}

/// One case of the matrix: a level of every factor.
struct PairingMatrixCase: Sendable, CustomTestStringConvertible {
    var index: Int
    var levels: [Int]

    func level(_ factor: MatrixFactor) -> Int { levels[factor.rawValue] }

    var centralIO: SMPIOCapability { SMPIOCapability(UInt8(truncatingIfNeeded: level(.centralIO))) }
    var peripheralIO: SMPIOCapability { SMPIOCapability(UInt8(truncatingIfNeeded: level(.peripheralIO))) }
    var secureConnections: MatrixSecureConnections { MatrixSecureConnections(rawValue: level(.secureConnections)) ?? .bothPreferred }
    /// MITM asked (and so required) by: none, central, peripheral, both.
    var mitm: (central: Bool, peripheral: Bool) { (level(.mitm) & 1 != 0, level(.mitm) & 2 != 0) }
    /// Bonding asked by: both, central only, peripheral only, neither.
    var bonding: (central: Bool, peripheral: Bool) { (level(.bonding) == 0 || level(.bonding) == 1, level(.bonding) == 0 || level(.bonding) == 2) }
    var centralKeys: MatrixKeyProfile { MatrixKeyProfile.all[level(.centralKeys)] }
    var peripheralKeys: MatrixKeyProfile { MatrixKeyProfile.all[level(.peripheralKeys)] }
    var keySizes: (central: UInt8, peripheral: UInt8) { matrixKeySizes[level(.keySize)] }
    /// The peripheral starts with a Security Request (else the central pairs).
    var peripheralInitiates: Bool { level(.initiation) == 1 }
    var seed: UInt64 { UInt64(index) &* 0x9E37_79B9 &+ 17 }

    var testDescription: String {
        "#\(index) \(SMPIOCapability.names[centralIO.rawValue] ?? "?")→\(SMPIOCapability.names[peripheralIO.rawValue] ?? "?") "
            + "\(secureConnections) mitm=\(mitm.central ? "C" : "")\(mitm.peripheral ? "P" : "") "
            + "bond=\(bonding.central ? "C" : "")\(bonding.peripheral ? "P" : "") keys=\(centralKeys)/\(peripheralKeys) "
            + "size=\(keySizes.central)/\(keySizes.peripheral)\(peripheralInitiates ? " SR" : "")"
    }
}

// MARK: The covering array

/// A deterministic covering array: the full product of the `full` factors, each row completed greedily so that
/// every pair of levels of every two factors appears in some row; rows are added until none is missing. Ties go to
/// the least used level, then the first.
enum PairwiseCovering {
    static func rows(levels: [Int], full: [Int]) -> [[Int]] {
        let factors = levels.count
        var uncovered = Set<[Int]>()
        for a in 0..<factors {
            for b in (a + 1)..<max(a + 1, factors) {
                for x in 0..<levels[a] { for y in 0..<levels[b] { uncovered.insert([a, x, b, y]) } }
            }
        }
        var usage = levels.map { [Int](repeating: 0, count: $0) }
        var rows: [[Int]] = []
        var generator = SplitMixGenerator(state: 0x5EED)

        func complete(_ partial: [Int?]) -> [Int] {
            var row = partial
            for factor in 0..<factors where row[factor] == nil {
                var candidates: [Int] = [], bestGain = -1, bestUsage = Int.max
                for value in 0..<levels[factor] {
                    var gain = 0
                    for other in 0..<factors where other != factor {
                        guard let fixed = row[other] else { continue }
                        let key = other < factor ? [other, fixed, factor, value] : [factor, value, other, fixed]
                        if uncovered.contains(key) { gain += 1 }
                    }
                    let used = usage[factor][value]
                    if gain > bestGain || (gain == bestGain && used < bestUsage) {
                        candidates = [value]
                        bestGain = gain
                        bestUsage = used
                    } else if gain == bestGain && used == bestUsage {
                        candidates.append(value)
                    }
                }
                let best = candidates[Int(generator.next() % UInt64(candidates.count))]
                row[factor] = best
            }
            return row.map { $0 ?? 0 }
        }

        func add(_ row: [Int]) {
            rows.append(row)
            for a in 0..<factors {
                usage[a][row[a]] += 1
                for b in (a + 1)..<max(a + 1, factors) { uncovered.remove([a, row[a], b, row[b]]) }
            }
        }

        var product: [[Int]] = [[]]
        for factor in full { product = product.flatMap { prefix in (0..<levels[factor]).map { prefix + [$0] } } }
        for combination in product {
            var partial = [Int?](repeating: nil, count: factors)
            for (position, factor) in full.enumerated() { partial[factor] = combination[position] }
            add(complete(partial))
        }
        while let missing = uncovered.min(by: { $0.lexicographicallyPrecedes($1) }) {
            var partial = [Int?](repeating: nil, count: factors)
            partial[missing[0]] = missing[1]
            partial[missing[2]] = missing[3]
            add(complete(partial))
        }
        return rows
    }

    /// The pairs of levels no row holds (empty for a covering array).
    static func missingPairs(_ rows: [[Int]], levels: [Int]) -> [[Int]] {
        var missing: [[Int]] = []
        for a in 0..<levels.count {
            for b in (a + 1)..<max(a + 1, levels.count) {
                for x in 0..<levels[a] {
                    for y in 0..<levels[b] where !rows.contains(where: { $0[a] == x && $0[b] == y }) {
                        missing.append([a, x, b, y])
                    }
                }
            }
        }
        return missing
    }
}

/// The factors whose full product the cases hold: IO capabilities × Secure Connections × MITM × bonding (2400
/// cases); key distribution, key size and who starts are covered pairwise with everything, balanced.
let pairingMatrixFullFactors: [MatrixFactor] = [.centralIO, .peripheralIO, .secureConnections, .mitm, .bonding]

let pairingMatrixCases: [PairingMatrixCase] = {
    let rows = PairwiseCovering.rows(levels: MatrixFactor.allCases.map(\.levelCount), full: pairingMatrixFullFactors.map(\.rawValue))
    return rows.enumerated().map { PairingMatrixCase(index: $0.offset, levels: $0.element) }
}()

// MARK: The expected outcome, from the spec's tables

/// Core 5.4 Vol 3 Part H §2.3.5.1 Table 2.8 (IO capabilities to key generation method), transcribed cell by cell:
/// rows are the initiator's IO capability, columns the responder's, both in the order DisplayOnly, DisplayYesNo,
/// KeyboardOnly, NoInputNoOutput, KeyboardDisplay. A cell holds the legacy method and the LE Secure Connections
/// method. "JW" Just Works, "NC" Numeric Comparison, "PK:i" Passkey Entry with the initiator displaying and the
/// responder typing, "PK:r" the responder displaying and the initiator typing, "PK:b" both typing.
let specTable28: [[(legacy: String, secure: String)]] = [
    // Initiator DisplayOnly
    [("JW", "JW"), ("JW", "JW"), ("PK:i", "PK:i"), ("JW", "JW"), ("PK:i", "PK:i")],
    // Initiator DisplayYesNo
    [("JW", "JW"), ("JW", "NC"), ("PK:i", "PK:i"), ("JW", "JW"), ("PK:i", "NC")],
    // Initiator KeyboardOnly
    [("PK:r", "PK:r"), ("PK:r", "PK:r"), ("PK:b", "PK:b"), ("JW", "JW"), ("PK:r", "PK:r")],
    // Initiator NoInputNoOutput
    [("JW", "JW"), ("JW", "JW"), ("JW", "JW"), ("JW", "JW"), ("JW", "JW")],
    // Initiator KeyboardDisplay
    [("PK:r", "PK:r"), ("PK:r", "NC"), ("PK:i", "PK:i"), ("JW", "JW"), ("PK:r", "NC")],
]

/// What the spec says must happen in a case.
enum PairingMatrixExpectation: Equatable, CustomStringConvertible {
    /// Pairing fails with `reason`, sent by the side that found its requirements unmet (the peripheral checks the
    /// Pairing Request before answering; the central checks the Pairing Response).
    case failure(SMPPairingFailedReason, detectedByPeripheral: Bool)
    /// Pairing completes with this method and these keys: `initiatorKeys` the central distributes,
    /// `responderKeys` the peripheral distributes.
    case success(method: SMPPairingMethod, secureConnections: Bool, keySize: UInt8, bonded: Bool,
                 initiatorKeys: SMPKeyDistribution, responderKeys: SMPKeyDistribution)

    var description: String {
        switch self {
        case .failure(let reason, let peripheral): "fails: \(reason), from the \(peripheral ? "peripheral" : "central")"
        case .success(let method, let sc, let size, let bonded, let i, let r):
            "\(method), \(sc ? "LE SC" : "legacy"), key size \(size), \(bonded ? "bonded" : "not bonded"), keys i\(i.rawValue) r\(r.rawValue)"
        }
    }

    init(_ c: PairingMatrixCase) {
        let policies = c.secureConnections.policies
        // §2.3.5.6 / §3.5.1: LE Secure Connections when both set the SC flag (a legacy-only device does not).
        let secureConnections = policies.central != .legacyOnly && policies.peripheral != .legacyOnly
        // §2.3.5.1: without OOB data, Just Works unless one side sets MITM; then Table 2.8.
        let method: SMPPairingMethod
        if c.mitm.central || c.mitm.peripheral {
            let cell = specTable28[c.level(.centralIO)][c.level(.peripheralIO)]
            switch secureConnections ? cell.secure : cell.legacy {
            case "NC": method = .numericComparison
            case "PK:i": method = .passkeyEntry(.initiatorDisplays)
            case "PK:r": method = .passkeyEntry(.responderDisplays)
            case "PK:b": method = .passkeyEntry(.bothInput)
            default: method = .justWorks
            }
        } else {
            method = .justWorks
        }
        // Secure Connections Only mode against a legacy device, or MITM required and the method unauthenticated:
        // Pairing Failed, Authentication Requirements (§2.3.5.1 last paragraphs, §3.5.5 Table 3.7; Vol 3 Part C
        // §10.2.4). The responder checks on the Pairing Request, the initiator on the Pairing Response.
        if (policies.peripheral == .required && !secureConnections) || (c.mitm.peripheral && method == .justWorks) {
            self = .failure(.authenticationRequirements, detectedByPeripheral: true)
            return
        }
        if (policies.central == .required && !secureConnections) || (c.mitm.central && method == .justWorks) {
            self = .failure(.authenticationRequirements, detectedByPeripheral: false)
            return
        }
        // §3.5.1: the responder answers with a subset of the request's fields: the keys are the AND of both
        // sides' fields (both hold an IRK and a CSRK here); §3.6.1: EncKey is ignored in LE Secure Connections.
        var initiatorKeys = c.centralKeys.initiatorKeys.intersection(c.peripheralKeys.initiatorKeys)
        var responderKeys = c.centralKeys.responderKeys.intersection(c.peripheralKeys.responderKeys)
        if secureConnections {
            initiatorKeys.remove(.encryptionKey)
            responderKeys.remove(.encryptionKey)
        }
        self = .success(
            method: method, secureConnections: secureConnections, keySize: min(c.keySizes.central, c.keySizes.peripheral),
            bonded: c.bonding.central && c.bonding.peripheral, initiatorKeys: initiatorKeys, responderKeys: responderKeys)
    }
}

// MARK: Two stacks answering like users

/// Two host stacks on one virtual air (``TwoStacks``) configured for one matrix case, whose event handlers answer
/// the pairing prompts: Numeric Comparison and Just Works confirmed; a passkey displayed on one side (read from
/// its ``HostEvent/pairingInteraction(handle:_:)``) typed on the other; when both type, the same case-specific
/// passkey on both.
final class MatrixStacks: @unchecked Sendable {
    let stacks: TwoStacks
    let centralStore = InMemoryBondStore()
    let peripheralStore = InMemoryBondStore()
    let centralCSRK: Block128
    let peripheralCSRK: Block128
    /// Typed by both when both input (KeyboardOnly on both sides).
    let sharedPasskey: UInt32
    private let lock = LockedValue<(displayed: UInt32?, waiting: (HostStack, UInt16)?)>((nil, nil))

    /// A characteristic readable only on an encrypted link, and one accepting signed writes.
    static let database: (database: GATTDatabase, encrypted: UInt16, signed: UInt16) = {
        var database = GATTDatabase()
        do {
            try database.addGAPService(deviceName: "matrix")
            try database.addGATTService()
            let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFC0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFC1), properties: [.read],
                                             permissions: GATTPermissions(readable: true, writable: false, read: .encrypted),
                                             value: .stored([0x3C])),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFC2),
                                             properties: [.read, .writeWithoutResponse, .authenticatedSignedWrites],
                                             value: .stored([0])),
            ]))
            return (database, service.characteristics[0].value, service.characteristics[1].value)
        } catch {
            Issue.record("database: \(error)")
            return (database, 0, 0)
        }
    }()

    init(_ c: PairingMatrixCase) {
        centralCSRK = Block128(high: 0xC5C5_0000_0000_0000 | c.seed, low: 0x0C)
        peripheralCSRK = Block128(high: 0x9595_0000_0000_0000 | c.seed, low: 0x09)
        sharedPasskey = UInt32(truncatingIfNeeded: c.seed % 1_000_000)
        let policies = c.secureConnections.policies
        func security(io: SMPIOCapability, policy: SMPSecureConnectionsPolicy, mitm: Bool, bonding: Bool,
                      keys: MatrixKeyProfile, maximumKeySize: UInt8, csrk: Block128, store: InMemoryBondStore,
                      seed: UInt64) -> HostSecurityConfiguration {
            var configuration = HostSecurityConfiguration()
            configuration.ioCapability = io
            configuration.secureConnections = policy
            configuration.mitm = mitm
            configuration.bonding = bonding
            configuration.initiatorKeys = keys.initiatorKeys
            configuration.responderKeys = keys.responderKeys
            configuration.maximumKeySize = maximumKeySize
            configuration.signatureKey = csrk
            configuration.bondStore = store
            configuration.keySource = SeededSMPKeySource(SplitMixGenerator(state: seed))
            return configuration
        }
        var central = HostConfiguration(address: .randomStatic(seed: 2))
        central.security = security(io: c.centralIO, policy: policies.central, mitm: c.mitm.central, bonding: c.bonding.central,
                                     keys: c.centralKeys, maximumKeySize: c.keySizes.central, csrk: centralCSRK,
                                     store: centralStore, seed: c.seed &* 2 &+ 1)
        var peripheral = HostConfiguration(address: .randomStatic(seed: 1))
        peripheral.security = security(io: c.peripheralIO, policy: policies.peripheral, mitm: c.mitm.peripheral,
                                       bonding: c.bonding.peripheral, keys: c.peripheralKeys,
                                       maximumKeySize: c.keySizes.peripheral, csrk: peripheralCSRK,
                                       store: peripheralStore, seed: c.seed &* 2 &+ 2)
        stacks = TwoStacks(database: Self.database.database, central: central, peripheral: peripheral, seed: c.seed)
        let ce = stacks.centralEvents, pe = stacks.peripheralEvents
        stacks.central.setEventHandler { [unowned self] event in
            ce.append(event)
            answer(event, host: stacks.central)
        }
        stacks.peripheral.setEventHandler { [unowned self] event in
            pe.append(event)
            answer(event, host: stacks.peripheral)
        }
    }

    func answer(_ event: HostEvent, host: HostStack) {
        guard case .pairingInteraction(let handle, let interaction) = event else { return }
        switch interaction {
        case .confirmNumericValue, .confirmJustWorks:
            host.answerPairing(connectionHandle: handle, .confirm(true))
        case .displayPasskey(let value):
            let waiting = lock.withLock { state -> (HostStack, UInt16)? in
                state.displayed = value
                defer { state.waiting = nil }
                return state.waiting
            }
            if let (waitingHost, waitingHandle) = waiting { waitingHost.answerPairing(connectionHandle: waitingHandle, .passkey(value)) }
        case .enterPasskey:
            // The passkey the other side shows; when the other side asks for one too (both KeyboardOnly), the user
            // makes one up and types it on both.
            let (shown, other) = lock.withLock { state -> (UInt32?, (HostStack, UInt16)?) in
                if let displayed = state.displayed { return (displayed, nil) }
                if let other = state.waiting {
                    state.waiting = nil
                    return (sharedPasskey, other)
                }
                state.waiting = (host, handle)
                return (nil, nil)
            }
            if let shown { host.answerPairing(connectionHandle: handle, .passkey(shown)) }
            if let (otherHost, otherHandle) = other, let shown { otherHost.answerPairing(connectionHandle: otherHandle, .passkey(shown)) }
        }
    }

    // MARK: Reading the records

    static func completed(_ events: Recorder<HostEvent>) -> [PairingOutcome] {
        events.values.compactMap { if case .pairingCompleted(_, let outcome) = $0 { outcome } else { nil } }
    }

    static func failures(_ events: Recorder<HostEvent>) -> [(SMPPairingFailedReason?, HostError)] {
        events.values.compactMap { if case .pairingFailed(_, let reason, let error) = $0 { (reason, error) } else { nil } }
    }

    /// Encryption Change events: (status is Success, Encryption_Enabled).
    static func encryptionChanges(_ events: Recorder<HostEvent>) -> [(success: Bool, enabled: Bool)] {
        events.values.compactMap { if case .encryptionChanged(_, let status, let enabled) = $0 { (status == .success, enabled) } else { nil } }
    }

    static func interactions(_ events: Recorder<HostEvent>) -> [PairingInteraction] {
        events.values.compactMap { if case .pairingInteraction(_, let interaction) = $0 { interaction } else { nil } }
    }

    static func smpPDUs(_ events: Recorder<HostEvent>) -> Int {
        events.values.filter { if case .securityManagerPDU = $0 { true } else { false } }.count
    }

    /// Both sides have a terminal pairing event.
    var settled: Bool {
        let done: (Recorder<HostEvent>) -> Bool = { events in
            events.values.contains { event in
                switch event {
                case .pairingCompleted, .pairingFailed: true
                default: false
                }
            }
        }
        return done(stacks.centralEvents) && done(stacks.peripheralEvents)
    }

    /// Disconnects, the peripheral advertises again and the central reconnects.
    func reconnect() -> Bool { stacks.reconnect(advertisingAs: "matrix") }
}

/// Whether a key (wire order, least significant octet first) is masked to `keySize` octets (Vol 3 Part H §2.3.4:
/// the most significant octets beyond the negotiated size are zero).
func isMasked(_ key: [UInt8], to keySize: UInt8) -> Bool {
    key.count == 16 && key.dropFirst(Int(keySize)).allSatisfy { $0 == 0 }
}
