// The harness the example programs share (not the seeds' own code): the program's name on its log and failure
// lines, its command-line options, and the time limit that ends it. The seed code in each program calls its
// `log` / `fail` as before; those forward here.
import BluetoothRuntime
import Foundation

/// One example program run as a process: labelled log lines and a one-line failure on standard error (the
/// library's own logging routed there too), the
/// `--timeout SECONDS` option, and the main dispatch queue that runs its CoreBluetooth callbacks (`queue: nil`)
/// until a callback exits or the time limit passes. Not a Bluetooth type: no Core 5.4 section applies; the
/// programs drive the CoreBluetooth API (shared/reference/corebluetooth-api.md).
public struct ExampleProgram: Sendable {
    /// The program's name, as its log lines ("[NAME] text") and failures ("NAME: text") show it.
    public let name: String
    /// The command-line arguments after the program's path.
    public let arguments: [String]

    /// Also routes the library's logging to standard error (`$OCB_LOG_LEVEL`, else notice), the first time a
    /// program is made in the process: the library logs, the program decides where it goes.
    public init(_ name: String, arguments: [String] = Array(CommandLine.arguments.dropFirst())) {
        self.name = name
        self.arguments = arguments
        Self.routeLogging.withLock { routed in
            guard !routed else { return }
            routed = true
            StandardErrorLogHandler.bootstrap()
        }
    }

    private static let routeLogging = LockedValue(false)

    /// "[NAME] text" on standard error.
    public func log(_ text: String) {
        FileHandle.standardError.write(Data("[\(name)] \(text)\n".utf8))
    }

    /// "NAME: text" on standard error after what standard output holds so far, then exit 1.
    public func fail(_ text: String) -> Never {
        fflush(nil)
        FileHandle.standardError.write(Data("\(name): \(text)\n".utf8))
        exit(1)
    }

    /// The value after `option` ("--name Chat" → "Chat"), nil when the option or its value is missing.
    public func option(_ option: String) -> String? {
        guard let index = arguments.firstIndex(of: option), index + 1 < arguments.count else { return nil }
        return arguments[index + 1]
    }

    /// Whether `flag` ("--once") is among the arguments.
    public func flag(_ flag: String) -> Bool {
        arguments.contains(flag)
    }

    /// The arguments without `--timeout SECONDS` (the operands of a program that takes them).
    public var operands: [String] {
        guard let index = arguments.firstIndex(of: "--timeout") else { return arguments }
        var rest = arguments
        rest.removeSubrange(index...min(index + 1, rest.count - 1))
        return rest
    }

    /// The seconds of `--timeout`, `seconds` without it; a missing, non-numeric or non-positive value fails the
    /// program ("NAME: --timeout needs a positive number of seconds", exit 1).
    public func timeout(default seconds: Double) -> Double {
        guard let index = arguments.firstIndex(of: "--timeout") else { return seconds }
        guard index + 1 < arguments.count, let value = Double(arguments[index + 1]), value > 0, value.isFinite else {
            fail("--timeout needs a positive number of seconds")
        }
        return value
    }

    /// Runs the main queue (the CoreBluetooth callbacks) for good, keeping `owner` alive; `whenTimedOut` runs on
    /// it after `timeout` seconds (it fails the program, or exits 0 where running out the time is success).
    public func run(keeping owner: AnyObject, timeout: Double, whenTimedOut: @escaping @Sendable () -> Void) -> Never {
        DispatchQueue.main.asyncAfter(deadline: .now() + timeout, execute: whenTimedOut)
        withExtendedLifetime(owner) { dispatchMain() }
    }
}
