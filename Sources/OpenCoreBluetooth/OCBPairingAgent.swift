public import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import Foundation

/// The system's pairing dialogs, as iOS shows them to the user for a CoreBluetooth app (Core 5.4 Vol 3 Part H
/// §2.3.5.1: the pairing method follows both sides' IO capabilities), answered by whoever stands in for the user:
/// a program's environment (`OCB_PAIRING_AGENT`) or a test (``HostBackend/provider(_:application:preferredATTMTU:pairingAgent:)``).
///
/// With an agent, the app's stacks pair as an iPhone does: IO capability KeyboardDisplay, MITM protection asked,
/// so a peer that requires it (passkey entry, numeric comparison) can be used. Without one (the default), they pair
/// as before: NoInputNoOutput, Just Works accepted, a passkey to type cancelled.
public struct OCBPairingAgent: Sendable {
    /// What the dialog asks.
    public enum Prompt: Sendable, Hashable, CustomStringConvertible {
        /// "Pair with this device?" (Just Works that asks for consent).
        case confirmPairing
        /// Numeric Comparison: "Does the other device show NNNNNN?"
        case confirmNumber(UInt32)
        /// Passkey Entry, the peer displays: "Enter the code shown on the other device."
        case enterPasskey
        /// Passkey Entry, we display: "Enter NNNNNN on the other device." (shown; the answer is not used)
        case displayPasskey(UInt32)

        public var description: String {
            switch self {
            case .confirmPairing: "pair?"
            case .confirmNumber(let number): "confirm \(Self.sixDigits(number))?"
            case .enterPasskey: "enter the passkey"
            case .displayPasskey(let passkey): "show \(Self.sixDigits(passkey))"
            }
        }

        static func sixDigits(_ value: UInt32) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, 6 - digits.count)) + digits
        }
    }

    /// The user's answer.
    public enum Answer: Sendable, Hashable {
        /// "Pair" / "Yes": the pairing or the number is accepted (a passkey to enter is cancelled).
        case accept
        /// "Cancel" / "No": the pairing fails.
        case reject
        /// The six digits typed (0...999999); accepts a confirmation too.
        case passkey(UInt32)
    }

    /// Answers `prompt` about the link to `peer` by calling `reply` once, now or later (within SMP's 30 s).
    public typealias Answering = @Sendable (_ prompt: Prompt, _ peer: BluetoothAddress, _ reply: @escaping @Sendable (Answer) -> Void) -> Void

    let answering: Answering

    /// An agent that answers with `answering`, at once or later.
    public init(_ answering: @escaping Answering) {
        self.answering = answering
    }

    /// Accepts pairings and numbers; a passkey to enter is cancelled. Also how the stacks answer without an agent
    /// (then as NoInputNoOutput, so a peer normally gets Just Works): iOS asks the user in a system dialog, and
    /// there is no such dialog here.
    public static let accepting = OCBPairingAgent { _, _, reply in reply(.accept) }
    /// Refuses every pairing.
    public static let rejecting = OCBPairingAgent { _, _, reply in reply(.reject) }
    /// Types `passkey` when one is asked, and accepts the rest.
    public static func typing(_ passkey: UInt32) -> OCBPairingAgent {
        OCBPairingAgent { prompt, _, reply in reply(prompt == .enterPasskey ? .passkey(passkey) : .accept) }
    }
    /// Denies every number to compare, and accepts the rest.
    public static let denyingNumbers = OCBPairingAgent { prompt, _, reply in
        if case .confirmNumber = prompt { reply(.reject) } else { reply(.accept) }
    }

    /// The environment variable that sets the agent of a whole program: `accept` (or `confirm`), `reject`, `deny`
    /// (numbers denied, the rest accepted), `passkey:NNNNNN` (typed when asked, the rest accepted).
    public static let environmentVariable = "OCB_PAIRING_AGENT"

    /// The agent `text` names (see ``environmentVariable``), or why it names none.
    public init(parsing text: String) throws(OCBApplication.ConfigurationError) {
        let value = text.trimmingCharacters(in: .whitespaces).lowercased()
        switch value {
        case "accept", "confirm": self = .accepting
        case "reject": self = .rejecting
        case "deny": self = .denyingNumbers
        default:
            guard value.hasPrefix("passkey:"), let passkey = UInt32(value.dropFirst("passkey:".count)), passkey <= 999_999 else {
                throw OCBApplication.ConfigurationError(
                    "\(Self.environmentVariable)=\(text) is not accept, reject, deny or passkey:NNNNNN (0...999999)")
            }
            self = .typing(passkey)
        }
    }

    /// The agent `OCB_PAIRING_AGENT` sets (nil: unset or empty; a bad value is logged once and ignored).
    static func environment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> OCBPairingAgent? {
        guard let text = environment[environmentVariable], !text.isEmpty else { return nil }
        do throws(OCBApplication.ConfigurationError) {
            return try OCBPairingAgent(parsing: text)
        } catch {
            let first = reported.withLock { reported in
                defer { reported = true }
                return !reported
            }
            if first { Log.coreBluetooth.error("\(error.reason); pairing as without an agent") }
            return nil
        }
    }

    private static let reported = LockedValue(false)

    /// Asks about `interaction` on the link to `peer` and gives the engine's answer to `answer` (nothing for a
    /// passkey shown).
    func ask(_ interaction: PairingInteraction, peer: BluetoothAddress, _ answer: @escaping @Sendable (PairingAnswer) -> Void) {
        let prompt: Prompt = switch interaction {
        case .confirmJustWorks: .confirmPairing
        case .confirmNumericValue(let number): .confirmNumber(number)
        case .enterPasskey: .enterPasskey
        case .displayPasskey(let passkey): .displayPasskey(passkey)
        }
        answering(prompt, peer) { reply in
            switch (interaction, reply) {
            case (.displayPasskey, _): break
            case (.enterPasskey, .passkey(let passkey)): answer(.passkey(min(passkey, 999_999)))
            case (.enterPasskey, _): answer(.passkey(nil))
            case (_, .reject): answer(.confirm(false))
            case (_, .accept), (_, .passkey): answer(.confirm(true))
            }
        }
    }
}
