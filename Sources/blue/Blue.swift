import ArgumentParser

@main
struct Blue: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "blue", abstract: "OpenCoreBluetooth command-line tool.")
}
