import BluetoothCore
import BluetoothRuntime
import Foundation
import GATT
import HCI
import Host
import VirtualController
import StackLauncher
import BluetoothEngine

/// `blue bench connections` (issue 13 item 2): one central connected to `count` peripherals at once, every
/// peripheral notifying its central; all of them our host stacks on their own ``VirtualController``s, on one
/// in-process ``VirtualAir`` and one ``ManualEventLoop`` driven by ``BenchDriver`` (virtual time jumps to the next
/// timer, wall-clock time is measured).
///
/// Setup (not timed): each peripheral serves service 0xBE00 with one notifying characteristic and advertises; the
/// central connects to them one after the other (Core 5.4 Vol 4 Part E §7.8.12; `interval`), exchanges MTU and
/// subscribes on each (Vol 3 Part G §4.10). The memory figures compare the process before the first connection
/// and after the last subscription: resident size (/proc/self/statm) and the C heap in use (glibc mallinfo2), each
/// divided by the number of links. Both ends of every link are in this process (the central's host and controller
/// state for the link and the peripheral's), so a figure is per link, both ends.
/// Measured: every peripheral sends `perLink` notifications of `size` octets, paced by readiness
/// (`updateValue(requireReady: true)`, then ``HostEvent/readyToSend(handle:)``); the central counts them per link,
/// in order (a sequence number in each value). Links lost during the run are counted (must be 0).
final class ConnectionsBenchmark: @unchecked Sendable, ReportsProgress {
    struct Parameters {
        var count: Int
        var perLink: Int
        var size: Int
        /// Connection interval in 1.25 ms units.
        var interval: UInt16
    }

    /// Counters touched only on the loop (the driver's thread).
    private final class Counters: @unchecked Sendable {
        var connected = 0
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

    let parameters: Parameters
    let loop = ManualEventLoop()
    let air: VirtualAir
    let central: HostStack
    let peripherals: [HostStack]
    private let controllers: [VirtualController]
    var onProgress: ((String) -> Void)?

    init(_ parameters: Parameters) {
        self.parameters = parameters
        air = VirtualAir(eventLoop: loop, seed: 21)
        let centralController = VirtualController(air: air, address: BluetoothAddress(0x0D_FF_00_00_00_00, type: .public))
        var controllers = [centralController]
        var centralConfiguration = HostConfiguration(address: .randomStatic(seed: 1))
        centralConfiguration.preferredATTMTU = 247
        central = HostStack(transport: VirtualControllerTransport(controller: centralController), eventLoop: loop,
                            configuration: centralConfiguration)
        var peripherals: [HostStack] = []
        for index in 0..<max(0, min(parameters.count, 1000)) {
            // A ring 2 m around the central: every link is well in range.
            let angle = Double(index) * 2 * Double.pi / Double(max(1, parameters.count))
            let controller = VirtualController(air: air, address: BluetoothAddress(0x0D_00_00_00_00_00 + UInt64(index), type: .public),
                                               position: AirPosition(x: 2 * cos(angle), y: 2 * sin(angle)))
            controllers.append(controller)
            var configuration = HostConfiguration(address: .randomStatic(seed: 100 + UInt64(index)))
            configuration.preferredATTMTU = 247
            peripherals.append(HostStack(transport: VirtualControllerTransport(controller: controller), eventLoop: loop,
                                         configuration: configuration))
        }
        self.peripherals = peripherals
        self.controllers = controllers
    }

    func run() throws(BenchError) -> BenchFigures {
        guard (1...1000).contains(parameters.count) else { throw BenchError(.badOptions, "--count must be 1...1000") }
        guard (1...1_000_000).contains(parameters.perLink) else { throw BenchError(.badOptions, "--per-link must be 1...1000000") }
        guard (4...244).contains(parameters.size) else { throw BenchError(.badOptions, "--size must be 4...244 (ATT_MTU 247 - 3)") }
        guard (6...3200).contains(parameters.interval) else { throw BenchError(.badOptions, "--interval must be 7.5...4000 ms") }
        defer {
            for stack in peripherals + [central] {
                stack.setEventHandler { _ in }
                stack.shutdown()
            }
            loop.run()
            for controller in controllers { air.detach(controller) }
            loop.run()
        }
        let (valueHandle, cccdHandle) = try startStacks()
        let before = (resident: residentBytes(), heap: heapBytesInUse())
        let handles = try connectAll(cccdHandle: cccdHandle)
        let after = (resident: residentBytes(), heap: heapBytesInUse())
        return measure(valueHandle: valueHandle, handles: handles, before: before, after: after)
    }

    // MARK: Setup

    private func startStacks() throws(BenchError) -> (value: UInt16, cccd: UInt16) {
        let (database, value, cccd) = try benchDatabase(name: "bench", properties: [.read, .notify])
        let driver = BenchDriver(loop: loop)
        let started = LockedValue<[Bool]>([])
        for stack in peripherals + [central] {
            stack.start { result in started.withLock { $0.append((try? result.get()) != nil) } }
        }
        let total = peripherals.count + 1
        guard driver.drive(until: { started.withLock { $0.count } == total }), !started.load().contains(false) else {
            throw BenchError(.setupFailed, "the stacks did not start")
        }
        let advertising = LockedValue<[Bool]>([])
        for stack in peripherals {
            stack.setGATTDatabase(database)
            stack.startAdvertising(AdvertisingContent(localName: "bench"),
                                   options: AdvertisingOptions(intervalMin: 0x20, intervalMax: 0x20)) { result in
                advertising.withLock { $0.append((try? result.get()) != nil) }
            }
        }
        let count = peripherals.count
        guard driver.drive(until: { advertising.withLock { $0.count } == count }), !advertising.load().contains(false) else {
            throw BenchError(.setupFailed, "the peripherals did not advertise")
        }
        return (value, cccd)
    }

    /// Connects to every peripheral in turn and subscribes; returns the central's handle of each link, in order.
    private func connectAll(cccdHandle: UInt16) throws(BenchError) -> [UInt16] {
        var driver = BenchDriver(loop: loop)
        var handles: [UInt16] = []
        let progress = LockedValue(0)
        if let onProgress {
            let count = peripherals.count
            driver.onTick = { onProgress("connections: \(progress.load()) of \(count) connected and subscribed") }
        }
        let interval = parameters.interval
        let options = ConnectOptions(parameters: LEConnectionParameters(
            intervalMin: interval, intervalMax: interval, supervisionTimeout: max(0x01F4, interval * 6 / 8 + 10)))
        for (index, peripheral) in peripherals.enumerated() {
            let connected = LockedValue<Result<Connection, HostError>?>(nil)
            central.connect(to: peripheral.controllerInfo.ownAddress, options: options) { connected.store($0) }
            guard driver.drive(until: { connected.load() != nil }), case .success(let connection)? = connected.load() else {
                throw BenchError(.setupFailed, "connection \(index + 1) failed: \(String(describing: connected.load()))")
            }
            // The central exchanges MTU on connect (HostConfiguration.exchangesMTUOnConnect); subscribe after it.
            let central = self.central, handle = connection.handle
            guard driver.drive(until: { central.attMTU(connectionHandle: handle) == 247 }) else {
                throw BenchError(.setupFailed, "the MTU exchange of connection \(index + 1) did not reach 247")
            }
            let subscribed = LockedValue<Result<GATTProcedureResult, GATTClientError>?>(nil)
            central.gatt(connectionHandle: handle, .subscribe(cccdHandle: cccdHandle, configuration: .notifications)) {
                subscribed.store($0)
            }
            guard driver.drive(until: { subscribed.load() != nil }), case .success(.written)? = subscribed.load() else {
                throw BenchError(.setupFailed, "subscribing on connection \(index + 1) failed: \(String(describing: subscribed.load()))")
            }
            handles.append(handle)
            progress.store(index + 1)
        }
        return handles
    }

    // MARK: Measurement

    private func measure(valueHandle: UInt16, handles: [UInt16], before: (resident: Int, heap: Int),
                         after: (resident: Int, heap: Int)) -> BenchFigures {
        let counters = Counters(links: handles.count)
        let perLink = parameters.perLink, size = parameters.size, links = handles.count
        var linkOfHandle: [UInt16: Int] = [:]
        for (index, handle) in handles.enumerated() { linkOfHandle[handle] = index }
        let lookup = linkOfHandle
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
            "connections: \(links) links established, \(counters.lost) lost; \(counters.totalReceived) of \(total) notifications "
                + "of \(size) octets in \(String(format: "%.3f", elapsed)) s (wall clock)",
            "  \(Int(rate.rounded())) notifications/s in all (\(Int(airRate.rounded()))/s of air time, "
                + "\(String(format: "%.3f", airTime)) s of air at a \(String(format: "%g", Double(parameters.interval) * 1.25)) ms interval)"
                + (counters.outOfOrder > 0 ? "; \(counters.outOfOrder) out of order" : ""),
            "  memory per link (both ends in this process): \(Int((residentPerLink / 1024).rounded())) KiB resident, "
                + "\(Int((heapPerLink / 1024).rounded())) KiB of heap",
            "  OpenCoreBluetooth on the in-process virtual air; loop: \(BenchDriver.description)",
        ]
        return figures
    }
}
