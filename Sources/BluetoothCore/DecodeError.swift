/// The error every decoder in the stack throws: a machine-readable ``Code``, the byte offset at which decoding
/// stopped, and a human-readable reason naming what was expected.
///
/// Decoders never trap on input (DESIGN.md "Parsing untrusted bytes"); they throw this instead, and the layer
/// that called them maps it to the protocol's answer (ATT Error Response *Invalid PDU*, SMP Pairing Failed,
/// L2CAP Command Reject, ...).
public struct DecodeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem was found.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// The input ended before a field that must be present.
        case truncated
        /// Bytes remain after a PDU whose length the specification fixes.
        case trailingBytes
        /// A length field disagrees with the data or with a limit of the specification.
        case invalidLength
        /// A field holds a value the specification forbids.
        case invalidValue
        /// A type or opcode octet names nothing this decoder knows.
        case unknownType
        /// The input is not in the expected textual form (hex strings, UUID strings...).
        case malformedText
    }

    /// What kind of problem was found.
    public var code: Code
    /// The offset, in bytes from the start of the decoded buffer, where the problem was found.
    public var offset: Int
    /// What was expected, in words: "expected 2 bytes for handle, 1 remain".
    public var reason: String

    public init(_ code: Code, at offset: Int, _ reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "\(code) at offset \(offset): \(reason)" }

    /// The same error with its offset moved by `base`: used when a decoder works on a part of a larger buffer.
    public func shifted(by base: Int) -> DecodeError {
        DecodeError(code, at: offset + base, reason)
    }
}
