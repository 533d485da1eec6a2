import BluetoothCore

/// Bytes from hex text in tests; a malformed literal is a bug in the test itself, reported as an empty array
/// that then fails the assertion using it.
public func hex(_ text: String) -> [UInt8] {
    (try? Hex.decode(text)) ?? []
}

/// A small deterministic generator (SplitMix64) for randomized tests that must replay identically.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension SeededGenerator {
    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &self) }
    }
}
