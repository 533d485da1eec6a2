public import BluetoothCore
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import BluetoothEngine

/// Bonds as JSON files, one per peer identity, in a directory of mode 0700 (Core 5.4 Vol 3 Part H §2.4.1: keys
/// are secrets; Vol 3 Part G §3.3.3.3: CCCDs of bonded clients persist).
///
/// Each file is written whole to a temporary file (mode 0600, `O_EXCL`), flushed, then renamed over the old one,
/// so a crash leaves either the old or the new bond. A file that does not parse is reported by ``loadBonds()``
/// with its path and the parse error and left untouched: ``saveBond(_:)`` refuses to overwrite it (remove it with
/// ``removeBond(identityAddress:)`` after looking at it); bonds of other peers work as usual.
///
/// Foundation is used for JSON only (the edge of the stack). Safe from any thread (each call is one file).
public final class FileBondStore: BondStore {
    public let directory: String

    public init(directory: String = FileBondStore.defaultDirectory()) {
        self.directory = directory
    }

    /// `$XDG_DATA_HOME/opencorebluetooth/bonds`, else `~/.local/share/opencorebluetooth/bonds`.
    public static func defaultDirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty { return data + "/opencorebluetooth/bonds" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? FileManager.default.homeDirectoryForCurrentUser.path
        return home + "/.local/share/opencorebluetooth/bonds"
    }

    /// The file of one identity: `AABBCCDDEEFF-public.json` / `-random.json`.
    public func path(for identityAddress: BluetoothAddress) -> String {
        let hex = identityAddress.string.replacing(":", with: "")
        return "\(directory)/\(hex)-\(identityAddress.type == .public ? "public" : "random").json"
    }

    public func loadBonds() -> BondStoreContents {
        var contents = BondStoreContents()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return contents }
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = "\(directory)/\(name)"
            switch read(path) {
            case .success(let bond): contents.bonds.append(bond)
            case .failure(let error): contents.problems.append(error)
            }
        }
        return contents
    }

    func read(_ path: String) -> Result<Bond, BondStoreError> {
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(BondStoreError(.ioFailed, "cannot read", path: path))
        }
        do {
            let record = try JSONDecoder().decode(BondRecord.self, from: data)
            let bond = try record.bond()
            guard self.path(for: bond.identityAddress) == path else {
                return .failure(BondStoreError(.corrupt, "holds the bond of \(bond.identityAddress), not of its file name", path: path))
            }
            return .success(bond)
        } catch let error as BondStoreError {
            return .failure(BondStoreError(error.code, error.reason, path: path))
        } catch {
            return .failure(BondStoreError(.corrupt, "\(error)", path: path))
        }
    }

    public func saveBond(_ bond: Bond) throws(BondStoreError) {
        try makeDirectory()
        let target = path(for: bond.identityAddress)
        if FileManager.default.fileExists(atPath: target), case .failure(let error) = read(target), error.code == .corrupt {
            throw BondStoreError(.corrupt, "not overwriting a corrupt bond file (\(error.reason)); remove it first", path: target)
        }
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            data = try encoder.encode(BondRecord(bond))
        } catch {
            throw BondStoreError(.ioFailed, "encoding: \(error)", path: target)
        }
        let temporary = try PrivateFile.writeTemporary(data, beside: target)
        guard rename(temporary, target) == 0 else {
            let reason = "rename: \(Self.errnoText())"
            unlink(temporary)
            throw BondStoreError(.ioFailed, reason, path: target)
        }
    }

    public func removeBond(identityAddress: BluetoothAddress) throws(BondStoreError) {
        let target = path(for: identityAddress)
        guard unlink(target) == 0 else {
            let code: BondStoreError.Code = errno == ENOENT ? .notFound : .ioFailed
            throw BondStoreError(code, "unlink: \(Self.errnoText())", path: target)
        }
    }

    /// Creates the bond folder (mode 0700) when missing and refuses one that others control
    /// (``PrivateFile/prepareDirectory(_:private:)``: the private rule at the default place, where nobody chose the
    /// folder; the chosen rule for a folder the user named).
    func makeDirectory() throws(BondStoreError) {
        try PrivateFile.prepareDirectory(directory, private: directory == Self.defaultDirectory())
    }

    static func errnoText() -> String { String(cString: strerror(errno)) }
}
