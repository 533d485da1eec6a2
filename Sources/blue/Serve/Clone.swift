import ArgumentParser
import BluetoothRuntime
import FoundationEssentials
import SystemInterface
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue clone DEVICE FILE`: connects to DEVICE (a real or virtual peripheral, on any transport) and writes a serve
/// definition of it (Docs/serve-format.md) with its advertising data, its GATT tree (Core 5.4 Vol 3 Part G §4.4–§4.7
/// discovery) and the values it let us read (§4.8.3, §4.12.1), so `blue serve FILE` plays it back.
struct Clone: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Write a serve definition of a device (advertising data, GATT tree, values) that `blue serve FILE` plays back.",
        discussion: """
            Connects to DEVICE, discovers every service, characteristic and descriptor, reads every readable value \
            and descriptor, and writes FILE (`-`: standard output) as JSON in `blue serve`'s format: the advertised \
            name, service UUIDs, manufacturer and service data and TX power; the GAP appearance; the services in \
            handle order after GAP and GATT (the server's own). A value refused for lack of encryption or \
            authentication becomes the same permission, so the clone refuses it too; what `blue serve` cannot play \
            (signed writes, a read refused with another error) is said on standard error, one line each. The file \
            is checked as `blue serve` will read it before it is written.
            Exit codes: 1 the connection or discovery failed, 2 DEVICE not found, 64 bad arguments, 69 no controller.
            """)

    @OptionGroup var stack: StackOptions

    @Argument(help: "The device: name, address or identifier.")
    var target: String

    @Argument(help: "The definition to write (`-` for standard output).")
    var file: String

    @Option(help: "Seconds to find the device (and again to connect).")
    var timeout: Double = 10

    @Flag(help: "Print the summary as one JSON object.")
    var json = false

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
    }

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.clone() }
    }

    func clone() async throws(CLIFailure) {
        if file != "-" {
            // Before any radio work: a file that cannot be written is the user's to fix first.
            let folder = URL(fileURLWithPath: file).deletingLastPathComponent().path
            var isFolder = false
            guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder,
                  FileManager.default.isWritableFile(atPath: folder) else {
                throw CLIFailure(.usage, "cannot write \(file): \(folder) is not a folder we may write in")
            }
        }
        // A value refused for security is what the clone must learn, not a reason to pair (our host would pair and
        // retry once by itself; bluetoothd decides for itself).
        var options = StackLaunchOptions(label: "blue.clone")
        options.host.security.retriesOnInsufficientSecurity = false
        let opened = try await stack.openEngine(label: "clone", options: options)
        let session = try await TargetSession.open(on: opened, target: target, timeout: duration(seconds: timeout))
        let tree: GATTTree
        do {
            tree = try await session.discover(readValues: true)
        } catch {
            await session.close()
            throw error
        }
        let address = session.report.address.string
        await session.close()
        let (definition, notes) = ServeDefinition.cloned(from: session.report, tree: tree)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(definition) + Data("\n".utf8)
        } catch {
            throw CLIFailure(.failed, "cannot encode the definition: \(error)")
        }
        // What `blue serve FILE` will do with it: a clone it cannot serve is a bug here, not a file to leave behind.
        do throws(CLIFailure) {
            _ = try ServeDefinition.decode(data, source: "the clone").compile()
        } catch {
            throw CLIFailure(.failed, "the clone of \(session.displayName) would not serve: \(error.message)")
        }
        for line in notes.lines { Console.error("blue clone: \(line)") }
        let characteristics = definition.services.reduce(0) { $0 + ($1.characteristics?.count ?? 0) }
        if file == "-" {
            Console.write(String(decoding: data, as: UTF8.self))
        } else {
            do {
                try data.write(to: URL(fileURLWithPath: file), options: .atomic)
            } catch {
                throw CLIFailure(.usage, "cannot write \(file): \(POSIX.describe(error))")
            }
        }
        let summary = "cloned \"\(definition.name ?? session.displayName)\" (\(address)): \(definition.services.count) services, "
            + "\(characteristics) characteristics, \(notes.readValues) values read"
            + (file == "-" ? "" : " → \(file)")
        if json {
            let object: [String: Any] = [
                "name": definition.name ?? "", "address": address, "services": definition.services.count,
                "characteristics": characteristics, "valuesRead": notes.readValues, "file": file, "notes": notes.lines,
            ]
            if file == "-" { Console.error(Self.jsonLine(object)) } else { Console.json(object) }
        } else if file == "-" {
            Console.error(summary)
        } else {
            Console.line(summary)
        }
    }

    private static func jsonLine(_ object: [String: Any]) -> String {
        JSONWriter.text(object) ?? "{}"
    }
}
