import AdvertisingData
import BluetoothCore
import DequeModule
import HCI
import BluetoothEngine

/// Merges advertising reports and scan responses per device while a scan runs (Core 5.4 Vol 4 Part E §7.7.65.2).
/// Keeps at most `capacity` devices, forgetting the least recently heard first. Confined to the host's loop.
///
/// The order heard is a queue of (address, when) in which a device heard again leaves its older entries stale; the
/// oldest live entry is found from the front, and the queue is rebuilt from the devices when it holds four times
/// the capacity. So forgetting costs O(1) amortised per report: a search of every kept device per new one made a
/// scan among 100,000 advertisers cost 256 steps per report (issue 31 item 5).
struct ScanReportMerger {
    private struct Device {
        var advertisingData: [UInt8] = []
        var scanResponse: [UInt8]?
        var isConnectable = false
        var lastHeard: UInt64 = 0
    }

    let capacity: Int
    private var devices: [BluetoothAddress: Device] = [:]
    /// Devices in the order heard, with stale entries (see the type's note).
    private var heardOrder: Deque<(address: BluetoothAddress, heard: UInt64)> = []
    private var clock: UInt64 = 0
    /// Joins the pieces of extended advertising reports before they are merged.
    private var assembler = ExtendedReportAssembler()
    /// Extended advertisements dropped because the controller truncated them (or they grew past 1,650 octets).
    private(set) var droppedExtendedAdvertisements = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var deviceCount: Int { devices.count }

    mutating func reset() {
        devices = [:]
        heardOrder = []
        assembler.reset()
    }

    /// One LE Extended Advertising Report: the merged device once its advertisement is whole, else nil.
    mutating func mergePiece(_ report: LEExtendedAdvertisingReport) -> ScanReport? {
        switch assembler.add(report) {
        case .complete(let whole): return merge(whole)
        case .pending: return nil
        case .dropped:
            droppedExtendedAdvertisements += 1
            return nil
        }
    }

    mutating func merge(_ report: LEAdvertisingReport) -> ScanReport {
        clock &+= 1
        var device = devices[report.address] ?? Device()
        if report.eventType == .scanResponse {
            device.scanResponse = report.data
        } else {
            device.advertisingData = report.data
            device.isConnectable = report.eventType == .advInd || report.eventType == .advDirectInd
        }
        device.lastHeard = clock
        if devices[report.address] == nil, devices.count >= capacity { forgetOldest() }
        devices[report.address] = device
        heardOrder.append((report.address, clock))
        if heardOrder.count > 4 * capacity {
            let order = devices.map { (address: $0.key, heard: $0.value.lastHeard) }.sorted { $0.heard < $1.heard }
            heardOrder = Deque(order)
        }
        let advertising = Self.decode(device.advertisingData)
        let response = device.scanResponse.map(Self.decode) ?? AdvertisingData()
        return ScanReport(
            address: report.address, addressType: report.addressType, rssi: report.rssi, eventType: report.eventType,
            isConnectable: device.isConnectable,
            advertisingData: AdvertisingData(advertising.structures + response.structures),
            rawAdvertisingData: device.advertisingData, rawScanResponse: device.scanResponse)
    }

    /// Forgets the device heard least recently.
    private mutating func forgetOldest() {
        while let (address, heard) = heardOrder.popFirst() {
            if devices[address]?.lastHeard == heard {
                devices[address] = nil
                return
            }
        }
    }

    /// A whole extended advertisement or scan response (``ExtendedReportAssembler``), legacy PDUs included.
    mutating func merge(_ report: LEExtendedAdvertisingReport) -> ScanReport? {
        guard let shape = report.legacyReport else { return nil }
        var merged = merge(shape)
        let legacy = report.eventType & 0x10 != 0
        merged.isLegacy = legacy
        merged.primaryPHY = report.primaryPHY
        merged.secondaryPHY = legacy ? nil : report.secondaryPHY
        merged.advertisingSID = report.advertisingSID <= 0x0F ? report.advertisingSID : nil
        merged.txPower = report.txPower == 127 ? nil : report.txPower
        return merged
    }

    /// AD structures of untrusted bytes, never throwing: contents that do not parse are kept raw, broken framing
    /// gives no structures (the raw bytes stay in the report).
    private static func decode(_ bytes: [UInt8]) -> AdvertisingData {
        (try? AdvertisingData(decoding: bytes, kind: bytes.count > 31 ? .extended : .legacy, lenient: true)) ?? AdvertisingData()
    }
}
