import SystemInterface
import VirtualController

/// A file written through a buffer of at least 64 KiB, for the air's recordings and captures (``AirRecorder``,
/// ``LinkLayerSniffer``), which append on the air's loop and must not make a system call per packet. Not
/// thread-safe: its owner keeps it under its lock. The first write error closes it and is kept in ``failure``.
struct BufferedOutputFile {
    private var handle: OwnedDescriptor?
    private var buffer: [UInt8] = []
    /// What went wrong, once something did (the file is closed then).
    private(set) var failure: String?
    /// What the file is, for the error message ("the recording", "the capture").
    let what: String

    /// Creates (or truncates) `path` (mode 0600 when new, a symbolic link not followed: `POSIX.createOutputFile`);
    /// nil when it cannot be created.
    init?(path: String, what: String) {
        guard case .success(let fd) = POSIX.createOutputFile(path) else { return nil }
        self.handle = OwnedDescriptor(fd)
        self.what = what
    }

    var isOpen: Bool { handle != nil }

    mutating func append(_ bytes: [UInt8]) {
        guard handle != nil else { return }
        buffer += bytes
        if buffer.count >= 64 * 1024 { flush() }
    }

    mutating func flush() {
        guard let handle, !buffer.isEmpty else { return }
        if let code = POSIX.writeAll(handle.fd, buffer, style: .file) {
            failure = "writing \(what) failed: \(POSIX.errorText(code))"
            self.handle = nil
        }
        buffer = []
    }

    /// Flushes and closes (idempotent); the failure, if any.
    mutating func close() -> String? {
        guard handle != nil else { return failure }
        flush()
        handle = nil  // the descriptor is closed with its last holder
        return failure
    }
}

/// A file descriptor closed when its last holder lets go (a ``BufferedOutputFile`` may be copied or dropped without
/// ``BufferedOutputFile/close()``).
private final class OwnedDescriptor {
    let fd: Int32

    init(_ fd: Int32) {
        self.fd = fd
    }

    deinit {
        POSIX.closeDescriptor(fd)
    }
}
