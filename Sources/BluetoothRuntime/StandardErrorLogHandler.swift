#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import Logging

/// A swift-log handler that writes one line per message on standard error, for the stack's own programs (`blue`,
/// the examples) and for any app that wants the same: the library itself never writes to stderr, it logs, and the
/// program routes (not a Bluetooth type).
///
/// A line is `LEVEL LABEL: message key=value ...`; at `debug` and `trace` the local time of day with microseconds
/// comes first, so that an exchange can be followed. A handler starts at the level of one setting
/// (``StandardErrorLogHandler/level``, which `--log-level` sets before a stack is opened), read once when its logger
/// is made: the check on the hot path is a stored property, not a lock.
public struct StandardErrorLogHandler: LogHandler {
    /// The environment variable the level is read from at ``bootstrap(defaultLevel:)``.
    public static let environmentVariable = "OCB_LOG_LEVEL"

    private static let sharedLevel = LockedValue(Logger.Level.notice)

    /// The level handlers made from now on start at.
    public static var level: Logger.Level {
        get { sharedLevel.withLock { $0 } }
        set { sharedLevel.withLock { $0 = newValue } }
    }

    private let label: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
        logLevel = Self.level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        DescriptorWriter.errorLine(Self.line(level: event.level, label: label, message: "\(event.message)",
                                             metadata: merged, time: logLevel <= .debug ? Self.timeOfDay() : nil))
    }

    /// The line for one message (tests check the format through it).
    public static func line(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata,
                            time: String?) -> String {
        var line = time.map { $0 + " " } ?? ""
        line += "\(level) \(label): \(message)"
        for key in metadata.keys.sorted() { line += " \(key)=\(metadata[key].map { "\($0)" } ?? "")" }
        return line
    }

    /// Routes every logger of the process here (`LoggingSystem.bootstrap`, which a process may do once), at the
    /// level `OCB_LOG_LEVEL` names, else `defaultLevel`. A value that names no level is reported on stderr (this
    /// is the program's own bootstrap, not the library) and `defaultLevel` is used.
    public static func bootstrap(defaultLevel: Logger.Level = .notice) {
        var chosen = defaultLevel
        if let text = getenv(environmentVariable).map({ String(cString: $0) }), !text.isEmpty {
            if let named = Logger.Level(named: text) {
                chosen = named
            } else {
                DescriptorWriter.errorLine("\(environmentVariable)=\(text) is not a log level (\(Logger.Level.names)); "
                                           + "using \(defaultLevel)")
            }
        }
        level = chosen
        LoggingSystem.bootstrap { StandardErrorLogHandler(label: $0) }
    }

    /// "14:03:07.215123", local time.
    static func timeOfDay() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var whole = now.tv_sec
        var parts = tm()
        localtime_r(&whole, &parts)
        func padded(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(Int(parts.tm_hour), 2) + ":" + padded(Int(parts.tm_min), 2) + ":" + padded(Int(parts.tm_sec), 2)
            + "." + padded(Int(now.tv_nsec) / 1000, 6)
    }
}

extension Logger.Level {
    /// The level named `text` (trace, debug, info, notice, warning, error, critical; any case), nil for none.
    public init?(named text: String) {
        self.init(rawValue: text.lowercased())
    }

    /// The names ``init(named:)`` takes, for messages.
    public static var names: String {
        allCases.map(\.rawValue).joined(separator: ", ")
    }
}
