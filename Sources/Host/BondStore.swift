public import BluetoothCore
import BluetoothRuntime
public import BluetoothEngine

/// What a bond store holds: the bonds that parse, and one error per entry that does not (reported, untouched).
public struct BondStoreContents: Sendable {
    public var bonds: [Bond]
    public var problems: [BondStoreError]

    public init(bonds: [Bond] = [], problems: [BondStoreError] = []) {
        self.bonds = bonds
        self.problems = problems
    }
}

/// Persistent storage of bonds (Core 5.4 Vol 3 Part H §2.4.1; Vol 3 Part C §9.4.4 bonding). The host reads it
/// once when it starts and writes a bond whenever it changes (after pairing, on each CCCD change of a bonded peer,
/// on sign counter changes); it calls the store on its event loop. Implementations must be safe to call from any
/// thread (the `blue bonds` tool reads the same store).
public protocol BondStore: AnyObject, Sendable {
    /// Every bond, and the problems of entries that could not be read.
    func loadBonds() -> BondStoreContents
    /// Writes `bond`, replacing the bond of the same identity address.
    func saveBond(_ bond: Bond) throws(BondStoreError)
    /// Removes the bond of `identityAddress` (also when its entry is corrupt).
    func removeBond(identityAddress: BluetoothAddress) throws(BondStoreError)
}

/// A bond store in memory: for tests and for hosts that must forget everything at exit.
public final class InMemoryBondStore: BondStore {
    private let bonds = LockedValue<[BluetoothAddress: Bond]>([:])

    public init(_ initial: [Bond] = []) {
        bonds.store(Dictionary(initial.map { ($0.identityAddress, $0) }, uniquingKeysWith: { $1 }))
    }

    public func loadBonds() -> BondStoreContents {
        BondStoreContents(bonds: bonds.load().values.sorted { $0.identityAddress.value < $1.identityAddress.value })
    }

    public func saveBond(_ bond: Bond) throws(BondStoreError) {
        bonds.withLock { $0[bond.identityAddress] = bond }
    }

    public func removeBond(identityAddress: BluetoothAddress) throws(BondStoreError) {
        let removed = bonds.withLock { $0.removeValue(forKey: identityAddress) }
        if removed == nil { throw BondStoreError(.notFound, "no bond with \(identityAddress)") }
    }

    /// The stored bond of `identityAddress` (tests).
    public func bond(for identityAddress: BluetoothAddress) -> Bond? { bonds.load()[identityAddress] }
}
