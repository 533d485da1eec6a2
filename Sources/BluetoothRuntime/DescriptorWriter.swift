#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes text to a file descriptor whole, from any thread, without trapping (not a Bluetooth type: the stack's
/// diagnostics and the `blue` tool's output go through it).
///
/// Not `FileHandle.write`, which traps when the write fails (a closed or full descriptor, EPIPE once SIGPIPE is
/// ignored): a library must not stop its program because nobody reads its diagnostics. Each call retries short
/// writes and EINTR, so a line from one thread is not split by another's unless the pipe is fuller than a line.
public enum DescriptorWriter {
    /// Writes every byte of `text` to `descriptor` unless it fails; returns the failing errno (EIO for a write of
    /// nothing), or 0.
    @discardableResult
    public static func writeAll(_ descriptor: Int32, _ text: String) -> Int32 {
        writeAll(descriptor, bytes: Array(text.utf8))
    }

    /// Writes every byte of `bytes` (binary data: `blue l2cap`'s pipe) unless it fails; returns the failing errno
    /// (EIO for a write of nothing), or 0.
    @discardableResult
    public static func writeAll(_ descriptor: Int32, bytes: [UInt8]) -> Int32 {
        var bytes = bytes
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if written == 0 { return EIO }
            offset += written
        }
        return 0
    }

    /// One diagnostic line on standard error; a failure is dropped (there is nowhere left to report it).
    public static func errorLine(_ text: String) {
        writeAll(2, text + "\n")
    }
}
