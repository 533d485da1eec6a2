import BlueZ
import ArgumentParser
import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import Host
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue shell`: one stack, one connection, many commands (as bluetoothctl and bumble-console give): scan, connect,
/// then reads, writes, subscriptions, pairing and link changes on the same link, on our host or through bluetoothd
/// (`--hci bluez`, where bluetoothd makes the link changes itself) (Core 5.4 Vol 3 Part C GAP, Part G
/// GATT, Part H SMP; Vol 4 Part E §7.8.18 connection update, §7.8.33 data length, §7.8.49 PHY).
struct Shell: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "An interactive session: scan, connect, then read, write, subscribe, pair and change the link on one connection.",
        discussion: """
            On a terminal: a prompt with history (Up/Down) and Tab completion of commands, device names and \
            characteristic UUIDs. Otherwise it reads one command a line from standard input (a script; # starts a \
            comment) and stops at the first command that fails, with its exit code and the line number. `help` \
            lists the commands.
            """)

    @OptionGroup var stack: StackOptions

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.shell() }
    }

    func shell() async throws(CLIFailure) {
        let interactive = isatty(0) == 1
        let launched = try await stack.openEngine(label: "shell")
        let session = ShellSession(stack: launched)
        let input = ShellInput(interactive: interactive) { words, partial in session.completions(words, partial) }
        if interactive { Console.line("blue shell on \(launched.transportDescription): `help` lists the commands, Ctrl-D ends") }
        var number = 0
        while let line = await input.next(prompt: session.prompt) {
            number += 1
            let trimmed = line.trimmingWhitespace()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed == "quit" || trimmed == "exit" { break }
            do throws(CLIFailure) {
                try await session.run(ShellSession.words(trimmed))
            } catch {
                if interactive {
                    printError(error.message)
                    continue
                }
                await session.close()
                launched.shutdown()
                throw CLIFailure(error.kind, "line \(number) (\(trimmed)): \(error.message)")
            }
        }
        await session.close()
        launched.shutdown()
    }
}
