import BluetoothCore
import BluetoothRuntime
import FoundationEssentials
import GATT
import HCI
import Host
import VirtualController
import StackLauncher
import BluetoothEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `blue bench connections` (issue 13 item 2, issue 31 item 5): centrals connected to `count` peripherals at once
/// (at most `perCentral` each, so 10,000 links take ten centrals), every peripheral notifying its central; all of
/// them our host stacks on their own ``VirtualController``s, on one in-process ``VirtualAir`` and one
/// ``ManualEventLoop`` driven by ``BenchDriver`` (virtual time jumps to the next timer, wall-clock time is measured).
///
/// Setup (not timed): each peripheral serves service 0xBE00 with one notifying characteristic; each central, side by
/// side with the others, has its peripherals advertise one at a time and connects to each (Core 5.4 Vol 4 Part E
/// §7.8.12; `interval`), then exchanges MTU and subscribes on it (Vol 3 Part G §4.3.1, §4.10) while it connects to
/// the next.
/// A peripheral advertises only for its own connection: ten thousand advertisers on the air during the whole setup
/// would cost the setup quadratic time and measure nothing. The memory figures compare the process before the first
/// connection and after the last subscription: resident size (/proc/self/statm) and the C heap in use (glibc
/// mallinfo2), each divided by the number of links. Both ends of every link are in this process (a central's host
/// and controller state for the link and the peripheral's), so a figure is per link, both ends.
/// Measured: every peripheral sends `perLink` notifications of `size` octets, paced by readiness
/// (`updateValue(requireReady: true)`, then ``HostEvent/readyToSend(handle:)``); its central counts them per link,
/// in order (a sequence number in each value). Links lost during the run are counted (must be 0).
final class ConnectionsBenchmark: @unchecked Sendable, ReportsProgress {
    struct Parameters {
        var count: Int
        var perLink: Int
        var size: Int
        /// Connection interval in 1.25 ms units.
        var interval: UInt16
        /// Links per central (each central's controller has its own connection handles).
        var perCentral: Int = 1000
    }

    static let maximumCount = 10_000

    /// Counters touched only on the loop (the driver's thread).
    private final class Counters: @unchecked Sendable {
        var lost = 0
        var sent: [Int]
        var received: [Int]
        var outOfOrder = 0
        var totalReceived = 0

        init(links: Int) {
            sent = Array(repeating: 0, count: links)
            received = Array(repeating: 0, count: links)
        }
    }

    /// One end of a link as its central sees it: which central, and its connection handle there.
    private struct CentralEnd {
        var central: Int
        var handle: UInt16
    }

    let parameters: Parameters
    let loop = ManualEventLoop()
    let air: VirtualAir
    let centrals: [HostStack]
    let peripherals: [HostStack]
    private let controllers: [VirtualController]
    var onProgress: ((String) -> Void)?

    init(_ parameters: Parameters) {
        self.parameters = parameters
        air = VirtualAir(eventLoop: loop, seed: 21)
        let count = max(0, min(parameters.count, Self.maximumCount))
        let centralCount = max(1, (count + max(1, parameters.perCentral) - 1) / max(1, parameters.perCentral))
        var controllers: [VirtualController] = []
        var centrals: [HostStack] = []
        for index in 0..<centralCount {
            // The centrals close together in the middle, the peripherals on a ring 2 m around them: every link is
            // well in range.
            let angle = Double(index) * 2 * Double.pi / Double(centralCount)
            let controller = VirtualController(air: air, address: BluetoothAddress(0x0D_FF_00_00_00_00 + UInt64(index), type: .public),
                                               position: AirPosition(x: 0.2 * cos(angle), y: 0.2 * sin(angle)))
            controllers.append(controller)
            var configuration = HostConfiguration(address: .randomStatic(seed: 1 + UInt64(index)))
            configuration.preferredATTMTU = 247
            // The setup exchanges MTU itself, then subscribes once it is done.
            configuration.exchangesMTUOnConnect = false
            centrals.append(HostStack(transport: VirtualControllerTransport(controller: controller), eventLoop: loop,
                                      configuration: configuration))
        }
        var peripherals: [HostStack] = []
        for index in 0..<count {
            let angle = Double(index) * 2 * Double.pi / Double(max(1, count))
            let controller = VirtualController(air: air, address: BluetoothAddress(0x0D_00_00_00_00_00 + UInt64(index), type: .public),
                                               position: AirPosition(x: 2 * cos(angle), y: 2 * sin(angle)))
            controllers.append(controller)
            var configuration = HostConfiguration(address: .randomStatic(seed: 100_000 + UInt64(index)))
            configuration.preferredATTMTU = 247
            peripherals.append(HostStack(transport: VirtualControllerTransport(controller: controller), eventLoop: loop,
                                         configuration: configuration))
        }
        self.centrals = centrals
        self.peripherals = peripherals
        self.controllers = controllers
    }

    func run() throws(BenchError) -> BenchFigures {
        guard (1...Self.maximumCount).contains(parameters.count) else {
            throw BenchError(.badOptions, "--count must be 1...\(Self.maximumCount)")
        }
        guard (1...1_000_000).contains(parameters.perLink) else { throw BenchError(.badOptions, "--per-link must be 1...1000000") }
        guard (4...244).contains(parameters.size) else { throw BenchError(.badOptions, "--size must be 4...244 (ATT_MTU 247 - 3)") }
        guard (6...3200).contains(parameters.interval) else { throw BenchError(.badOptions, "--interval must be 7.5...4000 ms") }
        // A controller's connection handles stop at 0x0EFF (Core 5.4 Vol 4 Part E §5.4.2); a central here has at most 1,000.
        guard (1...1000).contains(parameters.perCentral) else { throw BenchError(.badOptions, "--per-central must be 1...1000") }
        defer {
            for stack in peripherals + centrals {
                stack.setEventHandler { _ in }
                stack.shutdown()
            }
            loop.run()
            for controller in controllers { air.detach(controller) }
            loop.run()
        }
        let (valueHandle, cccdHandle) = try startStacks()
        let before = (resident: residentBytes(), heap: heapBytesInUse())
        let ends = try connectAll(cccdHandle: cccdHandle)
        let after = (resident: residentBytes(), heap: heapBytesInUse())
        return measure(valueHandle: valueHandle, ends: ends, before: before, after: after)
    }

    // MARK: Setup

    private func startStacks() throws(BenchError) -> (value: UInt16, cccd: UInt16) {
        let (database, value, cccd) = try benchDatabase(name: "bench", properties: [.read, .notify])
        let driver = BenchDriver(loop: loop)
        let started = LockedValue<[Bool]>([])
        for stack in peripherals + centrals {
            stack.start { result in started.withLock { $0.append((try? result.get()) != nil) } }
        }
        let total = peripherals.count + centrals.count
        guard driver.drive(until: { started.withLock { $0.count } == total }), !started.load().contains(false) else {
            throw BenchError(.setupFailed, "the stacks did not start")
        }
        for stack in peripherals { stack.setGATTDatabase(database) }
        return (value, cccd)
    }

    /// Every central connects to its peripherals one after the other, all centrals at once, and subscribes on each
    /// link while it connects to the next; returns the central end of each peripheral's link, in peripheral order.
    private func connectAll(cccdHandle: UInt16) throws(BenchError) -> [CentralEnd] {
        /// Setup state, touched only on the loop.
        final class Setup: @unchecked Sendable {
            var ends: [CentralEnd?]
            var subscribed = 0
            var failure: String?
            init(count: Int) { ends = Array(repeating: nil, count: count) }
        }
        let setup = Setup(count: peripherals.count)
        let interval = parameters.interval
        let options = ConnectOptions(parameters: LEConnectionParameters(
            intervalMin: interval, intervalMax: interval, supervisionTimeout: max(0x01F4, interval * 6 / 8 + 10)))
        let peripherals = self.peripherals, centrals = self.centrals
        let centralCount = centrals.count
        /// Link `index` is up: exchange MTU (to 247), then subscribe.
        @Sendable func subscribe(_ host: HostStack, _ handle: UInt16, link index: Int) {
            host.exchangeMTU(connectionHandle: handle) { exchanged in
                guard case .success(247) = exchanged else {
                    setup.failure = "the MTU exchange of connection \(index + 1) did not reach 247: \(exchanged)"
                    return
                }
                host.gatt(connectionHandle: handle, .subscribe(cccdHandle: cccdHandle, configuration: .notifications)) { subscribed in
                    guard case .success(.written) = subscribed else {
                        setup.failure = "subscribing on connection \(index + 1) failed: \(subscribed)"
                        return
                    }
                    setup.subscribed += 1
                }
            }
        }
        /// Central `central`'s next link: peripheral `index` advertises, the central connects to it and subscribes,
        /// and meanwhile goes on with its next peripheral (the peripherals are dealt to the centrals in turn: central
        /// c has c, c + centrals, c + 2 × centrals, ...).
        final class Connector: @unchecked Sendable {
            var connectNext: (Int, Int) -> Void = { _, _ in }
        }
        let connector = Connector()
        connector.connectNext = { central, index in
            guard index < peripherals.count, setup.failure == nil else { return }
            let peripheral = peripherals[index]
            peripheral.startAdvertising(AdvertisingContent(localName: "bench"),
                                        options: AdvertisingOptions(intervalMin: 0x20, intervalMax: 0x20)) { result in
                guard case .success = result else {
                    setup.failure = "peripheral \(index + 1) did not advertise: \(result)"
                    return
                }
                centrals[central].connect(to: peripheral.controllerInfo.ownAddress, options: options) { connected in
                    guard case .success(let connection) = connected else {
                        setup.failure = "connection \(index + 1) failed: \(connected)"
                        return
                    }
                    setup.ends[index] = CentralEnd(central: central, handle: connection.handle)
                    subscribe(centrals[central], connection.handle, link: index)
                    connector.connectNext(central, index + centralCount)
                }
            }
        }
        var driver = BenchDriver(loop: loop)
        let count = peripherals.count
        if let onProgress {
            driver.onTick = { onProgress("connections: \(setup.subscribed) of \(count) connected and subscribed") }
        }
        for central in 0..<min(centralCount, count) { loop.execute { connector.connectNext(central, central) } }
        let done = driver.drive(until: { setup.subscribed == count || setup.failure != nil }, progress: { setup.subscribed })
        connector.connectNext = { _, _ in }
        if let failure = setup.failure { throw BenchError(.setupFailed, failure) }
        guard done else { throw BenchError(.setupFailed, "setup stalled with \(setup.subscribed) of \(count) links subscribed") }
        return setup.ends.compactMap { $0 }
    }

    // MARK: Measurement

    private func measure(valueHandle: UInt16, ends: [CentralEnd], before: (resident: Int, heap: Int),
                         after: (resident: Int, heap: Int)) -> BenchFigures {
        let counters = Counters(links: ends.count)
        let perLink = parameters.perLink, size = parameters.size, links = ends.count
        var linkOfHandle = Array(repeating: [UInt16: Int](), count: centrals.count)
        for (index, end) in ends.enumerated() { linkOfHandle[end.central][end.handle] = index }
        for (index, central) in centrals.enumerated() {
            let lookup = linkOfHandle[index]
            central.setEventHandler { event in
                switch event {
                case .gattNotification(let handle, valueHandle, let value):
                    guard let link = lookup[handle] else { return }
                    if GATTBenchmark.sequence(of: value) != UInt32(truncatingIfNeeded: counters.received[link]) { counters.outOfOrder += 1 }
                    counters.received[link] += 1
                    counters.totalReceived += 1
                case .disconnected:
                    counters.lost += 1
                default:
                    break
                }
            }
        }
        var pumps: [@Sendable () -> Void] = []
        for (link, peripheral) in peripherals.enumerated() {
            final class Blocked: @unchecked Sendable { var value = false }
            let blocked = Blocked()
            let pump: @Sendable () -> Void = {
                while counters.sent[link] < perLink, !blocked.value {
                    peripheral.updateValue(GATTBenchmark.value(counters.sent[link], size: size), handle: valueHandle,
                                           requireReady: true) { result in
                        switch result {
                        case .success: counters.sent[link] += 1
                        case .failure: blocked.value = true
                        }
                    }
                }
            }
            peripheral.setEventHandler { event in
                switch event {
                case .readyToSend:
                    blocked.value = false
                    pump()
                case .disconnected:
                    counters.lost += 1
                default:
                    break
                }
            }
            pumps.append(pump)
        }
        var driver = BenchDriver(loop: loop)
        let total = links * perLink
        if let onProgress {
            driver.onTick = { onProgress("connections: \(counters.totalReceived) of \(total) notifications on \(links) links") }
        }
        let startAir = loop.now
        let start = ContinuousClock.now
        for pump in pumps { loop.execute { pump() } }
        let finished = driver.drive(until: { counters.totalReceived >= total || counters.lost > 0 },
                                    progress: { counters.totalReceived }, idleLimit: .seconds(10))
        let elapsed = benchSeconds(ContinuousClock.now - start)
        let airTime = benchSeconds(loop.now - startAir)
        if !finished { onProgress?("connections: stalled at \(counters.totalReceived) of \(total) notifications") }

        let residentPerLink = Double(after.resident - before.resident) / Double(max(1, links))
        let heapPerLink = Double(after.heap - before.heap) / Double(max(1, links))
        let rate = elapsed > 0 ? Double(counters.totalReceived) / elapsed : 0
        let airRate = airTime > 0 ? Double(counters.totalReceived) / airTime : 0
        var figures = BenchFigures(benchmark: "connections")
        figures.add("stack", .text("OpenCoreBluetooth"))
        figures.add("transport", .text("in-process virtual air"))
        figures.add("loop", .text(BenchDriver.description))
        figures.add("links", .integer(links))
        figures.add("centrals", .integer(centrals.count))
        figures.add("established", .integer(links))
        figures.add("lost", .integer(counters.lost))
        figures.add("intervalMilliseconds", .number(Double(parameters.interval) * 1.25, decimals: 2))
        figures.add("size", .integer(size))
        figures.add("perLink", .integer(perLink))
        figures.add("sent", .integer(counters.sent.reduce(0, +)))
        figures.add("received", .integer(counters.totalReceived))
        figures.add("outOfOrder", .integer(counters.outOfOrder))
        figures.add("seconds", .number(elapsed, decimals: 6))
        figures.add("airSeconds", .number(airTime, decimals: 6))
        figures.add("notificationsPerSecond", .number(rate, decimals: 1))
        figures.add("airNotificationsPerSecond", .number(airRate, decimals: 1))
        figures.add("residentBytesPerLink", .integer(Int(residentPerLink.rounded())))
        figures.add("heapBytesPerLink", .integer(Int(heapPerLink.rounded())))
        figures.lines = [
            "connections: \(links) links established (\(centrals.count) central\(centrals.count == 1 ? "" : "s")), \(counters.lost) lost; \(counters.totalReceived) of \(total) notifications "
                + "of \(size) octets in \(TextFormat.printf("%.3f", elapsed)) s (wall clock)",
            "  \(Int(rate.rounded())) notifications/s in all (\(Int(airRate.rounded()))/s of air time, "
                + "\(TextFormat.printf("%.3f", airTime)) s of air at a \(TextFormat.printf("%g", Double(parameters.interval) * 1.25)) ms interval)"
                + (counters.outOfOrder > 0 ? "; \(counters.outOfOrder) out of order" : ""),
            "  memory per link (both ends in this process): \(Int((residentPerLink / 1024).rounded())) KiB resident, "
                + "\(Int((heapPerLink / 1024).rounded())) KiB of heap",
            "  OpenCoreBluetooth on the in-process virtual air; loop: \(BenchDriver.description)",
        ]
        return figures
    }
}
