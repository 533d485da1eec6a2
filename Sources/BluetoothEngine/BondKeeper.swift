public import BluetoothCore

/// The bonds a stack keeps (Core 5.4 Vol 3 Part H §2.4.1: keys kept per peer identity; Vol 3 Part C §9.4.4
/// bonding), as a user lists and forgets them: our host's bond store (a folder of files) or bluetoothd's paired
/// devices. What a keeper does not tell (bluetoothd shows no keys) is nil in each ``BondSummary``.
public protocol BondKeeper: Sendable {
    /// Where the bonds are, for a person: a folder, "bluetoothd (hci0)".
    var location: String { get }
    /// The bonds by address, and one line per entry that could not be read (left untouched).
    func listBonds() async throws(HostError) -> BondListing
    /// Forgets every bond of `address` (either address type) and says which identities it forgot; none: code
    /// ``HostError/Code/invalidParameters``.
    func removeBonds(of address: BluetoothAddress) async throws(HostError) -> [BluetoothAddress]
}

/// What a ``BondKeeper`` lists.
public struct BondListing: Sendable {
    public var bonds: [BondSummary]
    /// Entries that could not be read, one line each.
    public var problems: [String]

    public init(bonds: [BondSummary], problems: [String] = []) {
        self.bonds = bonds
        self.problems = problems
    }
}

/// One bond as a keeper tells it (nil: not told).
public struct BondSummary: Sendable, Hashable {
    public var identity: BluetoothAddress
    /// The device's name, when the keeper remembers it.
    public var name: String?
    public var secureConnections: Bool?
    public var authenticated: Bool?
    public var keySize: UInt8?
    /// The keys held, by name ("LTK (LE SC)", "peer IRK").
    public var keys: [String]?
    /// How many Client Characteristic Configurations of the peer are kept with the bond.
    public var clientConfigurations: Int?
    /// Paired but not bonded (bluetoothd keeps such devices until it forgets them).
    public var bonded: Bool?
    /// The keeper lets the device connect without asking (bluetoothd's Trusted).
    public var trusted: Bool?

    public init(identity: BluetoothAddress, name: String? = nil, secureConnections: Bool? = nil, authenticated: Bool? = nil,
                keySize: UInt8? = nil, keys: [String]? = nil, clientConfigurations: Int? = nil, bonded: Bool? = nil,
                trusted: Bool? = nil) {
        self.identity = identity
        self.name = name
        self.secureConnections = secureConnections
        self.authenticated = authenticated
        self.keySize = keySize
        self.keys = keys
        self.clientConfigurations = clientConfigurations
        self.bonded = bonded
        self.trusted = trusted
    }
}
