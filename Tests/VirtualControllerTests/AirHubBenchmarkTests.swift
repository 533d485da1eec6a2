import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import Testing
@testable import VirtualController

/// Issue 3's benchmark: advertising reports per second and ACL packets per second through two controllers on the
/// in-process air (manual clock, so the figures are the simulator's own cost, not radio time). Speed is measured,
/// not asserted: run with `OCB_BENCH=1 swift test --filter AirHubBenchmark` and read the printed lines. The test
/// still checks that the traffic really flowed.
@Suite("AirHubBenchmark", .enabled(if: ProcessInfo.processInfo.environment["OCB_BENCH"] != nil, "set OCB_BENCH=1"))
struct AirHubBenchmarkTests {
    @Test("advertising reports per second: one advertiser every 20 ms, one passive scanner, 10 minutes of air time")
    func advertisingReports() {
        let world = World(devices: 2)
        let advertiser = world.hosts[0], scanner = world.hosts[1]
        advertiser.send(.leSetAdvertisingParameters(LEAdvertisingParameters(
            intervalMin: 0x20, intervalMax: 0x20, advertisingType: .nonConnectableUndirected)))
        advertiser.send(.leSetAdvertisingData([0x02, 0x01, 0x06, 0x05, 0x09, 0x42, 0x65, 0x6E, 0x63]))
        advertiser.send(.leSetAdvertisingEnable(true))
        scanner.send(.leSetScanParameters(LEScanParameters(scanType: 0x00, interval: 0x10, window: 0x10)))
        scanner.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        world.loop.run()
        let reports = LockedValue(0)
        scanner.controller.toHost = { frame in
            if frame.type == .event, frame.packet.first == 0x3E, frame.packet.count > 2, frame.packet[2] == 0x02 {
                reports.withLock { $0 += 1 }
            }
        }
        let start = ContinuousClock.now
        world.loop.advance(by: .seconds(600))
        let elapsed = ContinuousClock.now - start
        let count = reports.withLock { $0 }
        let perSecond = Double(count) / max(1e-9, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        print("benchmark: \(count) advertising reports in \(elapsed) = \(Int(perSecond)) reports/s (600 s of air time)")
        #expect(count > 20_000)  // 600 s / (20 ms + 0-10 ms advDelay)
    }

    @Test("ACL packets per second: 251-octet packets, 8 in flight, DLE 251, 7.5 ms interval, 60 s of air time")
    func aclPackets() throws {
        let world = World(devices: 2)
        let (centralHandle, peripheralHandle) = try #require(world.connect(central: 1, peripheral: 0, interval: 6, timeout: 200))
        let central = world.hosts[1], peripheral = world.hosts[0]
        central.send(.leSetDataLength(handle: centralHandle, txOctets: 251, txTime: 2120))
        peripheral.send(.leSetDataLength(handle: peripheralHandle, txOctets: 251, txTime: 2120))
        world.advance(.milliseconds(200))
        let payload = [UInt8](repeating: 0xA5, count: 251)
        let packet = try HCIACLDataPacket(handle: centralHandle, packetBoundary: .firstNonFlushable, data: payload)
        let received = LockedValue(0)
        let completed = LockedValue(0)
        let controller = central.controller
        peripheral.controller.toHost = { frame in
            if frame.type == .aclData { received.withLock { $0 += 1 } }
        }
        central.controller.toHost = { frame in
            guard frame.type == .event, case .numberOfCompletedPackets(let entries)? = try? HCIEvent(decoding: frame.packet) else { return }
            let count = entries.reduce(0) { $0 + Int($1.count) }
            completed.withLock { $0 += count }
            for _ in 0..<count { controller.receiveFromHost(packet.frame) }
        }
        for _ in 0..<8 { controller.receiveFromHost(packet.frame) }
        let start = ContinuousClock.now
        world.loop.advance(by: .seconds(60))
        let elapsed = ContinuousClock.now - start
        let count = received.withLock { $0 }
        let seconds = max(1e-9, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        print("benchmark: \(count) ACL packets of 251 octets in \(elapsed) = \(Int(Double(count) / seconds)) packets/s, "
              + "\(Int(Double(count * 251) / seconds / 1000)) kB/s wall; \(count / 60) packets/s of air time")
        #expect(count > 10_000)
        #expect(completed.withLock { $0 } >= count - 8)
    }
}
