import BluetoothCore
import BluetoothRuntime
import HCI
import VirtualController

/// The virtual radio benchmarks of issue 3 (`blue bench air`, `blue bench acl`): two ``VirtualController``s on one
/// in-process ``VirtualAir`` on a ``ManualEventLoop`` driven by ``BenchDriver``, spoken to directly in HCI
/// (Core 5.4 Vol 4 Part E) with no host stack, so the figures are the controllers' and the air's own cost.
///
/// - `air`: device 0 advertises ADV_NONCONN_IND every 20 ms (§7.8.5, interval 0x0020) with 31 octets of data,
///   device 1 scans passively with no duplicate filter (§7.8.10, §7.8.11); counts LE Advertising Report events
///   (§7.7.65.2) until `count`.
/// - `acl`: device 1 connects to device 0 (7.5 ms interval), both set data length 251 (§7.8.33); device 1's host
///   keeps the controller's 8 ACL buffers full of 251-octet packets, refilled on Number Of Completed Packets
///   (§7.7.19), and device 0's host counts the ACL packets it receives until `count`.
final class RadioBenchmark: @unchecked Sendable {
    /// Frames a scripted host received, confined to the loop.
    private final class Inbox: @unchecked Sendable {
        var events: [HCIEvent] = []
    }

    let loop = ManualEventLoop()
    let air: VirtualAir
    let controllers: [VirtualController]
    var onProgress: ((String) -> Void)?

    init() {
        let air = VirtualAir(eventLoop: loop, seed: 1)
        self.air = air
        controllers = (0..<2).map { index in
            VirtualController(air: air, address: BluetoothAddress(0x0B_E0_00_00_01_00 + UInt64(index), type: .public),
                              position: AirPosition(x: Double(index)))
        }
    }

    private func send(_ command: HCICommand, to index: Int) {
        controllers[index].receiveFromHost(H4Frame(type: .command, packet: command.encode()))
    }

    /// Resets both controllers and unmasks every event.
    private func initialise() {
        for index in controllers.indices {
            send(.reset, to: index)
            send(.setEventMask(0x3FFF_FFFF_FFFF_FFFF), to: index)
            send(.leSetEventMask(0x0000_0000_000F_FFFF), to: index)
        }
        loop.run()
    }

    /// Advertising reports per second through two controllers.
    func runAdvertising(count: Int) throws(BenchError) -> BenchResult {
        guard (1...100_000_000).contains(count) else { throw BenchError(.badOptions, "--reports must be 1...100000000") }
        initialise()
        let data: [UInt8] = [0x02, 0x01, 0x04, 0x1A, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0xAB, count: 24)
        send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20,
                                                                 advertisingType: .nonConnectableUndirected)), to: 0)
        send(.leSetAdvertisingData(data), to: 0)
        send(.leSetScanParameters(LEScanParameters(scanType: 0x00, interval: 0x10, window: 0x10)), to: 1)
        loop.run()
        final class Count: @unchecked Sendable { var reports = 0 }
        let counter = Count()
        controllers[1].toHost = { frame in
            // LE Meta (0x3E), LE Advertising Report (0x02): count the reports in it.
            if frame.type == .event, frame.packet.count > 3, frame.packet[0] == 0x3E, frame.packet[2] == 0x02 {
                counter.reports += Int(frame.packet[3])
            }
        }
        var driver = BenchDriver(loop: loop)
        if let onProgress { driver.onTick = { onProgress("air: \(counter.reports) of \(count) advertising reports") } }
        send(.leSetScanEnable(enable: true, filterDuplicates: false), to: 1)
        send(.leSetAdvertisingEnable(true), to: 0)
        let startAir = loop.now
        let start = ContinuousClock.now
        driver.drive(until: { counter.reports >= count }, progress: { counter.reports }, idleLimit: .seconds(5))
        let elapsed = ContinuousClock.now - start
        let airTime = loop.now - startAir
        let received = counter.reports
        send(.leSetAdvertisingEnable(false), to: 0)
        send(.leSetScanEnable(enable: false, filterDuplicates: false), to: 1)
        loop.run()
        for controller in controllers { controller.toHost = nil }
        return BenchResult(benchmark: "air", transport: "in-process virtual air (HCI, no host)", size: data.count,
                           count: count, sent: count, received: min(received, count), seconds: benchSeconds(elapsed),
                           airSeconds: benchSeconds(airTime))
    }

    /// ACL packets per second between two controllers.
    func runACL(count: Int, size: Int = 251) throws(BenchError) -> BenchResult {
        guard (1...100_000_000).contains(count) else { throw BenchError(.badOptions, "--count must be 1...100000000") }
        guard (1...251).contains(size) else { throw BenchError(.badOptions, "--size must be 1...251") }
        initialise()
        let inboxes = controllers.map { controller -> Inbox in
            let inbox = Inbox()
            controller.toHost = { frame in
                if frame.type == .event, let event = try? HCIEvent(decoding: frame.packet) { inbox.events.append(event) }
            }
            return inbox
        }
        func connectionHandle(_ inbox: Inbox) -> UInt16? {
            for event in inbox.events {
                switch event {
                case .leMeta(.connectionComplete(let complete)) where complete.status == .success: return complete.handle
                case .leMeta(.enhancedConnectionComplete(let complete)) where complete.connection.status == .success:
                    return complete.connection.handle
                default: continue
                }
            }
            return nil
        }
        send(.leSetAdvertisingParameters(LEAdvertisingParameters(intervalMin: 0x20, intervalMax: 0x20)), to: 0)
        send(.leSetAdvertisingEnable(true), to: 0)
        send(.leCreateConnection(LECreateConnectionParameters(
            peer: controllers[0].publicAddress,
            connection: LEConnectionParameters(intervalMin: 6, intervalMax: 6, supervisionTimeout: 0x01F4))), to: 1)
        let driver = BenchDriver(loop: loop)
        guard driver.drive(until: { connectionHandle(inboxes[0]) != nil && connectionHandle(inboxes[1]) != nil }),
              let peripheralHandle = connectionHandle(inboxes[0]), let centralHandle = connectionHandle(inboxes[1]) else {
            throw BenchError(.setupFailed, "the controllers did not connect")
        }
        send(.leSetDataLength(handle: centralHandle, txOctets: 251, txTime: 2120), to: 1)
        send(.leSetDataLength(handle: peripheralHandle, txOctets: 251, txTime: 2120), to: 0)
        loop.advance(by: .milliseconds(100))

        let packet: HCIACLDataPacket
        do {
            packet = try HCIACLDataPacket(handle: centralHandle, packetBoundary: .firstNonFlushable,
                                          data: [UInt8](repeating: 0xA5, count: size))
        } catch {
            throw BenchError(.setupFailed, "ACL packet: \(error)")
        }
        final class Counters: @unchecked Sendable {
            var sent = 0
            var received = 0
        }
        let counters = Counters()
        let central = controllers[1]
        controllers[0].toHost = { frame in
            if frame.type == .aclData { counters.received += 1 }
        }
        let frame = packet.frame
        central.toHost = { reply in
            // Number Of Completed Packets (0x13): one more packet per completed one.
            guard reply.type == .event, reply.packet.first == 0x13,
                  case .numberOfCompletedPackets(let entries)? = try? HCIEvent(decoding: reply.packet) else { return }
            for entry in entries {
                for _ in 0..<Int(entry.count) where counters.sent < count {
                    counters.sent += 1
                    central.receiveFromHost(frame)
                }
            }
        }
        var measuring = driver
        if let onProgress { measuring.onTick = { onProgress("acl: \(counters.received) of \(count) ACL packets") } }
        let startAir = loop.now
        let start = ContinuousClock.now
        for _ in 0..<min(8, count) {
            counters.sent += 1
            central.receiveFromHost(frame)
        }
        measuring.drive(until: { counters.received >= count }, progress: { counters.received }, idleLimit: .seconds(5))
        let elapsed = ContinuousClock.now - start
        let airTime = loop.now - startAir
        for controller in controllers { controller.toHost = nil }
        return BenchResult(benchmark: "acl", transport: "in-process virtual air (HCI, no host)", size: size, count: count,
                           dataLength: 251, sent: counters.sent, received: counters.received,
                           seconds: benchSeconds(elapsed), airSeconds: benchSeconds(airTime))
    }
}
