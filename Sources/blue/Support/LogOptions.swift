import ArgumentParser
import BluetoothRuntime
import Logging

/// `--log-level`, on every command that runs a stack: what of the library's logging (swift-log, labels in
/// `LogLabel`) reaches standard error. `blue` routes every logger there at start (``Blue/main()``), at
/// `$OCB_LOG_LEVEL`, else notice; this option wins over the variable.
struct LogOptions: ParsableArguments, Sendable {
    @Option(name: .customLong("log-level"), help: ArgumentHelp(
        "The library's log lines on stderr from this level up: trace (also ACL data), debug (every HCI command and "
            + "event, L2CAP, ATT and SMP PDU, connections, pairing), notice (default), warning, error, critical. "
            + "Default: $OCB_LOG_LEVEL, else notice.",
        valueName: "level"))
    var logLevel: String?

    /// Checks the level and applies it before the command runs (loggers made afterwards start at it).
    func validate() throws {
        guard let logLevel else { return }
        guard let level = Logger.Level(named: logLevel) else {
            throw ValidationError("--log-level \(logLevel) is not a level (\(Logger.Level.names))")
        }
        StandardErrorLogHandler.level = level
    }
}
