import AdvertisingData
import BluetoothCore
import BluetoothRuntime
import HCI
@testable import Host
import Testing
import VirtualController
import BluetoothEngine

/// The host with the Bluetooth 5 extended commands (issue 15 item 1; Core 5.4 Vol 4 Part E §7.8.53–§7.8.66) on
/// our controller: legacy PDUs while the data fits them, extended PDUs with data beyond 31 octets on the chosen PHYs,
/// reports joined from their pieces with the advertiser's PHYs and SID, connections from connectable extended
/// advertising on the secondary PHY; and the legacy commands when the configuration says so.
@Suite("Host: extended advertising, scanning and connecting")
struct ExtendedGAPTests {
    static let company = CompanyIdentifier(0x05F1)

    static func start(_ stacks: TwoStacks) -> Bool {
        let started = Recorder<Bool>()
        stacks.peripheral.start { started.append((try? $0.get()) != nil) }
        stacks.central.start { started.append((try? $0.get()) != nil) }
        return stacks.run(until: { started.count == 2 }) && started.values == [true, true]
    }

    static func advertise(_ stacks: TwoStacks, _ content: AdvertisingContent, _ options: AdvertisingOptions) -> Result<Void, HostError>? {
        let result = Recorder<Result<Void, HostError>>()
        stacks.peripheral.startAdvertising(content, options: options) { result.append($0) }
        stacks.run(until: { result.count == 1 })
        return result.last
    }

    /// The central's scan reports from the peripheral after scanning for `time`.
    static func scan(_ stacks: TwoStacks, for time: Duration = .seconds(1)) -> [ScanReport] {
        let started = Recorder<Bool>()
        stacks.central.startScanning(ScanOptions()) { started.append((try? $0.get()) != nil) }
        stacks.run(until: { started.count == 1 })
        stacks.loop.advance(by: time)
        let stopped = Recorder<Bool>()
        stacks.central.stopScanning { stopped.append((try? $0.get()) != nil) }
        stacks.run(until: { stopped.count == 1 })
        let address = stacks.peripheral.controllerInfo.ownAddress
        return stacks.centralEvents.values.compactMap { event in
            if case .advertisingReport(let report) = event, report.address == address { return report }
            return nil
        }
    }

    static func stopAdvertising(_ stacks: TwoStacks) {
        let stopped = Recorder<Bool>()
        stacks.peripheral.stopAdvertising { stopped.append((try? $0.get()) != nil) }
        stacks.run(until: { stopped.count == 1 })
        #expect(stopped.values == [true])
    }

    @Test("our controller: the host uses the extended commands and reads the maximum data length")
    func initialisation() {
        let stacks = TwoStacks()
        #expect(Self.start(stacks))
        #expect(stacks.central.controllerInfo.usesExtendedAdvertising)
        #expect(stacks.central.controllerInfo.maximumAdvertisingDataLength == 1650)
        stacks.expectQuiescent()
    }

    @Test("data that fits 31 octets goes in legacy PDUs, which every scanner sees")
    func shortDataUsesLegacyPDUs() throws {
        let stacks = TwoStacks()
        try #require(Self.start(stacks))
        #expect(try Self.advertise(stacks, AdvertisingContent(localName: "short"), AdvertisingOptions())?.get() != nil)
        let reports = Self.scan(stacks)
        let report = try #require(reports.last)
        #expect(report.isLegacy && report.secondaryPHY == nil && report.primaryPHY == .le1M && report.advertisingSID == nil)
        #expect(report.localName == "short" && report.isConnectable)
        Self.stopAdvertising(stacks)
        stacks.expectQuiescent()
    }

    /// 615 octets of advertising data, non-connectable, on the 2M PHY: the central's report carries it whole.
    @Test("long data goes in extended PDUs and arrives whole with the PHYs", arguments: [LEPhy.le1M, .le2M, .leCoded])
    func longDataArrivesWhole(secondary: LEPhy) throws {
        let stacks = TwoStacks()
        try #require(Self.start(stacks))
        let payload = (0..<240).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let content = AdvertisingContent(
            localName: "long one",
            serviceData: [.init(uuid: BluetoothUUID(0x180F), data: [UInt8](repeating: 0xB0, count: 200)),
                          .init(uuid: BluetoothUUID(0x1810), data: [UInt8](repeating: 0xB1, count: 150))],
            manufacturerData: (Self.company, payload))
        let options = AdvertisingOptions(kind: .nonConnectable, primaryPHY: secondary == .leCoded ? .leCoded : .le1M,
                                         secondaryPHY: secondary)
        #expect(try Self.advertise(stacks, content, options)?.get() != nil)
        let report = try #require(Self.scan(stacks).last)
        #expect(!report.isLegacy && report.secondaryPHY == secondary && report.advertisingSID == 0)
        #expect(report.primaryPHY == (secondary == .leCoded ? .leCoded : .le1M))
        #expect(report.localName == "long one" && !report.isConnectable)
        #expect(report.advertisingData.manufacturerData?.data == payload)
        #expect(report.advertisingData.serviceData.count == 2)
        #expect(report.rawAdvertisingData.count == 3 + 204 + 154 + 244 + 10, "615 octets")
        Self.stopAdvertising(stacks)
        stacks.expectQuiescent()
    }

    @Test("what fits in no extended PDU is refused with the limit, and nothing is sent")
    func tooLongIsRefused() throws {
        let stacks = TwoStacks()
        try #require(Self.start(stacks))
        let content = AdvertisingContent(manufacturerData: (Self.company, [UInt8](repeating: 1, count: 300)))
        let error = Self.advertise(stacks, content, AdvertisingOptions(kind: .connectable))?.failure
        #expect(error?.code == .advertisingDataTooLarge)
        #expect(error?.reason.contains("245") == true, "\(String(describing: error))")
        let huge = AdvertisingContent(serviceData: (0..<8).map { .init(uuid: BluetoothUUID(UInt16(0x1800 + $0)), data: [UInt8](repeating: 1, count: 250)) })
        #expect(Self.advertise(stacks, huge, AdvertisingOptions(kind: .nonConnectable))?.failure?.code == .advertisingDataTooLarge)
        stacks.expectQuiescent()
    }

    /// Connectable extended advertising (150 octets) on LE 2M: LE Extended Create Connection connects on LE 2M,
    /// which both hosts learn (LE Read PHY), and the peripheral's advertising is over.
    @Test("a connection from connectable extended advertising starts on its secondary PHY")
    func connectionOnTheSecondaryPHY() throws {
        let stacks = TwoStacks()
        try #require(Self.start(stacks))
        let content = AdvertisingContent(localName: "two em", manufacturerData: (Self.company, [UInt8](repeating: 7, count: 150)))
        #expect(try Self.advertise(stacks, content, AdvertisingOptions(kind: .connectable, secondaryPHY: .le2M))?.get() != nil)
        let report = try #require(Self.scan(stacks).last)
        #expect(report.isConnectable && !report.isLegacy && report.secondaryPHY == .le2M)
        let connected = Recorder<Connection>()
        stacks.central.connect(to: stacks.peripheral.controllerInfo.ownAddress) { if let c = try? $0.get() { connected.append(c) } }
        try #require(stacks.run(until: { connected.count == 1 && !stacks.peripheral.openConnections.isEmpty }, limit: .seconds(10)))
        stacks.centralHandle = connected.values[0].handle
        stacks.peripheralHandle = stacks.peripheral.openConnections[0].handle
        stacks.loop.advance(by: .milliseconds(100))
        for (host, handle) in [(stacks.central, stacks.centralHandle), (stacks.peripheral, stacks.peripheralHandle)] {
            let info = Recorder<LinkInfo?>()
            host.linkInfo(connectionHandle: handle) { info.append($0) }
            stacks.run(until: { info.count == 1 })
            let link = try #require(info.last ?? nil)
            #expect(link.txPHY == .le2M && link.rxPHY == .le2M)
        }
        #expect(!stacks.peripheral.isAdvertising)
        stacks.disconnectAndCheckLeaks()
    }

    @Test("with usesExtendedAdvertising off the host speaks the legacy commands, and connects")
    func legacyCommandsWhenAskedTo() throws {
        var central = HostConfiguration(address: .randomStatic(seed: 2))
        central.usesExtendedAdvertising = false
        var peripheral = HostConfiguration(address: .randomStatic(seed: 1))
        peripheral.usesExtendedAdvertising = false
        let stacks = TwoStacks(central: central, peripheral: peripheral)
        try #require(stacks.connect())
        #expect(!stacks.central.controllerInfo.usesExtendedAdvertising && stacks.central.controllerInfo.maximumAdvertisingDataLength == 31)
        let content = AdvertisingContent(manufacturerData: (Self.company, [UInt8](repeating: 1, count: 40)))
        #expect(Self.advertise(stacks, content, AdvertisingOptions(kind: .nonConnectable))?.failure?.code == .advertisingDataTooLarge)
        stacks.disconnectAndCheckLeaks()
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
