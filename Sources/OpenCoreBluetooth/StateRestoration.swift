import Foundation
import SystemInterface
import BluetoothCore
import BluetoothRuntime
import Host

#if canImport(Glibc)
import Glibc
#endif
import BluetoothEngine

/// CoreBluetooth's state preservation and restoration (corebluetooth-api.md §2.11) on Linux: what the system keeps
/// for a manager created with `CBCentralManagerOptionRestoreIdentifierKey` / `CBPeripheralManagerOptionRestoreIdentifierKey`,
/// so that a new manager with the same identifier in a later process (the app "relaunched") is told
/// `willRestoreState` and carries on. The state is that of GAP (Core 5.4 Vol 3 Part C §9: connections being
/// established or up, the scan's filter) and of the local GATT database (Vol 3 Part G §3: services,
/// characteristics with properties, permissions and static values, descriptors) with the advertising data
/// (Core Supplement Part A §1.1, §1.2).
///
/// Where it lives: one file per role and identifier, `central-<id>.json` / `peripheral-<id>.json` (the identifier
/// percent-encoded), in `$XDG_STATE_HOME/opencorebluetooth/restoration` (else
/// `~/.local/state/opencorebluetooth/restoration`); `OCB_RESTORATION=/path/dir` names another directory,
/// `OCB_RESTORATION=off` keeps nothing. A file is written whole (temporary file, mode 0600, fsync, rename) each
/// time the state to restore changes, removed when there is nothing left to restore, and read once when a manager
/// with the identifier is created. A file that cannot be read as a snapshot is logged once (warning) and
/// ignored (nothing is restored); the manager's next change replaces it.
///
/// Thread safety: the last written snapshot is under a lock held through each write, so writes from any thread
/// are serialized.
final class StateRestorationStore: Sendable {
    /// The environment variable naming the directory (or `off`).
    static let environmentVariable = "OCB_RESTORATION"

    /// The two roles, which CoreBluetooth restores separately (both option keys are "kCBRestoreIdentifierKey").
    enum Role: String, Sendable {
        case central, peripheral
    }

    /// Overrides the directory for managers created in this task (tests); nil inside: nothing is kept.
    @TaskLocal static var taskDirectory: String??

    /// The directory for a new manager: ``taskDirectory``, else `OCB_RESTORATION`, else the default; nil: off.
    static func currentDirectory(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let directory = taskDirectory { return directory }
        let value = environment[environmentVariable]?.trimmingCharacters(in: .whitespaces) ?? ""
        if value.lowercased() == "off" { return nil }
        if !value.isEmpty { return value }
        return defaultDirectory(environment)
    }

    /// `$XDG_STATE_HOME/opencorebluetooth/restoration`, else `~/.local/state/opencorebluetooth/restoration`.
    static func defaultDirectory(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state + "/opencorebluetooth/restoration" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/state/opencorebluetooth/restoration"
    }

    /// The environment variable that gives a whole program a restore identifier (`OCB_RESTORE_ID`, as for a
    /// program on the Bluetooth service): a manager created without one of its own takes it, so an app written
    /// without restoration can be tried with it unchanged.
    static let programIdentifierVariable = "OCB_RESTORE_ID"

    /// The store for a manager's options: its restore identifier (a String), else the program's
    /// (``programIdentifierVariable``); nil without either or with restoration off.
    static func forOptions(_ options: [String: Any]?, key: String, role: Role,
                           environment: [String: String] = ProcessInfo.processInfo.environment) -> StateRestorationStore? {
        let given = (options?[key] as? String).flatMap { $0.isEmpty ? nil : $0 }
        guard let identifier = given ?? environment[programIdentifierVariable].flatMap({ $0.isEmpty ? nil : $0 }),
              let directory = currentDirectory(environment) else { return nil }
        return StateRestorationStore(directory: directory, role: role, identifier: identifier)
    }

    let path: String
    let identifier: String
    /// What is on disk (nil: no file), to skip writes that change nothing.
    private let written = LockedValue<Data?>(nil)
    /// Files already reported by this process.
    private static let reported = LockedValue<Set<String>>([])
    /// The files of this process's managers, removed when it exits normally (``removeAtNormalExit()``).
    private static let filesToRemoveAtExit = LockedValue<Set<String>?>(nil)

    init(directory: String, role: Role, identifier: String) {
        self.identifier = identifier
        path = directory + "/\(role.rawValue)-\(Self.fileName(identifier)).json"
    }

    /// The identifier as a file name (``IdentifierFileName``: letters, digits, '.', '_' and '-' kept, every other
    /// byte as %XX).
    static func fileName(_ identifier: String) -> String {
        IdentifierFileName.escaped(identifier)
    }

    /// Removes the file when the process exits normally (`exit`, the end of `main`): ending is the program's own
    /// choice, and iOS restores nothing after the user quits an app. A process that is killed or crashes leaves it
    /// for the next launch.
    func removeAtNormalExit() {
        let install = Self.filesToRemoveAtExit.withLock { files -> Bool in
            defer { files = (files ?? []).union([path]) }
            return files == nil
        }
        if install {
            atexit {
                let files = StateRestorationStore.filesToRemoveAtExit.withLock { $0 ?? [] }
                for file in files { unlink(file) }
            }
        }
    }

    /// The snapshot on disk: nil when there is none; a corrupt one is reported (once per file and process) and
    /// ignored.
    func load<Snapshot: Decodable & RestorationSnapshot>(_ type: Snapshot.Type) -> Snapshot? {
        switch Self.read(type, at: path) {
        case .success(let snapshot):
            return snapshot
        case .failure(let error):
            report(error, then: "nothing restored")
            return nil
        }
    }

    static func read<Snapshot: Decodable & RestorationSnapshot>(_ type: Snapshot.Type, at path: String)
        -> Result<Snapshot?, StateRestorationError> {
        guard FileManager.default.fileExists(atPath: path) else { return .success(nil) }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .failure(StateRestorationError(.unreadable, "cannot read the file", path: path))
        }
        do {
            let snapshot = try JSONDecoder().decode(type, from: data)
            guard snapshot.version == 1 else {
                return .failure(StateRestorationError(.corrupt, "unknown version \(snapshot.version)", path: path))
            }
            try snapshot.validate()
            return .success(snapshot)
        } catch let error as StateRestorationError {
            return .failure(StateRestorationError(error.code, error.reason, path: path))
        } catch {
            return .failure(StateRestorationError(.corrupt, "not a restoration snapshot (\(error))", path: path))
        }
    }

    /// Writes `snapshot` (nil or empty: removes the file), unless it is what the file already holds.
    func save<Snapshot: Encodable & RestorationSnapshot>(_ snapshot: Snapshot?) {
        written.withLock { written in
            do throws(StateRestorationError) {
                guard let snapshot, !snapshot.isEmpty else {
                    if written != nil || FileManager.default.fileExists(atPath: path) {
                        unlink(path)
                        written = nil
                    }
                    return
                }
                let data: Data
                do throws(BondStoreError) {
                    data = try PrivateFile.json(snapshot, path: path)
                } catch {
                    throw StateRestorationError(.ioFailed, error.reason, path: path)
                }
                guard data != written else { return }
                try Self.write(data, to: path)
                written = data
            } catch {
                report(error, then: "the state is not kept")
            }
        }
    }

    private func report(_ error: StateRestorationError, then consequence: String) {
        guard Self.reported.withLock({ $0.insert(path).inserted }) else { return }
        Log.coreBluetooth.warning("\(error); \(consequence)")
    }

    /// Writes `data` whole with Host's ``PrivateFile`` (mode 0600, temporary file renamed over it; the directory
    /// created 0700 when missing).
    static func write(_ data: Data, to path: String) throws(StateRestorationError) {
        do throws(BondStoreError) {
            try PrivateFile.replace(path, with: data)
        } catch {
            throw StateRestorationError(.ioFailed, error.reason, path: error.path ?? path)
        }
    }
}

/// A snapshot file's common shape.
protocol RestorationSnapshot {
    var version: Int { get }
    /// Nothing to restore: the file is removed.
    var isEmpty: Bool { get }
    /// Throws ``StateRestorationError`` (`.corrupt`) when a field does not hold what it should.
    func validate() throws(StateRestorationError)
}

/// Why a restoration file could not be used (logged as a warning; the manager goes on without it).
public struct StateRestorationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, Hashable {
        /// `corrupt`: the file is not a snapshot this version can use (bad JSON, version or field); `unreadable`: it
        /// exists but cannot be read; `ioFailed`: writing it failed.
        case corrupt, unreadable, ioFailed
    }

    /// What went wrong.
    public let code: Code
    /// Details, in words.
    public let reason: String
    /// The file concerned (empty when not known).
    public let path: String

    /// An error for the file at `path`.
    public init(_ code: Code, _ reason: String, path: String = "") {
        self.code = code
        self.reason = reason
        self.path = path
    }

    public var description: String { "state restoration file \(path): \(code.rawValue): \(reason)" }
}
