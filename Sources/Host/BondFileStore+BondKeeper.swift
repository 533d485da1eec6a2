public import BluetoothCore
public import BluetoothEngine

/// Our host's bonds as a ``BondKeeper``: the files of the store, each with its keys and security (what `blue
/// bonds` shows for every transport but bluetoothd).
extension FileBondStore: BondKeeper {
    public var location: String { directory }

    public func listBonds() async throws(HostError) -> BondListing {
        let contents = loadBonds()
        return BondListing(bonds: contents.bonds.sorted { $0.identityAddress.value < $1.identityAddress.value }.map(Self.summary),
                           problems: contents.problems.map(\.description))
    }

    public func removeBonds(of address: BluetoothAddress) async throws(HostError) -> [BluetoothAddress] {
        let matching = loadBonds().bonds.filter { $0.identityAddress.value == address.value }.map(\.identityAddress)
        guard !matching.isEmpty else { throw HostError(.invalidParameters, "no bond with \(address.string) in \(directory)") }
        for identity in matching {
            do {
                try removeBond(identityAddress: identity)
            } catch {
                throw HostError(.commandFailed, "cannot remove the bond with \(identity.string): \(error.description)")
            }
        }
        return matching
    }

    static func summary(_ bond: Bond) -> BondSummary {
        var keys: [String] = []
        if bond.sharedLongTermKey != nil { keys.append("LTK (LE SC)") }
        if bond.peerLongTermKey != nil { keys.append("peer LTK") }
        if bond.localLongTermKey != nil { keys.append("our LTK") }
        if bond.peerIdentityResolvingKey != nil { keys.append("peer IRK") }
        if bond.peerSignatureKey != nil { keys.append("peer CSRK") }
        if bond.localSignatureKey != nil { keys.append("our CSRK") }
        return BondSummary(identity: bond.identityAddress, secureConnections: bond.secureConnections, authenticated: bond.authenticated,
                           keySize: bond.keySize, keys: keys, clientConfigurations: bond.clientConfigurations.count)
    }
}
