import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Colours and weight on a terminal, none in a pipe (https://no-color.org): on when the stream is a terminal whose
/// TERM is not "dumb", or when FORCE_COLOR is set (a pager that understands colours); NO_COLOR, when set and not
/// empty, turns them off in every case.
enum TerminalStyle {
    enum Stream { case output, error }

    static func isEnabled(_ stream: Stream, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        if let force = environment["FORCE_COLOR"], !force.isEmpty, force != "0" { return true }
        guard environment["TERM"] != "dumb" else { return false }
        return isatty(stream == .output ? 1 : 2) == 1
    }

    private static let output = isEnabled(.output)
    private static let error = isEnabled(.error)

    /// `text` in bold.
    static func bold(_ text: String, _ stream: Stream = .output) -> String { wrap(text, "1", stream) }
    /// `text` in red (failures).
    static func red(_ text: String, _ stream: Stream = .output) -> String { wrap(text, "31", stream) }
    static func green(_ text: String, _ stream: Stream = .output) -> String { wrap(text, "32", stream) }
    static func yellow(_ text: String, _ stream: Stream = .output) -> String { wrap(text, "33", stream) }
    /// `text` dimmed (secondary details).
    static func dim(_ text: String, _ stream: Stream = .output) -> String { wrap(text, "2", stream) }

    private static func wrap(_ text: String, _ code: String, _ stream: Stream) -> String {
        (stream == .output ? output : error) ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}
