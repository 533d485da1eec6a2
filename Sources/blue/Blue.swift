import ArgumentParser

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
        version: "0.1.0",
        subcommands: [
            Demo.self, Decode.self, Snoop.self, Air.self, Bench.self,
            Scan.self, Explore.self, Read.self, Write.self, Subscribe.self, Serve.self,
            Pair.self,
            Bonds.self,
            Chat.self,
        ]
    )
}
