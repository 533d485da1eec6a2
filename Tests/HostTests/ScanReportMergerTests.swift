import BluetoothCore
import HCI
@testable import Host
import Testing

/// The scan's per-device merge forgets the device heard least recently once it holds `capacity` devices, also when
/// devices are heard again in between (their older places in the order must not count).
@Suite struct ScanReportMergerTests {
    private func report(_ device: UInt64, _ eventType: LEAdvertisingReportType = .advInd, data: [UInt8] = [0x02, 0x01, 0x06])
        -> LEAdvertisingReport {
        LEAdvertisingReport(eventType: eventType, address: BluetoothAddress(0xC0_0000_0000_00 + device, type: .random),
                            data: data, rssi: -50)
    }

    @Test func forgetsTheDeviceHeardLeastRecently() {
        var merger = ScanReportMerger(capacity: 3)
        _ = merger.merge(report(1))
        _ = merger.merge(report(2))
        _ = merger.merge(report(3))
        // Device 1 heard again (with a scan response), so 2 is now the oldest: a fourth device forgets 2, not 1.
        _ = merger.merge(report(1, .scanResponse, data: [0x04, 0x09, 0x61, 0x62, 0x63]))
        _ = merger.merge(report(4))
        #expect(merger.deviceCount == 3)
        // 1's scan response was kept (it was not forgotten): an advertising report of 1 comes back merged with it.
        let one = merger.merge(report(1))
        #expect(one.rawScanResponse == [0x04, 0x09, 0x61, 0x62, 0x63])
        // 2 was forgotten: nothing of it is merged any more, and hearing it again forgets 3 (now the oldest).
        let two = merger.merge(report(2))
        #expect(two.rawScanResponse == nil)
        #expect(merger.deviceCount == 3)
        let three = merger.merge(report(3, .scanResponse, data: [0x02, 0x0A, 0x00]))
        #expect(three.rawAdvertisingData == [])
    }

    /// Many devices heard many times over a small capacity: the kept ones are always the `capacity` heard last, and
    /// the order's stale entries do not grow without bound (rebuilt at four times the capacity).
    @Test func keepsTheLastHeardAcrossManyRepeats() {
        var merger = ScanReportMerger(capacity: 8)
        var recent: [UInt64] = []
        var random = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let device = UInt64.random(in: 0..<20, using: &random)
            _ = merger.merge(report(device, data: [0x02, 0x01, UInt8(device)]))
            recent.removeAll { $0 == device }
            recent.append(device)
            if recent.count > 8 { recent.removeFirst() }
            #expect(merger.deviceCount == recent.count)
        }
        // A scan response for each of the last heard merges with its advertising data; one for any other does not.
        for device in 0..<UInt64(20) {
            let merged = merger.merge(report(device, .scanResponse, data: [0x02, 0x0A, 0x00]))
            if let index = recent.firstIndex(of: device) {
                #expect(merged.rawAdvertisingData == [0x02, 0x01, UInt8(device)])
                recent.remove(at: index)
            } else {
                #expect(merged.rawAdvertisingData == [])
            }
            recent.append(device)
            if recent.count > 8 { recent.removeFirst() }
        }
    }
}
