import AdvertisingData
import ArgumentParser
import BluetoothCore
import BluetoothRuntime
import Foundation
import Host
import OpenCoreBluetooth
import StackLauncher

/// `blue scan`: the devices advertising around, as a live table (Core 5.4 Vol 3 Part C §9.2 discovery; Vol 4
/// Part E §7.7.65.2 reports; Core Supplement Part A data).
struct Scan: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Scan for advertising devices: name, address, RSSI, services, manufacturer.",
        discussion: """
            On a terminal the table is redrawn in place; otherwise one line per device (again when its name or \
            services change), or with --json one object per advertising report. Runs until --timeout or Ctrl-C \
            (exit 0), or until the controller goes away (one line, exit 69). With --hci virtual (the default) the command joins the shared air hub, starting it in the \
            background when none runs ($OCB_AIR_SOCKET overrides its socket path).
            """
    )

    @OptionGroup var stack: StackOptions

    @Option(name: .customLong("service"), help: ArgumentHelp("Only devices advertising this service UUID (repeatable).",
                                                             valueName: "uuid"))
    var services: [String] = []

    @Flag(help: "Report every advertisement, not only the first of each device.")
    var duplicates = false

    @Option(help: "Stop after this many seconds.")
    var timeout: Double?

    @Flag(help: "Passive scanning: no scan requests, so no scan responses.")
    var passive = false

    @Flag(help: "Print one JSON object per advertising report.")
    var json = false

    func run() throws {
        let command = self
        try runCommand { () async throws(CLIFailure) in try await command.scan() }
    }

    func scan() async throws(CLIFailure) {
        var filter: [BluetoothUUID] = []
        for text in services {
            do {
                filter.append(try BluetoothUUID(string: text))
            } catch {
                throw CLIFailure(.usage, "bad UUID \"\(text)\": expected 4 or 8 hex digits, or 8-4-4-4-12 hex digits")
            }
        }
        if let adapter = try stack.bluezAdapter() {
            return try await scanThroughBlueZ(adapter, filter: filter)
        }
        let launched = try await stack.open(label: "scan")
        defer { launched.shutdown() }
        let table = ScanTable(live: Console.isTerminal && !json, json: json, duplicates: duplicates)
        let wanted = filter
        let subscription = launched.addEventHandler { event in
            guard case .advertisingReport(let report) = event else { return }
            if !wanted.isEmpty, !report.advertisingData.serviceUUIDs.contains(where: wanted.contains) { return }
            table.add(report)
        }
        if Console.isTerminal && !json {
            Console.error("Scanning on \(launched.transportDescription)... (Ctrl-C to stop)")
        }
        try await launched.startScan(ScanOptions(active: !passive, filterDuplicates: !duplicates))
        await waitForTimeoutOrSignal(timeout.map { duration(seconds: $0) }, loop: launched.eventLoop)
        subscription.cancel()
        await launched.stopScan()
    }

    /// The same scan through bluetoothd: its discovery (Adapter1.SetDiscoveryFilter and StartDiscovery), each
    /// device's properties as a report. bluetoothd decides active or passive scanning (`--passive` is refused).
    private func scanThroughBlueZ(_ adapter: BlueZAdapterChoice, filter: [BluetoothUUID]) async throws(CLIFailure) {
        if passive { throw CLIFailure(.usage, "--passive: bluetoothd decides how it scans (--hci \(stack.hci))") }
        let central = try await BackendCentral.openBlueZ(adapter)
        defer { central.shutdown() }
        let table = ScanTable(live: Console.isTerminal && !json, json: json, duplicates: duplicates)
        let wanted = filter
        let lost = OneShot<Void>()
        // bluetoothd tells every change of a device's RSSI; without --duplicates a device is reported again only
        // when what it advertises changed, as our host's duplicate filter does.
        let heard = LockedValue<[BluetoothAddress: AdvertisingData]>([:])
        let duplicates = duplicates
        let cancel = central.addHandler { event in
            switch event {
            case .advertisement(let advertisement):
                let report = ScanReport(advertisement)
                if !wanted.isEmpty, !report.advertisingData.serviceUUIDs.contains(where: wanted.contains) { return }
                let fresh = heard.withLock { heard in
                    defer { heard[report.address] = report.advertisingData }
                    return heard[report.address] != report.advertisingData
                }
                if fresh || duplicates { table.add(report) }
            case .stateChanged(let state) where state != .poweredOn:
                lost.fire(())
            default:
                break
            }
        }
        if Console.isTerminal && !json {
            Console.error("Scanning on \(central.transportDescription)... (Ctrl-C to stop)")
        }
        central.backend.startScan(CBBackendScanParameters(serviceUUIDs: wanted.isEmpty ? nil : wanted, allowDuplicates: duplicates,
                                                          solicitedServiceUUIDs: []))
        let ended = OneShot<Bool>()
        Task { await waitForTimeoutOrSignal(timeout.map { duration(seconds: $0) }, loop: central.eventLoop); ended.fire(true) }
        Task { await lost.wait(); ended.fire(false) }
        let completed = await ended.wait()
        cancel()
        central.backend.stopScan()
        if !completed {
            throw CLIFailure(.unavailable, "lost \(central.transportDescription): its adapter is no longer powered on")
        }
    }
}

/// Waits until `timeout` passes (nil: forever) or SIGINT/SIGTERM arrives.
func waitForTimeoutOrSignal(_ timeout: Duration?, loop: any EventLoop) async {
    let done = OneShot<Void>()
    let watcher = SignalWatcher { _ in done.fire(()) }
    let timer = timeout.map { loop.schedule(after: $0) { done.fire(()) } }
    await done.wait()
    timer?.cancel()
    watcher.cancel()
}

/// A value delivered once, from any thread, to one waiter (before or after it starts waiting).
final class OneShot<Value: Sendable>: Sendable {
    private let state = LockedValue<(value: Value?, waiter: CheckedContinuation<Value, Never>?)>((nil, nil))

    /// Delivers `value`; later calls are ignored.
    func fire(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: value)
    }

    /// Waits for the value (one waiter).
    func wait() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let ready = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// What `blue scan` shows of the devices heard (rows by first appearance).
final class ScanTable: Sendable {
    struct Row: Sendable {
        var report: ScanReport
        var count: Int
    }

    private struct State {
        var order: [BluetoothAddress] = []
        var rows: [BluetoothAddress: Row] = [:]
        var linesDrawn = 0
        var printed: [BluetoothAddress: String] = [:]
    }

    private let state = LockedValue(State())
    let live: Bool
    let json: Bool
    let duplicates: Bool

    init(live: Bool, json: Bool, duplicates: Bool) {
        self.live = live
        self.json = json
        self.duplicates = duplicates
    }

    func add(_ report: ScanReport) {
        if json {
            Console.json(Self.json(report))
            return
        }
        state.withLock { state in
            if var row = state.rows[report.address] {
                row.report = report
                row.count += 1
                state.rows[report.address] = row
            } else {
                state.order.append(report.address)
                state.rows[report.address] = Row(report: report, count: 1)
            }
            if live {
                redraw(&state)
            } else {
                let line = Self.line(report)
                if duplicates || state.printed[report.address] != line {
                    state.printed[report.address] = line
                    Console.line(line)
                }
            }
        }
    }

    private func redraw(_ state: inout State) {
        var text = state.linesDrawn > 0 ? "\u{1B}[\(state.linesDrawn)A" : ""
        let header = Self.pad("NAME", 20) + "  " + Self.pad("ADDRESS", 17) + "  " + Self.pad("RSSI", 17) + "  SERVICES / MANUFACTURER"
        var lines = [header]
        for address in state.order {
            guard let row = state.rows[address] else { continue }
            lines.append(Self.line(row.report))
        }
        for line in lines { text += "\u{1B}[2K" + line + "\n" }
        state.linesDrawn = lines.count
        Console.write(text)
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? String(text.prefix(width)) : text + String(repeating: " ", count: width - text.count)
    }

    /// 127: "RSSI is not available" (Core 5.4 Vol 4 Part E §7.7.65.2), which some controllers (BlueZ's emulator)
    /// send in every report.
    static let rssiNotAvailable: Int8 = 127

    /// "-60 dBm", or "n/a" for ``rssiNotAvailable``.
    static func rssiText(_ rssi: Int8) -> String {
        rssi == rssiNotAvailable ? "n/a" : "\(rssi) dBm"
    }

    /// The RSSI in JSON output: a number, or null for ``rssiNotAvailable``.
    static func rssiJSON(_ rssi: Int8) -> Any {
        rssi == rssiNotAvailable ? NSNull() : Int(rssi)
    }

    /// Five levels from -100 dBm to -40 dBm; blank when not available.
    static func bar(_ rssi: Int8) -> String {
        if rssi == rssiNotAvailable { return "     " }
        let level = min(5, max(0, (Int(rssi) + 100) / 12))
        return String(repeating: "█", count: level) + String(repeating: "░", count: 5 - level)
    }

    static func serviceText(_ uuid: BluetoothUUID) -> String {
        uuid.assignedName.map { "\(uuid.uuidString) \($0)" } ?? uuid.uuidString
    }

    static func line(_ report: ScanReport) -> String {
        var extras = report.advertisingData.serviceUUIDs.map(serviceText)
        if let manufacturer = report.advertisingData.manufacturerData {
            extras.append("\(manufacturer.company) \(Hex.encode(manufacturer.data))")
        }
        let name = report.localName ?? "(no name)"
        let rssi = rssiText(report.rssi).padding(toLength: 9, withPad: " ", startingAt: 0) + " " + bar(report.rssi)
        return pad(name, 20) + "  " + pad(report.address.string, 17) + "  " + pad(rssi, 17) + "  "
            + (extras.isEmpty ? "-" : extras.joined(separator: ", "))
    }

    static func json(_ report: ScanReport) -> [String: Any] {
        var object: [String: Any] = [
            "address": report.address.string,
            "addressType": report.address.type.description,
            "identifier": PeerIdentifierFormat.identifier(for: report.address),
            "rssi": rssiJSON(report.rssi),
            "connectable": report.isConnectable,
            "services": report.advertisingData.serviceUUIDs.map(GATTTree.uuidJSON),
            "advertisingData": Hex.encode(report.rawAdvertisingData),
        ]
        if let name = report.localName { object["name"] = name }
        if let response = report.rawScanResponse { object["scanResponse"] = Hex.encode(response) }
        if let manufacturer = report.advertisingData.manufacturerData {
            var entry: [String: Any] = ["company": Int(manufacturer.company.rawValue), "data": Hex.encode(manufacturer.data)]
            if let name = manufacturer.company.name { entry["name"] = name }
            object["manufacturer"] = entry
        }
        if let power = report.advertisingData.txPowerLevel { object["txPower"] = Int(power) }
        let serviceData = report.advertisingData.serviceData
        if !serviceData.isEmpty {
            object["serviceData"] = Dictionary(uniqueKeysWithValues: serviceData.map { ($0.key.uuidString, Hex.encode($0.value)) })
        }
        return object
    }
}
