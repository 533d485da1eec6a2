import FoundationEssentials

extension POSIX {
    /// A file operation's error in one line: the system's reason ("No such file or directory (errno 2)") for
    /// FoundationEssentials' `CocoaError` wrapping a `POSIXError` (what `FileManager` and `Data.write` throw), the
    /// error's own text otherwise. FoundationEssentials has no `localizedDescription`.
    package static func describe(_ error: any Error) -> String {
        if let posix = error as? POSIXError { return errorText(posix.code.rawValue) }
        if let cocoa = error as? CocoaError, let posix = cocoa.underlying as? POSIXError { return errorText(posix.code.rawValue) }
        return "\(error)"
    }
}
