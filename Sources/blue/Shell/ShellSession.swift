import ATT
import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import GATT
import HCI
import Host
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The state of `blue shell` and its commands: one stack, at most one connection (as central), the database found
/// on it, the devices heard (for completion). Commands run one after the other on the shell's task; completions are
/// asked from the input thread, hence the lock.
final class ShellSession: Sendable {
    private struct State {
        var connection: Connection?
        var name = ""
        var tree: GATTTree?
        var heard: [String: BluetoothAddress] = [:]
    }

    let stack: any OpenedStack
    private let state = LockedValue(State())
    private let subscription: StackEventSubscription?

    static let commands = ["scan", "connect", "disconnect", "explore", "read", "write", "subscribe", "link", "mtu", "phy",
                           "datalength", "params", "pair", "help", "quit"]

    static let help = """
        scan [SECONDS]                       devices advertising around (3 s)
        connect TARGET [SECONDS]             connect to a name, address or identifier (10 s)
        disconnect                           drop the connection
        explore                              the database with every readable value
        read CHAR                            read a characteristic (UUID or SERVICE/CHAR)
        write CHAR VALUE [--text] [--without-response]
        subscribe CHAR [COUNT] [SECONDS]     wait for COUNT notifications (1, within 10 s)
        link                                 interval, latency, timeout, PHYs, data length, MTU, RSSI
        mtu                                  the ATT_MTU (exchanged once per connection)
        phy 1M|2M|coded                      ask for a PHY (LE Set PHY)
        datalength OCTETS                    ask for a data length (27-251)
        params INTERVAL_MS [LATENCY [TIMEOUT_MS]]  new connection parameters
        pair                                 pair (and bond) with the connected device
        quit                                 end (also Ctrl-D)
        """

    init(stack: any OpenedStack) {
        self.stack = stack
        let state = state
        subscription = stack.addEventHandler { event in
            if case .disconnected(let handle, let reason) = event {
                let gone = state.withLock { state -> String? in
                    guard state.connection?.handle == handle else { return nil }
                    defer { state.connection = nil; state.tree = nil }
                    return state.name
                }
                if let gone { Console.line("disconnected from \(gone): \(reason)") }
            }
        }
    }

    var prompt: String {
        let name = state.withLock { $0.connection == nil ? nil : $0.name }
        return name.map { "blue [\($0)]> " } ?? "blue> "
    }

    /// What Tab may complete: commands first, then device names after `connect`, characteristic UUIDs after the
    /// GATT commands.
    func completions(_ words: [String], _ partial: String) -> [String] {
        guard let command = words.first else { return Self.commands }
        let (heard, tree) = state.withLock { (Array($0.heard.keys), $0.tree) }
        switch command {
        case "connect" where words.count == 1: return heard.sorted()
        case "read" where words.count == 1, "write" where words.count == 1, "subscribe" where words.count == 1:
            return (tree?.services.flatMap(\.characteristics).map(\.uuid.uuidString) ?? []).sorted()
        case "phy" where words.count == 1: return ["1M", "2M", "coded"]
        default: return []
        }
    }

    /// A line split into words; "double quotes" keep spaces.
    static func words(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quoted = false
        var started = false
        for character in line {
            if character == "\"" {
                quoted.toggle()
                started = true
            } else if character == " ", !quoted {
                if started { words.append(current) }
                current = ""
                started = false
            } else {
                current.append(character)
                started = true
            }
        }
        if started { words.append(current) }
        return words
    }

    func close() async {
        subscription?.cancel()
        if let connection = state.withLock({ $0.connection }) { await stack.disconnect(connection.handle) }
    }

    // MARK: Commands

    func run(_ words: [String]) async throws(CLIFailure) {
        let arguments = Array(words.dropFirst())
        switch words.first ?? "" {
        case "help": Console.line(Self.help)
        case "scan": try await scan(seconds: try number(arguments.first, default: 3, "scan SECONDS"))
        case "connect":
            guard let target = arguments.first else { throw CLIFailure(.usage, "connect TARGET [SECONDS]") }
            try await connect(target, seconds: try number(arguments.dropFirst().first, default: 10, "connect TARGET SECONDS"))
        case "disconnect":
            let connection = try connected()
            await stack.disconnect(connection.handle)
        case "explore":
            let connection = try connected()
            let tree = try await GATTTree.discover(on: stack, connection: connection.handle, readValues: true)
            state.withLock { $0.tree = tree }
            for line in tree.renderText() { Console.line(line) }
        case "read": try await read(arguments)
        case "write": try await write(arguments)
        case "subscribe": try await subscribe(arguments)
        case "link":
            let connection = try connected()
            Console.line(await stack.link(connection.handle).text)
        case "mtu":
            let connection = try connected()
            // ATT allows one exchange per connection (Vol 3 Part F §3.4.2), which the host makes at connection.
            let current = stack.attMTU(connection.handle)
            if current > ATTMTU.leDefault { return Console.line("ATT MTU \(current) (exchanged at connection: once per connection)") }
            let host = stack.engine
            let result = await stack.awaitCompletion { host.exchangeMTU(connectionHandle: connection.handle, completion: $0) }
            switch result {
            case .success(let mtu): Console.line("ATT MTU \(mtu)")
            case .failure(let error): throw CLIFailure(.failed, "the MTU exchange failed: \(error.reason)")
            }
        case "phy": try await phy(arguments)
        case "datalength": try await dataLength(arguments)
        case "params": try await parameters(arguments)
        case "pair": try await pair()
        case let other: throw CLIFailure(.usage, "unknown command \"\(other)\" (help lists them)")
        }
    }

    private func number(_ text: String?, default value: Double, _ usage: String) throws(CLIFailure) -> Double {
        guard let text else { return value }
        guard let number = Double(text), number > 0, number.isFinite else { throw CLIFailure(.usage, usage + ": a positive number") }
        return number
    }

    private func connected() throws(CLIFailure) -> Connection {
        guard let connection = state.withLock({ $0.connection }) else { throw CLIFailure(.failed, "not connected (connect TARGET)") }
        return connection
    }

    private func scan(seconds: Double) async throws(CLIFailure) {
        // Each device once, and again when its name first arrives (with the scan response).
        let printed = LockedValue<[BluetoothAddress: Bool]>([:])
        let state = state
        let watch = stack.addEventHandler { event in
            guard case .advertisingReport(let report) = event else { return }
            let named = report.localName != nil
            state.withLock { state in
                state.heard[report.address.string] = report.address
                if let name = report.localName { state.heard[name] = report.address }
            }
            let fresh = printed.withLock { printed -> Bool in
                guard printed[report.address] == nil || (named && printed[report.address] == false) else { return false }
                printed[report.address] = named
                return true
            }
            if fresh { Console.line(ScanTable.line(report, bar: false)) }
        }
        try await stack.startScan(ScanOptions(active: true, filterDuplicates: false))
        try? await Task.sleep(for: duration(seconds: seconds))
        watch.cancel()
        await stack.stopScan()
    }

    private func connect(_ target: String, seconds: Double) async throws(CLIFailure) {
        guard state.withLock({ $0.connection }) == nil else { throw CLIFailure(.failed, "already connected (disconnect first)") }
        let limit = duration(seconds: seconds)
        let report = try await stack.findTarget(TargetMatcher(target), timeout: limit)
        let name = report.localName ?? report.address.string
        // The host exchanges the ATT_MTU right after connecting: wait (at most 2 s) for it, so that the commands
        // after this one see the link's MTU.
        let exchanged = LockedValue<Set<UInt16>>([])
        let mtuSeen = OneShot<Void>()
        let handleBox = LockedValue<UInt16?>(nil)
        let watch = stack.addEventHandler { event in
            guard case .attMTUChanged(let handle, _) = event else { return }
            exchanged.withLock { _ = $0.insert(handle) }
            if handleBox.load() == handle { mtuSeen.fire(()) }
        }
        defer { watch.cancel() }
        let connection = try await stack.connect(to: report.address, name: name, timeout: limit)
        handleBox.store(connection.handle)
        if !exchanged.load().contains(connection.handle) {
            let timer = stack.eventLoop.schedule(after: .seconds(2)) { mtuSeen.fire(()) }
            if exchanged.load().contains(connection.handle) { mtuSeen.fire(()) }
            await mtuSeen.wait()
            timer.cancel()
        }
        state.withLock {
            $0.connection = connection
            $0.name = name
            $0.tree = nil
        }
        Console.line("connected to \(name) (\(report.address)), ATT MTU \(stack.attMTU(connection.handle))")
    }

    /// The characteristic a command names, discovering the database once per connection.
    private func characteristic(_ text: String?, usage: String) async throws(CLIFailure) -> (Connection, GATTTree.Characteristic) {
        guard let text else { throw CLIFailure(.usage, usage) }
        let path = try CharacteristicPath(text)
        let connection = try connected()
        var tree = state.withLock { $0.tree }
        if tree == nil {
            let found = try await GATTTree.discover(on: stack, connection: connection.handle, readValues: false)
            state.withLock { $0.tree = found }
            tree = found
        }
        let name = state.withLock { $0.name }
        return (connection, try path.find(in: tree ?? GATTTree(), on: name))
    }

    private func read(_ arguments: [String]) async throws(CLIFailure) {
        let (connection, characteristic) = try await characteristic(arguments.first, usage: "read CHAR")
        switch await stack.gatt(connection.handle, .readLongCharacteristicValue(handle: characteristic.declaration.valueHandle)) {
        case .success(.value(let value)):
            Console.line(ValueDecoding.label(characteristic.uuid) + GATTTree.valueText(value, error: nil, uuid: characteristic.uuid))
        case .failure(let error): throw CLIFailure(.failed, "reading \(describeCharacteristic(characteristic)) failed: \(error)")
        default: throw CLIFailure(.failed, "the read returned no value")
        }
    }

    private func write(_ arguments: [String]) async throws(CLIFailure) {
        let operands = arguments.filter { !$0.hasPrefix("--") }
        let flags = Set(arguments.filter { $0.hasPrefix("--") })
        guard flags.isSubset(of: ["--text", "--without-response"]), operands.count == 2 else {
            throw CLIFailure(.usage, "write CHAR VALUE [--text] [--without-response]")
        }
        let bytes = try ValueDecoding.parseValue(operands[1], asText: flags.contains("--text"))
        let (connection, characteristic) = try await characteristic(operands[0], usage: "write CHAR VALUE")
        let handle = characteristic.declaration.valueHandle
        let procedure: GATTProcedure = flags.contains("--without-response") ? .writeWithoutResponse(handle: handle, value: bytes)
            : bytes.count <= stack.attMTU(connection.handle) - 3 ? .writeCharacteristicValue(handle: handle, value: bytes)
            : .writeLongCharacteristicValue(handle: handle, value: bytes)
        if case .failure(let error) = await stack.gatt(connection.handle, procedure) {
            throw CLIFailure(.failed, "writing \(describeCharacteristic(characteristic)) failed: \(error)")
        }
        Console.line("wrote \(bytes.count) byte\(bytes.count == 1 ? "" : "s") to \(ValueDecoding.label(characteristic.uuid))")
    }

    private func subscribe(_ arguments: [String]) async throws(CLIFailure) {
        let count = Int(try number(arguments.dropFirst().first, default: 1, "subscribe CHAR COUNT"))
        let limit = duration(seconds: try number(arguments.dropFirst(2).first, default: 10, "subscribe CHAR COUNT SECONDS"))
        let (connection, characteristic) = try await characteristic(arguments.first, usage: "subscribe CHAR [COUNT] [SECONDS]")
        guard let cccd = characteristic.cccdHandle, !characteristic.properties.isDisjoint(with: [.notify, .indicate]) else {
            throw CLIFailure(.failed, "\(describeCharacteristic(characteristic)) does not notify or indicate")
        }
        let valueHandle = characteristic.declaration.valueHandle, uuid = characteristic.uuid
        let received = LockedValue(0)
        let done = OneShot<Bool>()
        let watch = stack.addEventHandler { event in
            switch event {
            case .gattNotification(connection.handle, valueHandle, let value), .gattIndication(connection.handle, valueHandle, let value):
                let number = received.withLock { value -> Int in
                    value += 1
                    return value
                }
                guard number <= count else { return }
                Console.line(Timestamp.clock() + "  " + ValueDecoding.label(uuid) + GATTTree.valueText(value, error: nil, uuid: uuid))
                if number == count { done.fire(true) }
            case .disconnected(connection.handle, _):
                done.fire(false)
            default:
                break
            }
        }
        let configuration: GATTProcedure.ClientConfiguration = characteristic.properties.contains(.notify) ? .notifications : .indications
        if case .failure(let error) = await stack.gatt(connection.handle, .subscribe(cccdHandle: cccd, configuration: configuration)) {
            watch.cancel()
            throw CLIFailure(.failed, "subscribing failed: \(error)")
        }
        let timer = stack.eventLoop.schedule(after: limit) { done.fire(false) }
        _ = await done.wait()
        timer.cancel()
        watch.cancel()
        _ = await stack.gatt(connection.handle, .unsubscribe(cccdHandle: cccd))
        let got = received.load()
        if got < count { throw CLIFailure(.failed, "received \(min(got, count)) of \(count) values within \(limit.secondsText)") }
    }

    /// Waits (at most 5 s) for the first event `match` accepts after `start` ran.
    private func awaitEvent<Value: Sendable>(_ match: @escaping @Sendable (HostEvent) -> Value?,
                                             start: () async -> HostError?) async throws(CLIFailure) -> Value? {
        let seen = OneShot<Value?>()
        let watch = stack.addEventHandler { event in if let value = match(event) { seen.fire(value) } }
        defer { watch.cancel() }
        // What the engine does not do (bluetoothd chooses the link itself) is a usage error, as an option would be.
        if let error = await start() { throw CLIFailure(error.code == .notOffered ? .usage : .failed, error.reason) }
        let timer = stack.eventLoop.schedule(after: .seconds(5)) { seen.fire(nil) }
        defer { timer.cancel() }
        return await seen.wait()
    }

    private func phy(_ arguments: [String]) async throws(CLIFailure) {
        let bits: UInt8 = switch arguments.first?.lowercased() {
        case "1m": 0x01
        case "2m": 0x02
        case "coded": 0x04
        default: throw CLIFailure(.usage, "phy 1M|2M|coded")
        }
        let connection = try connected()
        let stack = stack, host = stack.engine
        let update = try await awaitEvent({ event -> (HCIStatus, LEPhy, LEPhy)? in
            if case .phyUpdated(connection.handle, let status, let tx, let rx) = event { return (status, tx, rx) }
            return nil
        }, start: {
            await stack.awaitCompletion { host.setPHY(connectionHandle: connection.handle, txPHYs: bits, rxPHYs: bits, completion: $0) }.failure
        })
        guard let (status, tx, rx) = update else { return Console.line("no PHY change within 5 s (the controller kept the PHYs)") }
        guard status == .success else { throw CLIFailure(.failed, "the PHY update failed: \(status)") }
        Console.line("PHY \(LinkDescription.phy(tx))/\(LinkDescription.phy(rx))")
    }

    private func dataLength(_ arguments: [String]) async throws(CLIFailure) {
        guard let text = arguments.first, let octets = UInt16(text), (27...251).contains(octets) else {
            throw CLIFailure(.usage, "datalength OCTETS (27 to 251)")
        }
        let connection = try connected()
        let stack = stack, host = stack.engine
        let change = try await awaitEvent({ event -> (UInt16, UInt16)? in
            if case .dataLengthChanged(connection.handle, let tx, let rx) = event { return (tx, rx) }
            return nil
        }, start: {
            await stack.awaitCompletion { host.requestDataLength(connectionHandle: connection.handle, txOctets: octets, txTime: 2120, completion: $0) }.failure
        })
        guard let (tx, rx) = change else { return Console.line("no data length change within 5 s (the controller kept it)") }
        Console.line("data \(tx)/\(rx) octets")
    }

    private func parameters(_ arguments: [String]) async throws(CLIFailure) {
        guard let first = arguments.first, let interval = Double(first), (7.5...4000).contains(interval),
              let latency = UInt16(arguments.dropFirst().first ?? "0"), latency <= 499,
              let timeout = Double(arguments.dropFirst(2).first ?? "4000"), (100...32_000).contains(timeout) else {
            throw CLIFailure(.usage, "params INTERVAL_MS (7.5-4000) [LATENCY (0-499) [TIMEOUT_MS (100-32000)]]")
        }
        let connection = try connected()
        let units = UInt16((interval / 1.25).rounded())
        let parameters = LEConnectionParameters(intervalMin: units, intervalMax: units, maxLatency: latency,
                                                supervisionTimeout: UInt16((timeout / 10).rounded()))
        let host = stack.engine
        switch await stack.awaitCompletion({ host.updateConnectionParameters(connectionHandle: connection.handle, parameters, completion: $0) }) {
        case .success(let updated): Console.line("\(updated.parameters)")
        case .failure(let error): throw CLIFailure(.failed, "the connection update failed: \(error.reason)")
        }
    }

    private func pair() async throws(CLIFailure) {
        let connection = try connected()
        let engine = stack.engine
        switch await stack.awaitCompletion({ engine.pair(connectionHandle: connection.handle, completion: $0) }) {
        case .success(let outcome):
            Console.line("paired: \(outcome.method.map { "\($0)" } ?? "existing bond")"
                         + (outcome.secureConnections.map { $0 ? ", LE Secure Connections" : ", legacy" } ?? "") + (outcome.bonded ? ", bonded" : ""))
        case .failure(let error): throw CLIFailure(.failed, error.securityLine)
        }
    }
}

extension Result {
    /// The error, nil on success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
