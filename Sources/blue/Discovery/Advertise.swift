import BlueZ
import AdvertisingData
import ArgumentParser
import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import Host
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue advertise`: a beacon or any advertising data from the command line (Core 5.4 Vol 3 Part C §9.3 modes,
/// Vol 4 Part E §7.8.5–§7.8.9 legacy advertising; Core Supplement Part A data; iBeacon; Eddystone).
struct Advertise: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Advertise a beacon (iBeacon, Eddystone UID/URL/TLM) or any name, services, service or manufacturer data.",
        discussion: """
            Prints the advertising data (and scan response) it sends, then advertises until --timeout or Ctrl-C \
            (exit 0). Non-connectable unless --connectable (then a central may connect; nothing is served: use \
            `blue serve` for a GATT server). An Eddystone-TLM frame carries the live advertisement count and \
            uptime, refreshed every second. Everything must fit legacy advertising (31 octets; the name moves to \
            the scan response when it does not fit): otherwise one line and exit 64.
            """)

    @OptionGroup var stack: StackOptions

    @Option(help: "The local name.")
    var name: String?

    @Option(name: .customLong("service"), help: ArgumentHelp("A service UUID to list (repeatable).", valueName: "uuid"))
    var services: [String] = []

    @Option(name: .customLong("service-data"), help: ArgumentHelp("Service data (repeatable).", valueName: "uuid:hex"))
    var serviceData: [String] = []

    @Option(help: ArgumentHelp("Manufacturer specific data.", valueName: "company:hex"))
    var manufacturer: String?

    @Option(name: .customLong("ibeacon"), help: ArgumentHelp("An iBeacon.", valueName: "uuid,major,minor"))
    var iBeacon: String?

    @Option(name: .customLong("measured-power"), parsing: .unconditional, help: ArgumentHelp("iBeacon's RSSI at 1 m.", valueName: "dBm"))
    var measuredPower: Int = -59

    @Option(name: .customLong("eddystone-uid"), help: ArgumentHelp("An Eddystone-UID frame.", valueName: "namespace,instance"))
    var eddystoneUID: String?

    @Option(name: .customLong("eddystone-url"), help: ArgumentHelp("An Eddystone-URL frame.", valueName: "url"))
    var eddystoneURL: String?

    @Option(name: .customLong("eddystone-tlm"), help: ArgumentHelp("An Eddystone-TLM frame.", valueName: "millivolts,celsius"))
    var eddystoneTLM: String?

    @Option(name: .customLong("tx-power"), parsing: .unconditional, help: ArgumentHelp("Eddystone's TX power at 0 m.", valueName: "dBm"))
    var txPower: Int = -20

    @Flag(help: "Accept connections (ADV_IND) instead of advertising only.")
    var connectable = false

    @Option(help: ArgumentHelp("The advertising interval (20 ms to 10.24 s).", valueName: "milliseconds"))
    var interval: Double = 100

    @Option(help: "Stop after this many seconds.")
    var timeout: Double?

    @Flag(help: "Print what is advertised as one JSON object.")
    var json = false

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.advertise() }
    }

    func advertise() async throws(CLIFailure) {
        let definition = try AdvertisementDefinition.parse(
            name: name, services: services, serviceData: serviceData, manufacturer: manufacturer, iBeacon: iBeacon,
            measuredPower: measuredPower, eddystoneUID: eddystoneUID, eddystoneURL: eddystoneURL, eddystoneTLM: eddystoneTLM,
            txPower: txPower, connectable: connectable)
        guard definition.name != nil || !definition.services.isEmpty || !definition.serviceData.isEmpty
            || definition.manufacturer != nil || definition.beacon != nil || definition.telemetry != nil else {
            throw CLIFailure(.usage, "nothing to advertise: give --name, --service, --service-data, --manufacturer or a beacon")
        }
        guard (20...10_240).contains(interval) else { throw CLIFailure(.usage, "--interval \(interval): from 20 to 10240 milliseconds") }
        let first = try definition.packets()
        let units = UInt16((interval / 0.625).rounded())
        let kind: AdvertisingOptions.Kind = definition.connectable ? .connectable
            : (first.scanResponse.structures.isEmpty ? .nonConnectable : .scannable)
        let options = AdvertisingOptions(kind: kind, intervalMin: units, intervalMax: units)
        let launched = try await stack.openEngine(label: "advertise")
        defer { launched.shutdown() }
        let engine = launched.engine
        let started = await launched.awaitCompletion {
            engine.startAdvertising(advertisingData: first.advertising, scanResponse: first.scanResponse, options: options, completion: $0)
        }
        // An engine that lays advertising data out itself (bluetoothd) says so: a usage error, as an option would be.
        if case .failure(let error) = started {
            throw CLIFailure(error.code == .notOffered ? .usage : .failed, "cannot advertise: \(error.reason)")
        }
        describe(first.advertising, first.scanResponse, kind: kind, address: launched.controllerInfo.ownAddress)
        // Eddystone-TLM: the count of advertising events and the uptime change, so the frame is rebuilt each second.
        let refresh = definition.telemetry.map { _ in
            Self.refreshTelemetry(definition, on: launched, options: options, interval: interval, since: launched.eventLoop.now)
        }
        await waitForTimeoutOrSignal(timeout.map { duration(seconds: $0) }, loop: launched.eventLoop)
        refresh?.cancel()
        _ = await launched.awaitCompletion { (done: @escaping @Sendable (Result<Void, HostError>) -> Void) in
            engine.stopAdvertising(completion: done)
        }
    }

    private func describe(_ advertising: AdvertisingData, _ response: AdvertisingData, kind: AdvertisingOptions.Kind,
                          address: BluetoothAddress) {
        let kindText = switch kind {
        case .connectable: "connectable"
        case .scannable: "scannable"
        case .nonConnectable: "non-connectable"
        }
        if json {
            var object: [String: Any] = ["address": address.string, "kind": kindText, "advertisingData": Hex.encode(advertising.encode())]
            if !response.structures.isEmpty { object["scanResponse"] = Hex.encode(response.encode()) }
            Console.json(object)
            return
        }
        Console.line("Advertising as \(address) (\(kindText)), every \(LinkDescription.milliseconds(interval)) ms")
        Console.line("  data  \(Hex.encode(advertising.encode(), separator: " "))")
        if !response.structures.isEmpty { Console.line("  scan response  \(Hex.encode(response.encode(), separator: " "))") }
    }

    /// Re-sends the TLM frame every second with the events advertised so far (estimated from the interval) and the
    /// uptime in tenths of a second.
    private static func refreshTelemetry(_ definition: AdvertisementDefinition, on launched: any OpenedStack, options: AdvertisingOptions,
                                         interval: Double, since start: StackInstant) -> RepeatingJob {
        RepeatingJob(loop: launched.eventLoop, every: .seconds(1)) {
            let elapsed = launched.eventLoop.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            guard let packets = try? definition.packets(advertisementCount: UInt32(seconds * 1000 / interval),
                                                        uptimeDeciseconds: UInt32(seconds * 10)) else { return }
            launched.engine.startAdvertising(advertisingData: packets.advertising, scanResponse: packets.scanResponse, options: options) { _ in }
        }
    }
}

/// A job run every `period` on a loop until cancelled.
final class RepeatingJob: Sendable {
    private let cancelled = LockedValue(false)

    init(loop: any EventLoop, every period: Duration, _ job: @escaping @Sendable () -> Void) {
        schedule(loop, period, job)
    }

    private func schedule(_ loop: any EventLoop, _ period: Duration, _ job: @escaping @Sendable () -> Void) {
        _ = loop.schedule(after: period) { [weak self] in
            guard let self, !cancelled.load() else { return }
            job()
            schedule(loop, period, job)
        }
    }

    func cancel() { cancelled.store(true) }
}
