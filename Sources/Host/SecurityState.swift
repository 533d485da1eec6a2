import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import SMP

/// The stack-wide Security Manager state of a ``HostStack`` (Core 5.4 Vol 3 Part H §2.4 keys; Vol 3 Part C
/// §10.7 privacy): the bonds loaded from the store, our identity (IRK and identity address), where SMP draws its
/// randoms, and the RPA rotation timer. Mutated only on the host's event loop.
struct SecurityState {
    var loaded = false
    var bonds: [BluetoothAddress: Bond] = [:]
    var localIRK: Block128?
    var localIdentity: BluetoothAddress?
    /// Seeds of per-link key sources (when the configured source is not the system one).
    var keySource: (any SMPKeySource)?
    /// When our RPA is next replaced (nil: rotation off or not started).
    var rpaDeadline: StackInstant?
    var rpaCommandPending = false
    /// Controller privacy (HostStack+ControllerPrivacy.swift): the resolving list must be loaded again, when, and
    /// whether its commands are running.
    var resolvingListDirty = false
    var resolvingListRetry: StackInstant?
    var resolvingListCommandsPending = false
    /// Connections whose pairing completed and waits for the controller to acknowledge our last SMP PDUs
    /// (``SecurityLink/deferredCompletion``).
    var deferredPairings: Set<UInt16> = []
    /// The ordered scan and advertising requests (`HostStack+GAP.swift`). They live here because this is the
    /// stack-wide state the GAP extension may extend without touching `HostStack.swift`.
    var scanLane = GAPLane()
    var advertisingLane = GAPLane()
    /// Out-of-band pairing data (`HostStack+OOB.swift`).
    var outOfBand = OutOfBandState()

    /// The bond whose IRK resolves `address`, whose identity is `address`, or that was paired from `address`
    /// (``Bond/connectionAddress``).
    func bond(resolving address: BluetoothAddress) -> Bond? {
        if let bond = bonds[address] { return bond }
        guard address.kind == .resolvablePrivate else {
            // A peer that paired from this (public or static) address and gave another identity.
            return bonds.values.filter { $0.connectionAddress == address }.min { $0.identityAddress.value < $1.identityAddress.value }
        }
        for bond in bonds.values.sorted(by: { $0.identityAddress.value < $1.identityAddress.value }) {
            if let irk = bond.peerIdentityResolvingKey, (try? ResolvablePrivateAddress.resolves(address, irk: irk)) == true {
                return bond
            }
        }
        return nil
    }
}

/// A deterministic per-link key source drawn from the configured one (SplitMix64), so that two links of one
/// seeded host do not repeat each other's randoms and keys.
struct SplitMixGenerator: RandomNumberGenerator, Sendable {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
