public import BluetoothCore
public import Foundation
import BluetoothRuntime
import Host
import BluetoothEngine

/// The peers a central has met, kept across runs so that `CBCentralManager.retrievePeripherals(withIdentifiers:)`
/// finds them in a later process, as on Apple platforms (corebluetooth-api.md §2). Each entry maps a peer's
/// identifier (``CBPeerIdentifier``) to its identity address and address type (Core 5.4 Vol 6 Part B §1.3) and the
/// last name it was known by.
///
/// Where the entries live (read when a manager is created):
/// - by default in `$XDG_DATA_HOME/opencorebluetooth/known-peers.json`, else
///   `~/.local/share/opencorebluetooth/known-peers.json`;
/// - `OCB_KNOWN_PEERS=/path/file.json` names another file;
/// - `OCB_KNOWN_PEERS=off` keeps them in memory only (for the life of the manager).
///
/// The file is JSON (`{"version": 1, "peers": [{"identifier", "address", "addressType", "name", "connected"}]}`),
/// written whole to a temporary file (mode 0600) then renamed over the old one, merged with what another process
/// wrote meanwhile. It is written when a peer is connected (at once) and when a peer is discovered for the first
/// time or under a new name (debounced: at most once per `discoveryWriteDelay`, half a second). Private addresses (resolvable or
/// not) are not kept: they change, so their identifier would not find the device again. A file that cannot be read
/// as known peers is logged once (warning) and never overwritten; the manager then starts with no known peers.
///
/// Thread safety: the entries are under a lock; writes happen on the caller's thread (connect, flush) or on a
/// private serial queue (debounced discovery writes).
public final class KnownPeersStore: Sendable {
    /// The environment variable that places (or disables) the file.
    public static let environmentVariable = "OCB_KNOWN_PEERS"
    /// At most this many entries are kept; peers only discovered are dropped first, oldest first.
    static let capacity = 256
    /// How long discovery writes are held, so that a busy scan writes the file once.
    static let discoveryWriteDelay: DispatchTimeInterval = .milliseconds(500)

    /// Where the entries live.
    public enum Location: Hashable, Sendable {
        /// In memory only, for the life of the store (`OCB_KNOWN_PEERS=off`).
        case memory
        /// In the JSON file at this path.
        case file(String)
    }

    /// One known peer.
    public struct Entry: Hashable, Sendable {
        /// The peer's identity address, with its type.
        public var address: BluetoothAddress
        /// The last name the peer was known by, if any.
        public var name: String?
        /// Whether this central ever connected to it.
        public var connected: Bool
        /// The peer's `CBPeer.identifier`, derived from `address`.
        public var identifier: UUID { CBPeerIdentifier.identifier(for: address) }
    }

    /// Overrides the location for managers created in this task (tests).
    @TaskLocal static var taskLocation: Location?

    /// The location for a new manager: ``taskLocation``, else `OCB_KNOWN_PEERS`, else the default file.
    static func currentLocation(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Location {
        if let location = taskLocation { return location }
        return location(environment)
    }

    static func location(_ environment: [String: String]) -> Location {
        let value = environment[environmentVariable]?.trimmingCharacters(in: .whitespaces) ?? ""
        if value.lowercased() == "off" { return .memory }
        if !value.isEmpty { return .file(value) }
        return .file(defaultPath(environment))
    }

    /// `$XDG_DATA_HOME/opencorebluetooth/known-peers.json`, else `~/.local/share/opencorebluetooth/known-peers.json`.
    public static func defaultPath(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return data + "/opencorebluetooth/known-peers.json" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/opencorebluetooth/known-peers.json"
    }

    private struct State {
        /// Oldest first.
        var entries: [Entry] = []
        /// False when the file is corrupt (never overwritten) or the location is memory.
        var writable = false
        var dirty = false
        var writeScheduled = false
    }

    /// Where the entries live.
    public let location: Location
    private let state = LockedValue(State())
    private let writer = DispatchQueue(label: "OpenCoreBluetooth.knownPeers")
    /// Corrupt files already reported by this process.
    private static let reported = LockedValue<Set<String>>([])

    /// Reads the entries at `location`; a file that cannot be read is logged once and left as it is, and the store
    /// starts empty.
    public init(location: Location) {
        self.location = location
        guard case .file(let path) = location else { return }
        switch Self.read(path) {
        case .success(let entries):
            state.withLock {
                $0.entries = entries
                $0.writable = true
            }
        case .failure(let error):
            let first = Self.reported.withLock { $0.insert(path).inserted }
            if first {
                Log.coreBluetooth.warning("\(error); starting with no known peers and leaving the file as it is")
            }
        }
    }

    /// The known peers, oldest first.
    public var entries: [Entry] { state.withLock { $0.entries } }

    /// The entry with this identifier.
    public func entry(for identifier: UUID) -> Entry? {
        state.withLock { $0.entries.first { $0.identifier == identifier } }
    }

    /// A peer was discovered (with the name it advertised, if any): kept if new or renamed, written later.
    func discovered(_ address: BluetoothAddress, name: String?) {
        guard Self.keepable(address) else { return }
        let changed = state.withLock { state -> Bool in
            if let index = state.entries.firstIndex(where: { $0.address == address }) {
                guard let name, state.entries[index].name != name else { return false }
                state.entries[index].name = name
            } else {
                state.entries.append(Entry(address: address, name: name, connected: false))
                Self.trim(&state.entries)
            }
            state.dirty = true
            guard state.writable, !state.writeScheduled else { return false }
            state.writeScheduled = true
            return true
        }
        if changed {
            writer.asyncAfter(deadline: .now() + Self.discoveryWriteDelay) { [weak self] in self?.flush() }
        }
    }

    /// A peer was connected: kept as the most recent entry and written at once.
    func connected(_ address: BluetoothAddress, name: String?) {
        guard Self.keepable(address) else { return }
        state.withLock { state in
            var entry = Entry(address: address, name: name, connected: true)
            if let index = state.entries.firstIndex(where: { $0.address == address }) {
                entry.name = name ?? state.entries[index].name
                state.entries.remove(at: index)
            }
            state.entries.append(entry)
            Self.trim(&state.entries)
            state.dirty = true
        }
        flush()
    }

    /// A known peer's name changed (GAP Device Name read or updated).
    func renamed(_ address: BluetoothAddress, name: String) {
        let changed = state.withLock { state -> Bool in
            guard let index = state.entries.firstIndex(where: { $0.address == address }),
                  state.entries[index].name != name else { return false }
            state.entries[index].name = name
            state.dirty = true
            return true
        }
        if changed { flush() }
    }

    /// Writes pending changes now (merged with the file's current entries).
    func flush() {
        guard case .file(let path) = location else { return }
        // The lock is held through the write so that two flushes of this store do not interleave.
        state.withLock { state in
            state.writeScheduled = false
            guard state.writable, state.dirty else { return }
            state.dirty = false
            // Merge: peers another process (or manager) wrote since we read stay, ours win.
            if case .success(let onDisk) = Self.read(path) {
                let ours = Set(state.entries.map(\.address))
                let theirs = onDisk.filter { !ours.contains($0.address) }
                state.entries = theirs + state.entries
                Self.trim(&state.entries)
            } else if FileManager.default.fileExists(atPath: path) {
                // Became corrupt meanwhile: leave it alone from now on.
                state.writable = false
                return
            }
            do throws(KnownPeersError) {
                try Self.write(state.entries, to: path)
            } catch {
                let first = Self.reported.withLock { $0.insert(path).inserted }
                if first { Log.coreBluetooth.warning("\(error)") }
            }
        }
    }

    // MARK: Policy

    /// Identity addresses only: public and random static (Vol 6 Part B §1.3).
    static func keepable(_ address: BluetoothAddress) -> Bool {
        address.kind == .public || address.kind == .randomStatic
    }

    /// Drops peers only discovered (oldest first), then the oldest, down to ``capacity``.
    static func trim(_ entries: inout [Entry]) {
        while entries.count > capacity {
            if let index = entries.firstIndex(where: { !$0.connected }) {
                entries.remove(at: index)
            } else {
                entries.removeFirst()
            }
        }
    }

    // MARK: File

    private struct FileRecord: Codable {
        var version: Int
        var peers: [PeerRecord]
    }

    private struct PeerRecord: Codable {
        var identifier: String
        var address: String
        var addressType: String
        var name: String?
        var connected: Bool?
    }

    /// The entries of the file at `path`: none when it does not exist, an error when it cannot be read as known
    /// peers (bad JSON, unknown version, bad address or type, identifier not that of the address).
    static func read(_ path: String) -> Result<[Entry], KnownPeersError> {
        guard FileManager.default.fileExists(atPath: path) else { return .success([]) }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(KnownPeersError(.unreadable, "cannot read the known peers file", path: path))
        }
        let record: FileRecord
        do {
            record = try JSONDecoder().decode(FileRecord.self, from: data)
        } catch {
            return .failure(KnownPeersError(.corrupt, "not a known peers file (\(error))", path: path))
        }
        guard record.version == 1 else {
            return .failure(KnownPeersError(.corrupt, "unknown version \(record.version)", path: path))
        }
        var entries: [Entry] = []
        for (index, peer) in record.peers.enumerated() {
            let type: BluetoothAddress.AddressType
            switch peer.addressType {
            case "public": type = .public
            case "random": type = .random
            default:
                return .failure(KnownPeersError(.corrupt, "peer \(index): address type '\(peer.addressType)'", path: path))
            }
            guard let address = try? BluetoothAddress(string: peer.address, type: type),
                  address.string == peer.address.uppercased() else {
                return .failure(KnownPeersError(.corrupt, "peer \(index): address '\(peer.address)'", path: path))
            }
            let entry = Entry(address: address, name: peer.name, connected: peer.connected ?? false)
            guard UUID(uuidString: peer.identifier) == entry.identifier else {
                return .failure(KnownPeersError(.corrupt, "peer \(index): identifier \(peer.identifier) is not that of "
                    + "\(peer.address)/\(peer.addressType)", path: path))
            }
            if !entries.contains(where: { $0.address == address }) { entries.append(entry) }
        }
        return .success(entries)
    }

    /// Writes the file whole with Host's ``PrivateFile`` (mode 0600, temporary file renamed over it; the directory
    /// created 0700 when missing).
    static func write(_ entries: [Entry], to path: String) throws(KnownPeersError) {
        let record = FileRecord(version: 1, peers: entries.map {
            PeerRecord(identifier: $0.identifier.uuidString, address: $0.address.string,
                       addressType: $0.address.type == .public ? "public" : "random", name: $0.name,
                       connected: $0.connected)
        })
        do throws(BondStoreError) {
            try PrivateFile.replace(path, with: PrivateFile.json(record, path: path))
        } catch {
            throw KnownPeersError(.ioFailed, error.reason, path: error.path ?? path)
        }
    }
}

/// Why the known peers file could not be used.
public struct KnownPeersError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Hashable {
        /// `corrupt`: the file is not a known peers file (bad JSON, version, address or identifier); `unreadable`: it
        /// exists but cannot be read; `ioFailed`: writing it failed.
        case corrupt, unreadable, ioFailed
    }

    /// What went wrong.
    public let code: Code
    /// Details, in words.
    public let reason: String
    /// The file concerned.
    public let path: String

    /// An error for the file at `path`.
    public init(_ code: Code, _ reason: String, path: String) {
        self.code = code
        self.reason = reason
        self.path = path
    }

    public var description: String { "known peers file \(path): \(code.rawValue): \(reason)" }
}
