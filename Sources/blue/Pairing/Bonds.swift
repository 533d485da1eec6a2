import ArgumentParser
import BluetoothCore
import BluetoothEngine
import FoundationEssentials
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue bonds list|remove`: the bonds a stack keeps (Core 5.4 Vol 3 Part H §2.4.1 keys kept per peer identity;
/// Vol 3 Part G §3.3.3.3 CCCDs of bonded clients), through StackLauncher's ``BondKeeper``: our host's bond folder
/// (its default directory or `--directory`) or, with `--hci bluez[:hciN]`, bluetoothd's.
struct Bonds: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "List or remove stored bonds.",
        subcommands: [BondsList.self, BondsRemove.self],
        defaultSubcommand: BondsList.self)
}

/// `--directory` and `--hci`, shared by the bonds subcommands: the bonds of the stack `--hci` names (bluetoothd's
/// for `bluez[:hciN]`; our host's bond folder for every other transport, `--directory` or its default).
struct BondDirectoryOption: ParsableArguments, Sendable {
    @Option(help: "The bond directory (default: $XDG_DATA_HOME/opencorebluetooth/bonds).")
    var directory: String?

    @Option(name: .customLong("hci"), help: ArgumentHelp(
        "The stack whose bonds these are: bluez or bluez:hciN for bluetoothd's; any other transport uses the bond directory.",
        valueName: "transport"))
    var hci: String?

    /// The keeper of the bonds (one line and exit 64 for a bad `--hci` or a folder with bluetoothd).
    func keeper() throws(CLIFailure) -> any BondKeeper {
        do throws(StackLaunchError) {
            let specification = try hci.map { text throws(StackLaunchError) in try StackSpecification(parsing: text) }
            return try StackLauncher.bondKeeper(specification: specification, directory: directory)
        } catch {
            throw CLIFailure(.usage, error.reason)
        }
    }
}

/// A keeper's failure as the command's: none such 2, bluetoothd unreachable 69, anything else 1.
private func bondFailure(_ error: HostError) -> CLIFailure {
    switch error.code {
    case .invalidParameters: CLIFailure(.notFound, error.reason)
    case .notReady: CLIFailure(.unavailable, error.reason)
    default: CLIFailure(.failed, error.reason)
    }
}

/// `blue bonds list [--json]`: one line (or JSON object) per bond, with what its keeper tells; unreadable files are
/// reported on standard error and left untouched.
struct BondsList: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the bonds (identity, keys, security).",
        discussion: "Exit codes: 1 when a bond file could not be read (it is left untouched), 69 bluetoothd unreachable.")

    @OptionGroup var location: BondDirectoryOption

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.list() }
    }

    func list() async throws(CLIFailure) {
        let keeper = try location.keeper()
        let listing: BondListing
        do {
            listing = try await keeper.listBonds()
        } catch {
            throw bondFailure(error)
        }
        if json {
            Console.json(["location": keeper.location, "bonds": listing.bonds.map(Self.json), "problems": listing.problems])
        } else {
            if listing.bonds.isEmpty { Console.line("No bonds in \(keeper.location)") }
            for bond in listing.bonds { Console.line(Self.text(bond)) }
        }
        for problem in listing.problems { printError("unreadable bond: \(problem)") }
        if !listing.problems.isEmpty { throw CLIFailure(.failed, "\(listing.problems.count) bond(s) could not be read") }
    }

    static func text(_ bond: BondSummary) -> String {
        let type = bond.identity.type == .public ? "public" : "random"
        let told: [String?] = [
            bond.secureConnections.map { $0 ? "LE SC" : "legacy" },
            bond.authenticated.map { $0 ? "authenticated" : "unauthenticated" },
            bond.keySize.map { "key size \($0)" },
            bond.keys.map { "keys \($0.joined(separator: ", "))" },
            bond.clientConfigurations.map { "\($0) CCCD(s)" },
            bond.bonded.map { $0 ? "bonded" : "paired, not bonded" },
            bond.trusted == true ? "trusted" : nil,
        ]
        return "\(bond.identity.string) (\(type))\(bond.name.map { " \"\($0)\"" } ?? ""): "
            + told.compactMap { $0 }.joined(separator: ", ")
    }

    static func json(_ bond: BondSummary) -> [String: Any] {
        let told: [String: Any?] = [
            "address": bond.identity.string, "addressType": bond.identity.type == .public ? "public" : "random", "name": bond.name,
            "secureConnections": bond.secureConnections, "authenticated": bond.authenticated, "keySize": bond.keySize.map { Int($0) },
            "keys": bond.keys, "cccds": bond.clientConfigurations, "bonded": bond.bonded, "trusted": bond.trusted,
        ]
        return told.compactMapValues { $0 }
    }
}

/// `blue bonds remove ADDRESS`: forgets the bond (its file is deleted; bluetoothd removes the device).
struct BondsRemove: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove the bond of an identity address.",
        discussion: "Exit codes: 2 no such bond, 1 the bond could not be removed, 64 bad address, 69 bluetoothd unreachable.")

    @OptionGroup var location: BondDirectoryOption

    @Argument(help: "The identity address (AA:BB:CC:DD:EE:FF).")
    var address: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let parsed: BluetoothAddress
        do {
            parsed = try BluetoothAddress(string: address)
        } catch {
            printError("bad address \"\(address)\": expected AA:BB:CC:DD:EE:FF")
            throw ExitCode(64)
        }
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.remove(parsed) }
    }

    func remove(_ address: BluetoothAddress) async throws(CLIFailure) {
        let keeper = try location.keeper()
        let removed: [BluetoothAddress]
        do {
            removed = try await keeper.removeBonds(of: address)
        } catch {
            throw bondFailure(error)
        }
        if json {
            Console.json(["removed": removed.map(\.string)])
        } else {
            Console.line("Removed the bond with \(address.string) (\(keeper.location))")
        }
    }
}
