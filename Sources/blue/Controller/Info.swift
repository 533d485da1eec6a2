import AdvertisingData
import ArgumentParser
import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import BlueZ
import HCI
import Host
import StackLauncher

/// `blue info`: what the controller says of itself, as Bumble's controller_info, `btmgmt info` and `hciconfig -a`
/// show it: version and manufacturer (Core 5.4 Vol 4 Part E §7.4.1), addresses, LE features (Vol 6 Part B §4.6),
/// supported states (§7.8.27) and commands (§6.27), buffers (§7.8.2, §7.8.93), data length (§7.8.46), advertising
/// sets (§7.8.58) and list sizes (§7.8.14, §7.8.41); on bluetoothd, the adapter's properties.
struct Info: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Show the controller: version, manufacturer, addresses, LE features, supported states and commands, "
            + "buffers, data length, advertising sets and list sizes.",
        discussion: """
            Opens --hci as every command does (the shared air by default: this program's own virtual controller on \
            it) and asks the controller (Read Local Version Information, Read Local Supported Commands, LE Read \
            Local Supported Features, LE Read Supported States, LE Read Buffer Size, LE Read Maximum Data Length, LE \
            Read Filter Accept List Size, LE Read Resolving List Size, LE Read Number of Supported Advertising Sets; \
            each only when the controller lists it). --commands names every supported command. On bluetoothd \
            (--hci bluez) the adapter's properties are shown instead (the kernel owns the controller); through the \
            Bluetooth service, what it read when it opened the stack. --json prints one object.
            """
    )

    @OptionGroup var stack: StackOptions

    @Flag(help: "List every supported command by name.")
    var commands = false

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.show() }
    }

    func show() async throws(CLIFailure) {
        let opened = try await stack.openEngine(label: "info")
        defer { opened.shutdown() }
        if let bluetoothd = opened as? BluetoothdStack {
            let properties = (bluetoothd.engine as? BlueZEngine)?.adapterProperties ?? [:]
            if json {
                Console.json(["transport": opened.transportDescription, "adapter": properties])
            } else {
                Console.line(Self.row("Controller", opened.transportDescription))
                for key in properties.keys.sorted() { Console.line(Self.row(key, properties[key] ?? "")) }
            }
            return
        }
        let details: ControllerDetails
        if let launched = opened as? LaunchedStack {
            details = await firstCompletion { (done: @escaping @Sendable (Result<ControllerDetails, Never>) -> Void) in
                launched.host.readControllerDetails { done(.success($0)) }
            }.get()
        } else {
            details = ControllerDetails(info: opened.controllerInfo)
        }
        if json {
            Console.json(Self.object(details, transport: opened.transportDescription, commands: commands))
        } else {
            for line in Self.lines(details, transport: opened.transportDescription, commands: commands) { Console.line(line) }
        }
    }

    // MARK: Text

    static func row(_ label: String, _ value: String) -> String {
        TextFormat.padded(label, to: max(14, label.count + 1)) + value
    }

    static func lines(_ details: ControllerDetails, transport: String, commands: Bool) -> [String] {
        let info = details.info
        var lines = [row("Controller", transport)]
        if let version = info.version {
            lines.append(row("Version", "\(version.hciVersionName) (HCI 0x\(hex(version.hciVersion)) revision 0x\(hex(version.hciSubversion)), "
                                 + "LMP 0x\(hex(version.lmpVersion)) subversion 0x\(hex(version.lmpSubversion)))"))
            lines.append(row("Manufacturer", version.companyIdentifier.description))
        } else {
            lines.append(row("Version", "not told (Read Local Version Information failed)"))
        }
        lines.append(row("Address", "public \(info.publicAddress.string), in use \(info.ownAddress)"))
        lines.append(row("LE features", features(info.leFeatures).description))
        if let states = details.supportedStates {
            lines.append(row("LE states", "0x\(String(states, radix: 16, uppercase: true)) (\(states.nonzeroBitCount) state and role combinations)"))
        }
        lines.append(row("LE buffers", "\(info.totalNumLEACLDataPackets) × \(info.leACLDataPacketLength) octets (ACL)"))
        if let length = details.maximumDataLength {
            lines.append(row("Data length", "up to \(length.txOctets) octets / \(length.txTime) µs sent, \(length.rxOctets) / \(length.rxTime) µs received"))
        }
        var advertising = info.usesExtendedAdvertising ? "extended commands" : "legacy commands"
        if let sets = details.advertisingSets { advertising += ", \(sets) sets" }
        advertising += ", data up to \(info.maximumAdvertisingDataLength) octets"
        lines.append(row("Advertising", advertising))
        var lists: [String] = []
        if let size = details.filterAcceptListSize { lists.append("filter accept list \(size)") }
        if let size = details.resolvingListSize { lists.append("resolving list \(size)") }
        if !lists.isEmpty { lines.append(row("Lists", lists.joined(separator: ", "))) }
        lines.append(row("Privacy", info.hasLLPrivacy ? "LL Privacy (the controller resolves and makes addresses)" : "by the host"))
        let supported = details.supportedCommands
        let known = supported.known
        lines.append(row("Commands", "\(supported.count) supported" + (commands ? ":" : " (--commands lists them)")))
        if commands {
            for opcode in known { lines.append(row("", opcode.description)) }
            if supported.count > known.count { lines.append(row("", "and \(supported.count - known.count) this tool cannot name")) }
        }
        for warning in info.warnings { lines.append(row("Warning", warning)) }
        return lines
    }

    // MARK: JSON

    static func object(_ details: ControllerDetails, transport: String, commands: Bool) -> [String: Any] {
        let info = details.info
        var object: [String: Any] = [
            "transport": transport,
            "publicAddress": info.publicAddress.string,
            "address": info.ownAddress.string,
            "leFeatures": features(info.leFeatures).setBits.map { ["bit": $0, "name": LESupportedFeatures.name(ofBit: $0) as Any] },
            "leFeaturesMask": "0x" + String(info.leFeatures, radix: 16, uppercase: true),
            "leACLBuffers": ["count": info.totalNumLEACLDataPackets, "length": info.leACLDataPacketLength],
            "extendedAdvertising": info.usesExtendedAdvertising,
            "maximumAdvertisingDataLength": info.maximumAdvertisingDataLength,
            "llPrivacy": info.hasLLPrivacy,
            "supportedCommandCount": details.supportedCommands.count,
            "warnings": info.warnings,
        ]
        if let version = info.version {
            object["version"] = ["name": version.hciVersionName, "hci": Int(version.hciVersion), "hciRevision": Int(version.hciSubversion),
                                 "lmp": Int(version.lmpVersion), "lmpSubversion": Int(version.lmpSubversion)]
            object["manufacturer"] = ["id": Int(version.companyIdentifier.rawValue), "name": version.companyIdentifier.name as Any]
        }
        if let states = details.supportedStates { object["leStates"] = "0x" + String(states, radix: 16, uppercase: true) }
        if let length = details.maximumDataLength {
            object["maximumDataLength"] = ["txOctets": length.txOctets, "txTime": length.txTime, "rxOctets": length.rxOctets, "rxTime": length.rxTime]
        }
        if let sets = details.advertisingSets { object["advertisingSets"] = sets }
        if let size = details.filterAcceptListSize { object["filterAcceptListSize"] = size }
        if let size = details.resolvingListSize { object["resolvingListSize"] = size }
        if commands { object["supportedCommands"] = details.supportedCommands.known.map { $0.name ?? $0.hexValue } }
        return object
    }

    private static func features(_ mask: UInt64) -> LESupportedFeatures {
        LESupportedFeatures(bytes: (0..<8).map { UInt8(truncatingIfNeeded: mask >> (8 * $0)) })
    }

    private static func hex<Number: BinaryInteger>(_ number: Number) -> String {
        let text = String(number, radix: 16, uppercase: true)
        return text.count % 2 == 0 ? text : "0" + text
    }
}
