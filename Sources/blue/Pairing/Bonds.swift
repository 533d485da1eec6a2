import ArgumentParser
import BluetoothCore
import Foundation
import Host
import StackLauncher

/// `blue bonds list|remove`: the bonds of the ``FileBondStore`` (Core 5.4 Vol 3 Part H §2.4.1 keys kept per peer
/// identity; Vol 3 Part G §3.3.3.3 CCCDs of bonded clients), in its default directory or `--directory`.
struct Bonds: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "List or remove stored bonds.",
        subcommands: [BondsList.self, BondsRemove.self],
        defaultSubcommand: BondsList.self)
}

/// `--directory` (our host's bonds) or `--hci bluez[:hciN]` (bluetoothd's), shared by the bonds subcommands.
struct BondDirectoryOption: ParsableArguments, Sendable {
    @Option(help: "The bond directory (default: $XDG_DATA_HOME/opencorebluetooth/bonds).")
    var directory: String?

    @Option(name: .customLong("hci"), help: ArgumentHelp("bluez or bluez:hciN: the bonds bluetoothd keeps instead.", valueName: "transport"))
    var hci: String?

    func validate() throws {
        if let hci, bluezAdapter == nil { throw ValidationError("--hci \(hci): bonds come from our bond directory, or from bluetoothd (bluez, bluez:hciN)") }
        if hci != nil, directory != nil { throw ValidationError("give --directory or --hci bluez, not both") }
    }

    /// The adapter when `--hci` names bluetoothd (`.some(nil)`: its first adapter).
    var bluezAdapter: String?? {
        guard let hci else { return nil }
        if case .bluez(let adapter)? = try? StackSpecification(parsing: hci) { return .some(adapter) }
        return nil
    }

    var store: FileBondStore { FileBondStore(directory: directory ?? FileBondStore.defaultDirectory()) }
}

/// `blue bonds list [--json]`: one line (or JSON object) per bond; unreadable files are reported on standard error
/// and left untouched.
struct BondsList: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the bonds (identity, keys, security).",
        discussion: "Exit codes: 1 when a bond file could not be read (it is left untouched).")

    @OptionGroup var location: BondDirectoryOption

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        if case .some(let adapter) = location.bluezAdapter {
            let json = json
            return try runCommand { () async throws(CLIFailure) in try await BlueZBonds.list(adapter: adapter, json: json) }
        }
        let contents = location.store.loadBonds()
        let bonds = contents.bonds.sorted { $0.identityAddress.value < $1.identityAddress.value }
        if json {
            Console.json(["directory": location.store.directory, "bonds": bonds.map(Self.json),
                          "problems": contents.problems.map(\.description)])
        } else {
            if bonds.isEmpty { Console.line("No bonds in \(location.store.directory)") }
            for bond in bonds { Console.line(Self.text(bond)) }
        }
        for problem in contents.problems { printError("unreadable bond: \(problem.description)") }
        if !contents.problems.isEmpty { throw ExitCode(1) }
    }

    static func keys(_ bond: Bond) -> [String] {
        var keys: [String] = []
        if bond.sharedLongTermKey != nil { keys.append("LTK (LE SC)") }
        if bond.peerLongTermKey != nil { keys.append("peer LTK") }
        if bond.localLongTermKey != nil { keys.append("our LTK") }
        if bond.peerIdentityResolvingKey != nil { keys.append("peer IRK") }
        if bond.peerSignatureKey != nil { keys.append("peer CSRK") }
        if bond.localSignatureKey != nil { keys.append("our CSRK") }
        return keys
    }

    static func text(_ bond: Bond) -> String {
        let type = bond.identityAddress.type == .public ? "public" : "random"
        return "\(bond.identityAddress.string) (\(type)): \(bond.secureConnections ? "LE SC" : "legacy"), "
            + "\(bond.authenticated ? "authenticated" : "unauthenticated"), key size \(bond.keySize), "
            + "keys \(keys(bond).joined(separator: ", ")), \(bond.clientConfigurations.count) CCCD(s)"
    }

    static func json(_ bond: Bond) -> [String: Any] {
        [
            "address": bond.identityAddress.string, "addressType": bond.identityAddress.type == .public ? "public" : "random",
            "secureConnections": bond.secureConnections, "authenticated": bond.authenticated, "keySize": Int(bond.keySize),
            "keys": keys(bond), "cccds": bond.clientConfigurations.count,
        ]
    }
}

/// `blue bonds remove ADDRESS`: forgets the bond (its file is deleted).
struct BondsRemove: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        commandName: "remove", abstract: "Remove the bond of an identity address.",
        discussion: "Exit codes: 2 no such bond, 1 the file could not be removed, 64 bad address.")

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
        if case .some(let adapter) = location.bluezAdapter {
            let json = json
            return try runCommand { () async throws(CLIFailure) in try await BlueZBonds.remove(adapter: adapter, address: parsed, json: json) }
        }
        let store = location.store
        let matching = store.loadBonds().bonds.filter { $0.identityAddress.value == parsed.value }
        guard !matching.isEmpty else {
            printError("no bond with \(parsed.string) in \(store.directory)")
            throw ExitCode(2)
        }
        for bond in matching {
            do {
                try store.removeBond(identityAddress: bond.identityAddress)
            } catch {
                printError("cannot remove the bond with \(bond.identityAddress.string): \(error.description)")
                throw ExitCode(1)
            }
        }
        if json {
            Console.json(["removed": matching.map { $0.identityAddress.string }])
        } else {
            Console.line("Removed the bond with \(parsed.string)")
        }
    }
}
