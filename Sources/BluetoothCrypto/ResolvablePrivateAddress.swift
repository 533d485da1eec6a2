public import BluetoothCore

/// Resolvable private addresses (Core 5.4 Vol 6 Part B §1.3.2.2 generation, §1.3.2.3 resolution): a 24-bit
/// `prand` whose two most significant bits are 0b01, and `hash = ah(IRK, prand)`; the address is
/// `prand ‖ hash` (prand in the 24 most significant bits).
public enum ResolvablePrivateAddress {
    /// Makes a new resolvable private address for `irk` with a random prand.
    public static func generate(
        irk: Block128, using generator: inout some RandomNumberGenerator
    ) throws(BluetoothCryptoError) -> BluetoothAddress {
        // prand's random part (22 bits) must be neither all zeros nor all ones.
        var random: UInt32
        repeat {
            random = UInt32.random(in: 0...0x3F_FFFF, using: &generator)
        } while random == 0 || random == 0x3F_FFFF
        return try make(irk: irk, prand: 0x40_0000 | random)
    }

    /// Makes a new resolvable private address for `irk` from the system random generator.
    public static func generate(irk: Block128) throws(BluetoothCryptoError) -> BluetoothAddress {
        var generator = SystemRandomNumberGenerator()
        return try generate(irk: irk, using: &generator)
    }

    /// The address for a given prand (only its 24 low bits count; they must start with 0b01).
    public static func make(irk: Block128, prand: UInt32) throws(BluetoothCryptoError) -> BluetoothAddress {
        let prand = prand & 0xFF_FFFF
        guard prand >> 22 == 0b01 else {
            throw BluetoothCryptoError(.invalidValue, "a resolvable private address's prand starts with bits 01")
        }
        let hash = try SecurityToolbox.ah(k: irk, r: prand)
        return BluetoothAddress(UInt64(prand) << 24 | UInt64(hash), type: .random)
    }

    /// Whether `address` is a resolvable private address generated with `irk` (its hash part equals
    /// `ah(irk, prand)`). Public and other kinds of random address never resolve.
    public static func resolves(_ address: BluetoothAddress, irk: Block128) throws(BluetoothCryptoError) -> Bool {
        guard address.kind == .resolvablePrivate else { return false }
        let prand = UInt32(truncatingIfNeeded: address.value >> 24) & 0xFF_FFFF
        let hash = UInt32(truncatingIfNeeded: address.value) & 0xFF_FFFF
        return try SecurityToolbox.ah(k: irk, r: prand) == hash
    }

    /// The first IRK of `irks` that resolves `address`, with its index; `nil` when none does.
    public static func resolve(
        _ address: BluetoothAddress, irks: some Sequence<Block128>
    ) throws(BluetoothCryptoError) -> (index: Int, irk: Block128)? {
        for (index, irk) in irks.enumerated() where try resolves(address, irk: irk) {
            return (index, irk)
        }
        return nil
    }
}
