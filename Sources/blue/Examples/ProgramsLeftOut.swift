#if !CoreBluetoothPrograms
import ArgumentParser

/// `blue demo` and `blue chat` in a `blue` built without the CoreBluetoothPrograms trait (`swift build
/// --disable-default-traits`: FoundationEssentials only, no OpenCoreBluetooth, no Foundation or ICU to map): each
/// says in one line what it needs and exits 69 (EX_UNAVAILABLE), whatever it was given.
enum ProgramLeftOut {
    static func refuse(_ command: String) throws -> Never {
        Console.error("blue \(command): this blue was built without the CoreBluetoothPrograms trait "
                      + "(CoreBluetooth programs run on Foundation); build it with the default traits")
        throw ExitCode(CLIFailure.Kind.unavailable.rawValue)
    }
}

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo", abstract: "Seed 001 end to end (not in this build: needs the CoreBluetoothPrograms trait).")

    @Argument(parsing: .allUnrecognized) var arguments: [String] = []

    func run() throws { try ProgramLeftOut.refuse("demo") }
}

struct Chat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat", abstract: "Seed 002's text transfer (not in this build: needs the CoreBluetoothPrograms trait).")

    @Argument(parsing: .allUnrecognized) var arguments: [String] = []

    func run() throws { try ProgramLeftOut.refuse("chat") }
}
#endif
