import BluetoothRuntime
import HCI

/// The host side of HCI command flow control (Core 5.4 Vol 4 Part E §4.4): commands wait in a queue until the
/// controller grants a credit; Num_HCI_Command_Packets of the latest Command Complete / Command Status sets the
/// credits (the pipe starts with one); answers are matched to the oldest command in flight with the same opcode,
/// by Command Complete (§7.7.14) or Command Status (§7.7.15) as ``HCICommand/Info/answeredByCommandStatus`` says.
///
/// A command with no answer after the timeout fails as an unresponsive controller and the pipe goes on with one
/// credit (Bumble's controller ignores LE Set PHY, LE Encrypt and the P-256 commands).
///
/// Sans-I/O: the owner (``HostStack``) feeds it events and the time, sends what ``takeSendable(now:)`` returns and
/// arms one timer for ``nextDeadline``. Confined to the host's event loop.
struct CommandPipe {
    typealias Completion = (Result<HCIReturnParameters, HostError>) -> Void

    struct Entry {
        let command: HCICommand
        let completion: Completion
        var deadline: StackInstant?
    }

    let timeout: Duration
    private(set) var waiting: [Entry] = []
    private(set) var inFlight: [Entry] = []
    private(set) var credits = 1
    /// Answers for opcodes with no command in flight (late answers after a timeout, spontaneous credits).
    private(set) var unmatchedResponses = 0

    init(timeout: Duration) {
        self.timeout = timeout
    }

    var pendingCount: Int { waiting.count + inFlight.count }

    mutating func enqueue(_ command: HCICommand, completion: @escaping Completion) {
        waiting.append(Entry(command: command, completion: completion, deadline: nil))
    }

    /// The commands that may be sent now (one per credit); they are in flight from now on.
    mutating func takeSendable(now: StackInstant) -> [HCICommand] {
        var sendable: [HCICommand] = []
        while credits > 0, !waiting.isEmpty {
            var entry = waiting.removeFirst()
            entry.deadline = now + timeout
            inFlight.append(entry)
            credits -= 1
            sendable.append(entry.command)
        }
        return sendable
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
        guard let index = inFlight.firstIndex(where: { $0.command.opcode == opcode }) else { return nil }
        let entry = inFlight.remove(at: index)
        return (entry.completion, HostError(.protocolError, "\(entry.command.name): \(reason)", opcode: opcode))
    }

    /// The earliest deadline of a command in flight.
    var nextDeadline: StackInstant? { inFlight.compactMap(\.deadline).min() }

    /// Fails every command in flight whose deadline has passed; the pipe continues with at least one credit.
    mutating func expire(now: StackInstant) -> [(Completion, HostError)] {
        var expired: [(Completion, HostError)] = []
        inFlight.removeAll { entry in
            guard let deadline = entry.deadline, deadline <= now else { return false }
            expired.append((entry.completion, HostError(
                .unresponsiveController,
                "the controller did not answer \(entry.command.name) within \(timeout)", opcode: entry.command.opcode)))
            return true
        }
        if !expired.isEmpty { credits = max(credits, 1) }
        return expired
    }

    /// Removes every command (shutdown, transport lost) and returns their completions.
    mutating func removeAll() -> [Completion] {
        let all = (inFlight + waiting).map(\.completion)
        inFlight = []
        waiting = []
        return all
    }
}
