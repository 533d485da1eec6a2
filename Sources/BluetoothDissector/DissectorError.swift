public import BluetoothCore

/// Why a buffer could not be described: for a forced kind, that decoder's error; when guessing, every decoder's
/// refusal, so the user sees what each expected.
public struct DissectorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Each kind tried, with the decoder's error.
    public var attempts: [Attempt]

    public struct Attempt: Sendable, Hashable {
        public var kind: PacketKind
        public var error: DecodeError
    }

    public init(attempts: [Attempt]) {
        self.attempts = attempts
    }

    public var description: String {
        if attempts.count == 1, let only = attempts.first {
            return "not a valid \(only.kind.displayName): \(only.error)"
        }
        var lines = ["not recognised as any packet kind (use --as KIND to force one):"]
        for attempt in attempts {
            lines.append("  \(attempt.kind.rawValue): \(attempt.error)")
        }
        return lines.joined(separator: "\n")
    }
}
