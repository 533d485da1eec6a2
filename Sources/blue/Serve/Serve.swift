import BlueZ
import ArgumentParser
import ATT
import BluetoothCore
import BluetoothRuntime
import Foundation
import GATT
import HCI
import Host
import SMP
import StackLauncher
import BluetoothEngine

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
            + "private address and its rotation, a GAP name of the device's own, advertising limits; README, \"Peer personalities\").",
        valueName: "platform"))
    var personality: PeerPersonality?

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
            host.preferredATTMTU = personality.attMTU
            host.enhancedATTMTU = UInt16(personality.attMTU)
            host.suggestedDataLength = personality.suggestedDataLength
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
        let server = GATTServeState(json: json)
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
        server.note(["event": "serving", "name": deviceName, "gapName": gapName, "personality": personality?.rawValue ?? "",
                     "transport": launched.transportDescription, "address": address, "services": content.serviceUUIDs.map(\.uuidString)],
                    text: "serving \"\(deviceName)\"" + (personality.map { " as \($0.rawValue) (GAP name \"\(gapName)\")" } ?? "")
                        + " on \(launched.transportDescription) as \(address)"
                        + (privacy ? " (resolvable private address)" : "")
                        + (content.serviceUUIDs.isEmpty ? "" : ", advertising \(content.serviceUUIDs.map(ValueDecoding.label).joined(separator: ", "))"))
        server.startGenerators()
        await waitForTimeoutOrSignal(nil, loop: launched.engine.eventLoop)
        server.note(["event": "stopping"], text: "stopping")
        server.stop()
        outOfBand.stop()
        launched.shutdown()
    }
}

/// The running server's state: the values (by handle), what each handle is, the peers, the generators. Values are
/// served through dynamic handlers so every read and write can be printed; state is lock-protected and touched on
/// the stack's loop.
final class GATTServeState: Sendable {
    struct Entry: Sendable {
        var uuid: BluetoothUUID
        var notifiesOnWrite: Bool
        var generator: ServeGenerator?
        /// Notified (or indicated) to each central right after it subscribes, to it alone.
        var subscribeValue: [UInt8]?
    }

    private struct State {
        var values: [UInt16: [UInt8]] = [:]
        var entries: [UInt16: Entry] = [:]
        var peers: [UInt16: String] = [:]
        var content = AdvertisingContent()
        var options = AdvertisingOptions()
        var stopped = false
    }

    private let state = LockedValue(State())
    private let stackBox = LockedValue<(any OpenedStack)?>(nil)
    let json: Bool

    init(json: Bool) {
        self.json = json
    }

    /// Prints one event: the JSON object, or the text line.
    func note(_ object: [String: Any], text: String) {
        if json { Console.json(object) } else { Console.line(text) }
    }

    func peer(_ connection: GATTConnectionID) -> String {
        state.withLock { $0.peers[connection.rawValue] } ?? "connection \(connection.rawValue)"
    }

    func build(_ services: [CompiledService], name: String, appearance: UInt16) throws(CLIFailure) -> GATTDatabase {
        var database = GATTDatabase()
        do {
            try database.addGAPService(deviceName: name, appearance: appearance)
            try database.addGATTService()
            for service in services {
                let definitions = service.characteristics.map { characteristic in
                    GATTCharacteristicDefinition(
                        uuid: characteristic.uuid, properties: characteristic.properties,
                        permissions: characteristic.permissions, value: dynamicValue(),
                        maximumLength: characteristic.maximumLength,
                        descriptors: characteristic.descriptors.map {
                            GATTDescriptorDefinition(uuid: $0.uuid, permissions: $0.permissions, value: .stored($0.value))
                        })
                }
                let handles = try database.add(GATTServiceDefinition(uuid: service.uuid, isPrimary: service.isPrimary,
                                                                     characteristics: definitions))
                state.withLock { state in
                    for (characteristic, assigned) in zip(service.characteristics, handles.characteristics) {
                        state.values[assigned.value] = characteristic.value
                        let notifies = !characteristic.properties.isDisjoint(with: [.notify, .indicate])
                        let writes = !characteristic.properties.isDisjoint(with: [.write, .writeWithoutResponse])
                        state.entries[assigned.value] = Entry(uuid: characteristic.uuid,
                                                              notifiesOnWrite: notifies && writes && characteristic.generator == nil,
                                                              generator: characteristic.generator,
                                                              subscribeValue: characteristic.subscribeValue)
                    }
                }
            }
        } catch {
            throw CLIFailure(.usage, "the definition does not make a GATT database: \(error.reason)")
        }
        return database
    }

    private func dynamicValue() -> GATTValue {
        .dynamic(
            read: { [self] request in
                let (value, entry) = state.withLock { ($0.values[request.handle] ?? [], $0.entries[request.handle]) }
                if request.offset == 0, let entry {
                    let decoded = ValueDecoding.describe(value, uuid: entry.uuid).map { "  (\($0))" } ?? ""
                    note(["event": "read", "peer": peer(request.connection), "uuid": entry.uuid.uuidString, "hex": Hex.encode(value)],
                         text: "read \(ValueDecoding.label(entry.uuid)) by \(peer(request.connection)): \(ValueDecoding.hex(value))\(decoded)")
                }
                return request.answer(wholeValue: value)
            },
            write: { [self] request in
                guard request.kind != .preparedValidation else { return nil }
                let (value, entry) = state.withLock { state -> ([UInt8], Entry?) in
                    var value = state.values[request.handle] ?? []
                    if request.offset == 0 {
                        value = request.value
                    } else if request.offset <= value.count {
                        value = Array(value[..<request.offset]) + request.value
                    } else {
                        value = request.value
                    }
                    state.values[request.handle] = value
                    return (value, state.entries[request.handle])
                }
                guard let entry else { return nil }
                let decoded = ValueDecoding.describe(value, uuid: entry.uuid).map { "  (\($0))" } ?? ""
                let kind = request.kind == .command ? " (without response)" : ""
                note(["event": "write", "peer": peer(request.connection), "uuid": entry.uuid.uuidString, "hex": Hex.encode(value),
                      "withResponse": request.kind != .command],
                     text: "write \(ValueDecoding.label(entry.uuid)) by \(peer(request.connection))\(kind): \(ValueDecoding.hex(value))\(decoded)")
                if entry.notifiesOnWrite, let stack = stackBox.load() {
                    let others = Set(state.withLock { $0.peers.keys }).subtracting([request.connection.rawValue])
                    if !others.isEmpty { stack.engine.updateValue(value, handle: request.handle, to: others, completion: nil) }
                }
                return nil
            })
    }

    /// Starts printing the stack's events and re-advertising after connections.
    func attach(_ stack: any OpenedStack) {
        stackBox.store(stack)
        stack.engine.addEventHandler { [self] event in
            switch event {
            case .connected(let connection):
                state.withLock { $0.peers[connection.handle] = connection.peer.string }
                note(["event": "connected", "peer": connection.peer.string, "handle": Int(connection.handle)],
                     text: "connected: \(connection.peer) (handle \(Dissection.hex16(connection.handle)))")
                readvertise()
            case .disconnected(let handle, let reason):
                let peer = state.withLock { $0.peers.removeValue(forKey: handle) } ?? "handle \(Dissection.hex16(handle))"
                note(["event": "disconnected", "peer": peer, "reason": reason.description],
                     text: "disconnected: \(peer) (\(reason))")
                readvertise()
            case .encryptionChanged(let handle, let status, let enabled):
                // Also when a bonded central encrypts with its stored key on a new connection (no pairing follows).
                let peer = state.withLock { $0.peers[handle] } ?? "handle \(Dissection.hex16(handle))"
                if status == .success {
                    note(["event": "encryption", "peer": peer, "handle": Int(handle), "enabled": enabled],
                         text: "\(enabled ? "encrypted" : "encryption off"): \(peer)")
                } else {
                    note(["event": "encryptionFailed", "peer": peer, "handle": Int(handle), "status": status.description],
                         text: "encryption failed: \(peer) (\(status))")
                }
            case .attMTUChanged(let handle, let mtu):
                note(["event": "mtu", "handle": Int(handle), "mtu": mtu], text: "ATT MTU \(mtu) on handle \(Dissection.hex16(handle))")
            case .gattServer(.subscriptionChanged(let connection, let valueHandle, let configuration)):
                let (uuid, subscribeValue) = state.withLock { ($0.entries[valueHandle]?.uuid, $0.entries[valueHandle]?.subscribeValue) }
                let label = uuid.map(ValueDecoding.label) ?? Dissection.hex16(valueHandle)
                let what = configuration.contains(.indication) ? "indications" : configuration.contains(.notification) ? "notifications" : "off"
                note(["event": "subscription", "peer": peer(connection), "uuid": uuid?.uuidString ?? "", "configuration": what],
                     text: (configuration.isEmpty ? "unsubscribe " : "subscribe ") + "\(label) by \(peer(connection))"
                        + (configuration.isEmpty ? "" : " (\(what))"))
                if !configuration.isEmpty, let subscribeValue, let stack = stackBox.load() {
                    // As seed 001's peripheral in didSubscribeTo: the value to this central alone, after the
                    // Write Response to its CCCD write (a later job on the loop).
                    stack.engine.eventLoop.execute {
                        stack.engine.updateValue(subscribeValue, handle: valueHandle, to: [connection.rawValue], completion: nil)
                    }
                }
            case .gattServer(.valueWritten(let connection, let handle, let value)):
                note(["event": "write", "peer": peer(connection), "handle": Int(handle), "hex": Hex.encode(value)],
                     text: "write handle \(Dissection.hex16(handle)) by \(peer(connection)): \(ValueDecoding.hex(value))")
            default:
                break
            }
        }
    }

    /// Answers pairing as peripheral and prints it (Core 5.4 Vol 3 Part H §2.3.5.1): the passkey to display, the
    /// numeric value (confirmed), a passkey to type (`passkey`, else a line of standard input), the outcome.
    func attachPairing(_ stack: any OpenedStack, passkey: UInt32?, repairing: Bool) {
        let host = stack.engine
        host.addEventHandler { [self] event in
            switch event {
            case .pairingInteraction(let handle, let interaction):
                switch interaction {
                case .displayPasskey(let value):
                    note(["event": "displayPasskey", "handle": Int(handle), "passkey": Int(value)],
                         text: "Passkey to type on the other side: \(Pair.six(value))")
                case .confirmNumericValue(let value):
                    note(["event": "numericComparison", "handle": Int(handle), "value": Int(value)],
                         text: "Numeric comparison: \(Pair.six(value)) (confirmed)")
                    host.answerPairing(connectionHandle: handle, .confirm(true))
                case .confirmJustWorks:
                    host.answerPairing(connectionHandle: handle, .confirm(true))
                case .enterPasskey:
                    if let passkey {
                        host.answerPairing(connectionHandle: handle, .passkey(passkey))
                    } else {
                        let json = json
                        DispatchQueue.global().async {
                            if !json { Console.line("Type the passkey shown on the other side:") }
                            let line = readLine(strippingNewline: true)
                            host.answerPairing(connectionHandle: handle,
                                               .passkey(line.flatMap { UInt32($0.trimmingCharacters(in: .whitespaces)) }))
                        }
                    }
                }
            case .pairingCompleted(let handle, let outcome):
                var object = Pair.describe(outcome)
                object["event"] = "paired"
                object["handle"] = Int(handle)
                note(object, text: "paired: " + Pair.text(outcome, name: peer(GATTConnectionID(handle))))
            case .bondLost(let handle, let identity):
                note(["event": "bondLost", "handle": Int(handle), "identity": identity.string],
                     text: "\(identity) paired again although we hold its bond (it lost its keys): "
                        + (repairing ? "re-pairing allowed" : "refused (--allow-repairing allows it)"))
            case .pairingFailed(let handle, let reason, let error):
                note(["event": "pairingFailed", "handle": Int(handle), "reason": reason.map { "\($0)" } ?? "", "error": error.reason],
                     text: "pairing failed: \(error.reason)")
            default:
                break
            }
        }
    }

    /// Advertises `wanted` (retrying with fewer service UUIDs when they do not fit).
    func advertise(_ wanted: AdvertisingContent, options: AdvertisingOptions) async throws(CLIFailure) -> AdvertisingContent {
        guard let stack = stackBox.load() else { throw CLIFailure(.failed, "no stack") }
        let services = wanted.serviceUUIDs
        var candidates = [services]
        let short = services.filter { $0.uuid16 != nil }
        if short != services { candidates.append(short) }
        candidates.append([])
        var lastError = ""
        for list in candidates {
            var content = wanted
            content.serviceUUIDs = list
            let result = await stack.awaitCompletion { stack.engine.startAdvertising(content, options: options, completion: $0) }
            switch result {
            case .success:
                state.withLock {
                    $0.content = content
                    $0.options = options
                }
                if list != services {
                    Console.error("warning: advertising \(list.count) of \(services.count) service UUIDs (the rest do not fit)")
                }
                return content
            case .failure(let error):
                lastError = error.reason
                if error.code != .advertisingDataTooLarge { break }
            }
        }
        throw CLIFailure(.failed, "cannot advertise: \(lastError)")
    }

    private func readvertise() {
        guard let stack = stackBox.load() else { return }
        let (content, options, stopped) = state.withLock { ($0.content, $0.options, $0.stopped) }
        guard !stopped else { return }
        stack.engine.startAdvertising(content, options: options) { _ in }
    }

    /// Arms each generator's timer on the stack's loop.
    func startGenerators() {
        guard let stack = stackBox.load() else { return }
        let generators = state.withLock { state in
            state.entries.compactMap { handle, entry in entry.generator.map { (handle, $0) } }.sorted { $0.0 < $1.0 }
        }
        for (handle, generator) in generators { tick(handle, generator, 0, stack.engine.eventLoop) }
    }

    private func tick(_ handle: UInt16, _ generator: ServeGenerator, _ number: UInt64, _ loop: any EventLoop) {
        loop.schedule(after: generator.interval) { [self] in
            guard let stack = stackBox.load(), !state.withLock({ $0.stopped }) else { return }
            let value = generator.value(tick: number)
            state.withLock { $0.values[handle] = value }
            stack.engine.updateValue(value, handle: handle, to: nil, completion: nil)
            tick(handle, generator, number &+ 1, loop)
        }
    }

    func stop() {
        state.withLock { $0.stopped = true }
    }
}
