import ArgumentParser
import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import GATT
import Host
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The arguments `read`, `write` and `subscribe` share.
struct TargetArguments: ParsableArguments, Sendable {
    @OptionGroup var stack: StackOptions

    @Argument(help: "The device: name, address or identifier.")
    var target: String

    @Argument(help: "The characteristic: UUID, or SERVICE/CHARACTERISTIC.")
    var characteristic: String

    @Flag(help: "Print JSON.")
    var json = false
}

/// Connects, discovers, finds the characteristic, runs `body`, disconnects.
func withCharacteristic<Value: Sendable>(
    _ arguments: TargetArguments, timeout: Double, label: String,
    _ body: @Sendable (TargetSession, GATTTree.Characteristic) async throws(CLIFailure) -> Value
) async throws(CLIFailure) -> Value {
    let path = try CharacteristicPath(arguments.characteristic)
    let session = try await TargetSession.open(arguments.stack, target: arguments.target, timeout: duration(seconds: timeout),
                                              label: label)
    do {
        let tree = try await session.discover(readValues: false)
        let characteristic = try path.find(in: tree, on: session.displayName)
        let value = try await body(session, characteristic)
        await session.close()
        return value
    } catch {
        await session.close()
        throw error
    }
}

func describeCharacteristic(_ characteristic: GATTTree.Characteristic) -> String {
    let name = characteristic.uuid.assignedName.map { " (\($0))" } ?? ""
    return "characteristic \(characteristic.uuid.uuidString)\(name)"
}

/// `blue read TARGET CHARACTERISTIC`: a long read of the value (Core 5.4 Vol 3 Part G §4.8.3).
struct Read: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Read a characteristic value.",
        discussion: "Exit codes: 2 target or characteristic not found, 1 not readable or the read failed, 64 bad UUID.")

    @OptionGroup var arguments: TargetArguments

    @Option(help: "Seconds to find the target (and again to connect).")
    var timeout: Double = 10

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.read() }
    }

    func read() async throws(CLIFailure) {
        let json = arguments.json
        try await withCharacteristic(arguments, timeout: timeout, label: "read") { (session, characteristic) throws(CLIFailure) in
            guard characteristic.properties.contains(.read) else {
                throw CLIFailure(.failed, "\(describeCharacteristic(characteristic)) is not readable")
            }
            let handle = characteristic.declaration.valueHandle
            switch await session.read(handle) {
            case .success(let value):
                if json {
                    var object = GATTTree.uuidJSON(characteristic.uuid)
                    object["handle"] = Int(handle)
                    object.merge(GATTTree.valueJSON(value, error: nil, uuid: characteristic.uuid)) { $1 }
                    Console.json(object)
                } else {
                    Console.line(ValueDecoding.label(characteristic.uuid)
                                 + GATTTree.valueText(value, error: nil, uuid: characteristic.uuid))
                }
            case .failure(let error):
                throw CLIFailure(.failed, "reading \(describeCharacteristic(characteristic)) failed: \(error)")
            }
        }
    }
}

/// `blue write TARGET CHARACTERISTIC VALUE`: Write Request (§4.9.3), Write Long (§4.9.4) when it does not fit,
/// or Write Command (§4.9.1) with `--without-response`.
struct Write: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Write a characteristic value (hex, or text with --text).",
        discussion: "Exit codes: 2 target or characteristic not found, 1 not writable or the write failed, 64 bad UUID or value.")

    @OptionGroup var arguments: TargetArguments

    @Argument(help: "The value: hex (01ff, 01:ff, 0x01ff), or text with --text.")
    var value: String

    @Flag(help: "Take VALUE as UTF-8 text.")
    var text = false

    @Flag(name: .customLong("without-response"), help: "Send a Write Command (no response).")
    var withoutResponse = false

    @Option(help: "Seconds to find the target (and again to connect).")
    var timeout: Double = 10

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.write() }
    }

    func write() async throws(CLIFailure) {
        let bytes = try ValueDecoding.parseValue(value, asText: text)
        _ = try CharacteristicPath(arguments.characteristic)
        let withoutResponse = withoutResponse
        let json = arguments.json
        try await withCharacteristic(arguments, timeout: timeout, label: "write") { (session, characteristic) throws(CLIFailure) in
            let properties = characteristic.properties
            let command = withoutResponse || !properties.contains(.write)
            guard command ? properties.contains(.writeWithoutResponse) : properties.contains(.write) else {
                let kind = withoutResponse && properties.contains(.write) ? " without response" : ""
                throw CLIFailure(.failed, "\(describeCharacteristic(characteristic)) is not writable\(kind)")
            }
            let handle = characteristic.declaration.valueHandle
            let mtu = session.attMTU
            if command, bytes.count > mtu - 3 {
                throw CLIFailure(.failed, "\(bytes.count) bytes do not fit a write without response (ATT MTU \(mtu): at most \(mtu - 3))")
            }
            switch await session.write(handle, bytes, withResponse: !command) {
            case .success:
                if command {
                    // A Write Command has no answer: let it reach the air before the link is dropped.
                    try? await Task.sleep(for: .milliseconds(300))
                }
                if json {
                    var object = GATTTree.uuidJSON(characteristic.uuid)
                    object["handle"] = Int(handle)
                    object["hex"] = Hex.encode(bytes)
                    object["withResponse"] = !command
                    Console.json(object)
                } else {
                    Console.line("wrote \(bytes.count) byte\(bytes.count == 1 ? "" : "s") to \(ValueDecoding.label(characteristic.uuid))"
                                 + (command ? " (without response)" : ""))
                }
            case .failure(let error):
                throw CLIFailure(.failed, "writing \(describeCharacteristic(characteristic)) failed: \(error)")
            }
        }
    }
}

/// `blue subscribe TARGET CHARACTERISTIC`: enable notifications (or indications) through the CCCD (Core 5.4
/// Vol 3 Part G §4.10, §4.11, §4.12.3) and print each value.
struct Subscribe: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Subscribe to a characteristic and print its notifications or indications.",
        discussion: """
            Runs until --count values arrived (exit 0), --timeout passed (exit 0 without --count, saying so on \
            stderr when no value arrived; 1 with --count when fewer arrived), or Ctrl-C (exit 0). Exit codes: 2 target or characteristic not found, 1 cannot \
            subscribe or disconnected, 64 bad UUID, 69 the transport is unreachable or the controller went away.
            """)

    @OptionGroup var arguments: TargetArguments

    @Option(help: "Stop after this many values.")
    var count: Int?

    @Option(help: "Seconds to find the target (and to connect); with --count or alone, also the time to receive.")
    var timeout: Double?

    @Flag(help: "Start each value's line with the time it arrived (JSON objects always carry \"time\").")
    var timestamps = false

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.subscribe() }
    }

    func subscribe() async throws(CLIFailure) {
        let timestamps = timestamps
        if let count, count < 1 { throw CLIFailure(.usage, "--count must be at least 1") }
        let count = count
        let receiveTimeout = timeout.map { duration(seconds: $0) }
        let json = arguments.json
        try await withCharacteristic(arguments, timeout: timeout ?? 10, label: "subscribe") { (session, characteristic) throws(CLIFailure) in
            let properties = characteristic.properties
            guard !properties.isDisjoint(with: [.notify, .indicate]), characteristic.cccdHandle != nil else {
                throw CLIFailure(.failed, "\(describeCharacteristic(characteristic)) does not notify or indicate")
            }
            let valueHandle = characteristic.declaration.valueHandle
            let uuid = characteristic.uuid
            let done = OneShot<CLIFailure?>()
            let received = LockedValue(0)
            let cancel = session.subscribe(characteristic, indications: !properties.contains(.notify)) { event in
                switch event {
                case .value(let value):
                    let number = received.withLock { value -> Int in
                        value += 1
                        return value
                    }
                    if let count, number > count { return }
                    if json {
                        var object = GATTTree.uuidJSON(uuid)
                        object["handle"] = Int(valueHandle)
                        object.merge(GATTTree.valueJSON(value, error: nil, uuid: uuid)) { $1 }
                        object["time"] = Timestamp.iso()
                        Console.json(object)
                    } else {
                        let line = ValueDecoding.label(uuid) + GATTTree.valueText(value, error: nil, uuid: uuid)
                        Console.line(timestamps ? Timestamp.clock() + "  " + line : line)
                    }
                    if let count, number >= count { done.fire(nil) }
                case .disconnected(let reason):
                    done.fire(CLIFailure(.failed, "\(session.displayName) disconnected: \(reason)"))
                case .failed(let error):
                    done.fire(CLIFailure(.failed, "subscribing to \(describeCharacteristic(characteristic)) failed: \(error)"))
                }
            }
            let watcher = SignalWatcher { _ in done.fire(nil) }
            let timer = receiveTimeout.map { limit in
                session.eventLoop.schedule(after: limit) {
                    let got = received.load()
                    if let count, got < count {
                        done.fire(CLIFailure(.failed, "received \(got) of \(count) values within \(limit.secondsText)"))
                    } else {
                        // Without --count the time limit is a normal end, but silence is said, never left to guess.
                        if got == 0 { Console.error("blue subscribe: no value arrived within \(limit.secondsText)") }
                        done.fire(nil)
                    }
                }
            }
            let outcome = await done.wait()
            cancel()
            watcher.cancel()
            timer?.cancel()
            if let outcome { throw outcome }
        }
    }
}
