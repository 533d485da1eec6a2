import ArgumentParser

/// `blue`: the OpenCoreBluetooth command-line tool.
///
/// Today it decodes packets (`blue decode`) and btsnoop captures (`blue snoop show`). The commands that need the
/// host stack and the virtual radio (demo, scan, explore, serve, chat, bench, pair, air) arrive with those layers;
/// see README.md.
@main
struct Blue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blue",
        abstract: "OpenCoreBluetooth: Bluetooth Low Energy from the command line.",
        discussion: "Decode packets of every layer, read btsnoop captures. More commands arrive with the host stack.",
        version: "0.1.0",
        subcommands: [
            Demo.self, Decode.self, Snoop.self, Air.self, Bench.self,
            Scan.self, Explore.self, Read.self, Write.self, Subscribe.self, Serve.self,
            Pair.self,
            Bonds.self,
        ]
    )
}
