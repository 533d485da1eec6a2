import BlueZ
import AdvertisingData
import ArgumentParser
import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import HCI
import Host
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue scan`: the devices advertising around, as a live table (Core 5.4 Vol 3 Part C §9.2 discovery; Vol 4
/// Part E §7.7.65.2 reports; Core Supplement Part A data).
struct Scan: ParsableCommand, Sendable {
    static let configuration = CommandConfiguration(
        abstract: "Scan for advertising devices: name, address, RSSI, services, manufacturer.",
        discussion: """
            On a terminal the table is redrawn in place, fitted to its width and height (--sort orders it); \
            otherwise one line per device (again when its name or services change; --timestamps starts each with \
            the time), or with --json one object per advertising report (with its time). --service, --name, \
            --address, --rssi-min and --manufacturer keep the reports that match all of them. Runs until --timeout or Ctrl-C \
            (exit 0), or until the controller goes away (one line, exit 69). With --hci virtual (the default) the command joins the shared air hub, starting it in the \
            background when none runs ($OCB_AIR_SOCKET overrides its socket path).
            """
    )

    @OptionGroup var stack: StackOptions

    @Option(name: .customLong("service"), help: ArgumentHelp("Only devices advertising this service UUID (repeatable).",
                                                             valueName: "uuid"))
    var services: [String] = []

    @Option(help: ArgumentHelp("Only devices whose name contains this text (any case).", valueName: "text"))
    var name: String?

    @Option(help: ArgumentHelp("Only this device, or the devices whose address starts with these octets (AA:BB).",
                               valueName: "address"))
    var address: String?

    @Option(name: .customLong("rssi-min"), parsing: .unconditional,
            help: ArgumentHelp("Only reports at least this strong (e.g. -70).", valueName: "dBm"))
    var rssiMin: Int?

    @Option(help: ArgumentHelp("Only devices with manufacturer data of this company identifier (0x004C or 76).",
                               valueName: "company"))
    var manufacturer: String?

    @Option(help: ArgumentHelp("Order of the live table: first (first heard), rssi (strongest first) or name.",
                               valueName: "order"))
    var sort: String = ScanOrder.first.rawValue

    @Flag(help: "Start each printed line with the time of the report (JSON objects always carry \"time\").")
    var timestamps = false

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
        let filter = try ScanFilter(services: services, name: name, address: address, rssiMin: rssiMin, manufacturer: manufacturer)
        guard let order = ScanOrder(rawValue: sort) else {
            throw CLIFailure(.usage, "--sort \(sort): expected \(ScanOrder.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let table = ScanTable(live: Console.isTerminal && !json, json: json, duplicates: duplicates, order: order, timestamps: timestamps)
        let launched = try await stack.openEngine(label: "scan")
        defer { launched.shutdown() }
        let subscription = launched.addEventHandler { event in
            guard case .advertisingReport(let report) = event, filter.accepts(report) else { return }
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
    let order: ScanOrder
    let timestamps: Bool

    init(live: Bool, json: Bool, duplicates: Bool, order: ScanOrder = .first, timestamps: Bool = false) {
        self.live = live
        self.json = json
        self.duplicates = duplicates
        self.order = order
        self.timestamps = timestamps
    }

    func add(_ report: ScanReport) {
        if json {
            var object = Self.json(report)
            object["time"] = Timestamp.iso()
            Console.json(object)
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
                    Console.line(timestamps ? Timestamp.clock() + "  " + line : line)
                }
            }
        }
    }

    /// Redraws the table in place, fitted to the terminal: at most its width less one column (a row never wraps, so
    /// moving the cursor up over the rows drawn stays right), the RSSI bar dropped below 80 columns, and at most its
    /// height less two rows (the rest counted on the last line).
    private func redraw(_ state: inout State) {
        let size = Console.terminalSize ?? (columns: 80, rows: 24)
        let width = max(20, size.columns - 1)
        let withBar = size.columns >= 80
        var text = state.linesDrawn > 0 ? "\u{1B}[\(state.linesDrawn)A" : ""
        let header = TextFormat.padded("NAME", to: 20) + "  " + TextFormat.padded("ADDRESS", to: 17) + "  " + TextFormat.padded("RSSI", to: withBar ? 17 : 9)
            + "  SERVICES / MANUFACTURER"
        let rows = Self.sorted(state.order.compactMap { state.rows[$0] }, by: order)
        let room = max(1, size.rows - 2)
        var lines = [header]
        for row in rows.prefix(room - 1) { lines.append(Self.line(row.report, bar: withBar)) }
        if rows.count > room - 1 { lines.append("... and \(rows.count - (room - 1)) more (--sort rssi shows the strongest)") }
        // Cut first, colour after: an escape sequence never counts as a column nor gets cut.
        for (index, line) in lines.enumerated() {
            var shown = String(line.prefix(width))
            if index == 0 {
                shown = TerminalStyle.bold(shown)
            } else if withBar, index <= rows.count, case let rssi = rows[index - 1].report.rssi, rssi != Self.rssiNotAvailable {
                let bar = Self.bar(rssi)
                if let range = shown.firstRange(of: bar) {
                    let colour = rssi >= -60 ? TerminalStyle.green(bar) : rssi >= -80 ? TerminalStyle.yellow(bar) : TerminalStyle.red(bar)
                    shown.replaceSubrange(range, with: colour)
                }
            }
            text += "\u{1B}[2K" + shown + "\n"
        }
        // Rows that no longer fit (the terminal shrank) are cleared rather than left behind.
        for _ in lines.count..<max(lines.count, state.linesDrawn) { text += "\u{1B}[2K\n" }
        state.linesDrawn = max(lines.count, state.linesDrawn)
        Console.write(text)
    }

    /// The rows in the table's order.
    static func sorted(_ rows: [Row], by order: ScanOrder) -> [Row] {
        switch order {
        case .first:
            return rows
        case .rssi:
            let strength = { (row: Row) -> Int in row.report.rssi == rssiNotAvailable ? Int.min : Int(row.report.rssi) }
            return rows.enumerated().sorted { strength($0.element) != strength($1.element) ? strength($0.element) > strength($1.element) : $0.offset < $1.offset }.map(\.element)
        case .name:
            return rows.sorted { lhs, rhs in
                switch (lhs.report.localName, rhs.report.localName) {
                case let (left?, right?) where left != right: left.lowercased() < right.lowercased()
                case (nil, _?): false
                case (_?, nil): true
                default: lhs.report.address.string < rhs.report.address.string
                }
            }
        }
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
        rssi == rssiNotAvailable ? JSONNull() : Int(rssi)
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

    /// "1M", "2M", "Coded".
    static func phyText(_ phy: LEPhy) -> String {
        switch phy {
        case .le1M: "1M"
        case .le2M: "2M"
        case .leCoded: "Coded"
        default: Dissection.hex8(phy.rawValue)
        }
    }

    /// "ext 1M/2M 615 B" for an advertiser heard in extended PDUs (its primary and secondary PHY and how much
    /// data it sent), nil for legacy PDUs.
    static func extendedText(_ report: ScanReport) -> String? {
        guard !report.isLegacy else { return nil }
        let phys = phyText(report.primaryPHY) + (report.secondaryPHY.map { "/" + phyText($0) } ?? "")
        let octets = report.rawAdvertisingData.count + (report.rawScanResponse?.count ?? 0)
        return "ext \(phys) \(octets) B"
    }

    static func line(_ report: ScanReport, bar withBar: Bool = true) -> String {
        var extras = extendedText(report).map { [$0] } ?? []
        extras += report.advertisingData.serviceUUIDs.map(serviceText)
        if let manufacturer = report.advertisingData.manufacturerData {
            extras.append("\(manufacturer.company) \(Hex.encode(manufacturer.data))")
        }
        let name = report.localName ?? "(no name)"
        let rssi = TextFormat.padded(rssiText(report.rssi), to: 9) + (withBar ? " " + bar(report.rssi) : "")
        return TextFormat.padded(name, to: 20) + "  " + TextFormat.padded(report.address.string, to: 17) + "  " + TextFormat.padded(rssi, to: withBar ? 17 : 9) + "  "
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
        if let response = report.rawScanResponse, !response.isEmpty { object["scanResponse"] = Hex.encode(response) }
        if let manufacturer = report.advertisingData.manufacturerData {
            var entry: [String: Any] = ["company": Int(manufacturer.company.rawValue), "data": Hex.encode(manufacturer.data)]
            if let name = manufacturer.company.name { entry["name"] = name }
            object["manufacturer"] = entry
        }
        if let power = report.advertisingData.txPowerLevel { object["txPower"] = Int(power) }
        object["legacy"] = report.isLegacy
        object["primaryPHY"] = phyText(report.primaryPHY)
        if let secondary = report.secondaryPHY { object["secondaryPHY"] = phyText(secondary) }
        if let sid = report.advertisingSID { object["sid"] = Int(sid) }
        if let power = report.txPower { object["advertisingTxPower"] = Int(power) }
        let serviceData = report.advertisingData.serviceData
        if !serviceData.isEmpty {
            object["serviceData"] = Dictionary(uniqueKeysWithValues: serviceData.map { ($0.key.uuidString, Hex.encode($0.value)) })
        }
        return object
    }
}
