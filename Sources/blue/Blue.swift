import ArgumentParser
import BluetoothRuntime

/// `blue`: the OpenCoreBluetooth command-line tool.
///
/// Every command that talks to a controller takes `--hci` (virtual air by default; `air:PATH`, `tcp:HOST:PORT`,
/// `unix:PATH`, `serial:/dev/tty...`, `hciN`); see README.md for a tour.
@main
struct Blue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blue",
        abstract: "OpenCoreBluetooth: Bluetooth Low Energy from the command line.",
        discussion: """
            Run the CoreBluetooth seed demo, share a virtual air between processes, scan, explore, read, write, \
            subscribe, serve a GATT database, pair, measure throughput, and decode packets and captures. \
            Every command that talks to a controller takes --hci (default: the virtual air).
            """,
        version: Blue.version,
        subcommands: [
            Demo.self, Decode.self, Snoop.self, Air.self, Fault.self, Bench.self,
            Scan.self, Explore.self, Read.self, Write.self, Subscribe.self, Serve.self, Advertise.self, Shell.self, Monitor.self,
            Pair.self, Service.self, Info.self, L2CAPCommand.self, Clone.self,
            Bonds.self,
            Chat.self,
        ]
    )
}

extension Blue {
    /// Routes the library's logging to standard error (`$OCB_LOG_LEVEL`, else notice; `--log-level` on a command),
    /// then parses and runs the command.
    static func main() {
        StandardErrorLogHandler.bootstrap()
        main(Air.withConsoleDefault(Array(CommandLine.arguments.dropFirst())))
    }

    /// "0.1.0 (commit 1a2b3c4d5e6f, release build)": the commit from git at build time (BuildInfo, "+changes" when the
    /// tree differed from it) and whether the build is optimised (a debug build's `bench` figures are not the stack's).
    static var version: String {
        #if DEBUG
        let configuration = "debug build"
        #else
        let configuration = "release build"
        #endif
        return "0.1.0 (commit \(BuildInfo.commit), \(configuration))"
    }
}
