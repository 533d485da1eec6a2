import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import FoundationEssentials
import VirtualController
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue bench advertisers` (issue 13 item 1): `count` advertising devices on one in-process ``VirtualAir`` and one
/// scanning host, all on one ``ManualEventLoop`` driven by ``BenchDriver`` (virtual time jumps to the next timer);
/// measured: the wall-clock time and the air time from LE Set Scan Enable until every advertiser was reported
/// (Core 5.4 Vol 6 Part B §4.4.2 advertising events, §4.4.3 passive scanning; Vol 4 Part E §7.7.65.2 reports).
///
/// The advertisers are bare ``VirtualController``s spoken to in HCI (no host each: the figure is the air's and the
/// scanner's cost), ADV_NONCONN_IND every `interval` with a name of their own, spread evenly within 10 m of the
/// scanner. The scanner is one of our host stacks, scanning passively with a window equal to its interval and no
/// duplicate filter; reports are counted by address.
final class AdvertisersBenchmark: @unchecked Sendable, ReportsProgress {
    let loop = ManualEventLoop()
    let air: VirtualAir
    let count: Int
    /// Advertising interval in 0.625 ms units.
    let interval: UInt16
    var onProgress: ((String) -> Void)?

    init(count: Int, interval: UInt16) {
        self.count = count
        self.interval = interval
        air = VirtualAir(eventLoop: loop, seed: 13)
    }

    func run() throws(BenchError) -> BenchFigures {
        guard (1...100_000).contains(count) else { throw BenchError(.badOptions, "--count must be 1...100000") }
        guard (0x20...0x4000).contains(interval) else { throw BenchError(.badOptions, "--interval must be 20...10240 ms") }
        let driver = BenchDriver(loop: loop)
        let setupStart = ContinuousClock.now
        var advertisers: [VirtualController] = []
        advertisers.reserveCapacity(count)
        for index in 0..<count {
            // A sunflower spiral (golden angle) fills the 10 m disc evenly, the same way every run.
            let angle = Double(index) * 2.399963229728653, distance = 0.5 + 9.5 * (Double(index) + 0.5).squareRoot() / Double(count).squareRoot()
            let controller = VirtualController(
                air: air, address: BluetoothAddress(0x0C_00_00_00_00_00 + UInt64(index), type: .public),
                position: AirPosition(x: distance * cos(angle), y: distance * sin(angle)))
            advertisers.append(controller)
            let name = Array("adv-\(index)".utf8)
            let data: [UInt8] = [0x02, 0x01, 0x04, UInt8(name.count + 1), 0x09] + name
            for command: HCICommand in [
                .reset,
                .leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: interval, intervalMax: interval,
                                                                    advertisingType: .nonConnectableUndirected)),
                .leSetAdvertisingData(data), .leSetAdvertisingEnable(true),
            ] {
                controller.receiveFromHost(H4Frame(type: .command, packet: command.encode()))
            }
            controller.toHost = { (_: H4Frame) in }
        }
        let scannerController = VirtualController(air: air, address: BluetoothAddress(0x0C_FF_00_00_00_00, type: .public))
        let scanner = HostStack(transport: VirtualControllerTransport(controller: scannerController), eventLoop: loop,
                                configuration: HostConfiguration(address: .randomStatic(seed: 3)))
        defer {
            scanner.shutdown()
            for controller in advertisers { air.detach(controller) }
            air.detach(scannerController)
            loop.run()
        }
        let started = LockedValue<Bool?>(nil)
        scanner.start { started.store((try? $0.get()) != nil) }
        guard driver.drive(until: { started.load() != nil }), started.load() == true else {
            throw BenchError(.setupFailed, "the scanner's stack did not start")
        }
        // The advertisers have been on the air a while when the scan starts: their events fall anywhere in an
        // interval (each one's advDelay drifts it, §4.4.2.2), so the scan hears them over about one interval.
        loop.advance(by: .milliseconds(Int(interval) * 625 / 100 + 1000))
        let setupSeconds = benchSeconds(ContinuousClock.now - setupStart)

        final class Seen: @unchecked Sendable {
            var addresses = Set<BluetoothAddress>()
            var reports = 0
        }
        let seen = Seen()
        scanner.setEventHandler { event in
            guard case .advertisingReport(let report) = event else { return }
            seen.reports += 1
            seen.addresses.insert(report.address)
        }
        var measuring = driver
        let count = count
        if let onProgress { measuring.onTick = { onProgress("advertisers: \(seen.addresses.count) of \(count) reported") } }
        let startAir = loop.now
        let start = ContinuousClock.now
        let scanning = LockedValue<Bool?>(nil)
        scanner.startScanning(ScanOptions(active: false, interval: 0x0010, window: 0x0010, filterDuplicates: false)) {
            scanning.store((try? $0.get()) != nil)
        }
        let finished = measuring.drive(until: { seen.addresses.count >= count }, progress: { seen.addresses.count },
                                       idleLimit: .seconds(30))
        let elapsed = benchSeconds(ContinuousClock.now - start)
        let airTime = benchSeconds(loop.now - startAir)
        scanner.setEventHandler { _ in }
        guard scanning.load() == true else { throw BenchError(.setupFailed, "the scanner did not start scanning") }
        if !finished { onProgress?("advertisers: stalled with \(seen.addresses.count) of \(count) reported") }

        var figures = BenchFigures(benchmark: "advertisers")
        figures.add("stack", .text("OpenCoreBluetooth"))
        figures.add("transport", .text("in-process virtual air (advertisers in HCI, scanner with our host)"))
        figures.add("loop", .text(BenchDriver.description))
        figures.add("advertisers", .integer(count))
        figures.add("intervalMilliseconds", .number(Double(interval) * 0.625, decimals: 3))
        figures.add("found", .integer(seen.addresses.count))
        figures.add("reports", .integer(seen.reports))
        figures.add("seconds", .number(elapsed, decimals: 6))
        figures.add("airSeconds", .number(airTime, decimals: 6))
        figures.add("setupSeconds", .number(setupSeconds, decimals: 3))
        figures.lines = [
            "advertisers: \(seen.addresses.count) of \(count) found in \(TextFormat.printf("%.3f", elapsed)) s (wall clock), "
                + "\(TextFormat.printf("%.3f", airTime)) s of air time; \(seen.reports) reports",
            "  advertising every \(TextFormat.printf("%g", Double(interval) * 0.625)) ms, scanner passive with a continuous window; "
                + "setup \(TextFormat.printf("%.2f", setupSeconds)) s (not timed)",
            "  OpenCoreBluetooth on the in-process virtual air; loop: \(BenchDriver.description)",
        ]
        return figures
    }
}
