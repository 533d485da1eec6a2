import BluetoothCore
import BluetoothRuntime
import ATT
import GATT
import HCI
import Host
import VirtualController
import StackLauncher
import BluetoothEngine

/// `blue bench latency` (issue 13 item 3): the path an app takes to its first value (scan, connect, discover,
/// subscribe, first notification) between two of our host stacks on one in-process ``VirtualAir``, each step
/// timed on the wall clock (the stacks' own cost: the ``ManualEventLoop`` jumps virtual time to the next timer) and
/// on the air's clock (what the radio's timing adds: advertising every 20 ms, connection events every 7.5 ms; with
/// `realtime` each packet also takes its air time, ``AirConfiguration/realRadioTiming``).
///
/// Steps (Core 5.4): scan until the peripheral's first advertising report (Vol 6 Part B §4.4.3); connect (LE
/// Create Connection, §7.8.12) until LE Connection Complete; discover the primary services, the characteristics
/// and the descriptors of the service (Vol 3 Part G §4.4.1, §4.6.1, §4.7.1), after the MTU exchange the central
/// makes on connecting; subscribe (write the CCCD, §4.10); the peripheral notifies as soon as it sees the
/// subscription, until the central's first notification (§4.10.1).
final class LatencyBenchmark: @unchecked Sendable, ReportsProgress {
    let loop = ManualEventLoop()
    let air: VirtualAir
    let peripheral: HostStack
    let central: HostStack
    var onProgress: ((String) -> Void)?
    let realtime: Bool

    init(realtime: Bool = false) {
        self.realtime = realtime
        air = VirtualAir(eventLoop: loop, seed: 31, configuration: AirConfiguration(realRadioTiming: realtime))
        let peripheralController = VirtualController(air: air, address: BluetoothAddress(0x0E_00_00_00_00_01, type: .public))
        let centralController = VirtualController(air: air, address: BluetoothAddress(0x0E_00_00_00_00_02, type: .public),
                                                  position: AirPosition(x: 1))
        peripheral = HostStack(transport: VirtualControllerTransport(controller: peripheralController), eventLoop: loop,
                               configuration: HostConfiguration(address: .randomStatic(seed: 1)))
        central = HostStack(transport: VirtualControllerTransport(controller: centralController), eventLoop: loop,
                            configuration: HostConfiguration(address: .randomStatic(seed: 2)))
    }

    /// One step: its name, wall-clock and air seconds.
    struct Step {
        var name: String
        var seconds: Double
        var airSeconds: Double
    }

    func run() throws(BenchError) -> BenchFigures {
        defer {
            peripheral.setEventHandler { _ in }
            central.setEventHandler { _ in }
            peripheral.shutdown()
            central.shutdown()
            loop.run()
        }
        let valueHandle = try setUp()
        let driver = BenchDriver(loop: loop)
        var steps: [Step] = []
        var stepStart = (wall: ContinuousClock.now, air: loop.now)
        let pathStart = stepStart
        func finish(_ name: String) {
            let now = (wall: ContinuousClock.now, air: loop.now)
            steps.append(Step(name: name, seconds: benchSeconds(now.wall - stepStart.wall),
                              airSeconds: benchSeconds(now.air - stepStart.air)))
            onProgress?("latency: \(name) done")
            stepStart = now
        }
        func wait(_ what: String, until done: () -> Bool) throws(BenchError) {
            guard driver.drive(until: done, idleLimit: .seconds(10)) else { throw BenchError(.stalled, "\(what) did not finish") }
        }

        // Scan.
        let target = peripheral.controllerInfo.ownAddress
        let heard = LockedValue(false)
        central.setEventHandler { event in
            if case .advertisingReport(let report) = event, report.address == target { heard.store(true) }
        }
        central.startScanning(ScanOptions(active: false, interval: 0x0010, window: 0x0010, filterDuplicates: true)) { _ in }
        try wait("scanning") { heard.load() }
        finish("scan")

        // Connect.
        let connected = LockedValue<Result<Connection, HostError>?>(nil)
        central.stopScanning()
        central.connect(to: target, options: ConnectOptions(parameters: LEConnectionParameters(
            intervalMin: 6, intervalMax: 6, supervisionTimeout: 0x01F4))) { connected.store($0) }
        try wait("connecting") { connected.load() != nil }
        guard case .success(let connection)? = connected.load() else {
            throw BenchError(.setupFailed, "connecting failed: \(String(describing: connected.load()))")
        }
        finish("connect")

        // Discover: services, then the characteristics and descriptors of service 0xBE00.
        let handle = connection.handle
        let services = try procedure(.discoverAllPrimaryServices, on: handle, driver)
        guard case .services(let found) = services, let service = found.first(where: { $0.uuid == BluetoothUUID(0xBE00) }) else {
            throw BenchError(.setupFailed, "service 0xBE00 not discovered: \(services)")
        }
        let characteristics = try procedure(.discoverAllCharacteristics(range: service.range), on: handle, driver)
        guard case .characteristics(let list) = characteristics, let characteristic = list.first else {
            throw BenchError(.setupFailed, "no characteristic discovered: \(characteristics)")
        }
        let descriptors = try procedure(.discoverAllDescriptors(range: ATTHandleRange(
            start: characteristic.valueHandle + 1, end: service.range.end)), on: handle, driver)
        guard case .descriptors(let descriptorList) = descriptors,
              let cccd = descriptorList.first(where: { $0.uuid == BluetoothUUID(0x2902) }) else {
            throw BenchError(.setupFailed, "no CCCD discovered: \(descriptors)")
        }
        finish("discover")

        // Subscribe; the peripheral notifies at once (its handler), the central waits for the value.
        let notified = LockedValue(false)
        central.setEventHandler { event in
            if case .gattNotification(_, valueHandle, _) = event { notified.store(true) }
        }
        let written = try procedure(.subscribe(cccdHandle: cccd.handle, configuration: .notifications), on: handle, driver)
        guard case .written = written else { throw BenchError(.setupFailed, "subscribing failed: \(written)") }
        finish("subscribe")
        try wait("the first notification") { notified.load() }
        finish("first notification")

        let total = Step(name: "total", seconds: benchSeconds(ContinuousClock.now - pathStart.wall),
                         airSeconds: benchSeconds(loop.now - pathStart.air))
        var figures = BenchFigures(benchmark: "latency")
        figures.add("stack", .text("OpenCoreBluetooth"))
        figures.add("transport", .text("in-process virtual air"))
        figures.add("loop", .text(BenchDriver.description))
        figures.add("steps", .object((steps + [total]).map { step in
            (step.name, .object([("seconds", .number(step.seconds, decimals: 6)), ("airSeconds", .number(step.airSeconds, decimals: 6))]))
        }))
        figures.add("seconds", .number(total.seconds, decimals: 6))
        figures.add("airSeconds", .number(total.airSeconds, decimals: 6))
        figures.lines = ["latency: scan to first notification in \(Self.milliseconds(total.seconds)) of the stacks' time "
                         + "(wall clock), \(Self.milliseconds(total.airSeconds)) of air time"]
        for step in steps {
            figures.lines.append("  \(TextFormat.padded(step.name, to: 19)) "
                                 + "\(Self.milliseconds(step.seconds)) wall, \(Self.milliseconds(step.airSeconds)) air")
        }
        figures.lines.append("  advertising every 20 ms, connection interval 7.5 ms, scanner passive with a continuous window; "
                             + (realtime ? "real radio timing" : "packets take no air time (--realtime: they do)"))
        figures.add("realtime", .bool(realtime))
        figures.lines.append("  OpenCoreBluetooth on the in-process virtual air; loop: \(BenchDriver.description)")
        return figures
    }

    static func milliseconds(_ seconds: Double) -> String { TextFormat.printf("%.3f ms", seconds * 1000) }

    /// Starts both stacks; the peripheral serves 0xBE00 with a notifying characteristic, advertises, and notifies
    /// as soon as a central subscribes. Returns the value handle.
    private func setUp() throws(BenchError) -> UInt16 {
        let (database, valueHandle, _) = try benchDatabase(name: "latency", properties: [.read, .notify])
        peripheral.setGATTDatabase(database)
        let driver = BenchDriver(loop: loop)
        let started = LockedValue<[Bool]>([])
        for stack in [peripheral, central] { stack.start { result in started.withLock { $0.append((try? result.get()) != nil) } } }
        guard driver.drive(until: { started.withLock { $0.count } == 2 }), started.load() == [true, true] else {
            throw BenchError(.setupFailed, "the stacks did not start")
        }
        let peripheral = self.peripheral
        peripheral.setEventHandler { event in
            if case .gattServer(.subscriptionChanged(let connection, valueHandle, let configuration)) = event, configuration.contains(.notification) {
                peripheral.updateValue([1, 2, 3, 4], handle: valueHandle, to: [connection.rawValue])
            }
        }
        let advertising = LockedValue<Bool?>(nil)
        peripheral.startAdvertising(AdvertisingContent(localName: "latency"),
                                    options: AdvertisingOptions(intervalMin: 0x20, intervalMax: 0x20)) { advertising.store((try? $0.get()) != nil) }
        guard driver.drive(until: { advertising.load() != nil }), advertising.load() == true else {
            throw BenchError(.setupFailed, "the peripheral did not advertise")
        }
        // Advertising for a while already when the central starts looking, as a device in a room is.
        loop.advance(by: .milliseconds(1013))
        return valueHandle
    }

    private func procedure(_ procedure: GATTProcedure, on handle: UInt16, _ driver: BenchDriver) throws(BenchError) -> GATTProcedureResult {
        let result = LockedValue<Result<GATTProcedureResult, GATTClientError>?>(nil)
        central.gatt(connectionHandle: handle, procedure) { result.store($0) }
        guard driver.drive(until: { result.load() != nil }, idleLimit: .seconds(35)) else {
            throw BenchError(.stalled, "\(procedure) did not finish")
        }
        switch result.load() {
        case .success(let value)?: return value
        case .failure(let error)?: throw BenchError(.setupFailed, "\(procedure): \(error)")
        case nil: throw BenchError(.stalled, "\(procedure) did not finish")
        }
    }
}
