import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Writing the files that hold keys (bonds, the local identity): readable by the owner only, never half-written.
enum PrivateFile {
    /// Writes `data` to a new file beside `target` (mode 0600, created exclusively, written fully, fsynced) and
    /// returns its path; the caller renames or links it into place. Nothing is left behind on failure.
    static func writeTemporary(_ data: Data, beside target: String) throws(BondStoreError) -> String {
        let temporary = "\(target).tmp.\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BondStoreError(.ioFailed, "open: \(FileBondStore.errnoText())", path: temporary) }
        var ok = fchmod(fd, 0o600) == 0
        data.withUnsafeBytes { raw in
            var offset = 0
            while ok, offset < raw.count, let base = raw.baseAddress {
                let written = write(fd, base + offset, raw.count - offset)
                if written <= 0 { ok = false } else { offset += written }
            }
        }
        ok = ok && fsync(fd) == 0
        let writeError = FileBondStore.errnoText()
        close(fd)
        guard ok else {
            unlink(temporary)
            throw BondStoreError(.ioFailed, "write: \(writeError)", path: target)
        }
        return temporary
    }
}
