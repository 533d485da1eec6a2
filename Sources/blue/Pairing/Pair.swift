import ArgumentParser
import BlueZ
import BluetoothCore
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import Host
import SMP
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The association model `blue pair` asks for (Core 5.4 Vol 3 Part H §2.3.5.1): the IO capability, MITM and
/// Secure Connections policy it implies for our side.
enum PairMethodChoice: String, ExpressibleByArgument, CaseIterable, Sendable {
    case jw, numeric, passkey
    case legacyJW = "legacy-jw"
    case legacyPasskey = "legacy-passkey"
    /// LE Secure Connections OOB (§2.3.5.6.4): `--oob-in` and/or `--oob-out`.
    case oob
    /// Legacy OOB (§2.3.5.4): the shared TK of `--oob-key`.
    case legacyOOB = "legacy-oob"

    var secureConnections: SMPSecureConnectionsPolicy {
        switch self {
        case .jw, .numeric, .passkey, .oob: .required
        case .legacyJW, .legacyPasskey, .legacyOOB: .legacyOnly
        }
    }

    var mitm: Bool { self != .jw && self != .legacyJW }

    /// Out-of-band data decides the method (Table 2.6), not the IO capabilities.
    var isOutOfBand: Bool { self == .oob || self == .legacyOOB }

    var defaultIO: SMPIOCapability {
        switch self {
        case .jw, .legacyJW, .oob, .legacyOOB: .noInputNoOutput
        case .numeric: .displayYesNo
        case .passkey, .legacyPasskey: .keyboardDisplay
        }
    }
}

/// `--io`: an IO capability by name (§2.3.2).
enum IOCapabilityChoice: String, ExpressibleByArgument, CaseIterable, Sendable {
    case displayOnly = "display-only"
    case displayYesNo = "display-yes-no"
    case keyboardOnly = "keyboard-only"
    case noInputNoOutput = "none"
    case keyboardDisplay = "keyboard-display"

    var capability: SMPIOCapability {
        switch self {
        case .displayOnly: .displayOnly
        case .displayYesNo: .displayYesNo
        case .keyboardOnly: .keyboardOnly
        case .noInputNoOutput: .noInputNoOutput
        case .keyboardDisplay: .keyboardDisplay
        }
    }
}

/// `blue pair TARGET --method ...`: connects as central and pairs (Core 5.4 Vol 3 Part H §2.3), prints the method
/// used, the keys each side distributed (§2.4.3), whether the link is encrypted and the bond stored (in the
/// ``FileBondStore`` default directory, see `blue bonds`). `--reconnect` then disconnects, connects again and
/// encrypts with the bond (§2.4.4) instead of pairing again.
///
/// With a bond already stored for the device, `blue pair` encrypts with it (§2.4.4.1, as CoreBluetooth does) and
/// says that no pairing happened; when the device lost its side of the bond (PIN or Key Missing) it fails saying
/// so and suggests `--repair`, which pairs again whatever is stored (the device must allow re-pairing: `blue serve
/// --allow-repairing`).
///
/// Numeric Comparison values are printed and confirmed automatically; a passkey to type comes from `--passkey`,
/// else from standard input; a passkey to display is `--passkey` when given, else a random one (printed).
///
/// Out of band (Docs/pairing.md): `--method oob` writes our LE Secure Connections data (§2.3.5.6.4) to
/// `--oob-out` as soon as the stack is up and/or takes the peer's from `--oob-in` (read at start, applied to the
/// target found); `--method legacy-oob` shares the TK of `--oob-key` (§2.3.5.4). These methods require MITM
/// protection, so a peer without the data makes pairing fail (Authentication Requirements, §3.5.5) instead of
/// silently pairing with Just Works.
struct Pair: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Pair with a device as central (LE Secure Connections or legacy) and bond.",
        discussion: """
            Methods: jw (LE SC Just Works), numeric (LE SC Numeric Comparison, confirmed automatically), passkey \
            (LE SC Passkey Entry), oob (LE SC out of band: --oob-out writes our data, --oob-in reads the peer's), \
            legacy-jw, legacy-passkey, legacy-oob (the shared key of --oob-key). Bonds go to the bond directory \
            (see `blue bonds`). With a bond already stored for the device, the link is encrypted with it and no \
            pairing happens; --repair pairs again (the device must allow it). The OOB file format is described in \
            Docs/pairing.md.
            Exit codes: 2 target not found, 1 pairing or encryption failed, 64 bad arguments, 69 transport unreachable.
            """)

    @OptionGroup var stack: StackOptions

    @Argument(help: "The device: name, address or identifier.")
    var target: String

    @Option(help: "jw, numeric, passkey, oob, legacy-jw, legacy-passkey or legacy-oob.")
    var method: PairMethodChoice = .jw

    @Option(name: .customLong("oob-out"), help: ArgumentHelp(
        "--method oob: write our LE SC out-of-band data (JSON) to this file before connecting.", valueName: "file"))
    var oobOut: String?

    @Option(name: .customLong("oob-in"), help: ArgumentHelp(
        "--method oob: the peer's LE SC out-of-band data (JSON, as --oob-out writes it).", valueName: "file"))
    var oobIn: String?

    @Option(name: .customLong("oob-key"), help: ArgumentHelp(
        "--method legacy-oob: the shared temporary key, 32 hex digits.", valueName: "hex"))
    var oobKey: String?

    @Option(help: "A fixed passkey (0...999999): displayed, or typed when the peer displays.")
    var passkey: UInt32?

    @Option(help: "Our IO capability: display-only, display-yes-no, keyboard-only, none, keyboard-display (default: from the method).")
    var io: IOCapabilityChoice?

    @Flag(name: .customLong("no-bond"), help: "Pair without bonding (no keys stored).")
    var noBond = false

    @Flag(help: "After pairing, disconnect, connect again and encrypt with the bond.")
    var reconnect = false

    @Flag(help: "Pair again even when a bond with the device is stored (the new bond replaces it; the device must allow re-pairing).")
    var repair = false

    @Option(help: "The bond directory (default: $XDG_DATA_HOME/opencorebluetooth/bonds).")
    var bonds: String?

    @Option(help: "Seconds to find the target (and again to connect).")
    var timeout: Double = 10

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if let passkey, passkey > 999_999 { throw ValidationError("--passkey must be 0...999999") }
    }

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.pair() }
    }

    func securityConfiguration() -> HostSecurityConfiguration {
        var security = HostSecurityConfiguration()
        security.ioCapability = io?.capability ?? method.defaultIO
        // MITM is required too (SMPPairingConfiguration.mitmRequired follows it): with an OOB method, a pairing
        // that would fall back to Just Works fails with Authentication Requirements instead (see pair()).
        security.mitm = method.mitm
        security.secureConnections = method.secureConnections
        security.bonding = !noBond
        security.fixedPasskey = passkey
        security.bondStore = FileBondStore(directory: bonds ?? FileBondStore.defaultDirectory())
        // --repair: a device that lost its bond (PIN or Key Missing on a later encryption) is paired with again too.
        if repair { security.allowRepairing = { _ in true } }
        return security
    }

    /// The out-of-band input, checked before anything starts (bad input: exit 64, nothing written or opened).
    func outOfBandInput() throws(CLIFailure) -> PairOutOfBand {
        do throws(OutOfBandFileError) {
            return try PairOutOfBand(method: method, inPath: oobIn, outPath: oobOut, key: oobKey)
        } catch {
            throw error.failure
        }
    }

    /// What this command asks that only our host does (its options in use), refused through bluetoothd.
    func ourHostOptions() -> [BluetoothdLimitation] {
        var needing: [BluetoothdLimitation] = []
        if method.isOutOfBand || method.secureConnections == .legacyOnly { needing.append(.pairingMethod(method.rawValue)) }
        let kept: [(Bool, String)] = [(oobIn != nil, "--oob-in"), (oobOut != nil, "--oob-out"), (oobKey != nil, "--oob-key"),
                                      (bonds != nil, "--bonds"), (noBond, "--no-bond"), (reconnect, "--reconnect")]
        needing += kept.filter(\.0).map { .bonds(option: $0.1) }
        return needing
    }

    func pair() async throws(CLIFailure) {
        let outOfBand = try outOfBandInput()
        var host = HostConfiguration()
        host.security = securityConfiguration()
        var options = StackLaunchOptions(host: host, label: "blue.pair")
        // The same local identity (address, IRK, CSRK) on every run, so the bond the peer keeps for us stays valid.
        options.identity = .persistent(directory: bonds)
        let opened = try await stack.openEngine(label: "pair", options: options, needing: ourHostOptions())
        defer { opened.shutdown() }
        let json = json, typed = passkey, engine = opened.engine
        try await outOfBand.writeLocal(opened, json: json)
        let failureReason = LockedValue<SMPPairingFailedReason?>(nil)
        let subscription = opened.addEventHandler { event in
            if case .pairingFailed(_, let reason?, _) = event { failureReason.store(reason) }
            guard case .pairingInteraction(let handle, let interaction) = event else { return }
            switch interaction {
            case .confirmNumericValue(let value):
                Self.say(json, ["event": "numericComparison", "value": Int(value)], "Numeric comparison: \(Self.six(value)) (confirmed)")
                engine.answerPairing(connectionHandle: handle, .confirm(true))
            case .confirmJustWorks:
                engine.answerPairing(connectionHandle: handle, .confirm(true))
            case .displayPasskey(let value):
                Self.say(json, ["event": "displayPasskey", "passkey": Int(value)], "Passkey to type on the device: \(Self.six(value))")
            case .enterPasskey:
                if let typed {
                    engine.answerPairing(connectionHandle: handle, .passkey(typed))
                } else {
                    DispatchQueue.global().async {
                        if !json { Console.line("Type the passkey shown on the device:") }
                        let line = readLine(strippingNewline: true)
                        engine.answerPairing(connectionHandle: handle, .passkey(line.flatMap { UInt32($0.trimmingWhitespace()) }))
                    }
                }
            }
        }
        defer { subscription.cancel() }

        let limit = duration(seconds: timeout)
        let report = try await opened.findTarget(TargetMatcher(target), timeout: limit)
        let name = report.localName ?? report.address.string
        var summary: [String: Any] = ["target": name, "address": report.address.string, "requestedMethod": method.rawValue]
        outOfBand.applyPeer(opened, target: report.address)

        let connection = try await opened.connect(to: report.address, name: name, timeout: limit)
        // A stored bond is used (encryption, no pairing) unless --repair asks for a new pairing.
        let first = await securing(opened, connection.handle, force: repair)
        // No wait needed before disconnecting: the host reports pairing complete only once the controller has
        // acknowledged our last key distribution PDUs (Number Of Completed Packets), so the peer has its keys.
        await opened.disconnect(connection.handle)
        if method.isOutOfBand, case .failure(let error)? = first.result, failureReason.load() == .authenticationRequirements {
            throw CLIFailure(.failed, "pairing with \(name) failed: \(error.reason): it would have been Just Works, not "
                             + "out of band (the OOB data did not reach the side that needs it: see Docs/pairing.md)")
        }
        let outcome = try first.get(name: name)
        summary.merge(Self.describe(outcome)) { $1 }
        summary["paired"] = !outcome.usedExistingBond
        if !json { Console.line(Self.text(outcome, name: name) + (outcome.usedExistingBond ? " (--repair pairs again)" : "")) }

        if reconnect {
            let again = try await Self.connectWhenHeard(opened, TargetMatcher(target), name: name, limit: limit)
            let second = await securing(opened, again.handle, force: false)
            await opened.disconnect(again.handle)
            let reconnected = try second.get(name: name)
            summary["reconnect"] = Self.describe(reconnected)
            if !json {
                Console.line(reconnected.usedExistingBond
                             ? "Reconnected: encrypted with the bond, no pairing" + (reconnected.keySize.map { " (key size \($0))" } ?? "")
                             : "Reconnected: paired again (no bond): " + Self.text(reconnected, name: name))
            }
        }
        if json { Console.json(summary) }
    }

    /// Pairs (or, when `force` is false and a bond exists, encrypts with it), within 40 s, announcing the IO
    /// capability of `--io` or the method.
    func securing(_ opened: any OpenedStack, _ handle: UInt16, force: Bool) async -> PairingResult {
        let done = OneShot<Result<PairingOutcome, HostError>?>()
        // bluetoothd may have to forget the device and find it again before pairing again: more time for --repair.
        let timer = opened.eventLoop.schedule(after: .seconds(force ? 90 : 40)) { done.fire(nil) }
        let options = PairingOptions(forcePairing: force, ioCapability: io?.capability ?? method.defaultIO)
        opened.engine.pair(connectionHandle: handle, options: options) { done.fire($0) }
        let result = await done.wait()
        timer.cancel()
        return PairingResult(result: result, limit: force ? 90 : 40)
    }

    struct PairingResult: Sendable {
        var result: Result<PairingOutcome, HostError>?
        var limit = 40

        func get(name: String) throws(CLIFailure) -> PairingOutcome {
            switch result {
            case .success(let outcome)?: return outcome
            case .failure(let error)?:
                switch error.security {
                case .bondLost?:
                    throw CLIFailure(.failed, "\(name) no longer has the bond we hold (PIN or Key Missing): the link is "
                                     + "not encrypted and no pairing happened; `blue pair --repair` pairs again")
                case .encryptionFailed?:
                    throw CLIFailure(.failed, "\(name): \(error.securityLine) (with the stored bond: if the device lost "
                                     + "it, `blue pair --repair` pairs again)")
                case .pairingFailed(.pairingNotSupported, remote: true)?:
                    throw CLIFailure(.failed, "\(name): \(error.securityLine) (the device may hold a bond with us and "
                                     + "refuse to pair again: remove it there, or let it re-pair, e.g. `blue serve --allow-repairing`)")
                case nil:
                    throw CLIFailure(.failed, "pairing with \(name) failed: \(error.reason)")
                default:
                    throw CLIFailure(.failed, "\(name): \(error.securityLine)")
                }
            case nil: throw CLIFailure(.failed, "pairing with \(name) did not finish within \(limit) s")
            }
        }
    }

    static func six(_ value: UInt32) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, 6 - text.count)) + text
    }

    static func say(_ json: Bool, _ object: [String: Any], _ text: String) {
        if json { Console.json(object) } else { Console.line(text) }
    }

    /// The names of distributed keys (§3.6): LTK (legacy), IRK with the identity address, CSRK.
    static func keyNames(_ keys: SMPDistributedKeys) -> [String] {
        var names: [String] = []
        if keys.longTermKey != nil { names.append("LTK") }
        if keys.identityResolvingKey != nil { names.append("IRK") }
        if let identity = keys.identityAddress { names.append("identity \(identity.string)") }
        if keys.signatureKey != nil { names.append("CSRK") }
        return names
    }

    static func methodName(_ outcome: PairingOutcome) -> String {
        switch outcome.method {
        case .outOfBand?: "oob"
        case let method?: "\(method)"
        case nil: "existing bond"
        }
    }

    /// Connects again to a peer that just disconnected: once it is heard advertising again, each attempt given a few
    /// seconds, until `limit`. A controller that answers LE Create Connection only for a device advertising at that
    /// moment (BlueZ's emulator, btvirt) drops an attempt made while the peer restarts its advertising set (heard
    /// from the old set, connected to after its removal); a controller that keeps initiating connects at the first.
    static func connectWhenHeard(_ launched: any OpenedStack, _ target: TargetMatcher, name: String, limit: Duration)
        async throws(CLIFailure) -> Connection {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while true {
            let heard = try await launched.findTarget(target, timeout: max(deadline - clock.now, .seconds(1)))
            let remaining = deadline - clock.now
            do {
                return try await launched.connect(to: heard.address, name: name, timeout: min(remaining, .seconds(5)))
            } catch {
                if deadline - clock.now < .seconds(5) { throw error }
            }
        }
    }

    static func describe(_ outcome: PairingOutcome) -> [String: Any] {
        var object: [String: Any] = [
            "method": methodName(outcome), "encrypted": true, "bonded": outcome.bonded, "usedExistingBond": outcome.usedExistingBond,
        ]
        // What the engine did not tell (bluetoothd keeps the keys) is left out.
        if let secureConnections = outcome.secureConnections { object["secureConnections"] = secureConnections }
        if let authenticated = outcome.authenticated { object["authenticated"] = authenticated }
        if let keySize = outcome.keySize { object["keySize"] = Int(keySize) }
        if let keys = outcome.localKeys { object["localKeys"] = keyNames(keys) }
        if let keys = outcome.peerKeys { object["peerKeys"] = keyNames(keys) }
        if outcome.secureConnections == true && !outcome.usedExistingBond && outcome.localKeys != nil { object["sharedLTK"] = true }
        if let identity = outcome.identityAddress { object["identity"] = identity.string }
        return object
    }

    static func text(_ outcome: PairingOutcome, name: String) -> String {
        let authenticated = outcome.authenticated.map { $0 ? ", authenticated" : ", unauthenticated" } ?? ""
        let keySize = outcome.keySize.map { ", key size \($0)" } ?? ""
        if outcome.usedExistingBond {
            return "Encrypted with the existing bond of \(name)\(keySize)\(authenticated): no pairing"
        }
        let kind = outcome.secureConnections.map { $0 ? ", LE Secure Connections" : ", LE legacy pairing" } ?? ""
        var lines = ["Paired with \(name): \(methodName(outcome))\(kind)\(authenticated)\(keySize)"]
        if let localKeys = outcome.localKeys, let peerKeys = outcome.peerKeys {
            let local = keyNames(localKeys), peer = keyNames(peerKeys)
            lines.append("  keys sent: \(local.isEmpty ? "none" : local.joined(separator: ", "))"
                         + (outcome.secureConnections == true ? " (LTK derived on both sides)" : ""))
            lines.append("  keys received: \(peer.isEmpty ? "none" : peer.joined(separator: ", "))")
        } else {
            lines.append("  keys: kept by the stack's engine, not told")
        }
        lines.append("  encrypted: yes")
        lines.append("  bonded: \(outcome.bonded ? "yes" : "no")" + (outcome.identityAddress.map { " (identity \($0.string))" } ?? ""))
        return lines.joined(separator: "\n")
    }
}
