#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The library's few diagnostic lines on standard error (API misuse, a lost controller, unreadable state files).
///
/// Not `FileHandle.standardError.write`, which traps when the write fails (a closed or full stderr, EPIPE once
/// SIGPIPE is ignored): a library must not stop its program because nobody reads its diagnostics. Each line is one
/// `write`, so lines from several threads do not interleave; a failed or short write is dropped.
enum StandardError {
    static func line(_ text: String) {
        var bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { raw in
                write(2, raw.baseAddress.map { $0 + offset }, raw.count - offset)
            }
            if written < 0, errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}
