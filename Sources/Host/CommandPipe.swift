import BluetoothRuntime
import DequeModule
import HCI
import BluetoothCore
import BluetoothEngine

/// The host side of HCI command flow control (Core 5.4 Vol 4 Part E §4.4): commands wait in a queue until the
/// controller grants a credit; Num_HCI_Command_Packets of the latest Command Complete / Command Status sets the
/// credits (the pipe starts with one); answers are matched to the oldest command in flight with the same opcode,
/// by Command Complete (§7.7.14) or Command Status (§7.7.15) as ``HCICommand/Info/answeredByCommandStatus`` says.
///
/// Every command has a bound, sent or not:
/// - a command in flight with no answer after the timeout fails as an unresponsive controller and the pipe goes
///   on with one credit (Bumble's controller ignores LE Set PHY, LE Encrypt and the P-256 commands);
/// - credit starvation (no credit, nothing in flight, something waiting: a controller that answered with
///   Num_HCI_Command_Packets = 0 and never grants another, §4.4 does not say how long a host must wait) that lasts
///   the timeout fails every waiting command as an unresponsive controller ("granted no command credit"), reported
///   once, and the pipe goes on with one credit. Without it a command queued then (LE Set Scan Enable when `blue
///   scan` stops) could never be sent nor fail, and its caller waited forever.
///
/// Sans-I/O: the owner (``HostStack``) feeds it events and the time, sends what ``takeSendable(now:)`` returns
/// until nil, arms one timer for ``nextDeadline`` and calls ``expire(now:)`` when it fires. O(1) per event but for
/// the opcode match among the commands in flight (one, or the few the credits allow). Confined to the host's
/// event loop.
struct CommandPipe {
    typealias Completion = (Result<HCIReturnParameters, HostError>) -> Void

    struct Entry {
        let command: HCICommand
        let completion: Completion
        /// How long it may wait for its answer once sent.
        let timeout: Duration
    }

    struct Sent {
        let command: HCICommand
        let completion: Completion
        let deadline: StackInstant
        let timeout: Duration
    }

    /// What ``expire(now:)`` ended: the completions to fail, and the errors to report (one per timed-out command,
    /// one per starvation however many commands it failed).
    struct Expiry {
        var failed: [(Completion, HostError)] = []
        var reports: [HostError] = []
    }

    let timeout: Duration
    /// Commands not yet sent, oldest first.
    private var waiting: Deque<Entry> = []
    /// Commands sent and not answered, oldest first (initialisation commands have a longer timeout than the others,
    /// so the first one's deadline is not always the earliest).
    private(set) var inFlight: [Sent] = []
    private(set) var credits = 1
    /// When the current credit starvation fails the waiting commands (nil: no starvation).
    private(set) var starvationDeadline: StackInstant?
    /// Answers for opcodes with no command in flight (late answers after a timeout, spontaneous credits).
    private(set) var unmatchedResponses = 0
    /// Credit starvations that ran out (each reported once).
    private(set) var starvations = 0

    init(timeout: Duration) {
        self.timeout = timeout
    }

    var waitingCount: Int { waiting.count }
    var pendingCount: Int { waitingCount + inFlight.count }

    /// Queues `command`; once sent it may wait `timeout` for its answer (the pipe's own timeout when nil).
    mutating func enqueue(_ command: HCICommand, timeout: Duration? = nil, completion: @escaping Completion) {
        waiting.append(Entry(command: command, completion: completion, timeout: timeout ?? self.timeout))
    }

    /// The next command that may be sent now (one per credit), in flight from now on; nil when none may. Call it
    /// until nil after anything that may have changed the credits or the queue: the nil call also starts or ends
    /// a credit starvation.
    mutating func takeSendable(now: StackInstant) -> HCICommand? {
        guard credits > 0, let entry = waiting.popFirst() else {
            noteStarvation(now: now)
            return nil
        }
        inFlight.append(Sent(command: entry.command, completion: entry.completion, deadline: now + entry.timeout,
                             timeout: entry.timeout))
        credits -= 1
        return entry.command
    }

    /// Starvation is no credit, nothing in flight (no answer to come that could grant one) and a command waiting.
    /// Its deadline is set when it begins and kept while it lasts (an answer granting 0 credits again does not
    /// move it); anything else ends it.
    private mutating func noteStarvation(now: StackInstant) {
        if credits == 0, inFlight.isEmpty, !waiting.isEmpty {
            if starvationDeadline == nil { starvationDeadline = now + timeout }
        } else {
            starvationDeadline = nil
        }
    }

    /// Takes the credits of a Command Complete / Command Status and completes the matching command. Returns the
    /// completion to call with its result (the caller calls it, after updating its own state).
    mutating func receive(_ event: HCIEvent) -> (Completion, Result<HCIReturnParameters, HostError>)? {
        switch event {
        case .commandComplete(let credits, let opcode, let returned):
            self.credits = Int(credits)
            guard let index = inFlight.firstIndex(where: { $0.command.opcode == opcode }) else {
                if opcode != .noOperation { unmatchedResponses += 1 }
                return nil
            }
            let entry = inFlight.remove(at: index)
            if let status = returned.status, status != .success {
                return (entry.completion, .failure(.command(opcode, failedWith: status)))
            }
            return (entry.completion, .success(returned))
        case .commandStatus(let status, let credits, let opcode):
            self.credits = Int(credits)
            guard let index = inFlight.firstIndex(where: { $0.command.opcode == opcode }) else {
                if opcode != .noOperation { unmatchedResponses += 1 }
                return nil
            }
            if status != .success {
                let entry = inFlight.remove(at: index)
                return (entry.completion, .failure(.command(opcode, failedWith: status)))
            }
            // A command answered by Command Complete may be acknowledged by a Command Status first: keep waiting.
            guard HCICommand.table[opcode]?.answeredByCommandStatus ?? true else { return nil }
            let entry = inFlight.remove(at: index)
            return (entry.completion, .success(.status(.success)))
        default:
            return nil
        }
    }

    /// A Command Complete whose return parameters did not decode: the command fails with a protocol error.
    mutating func receiveMalformed(opcode: HCIOpcode, credits: UInt8, reason: String) -> (Completion, HostError)? {
        self.credits = Int(credits)
        guard let index = inFlight.firstIndex(where: { $0.command.opcode == opcode }) else {
            if opcode != .noOperation { unmatchedResponses += 1 }
            return nil
        }
        let entry = inFlight.remove(at: index)
        return (entry.completion, HostError(.protocolError, "\(entry.command.name): \(reason)", opcode: opcode))
    }

    /// The earliest deadline: of the commands in flight (one, or the few the credits allow), or the end of the
    /// credit starvation (never both).
    var nextDeadline: StackInstant? {
        guard var earliest = inFlight.first?.deadline else { return starvationDeadline }
        for sent in inFlight.dropFirst() where sent.deadline < earliest { earliest = sent.deadline }
        return earliest
    }

    /// Fails every command in flight whose deadline has passed, and every waiting command when a credit
    /// starvation has lasted the timeout; either way the pipe continues with at least one credit.
    mutating func expire(now: StackInstant) -> Expiry {
        var expiry = Expiry()
        if inFlight.contains(where: { $0.deadline <= now }) {
            inFlight.removeAll { sent in
                guard sent.deadline <= now else { return false }
                let error = HostError(.unresponsiveController,
                                      "the controller did not answer \(sent.command.name) within \(sent.timeout)",
                                      opcode: sent.command.opcode)
                expiry.failed.append((sent.completion, error))
                expiry.reports.append(error)
                return true
            }
        }
        if let deadline = starvationDeadline, deadline <= now {
            starvationDeadline = nil
            starvations += 1
            let starved = waiting
            waiting = []
            for entry in starved {
                expiry.failed.append((entry.completion, HostError(
                    .unresponsiveController,
                    "\(entry.command.name): the controller granted no command credit within \(timeout)",
                    opcode: entry.command.opcode)))
            }
            if let first = starved.first {
                let others = starved.count > 1 ? " (\(starved.count) commands failed)" : ""
                expiry.reports.append(HostError(
                    .unresponsiveController,
                    "the controller granted no command credit within \(timeout): \(first.command.name) could not be sent\(others)",
                    opcode: first.command.opcode))
            }
        }
        if !expiry.failed.isEmpty { credits = max(credits, 1) }
        return expiry
    }

    /// Removes every command (shutdown, transport lost) and returns their completions.
    mutating func removeAll() -> [Completion] {
        let all = inFlight.map(\.completion) + waiting.map(\.completion)
        inFlight = []
        waiting = []
        starvationDeadline = nil
        return all
    }
}
