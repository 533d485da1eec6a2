public import FoundationEssentials
import BluetoothRuntime
import SystemInterface

#if canImport(Glibc)
import Glibc
#endif
public import BluetoothEngine

/// Writing files that hold keys or private state: bonds and the local identity (the keys of Core 5.4 Vol 3 Part H
/// §3.6), and OpenCoreBluetooth's known peers and state restoration snapshots. Readable by the owner only (mode
/// 0600, in a directory created 0700) and never half-written: the data goes to a temporary file beside the target
/// (created exclusively, written fully, fsynced), which is then renamed (or linked) over it, so a reader sees the
/// old file or the new one, never a mixture.
///
/// Failures are ``BondStoreError`` with code `ioFailed`, a reason (the system call and its error) and the path.
public enum PrivateFile {
    /// Writes `data` to a new file beside `target` (mode 0600, created exclusively, written fully, fsynced) and
    /// returns its path; the caller renames or links it into place. Nothing is left behind on failure. Each call
    /// gets its own name (process id and a serial), so writers of one process never collide.
    public static func writeTemporary(_ data: Data, beside target: String) throws(BondStoreError) -> String {
        let serial = temporarySerial.withLock { value -> UInt64 in
            value &+= 1
            return value
        }
        let temporary = "\(target).tmp.\(getpid()).\(serial)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BondStoreError(.ioFailed, "open: \(errnoText())", path: temporary) }
        var ok = fchmod(fd, 0o600) == 0
        data.withUnsafeBytes { raw in
            var offset = 0
            while ok, offset < raw.count, let base = raw.baseAddress {
                let written = write(fd, base + offset, raw.count - offset)
                if written <= 0 { ok = false } else { offset += written }
            }
        }
        ok = ok && fsync(fd) == 0
        let writeError = errnoText()
        close(fd)
        guard ok else {
            unlink(temporary)
            throw BondStoreError(.ioFailed, "write: \(writeError)", path: target)
        }
        return temporary
    }

    /// Replaces `target` with `data` whole: the directory that holds it is prepared
    /// (``prepareDirectory(_:private:)``, the chosen rule), then ``writeTemporary(_:beside:)`` and rename(2) over
    /// the target, which replaces a symbolic link planted there rather than writing through it.
    public static func replace(_ target: String, with data: Data) throws(BondStoreError) {
        let directory = PathComponents.parent(of: target)
        if !directory.isEmpty { try prepareDirectory(directory, private: false) }
        let temporary = try writeTemporary(data, beside: target)
        guard rename(temporary, target) == 0 else {
            let reason = "rename: \(errnoText())"
            unlink(temporary)
            throw BondStoreError(.ioFailed, reason, path: target)
        }
    }

    /// Makes `directory` fit to hold secrets or state (issue 30), as ``PrivateDirectory`` checks folders: a missing
    /// one is created with mode 0700 (its missing parents too) and checked again without following a symbolic link;
    /// an existing one must be a private folder (a directory of this user, mode 0700) when `private` (the bond folder
    /// at its default place), else a folder of this user or root that others cannot write into (unless sticky).
    /// Throws ``BondStoreError`` `ioFailed` with one line naming the folder.
    public static func prepareDirectory(_ directory: String, private: Bool) throws(BondStoreError) {
        var info = stat()
        let missing = lstat(directory, &info) != 0 && errno == ENOENT
        let parent = PathComponents.parent(of: directory)
        if missing, !parent.isEmpty, !FileManager.default.fileExists(atPath: parent) {
            do {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw BondStoreError(.ioFailed, "creating the directory: \(error)", path: parent)
            }
        }
        do throws(PrivatePathError) {
            if missing {
                try PrivateDirectory.ensure(directory)
            } else if `private` {
                try PrivateDirectory.checkPrivate(directory)
            } else {
                try PrivateDirectory.checkChosen(directory)
            }
        } catch {
            throw BondStoreError(.ioFailed, error.reason, path: directory)
        }
    }

    /// `value` as pretty-printed JSON with sorted keys, the form of every private file (stable, diffable).
    public static func json(_ value: some Encodable, path: String) throws(BondStoreError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        do {
            return try encoder.encode(value)
        } catch {
            throw BondStoreError(.ioFailed, "encoding: \(error)", path: path)
        }
    }

    private static let temporarySerial = LockedValue<UInt64>(0)

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
