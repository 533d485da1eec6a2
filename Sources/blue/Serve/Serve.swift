import BlueZ
import ArgumentParser
import ATT
import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import GATT
import HCI
import Host
import L2CAP
import SMP
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue serve`: a GATT server (Core 5.4 Vol 3 Part G §3) from a JSON definition or a built-in profile, advertised
/// under its name and service UUIDs (Vol 3 Part C §11), printing connections, reads, writes and subscriptions.
struct Serve: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Run a GATT server from a JSON definition file or a built-in profile.",
        discussion: """
            The file format is described in Docs/serve-format.md (--print-definition shows a profile in it). The \
            server advertises its name and service UUIDs, prints each connection, read, write and subscription, \
            sends the notifications of its generators, re-advertises after each connection, and runs until \
            SIGINT or SIGTERM (exit 0). With --hci virtual (the default) it joins the shared air hub, starting it \
            in the background when none runs. Pairing is accepted as peripheral with the IO capability of --io \
            (default none: Just Works); a passkey to display is --passkey when given (for scripts), else a random \
            one printed to type on the other side; a passkey to type is --passkey, else read from standard input; \
            numeric values are printed and confirmed. Out-of-band pairing (Docs/pairing.md): --oob-out writes our \
            LE Secure Connections OOB data before advertising, --oob-in reads a central's (at start when present, \
            then on every connection and whenever the file changes), --oob-key gives every central the legacy OOB key. \
            A central that pairs again while we hold its bond (it lost its keys, or `blue pair --repair`) is refused \
            with Pairing Not Supported (0x05) unless --allow-repairing. Exit codes: 0 stopped by SIGINT or SIGTERM, \
            64 bad definition or options, 69 the transport is unreachable or the controller went away while serving.
            """
    )

    @OptionGroup var stack: StackOptions

    @Argument(help: "The server definition (JSON).")
    var file: String?

    @Option(help: "A built-in server: \(ServeProfile.allCases.map(\.rawValue).joined(separator: ", ")).")
    var profile: ServeProfile?

    @Option(help: "The advertised and GAP device name (overrides the definition's).")
    var name: String?

    @Flag(name: .customLong("print-definition"), help: "Print the definition as JSON and exit.")
    var printDefinition = false

    @Flag(help: "Print events as JSON objects, one per line.")
    var json = false

    @Option(help: "Our IO capability for pairing: display-only, display-yes-no, keyboard-only, none, keyboard-display.")
    var io: IOCapabilityChoice?

    @Option(help: ArgumentHelp(
        "Serve as this platform's stack would: iphone, android or bluez (ATT_MTU offered, data length, IO capability, "
            + "private address and its rotation, a GAP name of the device's own, advertising limits, the connection parameters "
            + "it asks for; as android, the app's GATT server: its own 2902 descriptors, every request answered by the app, "
            + "one notification in flight; README, \"Peer personalities\").",
        valueName: "platform"))
    var personality: PlatformPersonality?

    @Option(help: "A fixed passkey (0...999999): displayed, or typed when the central displays.")
    var passkey: UInt32?

    @Option(name: .customLong("oob-out"), help: ArgumentHelp(
        "Write our LE SC out-of-band data (JSON) to this file before advertising.", valueName: "file"))
    var oobOut: String?

    @Option(name: .customLong("oob-in"), help: ArgumentHelp(
        "A central's LE SC out-of-band data (JSON): read when present, on each connection and when it changes.",
        valueName: "file"))
    var oobIn: String?

    @Option(name: .customLong("oob-key"), help: ArgumentHelp(
        "The legacy OOB temporary key given to every central, 32 hex digits.", valueName: "hex"))
    var oobKey: String?

    @Flag(name: .customLong("allow-repairing"), help: "Let a central we hold a bond with pair again (the new bond replaces the old).")
    var allowRepairing = false

    @Flag(help: ArgumentHelp("Advertise with a resolvable private address made from our IRK (a central that bonded with "
                                 + "us still recognises it), a new one every --rpa-interval seconds while not advertising."))
    var privacy = false

    @Option(name: .customLong("rpa-interval"), help: "With --privacy: seconds between private addresses (1...3600; 900 recommended).")
    var rpaInterval = 900

    @Flag(name: .customLong("extended"), help: ArgumentHelp(
        "Advertise in extended PDUs (ADV_EXT_IND and its auxiliary chain) even when the data fits legacy ones. Data "
            + "longer than 31 octets goes in extended PDUs by itself when the controller has Bluetooth 5 extended advertising."))
    var extendedAdvertising = false

    @Option(name: .customLong("advertising-phy"), help: ArgumentHelp(
        "The PHY of the extended advertising's auxiliary PDUs: 1M, 2M or coded (coded puts ADV_EXT_IND on LE Coded too, "
            + "for range). Implies --extended.", valueName: "phy"))
    var advertisingPHY: String?

    /// The advertising options from --extended and --advertising-phy.
    func advertisingOptions() throws(CLIFailure) -> AdvertisingOptions {
        guard let text = advertisingPHY else {
            return AdvertisingOptions(pdus: extendedAdvertising ? .extended : .automatic)
        }
        let phy: LEPhy
        switch text.lowercased() {
        case "1m": phy = .le1M
        case "2m": phy = .le2M
        case "coded": phy = .leCoded
        default: throw CLIFailure(.usage, "--advertising-phy \(text): give 1M, 2M or coded")
        }
        return AdvertisingOptions(pdus: .extended, primaryPHY: phy == .leCoded ? .leCoded : .le1M, secondaryPHY: phy)
    }

    func validate() throws {
        if let passkey, passkey > 999_999 { throw ValidationError("--passkey must be 0...999999") }
        guard (1...3600).contains(rpaInterval) else { throw ValidationError("--rpa-interval must be 1...3600 seconds") }
    }

    /// Security as peripheral (Core 5.4 Vol 3 Part H §2.3.2): our IO capability; MITM asked whenever it can
    /// be had (any IO but none), so a passkey or numeric comparison is used when the central can take part.
    func securityConfiguration() -> HostSecurityConfiguration {
        var security = HostSecurityConfiguration()
        security.ioCapability = io?.capability ?? personality?.ioCapability ?? .noInputNoOutput
        security.mitm = security.ioCapability != .noInputNoOutput
        security.fixedPasskey = passkey
        if allowRepairing { security.allowRepairing = { _ in true } }
        if let rotation = privateAddressRotation { security.privateAddressRotation = rotation }
        return security
    }

    /// `--privacy` (every --rpa-interval seconds), else the personality's.
    var privateAddressRotation: Duration? {
        privacy ? .seconds(rpaInterval) : personality?.privateAddressRotation
    }

    /// The host's configuration: security, and the personality's ATT_MTU and data length.
    func hostConfiguration() -> HostConfiguration {
        var host = HostConfiguration()
        host.security = securityConfiguration()
        if let personality {
            personality.configure(&host)
            // What the command line says wins over the personality.
            host.security = securityConfiguration()
        }
        return host
    }

    /// What this command asks that only our host does (bluetoothd decides or answers it itself): each option in use.
    func ourHostOptions() -> [BluetoothdLimitation] {
        var needing: [BluetoothdLimitation] = []
        if privacy { needing.append(.privacy) }
        if personality != nil { needing.append(.ourHost) }
        if extendedAdvertising || advertisingPHY != nil { needing.append(.advertisingPDUs) }
        let pairing: [(Bool, String)] = [(io.map { $0 != .noInputNoOutput } ?? false, "--io"), (passkey != nil, "--passkey"), (oobIn != nil, "--oob-in"),
                                         (oobOut != nil, "--oob-out"), (oobKey != nil, "--oob-key"), (allowRepairing, "--allow-repairing")]
        needing += pairing.filter(\.0).map { .serverPairing(option: $0.1) }
        return needing
    }

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.serve() }
    }

    func loadDefinition() throws(CLIFailure) -> ServeDefinition {
        switch (file, profile) {
        case (nil, nil): throw CLIFailure(.usage, "give a definition file or --profile (\(ServeProfile.allCases.map(\.rawValue).joined(separator: ", ")))")
        case (.some, .some): throw CLIFailure(.usage, "give either a definition file or --profile, not both")
        case (let path?, nil): return try ServeDefinition.load(path: path)
        case (nil, let profile?): return profile.definition
        }
    }

    func serve() async throws(CLIFailure) {
        var definition = try loadDefinition()
        if let name { definition.name = name }
        // A built-in profile served as Android is a careful Android app: it adds its 2902 descriptors.
        if profile != nil, personality?.serverBehaviour.addsClientConfiguration == false {
            definition = definition.declaringClientConfigurations()
        }
        if printDefinition {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            if let data = try? encoder.encode(definition) { Console.line(String(decoding: data, as: UTF8.self)) }
            return
        }
        let compiled = try definition.compile()
        let options = try advertisingOptions()
        let advertised = try definition.advertisedUUIDs(compiled)
        let deviceName = definition.name ?? "blue serve"
        var wanted = try definition.advertisingContent(name: deviceName, services: advertised)
        if let personality { wanted = try personality.legacyContent(wanted) }
        if personality?.serverBehaviour.addsClientConfiguration == false {
            for service in compiled {
                for characteristic in service.characteristics where characteristic.notifies && !characteristic.declaresClientConfiguration {
                    Console.error("warning: --personality \(personality?.rawValue ?? ""): \(ValueDecoding.label(characteristic.uuid)) notifies "
                                  + "but declares no 2902 descriptor, which an Android app adds itself: no central can subscribe to it")
                }
            }
        }
        let server = GATTServeState(json: json, behaviour: personality?.serverBehaviour ?? ServeBehaviour(),
                                    parameterRequest: personality?.connectionParameterRequester)
        // A phone's GAP name is the device's, not the advertised one (a central shows it once connected).
        let gapName = personality?.deviceName ?? deviceName
        let database = try server.build(compiled, name: gapName, appearance: definition.appearance ?? 0)
        let outOfBand = try ServeOutOfBand(inPath: oobIn, outPath: oobOut, key: oobKey)
        let host = hostConfiguration()
        let privacy = privateAddressRotation != nil
        let launched = try await stack.openEngine(label: "serve", options: StackLaunchOptions(host: host, label: "blue.serve"),
                                                  needing: ourHostOptions())
        let engine = launched.engine
        server.attach(launched)
        server.installAppAnswers(on: engine)
        server.attachPairing(launched, passkey: passkey, repairing: allowRepairing)
        do throws(CLIFailure) {
            try await outOfBand.start(launched, server: server)
            try await launched.awaitCompletion { engine.replaceGATTDatabase(database, changedRange: nil, completion: $0) }
                .mapError { CLIFailure(.failed, "cannot publish the services: \($0.reason)") }.get()
        } catch {
            launched.shutdown()
            throw error
        }
        // With --privacy, the RPA the host sets right after start (read on the stack's loop): advertise only once it
        // is there. A controller with LL Privacy makes (and rotates) it itself: asked for once advertising runs.
        let controller = await launched.awaitCompletion { (done: @escaping @Sendable (Result<ControllerInfo, Never>) -> Void) in
            engine.eventLoop.execute { done(.success(engine.controllerInfo)) }
        }
        var address = controller.get().ownAddress.string
        let controllerPrivacy = controller.get().usesControllerPrivacy
        if privacy, !controllerPrivacy {
            let ownAddress = LockedValue<BluetoothAddress?>(nil)
            let deadline = ContinuousClock.now + .seconds(5)
            while ownAddress.load()?.kind != .resolvablePrivate {
                guard ContinuousClock.now < deadline else {
                    launched.shutdown()
                    throw CLIFailure(.failed, "--privacy: no resolvable private address was set within 5 s")
                }
                engine.eventLoop.execute { ownAddress.store(engine.controllerInfo.ownAddress) }
                try? await Task.sleep(for: .milliseconds(10))
            }
            address = ownAddress.load()?.string ?? address
        }
        let content = try await server.advertise(wanted, options: options)
        if privacy, controllerPrivacy {
            let current = await launched.awaitCompletion { (done: @escaping @Sendable (Result<BluetoothAddress, Never>) -> Void) in
                engine.currentPrivateAddress { done(.success($0)) }
            }
            if case .success(let rpa) = current { address = rpa.string }
        }
        let asPersonality: String = personality.map { " as \($0.rawValue) (GAP name \"\(gapName)\")" } ?? ""
        let privateNote: String = privacy ? " (resolvable private address)" : ""
        let advertisedNote: String = content.serviceUUIDs.isEmpty
            ? "" : ", advertising \(content.serviceUUIDs.map(ValueDecoding.label).joined(separator: ", "))"
        server.note(["event": "serving", "name": deviceName, "gapName": gapName, "personality": personality?.rawValue ?? "",
                     "transport": launched.transportDescription, "address": address, "services": content.serviceUUIDs.map(\.uuidString)],
                    text: "serving \"\(deviceName)\"\(asPersonality) on \(launched.transportDescription) as \(address)\(privateNote)\(advertisedNote)")
        server.startGenerators()
        await waitForTimeoutOrSignal(nil, loop: launched.engine.eventLoop)
        server.note(["event": "stopping"], text: "stopping")
        server.stop()
        outOfBand.stop()
        launched.shutdown()
    }
}

