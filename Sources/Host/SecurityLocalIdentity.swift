public import BluetoothCore
public import BluetoothCrypto
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import BluetoothEngine

/// Our own LE identity (Core 5.4 Vol 3 Part H §2.4.1 IRK and CSRK; Vol 6 Part B §1.3.2.1 random static
/// address): what a peer's bond with us rests on. A process that opens a new stack on each run (`blue pair`)
/// keeps it in a ``LocalIdentityFile`` so the peer recognises it next time; in-process stacks use random ones.
public struct LocalIdentity: Hashable, Sendable, CustomStringConvertible {
    /// Our random static address (the two top bits set).
    public var address: BluetoothAddress
    /// Our IRK, distributed in Identity Information.
    public var identityResolvingKey: Block128
    /// Our CSRK, distributed in Signing Information.
    public var signatureKey: Block128

    public init(address: BluetoothAddress, identityResolvingKey: Block128, signatureKey: Block128) {
        self.address = address
        self.identityResolvingKey = identityResolvingKey
        self.signatureKey = signatureKey
    }

    /// A fresh identity from the system random source.
    public static func generate() -> LocalIdentity {
        var generator = SystemRandomNumberGenerator()
        return LocalIdentity(
            address: RandomStaticAddress.generate(using: &generator),
            identityResolvingKey: Block128(high: generator.next(), low: generator.next()),
            signatureKey: Block128(high: generator.next(), low: generator.next()))
    }

    /// Makes `configuration` present this identity: the controller's random address, our IRK and CSRK.
    public func apply(to configuration: inout HostConfiguration) {
        configuration.address = .fixedRandom(address)
        configuration.security.identityResolvingKey = identityResolvingKey
        configuration.security.signatureKey = signatureKey
        configuration.security.identityAddress = address
    }

    public var description: String { "local identity \(address)" }
}

/// A ``LocalIdentity`` kept in one JSON file, `local-identity` in the bonds directory (``FileBondStore``'s default:
/// the keys next to the bonds that depend on them; no `.json` suffix, so the bond loader skips it). The file has
/// mode 0600 and is created on first use; a file that cannot be read as an identity is reported
/// (``BondStoreError/Code/corrupt``) and never overwritten. Safe from any thread (each call is one file).
public struct LocalIdentityFile: Sendable {
    public static let fileName = "local-identity"
    public let directory: String
    public var path: String { "\(directory)/\(Self.fileName)" }

    public init(directory: String = FileBondStore.defaultDirectory()) {
        self.directory = directory
    }

    private struct Record: Codable {
        var version = 1
        var address: String
        var irk: String
        var csrk: String
    }

    /// The stored identity, nil when there is no file yet.
    public func load() throws(BondStoreError) -> LocalIdentity? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BondStoreError(.ioFailed, "cannot read", path: path)
        }
        let record: Record
        do {
            record = try JSONDecoder().decode(Record.self, from: data)
        } catch {
            throw BondStoreError(.corrupt, "not a local identity: \(error)", path: path)
        }
        guard record.version == 1 else { throw BondStoreError(.corrupt, "unknown local identity version \(record.version)", path: path) }
        guard let address = try? BluetoothAddress(string: record.address, type: .random), address.kind == .randomStatic else {
            throw BondStoreError(.corrupt, "address \"\(record.address)\" is not a random static address", path: path)
        }
        return LocalIdentity(address: address, identityResolvingKey: try block(record.irk, "irk"),
                             signatureKey: try block(record.csrk, "csrk"))
    }

    /// The stored identity, or a new one written now (the file is created exclusively: two processes starting
    /// at once end up with the same identity).
    public func loadOrCreate() throws(BondStoreError) -> LocalIdentity {
        if let identity = try load() { return identity }
        try FileBondStore(directory: directory).makeDirectory()
        let identity = LocalIdentity.generate()
        let record = Record(address: identity.address.string, irk: Hex.encode(identity.identityResolvingKey.msbFirst),
                            csrk: Hex.encode(identity.signatureKey.msbFirst))
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            data = try encoder.encode(record)
        } catch {
            throw BondStoreError(.ioFailed, "encoding: \(error)", path: path)
        }
        let temporary = try PrivateFile.writeTemporary(data, beside: path)
        // link() fails if another process created the file meanwhile: its identity wins.
        let linked = link(temporary, path) == 0
        let linkError = FileBondStore.errnoText()
        unlink(temporary)
        if linked { return identity }
        if let existing = try load() { return existing }
        throw BondStoreError(.ioFailed, "creating the local identity: \(linkError)", path: path)
    }

    func block(_ hex: String, _ field: String) throws(BondStoreError) -> Block128 {
        guard let bytes = try? Hex.decode(hex), let block = try? Block128(msbFirst: bytes) else {
            throw BondStoreError(.corrupt, "\(field): not 16 octets of hex", path: path)
        }
        return block
    }
}
