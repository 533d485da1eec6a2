#if CoreBluetoothPrograms
import ArgumentParser
import Dispatch
import Foundation
import OpenCoreBluetooth
import Seed001CentralApp
import Seed001PeripheralApp

/// `blue demo`: seed 001 end to end (issue 5 item 4). The iOS peripheral's and the macOS central's
/// BluetoothManager (Examples/Seed001PeripheralApp, Examples/Seed001CentralApp) run in this process, each on its own host stack and virtual controller on the process's own
/// air (`in-process`; `--hci` or `OCB_HCI` picks another transport), on the main queue as the seed asks (`queue: nil`).
/// The peripheral publishes a service and advertises; the central scans for it, connects, subscribes and reads
/// {"Hello": "Darkness"} from the notification, then writes {"Yo": "Lo"}, which the peripheral receives; the
/// central disconnects. Exit 0 then; exit 1 when it has not finished within `--timeout` seconds.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Seed 001 end to end: a peripheral and a central exchange two property lists on the built-in air.",
        discussion: """
            Runs the iOS peripheral and the macOS central of seed 001 (unchanged CoreBluetooth code, compiled against \
            OpenCoreBluetooth) in this process, each on its own host stack over a virtual controller. Their logs are \
            labelled [peripheral] and [central]. --hci virtual runs them on the shared air (the `blue air` hub) instead.
            """)

    @Option(name: .customLong("hci"), help: ArgumentHelp(
        "Where both roles run: in-process (an air inside this process), virtual (the shared air: the `blue air` "
            + "hub), air:PATH, tcp:HOST:PORT, unix:PATH, serial:… or hciN. Default: $OCB_HCI, else in-process.",
        valueName: "transport"))
    var hci: String?

    @Option(help: "Seconds before giving up (exit 1).")
    var timeout: Double = 20

    @OptionGroup var log: LogOptions

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 seconds") }
    }

    func run() throws {
        let log = DemoLog.shared
        let chosen = (hci ?? ProcessInfo.processInfo.environment[HostBackend.environmentVariable]).flatMap { $0.isEmpty ? nil : $0 }
        // Both roles are in this process: without a choice, an air of its own (the library's default is the
        // shared air, where two programs meet).
        CBBackendRegistry.setDefault(HostBackend.provider(HostBackend.transport(named: chosen ?? "in-process")))
        let transport = chosen
        CommandRun.exitOnLoss(name: "blue demo")
        log.write(role: "demo", "seed 001: the iOS peripheral and the macOS central in one process, on \(transport ?? "the built-in air")")
        let peripheralEar = DemoPeripheralEar()
        let centralEar = DemoCentralEar()
        let finish: @Sendable () -> Void = {
            guard peripheralEar.received, centralEar.received, centralEar.disconnected else { return }
            log.write(role: "demo", "done: the central read \(log.lastRead ?? "?") and the peripheral received \(log.lastWritten ?? "?")")
            Foundation.exit(0)
        }
        peripheralEar.onChange = finish
        centralEar.onChange = finish
        let seconds = timeout
        DispatchQueue.main.async {
            // Kept alive for the life of the process: the seed's managers hold their CB managers.
            DemoApps.peripheral = PeripheralApp(log: { log.write(role: "peripheral", $0) }, onEvent: peripheralEar.hear)
            let central = CentralApp(log: { log.write(role: "central", $0) }, onEvent: centralEar.hear)
            DemoApps.central = central
            central.scan()
        }
        Self.failWhenUnsupported(transport: transport ?? "the built-in air")
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
            let missing = [
                centralEar.connected ? nil : "the central did not connect",
                centralEar.received ? nil : "the central did not read {\"Hello\": \"Darkness\"}",
                peripheralEar.received ? nil : "the peripheral did not receive {\"Yo\": \"Lo\"}",
                centralEar.disconnected ? nil : "the central did not disconnect",
            ].compactMap { $0 }
            Console.error("blue demo: not finished after \(seconds) s: \(missing.joined(separator: "; "))")
            Foundation.exit(1)
        }
        dispatchMain()
    }
}

extension Demo {
    /// Exits 1 at once when a manager reports `.unsupported` (no stack could be opened on the transport
    /// `OCB_HCI` names; the reason is already on standard error), instead of waiting for the timeout.
    static func failWhenUnsupported(transport: String) {
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.1) {
            let states = [DemoApps.peripheral?.peripheralManager?.state, DemoApps.central?.centralManager?.state]
            guard states.contains(.unsupported) else { return failWhenUnsupported(transport: transport) }
            Console.error("blue demo: no Bluetooth stack on \(transport)")
            Foundation.exit(1)
        }
    }
}

/// The two seed apps of the demo (touched on the main queue only).
@MainActor enum DemoApps {
    static var peripheral: PeripheralApp?
    static var central: CentralApp?
}

/// Writes the demo's labelled log lines ("[central] didConnect ...") to standard output, and remembers the
/// values the seeds printed.
final class DemoLog: @unchecked Sendable {
    static let shared = DemoLog()
    private let lock = NSLock()
    private var read: String?
    private var written: String?

    var lastRead: String? { lock.withLock { read } }
    var lastWritten: String? { lock.withLock { written } }

    func write(role: String, _ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        lock.withLock {
            for line in lines {
                if line.hasPrefix("Value read is: ") { read = String(line.dropFirst("Value read is: ".count)) }
                if line.hasPrefix("Written value is: ") { written = String(line.dropFirst("Written value is: ".count)) }
                Swift.print("[\(role)] \(line)")
            }
            fflush(nil)
        }
    }
}

/// What the iOS peripheral's BlueEar hears.
final class DemoPeripheralEar: @unchecked Sendable {
    private let lock = NSLock()
    private var _received = false
    var onChange: (@Sendable () -> Void)?
    var received: Bool { lock.withLock { _received } }

    func hear(_ event: PeripheralApp.Event) {
        guard event == .didReceiveData else { return }
        lock.withLock { _received = true }
        onChange?()
    }
}

/// What the macOS central's BlueEar hears.
final class DemoCentralEar: @unchecked Sendable {
    private let lock = NSLock()
    private var state = (connected: false, received: false, disconnected: false)
    var onChange: (@Sendable () -> Void)?
    var connected: Bool { lock.withLock { state.connected } }
    var received: Bool { lock.withLock { state.received } }
    var disconnected: Bool { lock.withLock { state.disconnected } }

    func hear(_ event: CentralApp.Event) {
        switch event {
        case .didConnectPeripheral: lock.withLock { state.connected = true }
        case .didDisconnectPeripheral:
            lock.withLock { state.disconnected = true }
            onChange?()
        case .didReceiveData:
            lock.withLock { state.received = true }
            onChange?()
        default: break
        }
    }
}
#endif
