public import BluetoothCore

/// Generates random static device addresses (Core 5.4 Vol 6 Part B §1.3.2.1): the two most significant bits are
/// 0b11 and the 46 random bits are neither all zeros nor all ones.
public enum RandomStaticAddress {
    /// A fresh address from `generator`.
    public static func generate(using generator: inout some RandomNumberGenerator) -> BluetoothAddress {
        var random = generator.next() & 0x3FFF_FFFF_FFFF
        while random == 0 || random == 0x3FFF_FFFF_FFFF { random = generator.next() & 0x3FFF_FFFF_FFFF }
        return BluetoothAddress(0xC000_0000_0000 | random, type: .random)
    }

    /// A fresh address from `seed` (deterministic), or from the system generator when `seed` is nil.
    public static func generate(seed: UInt64?) -> BluetoothAddress {
        if let seed {
            var generator = SplitMix64(seed: seed)
            return generate(using: &generator)
        }
        var generator = SystemRandomNumberGenerator()
        return generate(using: &generator)
    }
}

/// SplitMix64, for reproducible addresses from a seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
