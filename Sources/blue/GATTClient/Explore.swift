import ArgumentParser
import BluetoothCore
import FoundationEssentials
import Host
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue explore TARGET`: connect and print the peer's whole GATT database with SIG names, properties and decoded
/// values (Core 5.4 Vol 3 Part G §4.4–§4.8, §4.12).
struct Explore: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Connect to a device and print its GATT tree with names, properties and decoded values.",
        discussion: """
            TARGET is an advertised name, an address (AA:BB:CC:DD:EE:FF) or a peer identifier (the UUID \
            `blue scan --json` prints). Every readable characteristic and every descriptor is read. Exit codes: \
            2 when the target is not found, 1 when the connection or discovery fails, 69 when the transport is \
            unreachable.
            """
    )

    @OptionGroup var stack: StackOptions

    @Argument(help: "The device: name, address or identifier.")
    var target: String

    @Option(help: "Seconds to find the target (and again to connect).")
    var timeout: Double = 10

    @Flag(help: "Print the tree as one JSON object.")
    var json = false

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.explore() }
    }

    func explore() async throws(CLIFailure) {
        let session = try await TargetSession.open(stack, target: target, timeout: duration(seconds: timeout), label: "explore")
        let tree: GATTTree
        do {
            tree = try await session.discover(readValues: true)
        } catch {
            await session.close()
            throw error
        }
        let mtu = session.attMTU
        let link = await session.link()
        await session.close()
        let report = session.report
        if json {
            var object: [String: Any] = [
                "address": report.address.string, "addressType": report.address.type.description,
                "identifier": PeerIdentifierFormat.identifier(for: report.address), "rssi": ScanTable.rssiJSON(report.rssi),
                "mtu": mtu, "services": tree.json(), "link": link.json,
            ]
            if let name = report.localName { object["name"] = name }
            Console.json(object)
            return
        }
        Console.line("\(session.displayName)  \(report.address)  RSSI \(ScanTable.rssiText(report.rssi))  ATT MTU \(mtu)")
        Console.line("Link: " + link.text)
        for line in tree.renderText() { Console.line(line) }
    }
}
