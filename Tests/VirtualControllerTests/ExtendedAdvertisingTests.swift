import BluetoothCore
import BluetoothRuntime
import HCI
import Testing
@testable import VirtualController

/// Extended advertising, extended scanning and LE Extended Create Connection in our controller (issue 15 item 1;
/// Core 5.4 Vol 4 Part E §7.8.52–§7.8.66, Vol 6 Part B §2.3.4 and §4.4.2): the commands' refusals, advertising sets
/// with data up to 1,650 octets in an auxiliary chain, reports cut to 229 octets with their data status, several
/// sets at once, scannable and connectable extended advertising on the 2M and Coded PHYs, and the sets' and scans'
/// Duration.
@Suite struct ExtendedAdvertisingTests {
    /// A complete advertisement as a host reassembles it from LE Extended Advertising Reports.
    struct Reassembled: Equatable {
        var address: BluetoothAddress
        var eventType: UInt16
        var sid: UInt8
        var primaryPHY: LEPhy
        var secondaryPHY: LEPhy
        var data: [UInt8]
        /// The data status of the last report: 0 complete, 2 truncated.
        var status: UInt16
        var pieces: Int
    }

    static func reports(_ host: ScriptedHost) -> [LEExtendedAdvertisingReport] {
        host.events.flatMap { event -> [LEExtendedAdvertisingReport] in
            if case .leMeta(.extendedAdvertisingReport(let reports)) = event { return reports }
            return []
        }
    }

    /// Consecutive reports of one advertiser joined until one whose data status is not "more to come".
    static func reassembled(_ host: ScriptedHost) -> [Reassembled] {
        var done: [Reassembled] = []
        var open: [BluetoothAddress: Reassembled] = [:]
        for report in reports(host) {
            let status = (report.eventType >> 5) & 0b11
            var current = open[report.address] ?? Reassembled(
                address: report.address, eventType: report.eventType & 0x1F, sid: report.advertisingSID,
                primaryPHY: report.primaryPHY, secondaryPHY: report.secondaryPHY, data: [], status: 0, pieces: 0)
            current.data += report.data
            current.pieces += 1
            current.status = status
            if status == 0b01 {
                open[report.address] = current
            } else {
                open[report.address] = nil
                done.append(current)
            }
        }
        return done
    }

    static func payload(_ count: Int, seed: UInt8 = 0) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) } }

    /// Sends `data` to set `handle` in fragments of 251 octets (First, Intermediate..., Last; Complete when it fits).
    static func setData(_ host: ScriptedHost, handle: UInt8, _ data: [UInt8], scanResponse: Bool = false) {
        let chunks = stride(from: 0, to: max(data.count, 1), by: 251).map { Array(data[$0..<min($0 + 251, data.count)]) }
        for (index, chunk) in chunks.enumerated() {
            let operation: LEAdvertisingDataOperation = chunks.count == 1 ? .complete
                : index == 0 ? .firstFragment : index == chunks.count - 1 ? .lastFragment : .intermediateFragment
            let fragment = LEExtendedAdvertisingData(advertisingHandle: handle, operation: operation, data: chunk)
            host.send(.extended(scanResponse ? .leSetExtendedScanResponseData(fragment) : .leSetExtendedAdvertisingData(fragment)))
        }
    }

    static func advertise(_ host: ScriptedHost, handle: UInt8 = 0, properties: LEAdvertisingEventProperties = [],
                          primary: LEPhy = .le1M, secondary: LEPhy = .le1M, sid: UInt8 = 0, interval: UInt32 = 160,
                          data: [UInt8] = [], scanResponse: [UInt8]? = nil, duration: UInt16 = 0, maxEvents: UInt8 = 0) {
        host.send(.extended(.leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
            advertisingHandle: handle, eventProperties: properties, primaryIntervalMin: interval, primaryIntervalMax: interval,
            primaryPHY: primary, secondaryPHY: secondary, sid: sid))))
        if !data.isEmpty { setData(host, handle: handle, data) }
        if let scanResponse { setData(host, handle: handle, scanResponse, scanResponse: true) }
        host.send(.extended(.leSetExtendedAdvertisingEnable(enable: true, sets: [
            LEExtendedAdvertisingSet(advertisingHandle: handle, duration: duration, maxExtendedAdvertisingEvents: maxEvents),
        ])))
    }

    static func scan(_ host: ScriptedHost, active: Bool = false, le1M: Bool = true, coded: Bool = false,
                     filterDuplicates: UInt8 = 0, duration: UInt16 = 0, period: UInt16 = 0) {
        let block = LEExtendedScanPHYParameters(scanType: active ? 1 : 0, interval: 16, window: 16)
        host.send(.extended(.leSetExtendedScanParameters(LEExtendedScanParameters(
            le1M: le1M ? block : nil, leCoded: coded ? block : nil))))
        host.send(.extended(.leSetExtendedScanEnable(enable: true, filterDuplicates: filterDuplicates, duration: duration, period: period)))
    }

    @Test func theCommandsRefuseWhatTheSpecificationRefuses() {
        let world = World(devices: 1)
        let host = world.hosts[0]
        func run(_ command: HCICommand) -> HCIStatus? {
            host.drain()
            host.send(command)
            world.loop.run()
            return host.status(command.opcode)
        }
        func parameters(_ handle: UInt8 = 0, _ properties: LEAdvertisingEventProperties = [], primary: LEPhy = .le1M,
                        secondary: LEPhy = .le1M) -> HCICommand {
            .extended(.leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
                advertisingHandle: handle, eventProperties: properties, primaryPHY: primary, secondaryPHY: secondary)))
        }
        func data(_ handle: UInt8, _ operation: LEAdvertisingDataOperation, _ count: Int) -> HCICommand {
            .extended(.leSetExtendedAdvertisingData(LEExtendedAdvertisingData(advertisingHandle: handle, operation: operation,
                                                                            data: Self.payload(count))))
        }
        func enable(_ handle: UInt8, _ on: Bool = true) -> HCICommand {
            .extended(.leSetExtendedAdvertisingEnable(enable: on, sets: [LEExtendedAdvertisingSet(advertisingHandle: handle)]))
        }
        #expect(run(.extended(.leReadMaximumAdvertisingDataLength)) == .success)
        if case .commandComplete(_, _, .leReadMaximumAdvertisingDataLength(_, let length)) = host.response(.leReadMaximumAdvertisingDataLength) {
            #expect(length == 1650)
        } else { Issue.record("no maximum length") }
        #expect(run(.extended(.leReadNumberOfSupportedAdvertisingSets)) == .success)
        // The family is fixed: legacy commands are refused now, until Reset.
        #expect(run(.leSetAdvertisingEnable(true)) == .commandDisallowed)
        #expect(run(.leSetScanParameters(LEScanParameters(scanType: 0))) == .commandDisallowed)
        #expect(run(data(0, .complete, 10)) == .unknownAdvertisingIdentifier)
        #expect(run(enable(0)) == .unknownAdvertisingIdentifier)
        #expect(run(parameters(0xF0)) == .invalidCommandParameters)
        #expect(run(parameters(0, [.connectable, .scannable])) == .invalidCommandParameters, "extended can't be both")
        #expect(run(parameters(0, [.connectable, .legacy])) == .invalidCommandParameters, "no such legacy PDU")
        #expect(run(parameters(0, [], primary: .le2M)) == .unsupportedFeatureOrParameterValue, "2M is not a primary PHY")
        #expect(run(parameters(0, [.connectable, .anonymous])) == .invalidCommandParameters)
        for handle: UInt8 in 0..<16 { #expect(run(parameters(handle)) == .success) }
        #expect(run(parameters(16)) == .memoryCapacityExceeded)
        #expect(run(.extended(.leRemoveAdvertisingSet(advertisingHandle: 15))) == .success)
        #expect(run(.extended(.leRemoveAdvertisingSet(advertisingHandle: 15))) == .unknownAdvertisingIdentifier)
        // Data: 1,650 octets fit, one more is refused and drops the data; fragments only while disabled.
        #expect(run(data(0, .firstFragment, 251)) == .success)
        #expect(run(enable(0)) == .commandDisallowed, "incomplete data")
        #expect(run(data(0, .intermediateFragment, 251)) == .success)
        #expect(run(data(0, .lastFragment, 1650 - 502)) == .success)
        #expect(run(enable(0)) == .success)
        #expect(run(data(0, .firstFragment, 10)) == .commandDisallowed, "fragments while enabled")
        #expect(run(parameters(0)) == .commandDisallowed, "parameters while enabled")
        #expect(run(.extended(.leRemoveAdvertisingSet(advertisingHandle: 0))) == .commandDisallowed)
        #expect(run(.extended(.leClearAdvertisingSets)) == .commandDisallowed)
        #expect(run(data(0, .unchanged, 0)) == .success, "a new DID")
        #expect(run(enable(0, false)) == .success)
        #expect(run(data(1, .firstFragment, 251)) == .success)
        for _ in 0..<5 { #expect(run(data(1, .intermediateFragment, 251)) == .success) }
        #expect(run(data(1, .lastFragment, 145)) == .memoryCapacityExceeded)
        #expect(run(data(1, .lastFragment, 10)) == .commandDisallowed, "the data was dropped: no fragment is open")
        #expect(run(data(1, .intermediateFragment, 0)) == .invalidCommandParameters)
        // Scannable extended advertising has no advertising data and needs scan response data.
        #expect(run(parameters(2, [.scannable])) == .success)
        #expect(run(data(2, .complete, 5)) == .invalidCommandParameters)
        #expect(run(enable(2)) == .commandDisallowed)
        // Connectable extended advertising: what one AUX_ADV_IND holds (245 octets), no chain.
        #expect(run(parameters(3, [.connectable], secondary: .le2M)) == .success)
        #expect(run(data(3, .complete, 246)) == .success)
        #expect(run(enable(3)) == .packetTooLong)
        #expect(run(data(3, .complete, 245)) == .success)
        #expect(run(enable(3)) == .success)
        // Legacy PDUs: 31 octets, Complete only.
        #expect(run(parameters(4, [.connectable, .scannable, .legacy])) == .success)
        #expect(run(data(4, .complete, 32)) == .invalidCommandParameters)
        #expect(run(data(4, .firstFragment, 10)) == .invalidCommandParameters)
        // Random own address without the set's random address.
        #expect(run(.extended(.leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
            advertisingHandle: 5, eventProperties: [], ownAddressType: .random)))) == .success)
        #expect(run(enable(5)) == .invalidCommandParameters)
        #expect(run(.extended(.leSetAdvertisingSetRandomAddress(advertisingHandle: 5, address: BluetoothAddress(0xC1_22_33_44_55_66, type: .random))))
                == .success)
        #expect(run(enable(5)) == .success)
        #expect(run(.extended(.leSetExtendedAdvertisingEnable(enable: true, sets: []))) == .invalidCommandParameters)
        #expect(run(.extended(.leSetExtendedAdvertisingEnable(enable: false, sets: []))) == .success, "disables all")
        #expect(run(.extended(.leClearAdvertisingSets)) == .success)
        // Scanning and initiating.
        #expect(run(.extended(.leSetExtendedScanEnable(enable: true, filterDuplicates: 3, duration: 0, period: 0))) == .invalidCommandParameters)
        #expect(run(.extended(.leSetExtendedScanEnable(enable: true, filterDuplicates: 0, duration: 0, period: 1))) == .invalidCommandParameters)
        #expect(run(.extended(.leSetExtendedScanEnable(enable: true, filterDuplicates: 0, duration: 128, period: 1))) == .invalidCommandParameters)
        #expect(run(.extended(.leSetExtendedScanEnable(enable: true, filterDuplicates: 0, duration: 0, period: 0))) == .success)
        #expect(run(.extended(.leSetExtendedScanParameters(LEExtendedScanParameters()))) == .commandDisallowed, "while scanning")
        #expect(run(.extended(.leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            peer: BluetoothAddress(0x11), le1M: nil, le2M: LEExtendedInitiatingPHYParameters())))) == .invalidCommandParameters,
                "2M alone is not a primary PHY")
        // Reset: the legacy commands are allowed again.
        #expect(run(.reset) == .success)
        #expect(run(.leSetAdvertisingEnable(true)) == .success)
        #expect(run(.extended(.leReadNumberOfSupportedAdvertisingSets)) == .commandDisallowed)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// 1,650 octets from one set on 1M/2M, heard by an extended scanner: reports of at most 229 octets, "more to
    /// come" on all but the last, reassembled byte for byte, with the PHYs and the SID.
    @Test(arguments: [LEPhy.le1M, .le2M, .leCoded])
    func theLongestDataArrivesWhole(secondary: LEPhy) throws {
        let world = World(devices: 2)
        let advertiser = world.hosts[0], scanner = world.hosts[1]
        let data = Self.payload(1650)
        Self.advertise(advertiser, secondary: secondary, sid: 7, data: data)
        Self.scan(scanner)
        world.advance(.seconds(1))
        let heard = Self.reassembled(scanner)
        try #require(heard.count >= 5)
        for advertisement in heard {
            #expect(advertisement.data == data)
            #expect(advertisement.status == 0 && advertisement.pieces >= 8, "1650 > 7 × 229")
            #expect(advertisement.sid == 7 && advertisement.primaryPHY == .le1M && advertisement.secondaryPHY == secondary)
            #expect(advertisement.eventType == 0, "non-connectable, non-scannable, not legacy")
            #expect(advertisement.address == advertiser.controller.publicAddress)
        }
        #expect(Self.reports(scanner).allSatisfy { $0.data.count <= 229 })
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// Reports are cut at AD structure boundaries when they can be, so each piece parses on its own (tshark flags a
    /// cut structure as malformed); a structure longer than a piece, or bytes that are not AD structures, are cut
    /// where the piece is full.
    @Test func reportsAreCutBetweenADStructures() {
        let name: [UInt8] = [0x0C, 0x09] + Array("OCB-Ext-Air".utf8)
        let manufacturer: [UInt8] = [223, 0xFF, 0xF1, 0x05] + [UInt8](repeating: 7, count: 220)
        #expect(VirtualController.reportPieces([0x02, 0x01, 0x04] + name + manufacturer) == [[0x02, 0x01, 0x04] + name, manufacturer])
        let long: [UInt8] = [254, 0xFF] + [UInt8](repeating: 1, count: 253)
        #expect(VirtualController.reportPieces(long).map(\.count) == [229, 26])
        #expect(VirtualController.reportPieces([]) == [[]])
        let three = (0..<3).flatMap { _ in [UInt8](arrayLiteral: 99, 0xFF) + [UInt8](repeating: 2, count: 98) }
        #expect(VirtualController.reportPieces(three).map(\.count) == [200, 100], "two structures of 100 fit a piece")
        let truncated: [UInt8] = [0x02, 0x01, 0x04, 0x40, 0xFF, 1, 2]
        #expect(VirtualController.reportPieces(truncated) == [[0x02, 0x01, 0x04], [0x40, 0xFF, 1, 2]])
    }

    /// Under 20% loss some chains break: those end with data status "truncated" and carry a prefix of the data;
    /// none is reported complete with wrong data.
    @Test func aLostChainPDUTruncatesTheReport() throws {
        var configuration = AirConfiguration()
        configuration.packetLoss = 0.2
        let world = World(seed: 5, configuration: configuration, devices: 2)
        let advertiser = world.hosts[0], scanner = world.hosts[1]
        let data = Self.payload(1600)
        Self.advertise(advertiser, secondary: .le2M, data: data)
        Self.scan(scanner)
        world.advance(.seconds(4))
        let heard = Self.reassembled(scanner)
        let complete = heard.filter { $0.status == 0 }
        let truncated = heard.filter { $0.status == 0b10 }
        try #require(!complete.isEmpty && !truncated.isEmpty)
        #expect(complete.allSatisfy { $0.data == data })
        #expect(truncated.allSatisfy { $0.data.count < data.count && Array(data.prefix($0.data.count)) == $0.data })
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// Three sets of one controller advertise at once (different SIDs, PHYs, data), plus a legacy-PDU set that a
    /// legacy scanner hears too.
    @Test func severalSetsAdvertiseAtOnce() throws {
        let world = World(devices: 3)
        let advertiser = world.hosts[0], scanner = world.hosts[1], legacyScanner = world.hosts[2]
        Self.advertise(advertiser, handle: 0, sid: 1, interval: 100, data: Self.payload(40, seed: 1))
        Self.advertise(advertiser, handle: 1, secondary: .le2M, sid: 2, interval: 120, data: Self.payload(300, seed: 2))
        Self.advertise(advertiser, handle: 2, primary: .leCoded, secondary: .leCoded, sid: 3, interval: 140, data: Self.payload(500, seed: 3))
        Self.advertise(advertiser, handle: 3, properties: [.scannable, .legacy], interval: 110, data: Self.payload(20, seed: 4),
                       scanResponse: Self.payload(25, seed: 5))
        Self.scan(scanner, active: true, coded: true)
        legacyScanner.send(.leSetScanParameters(LEScanParameters(scanType: 1)))
        legacyScanner.send(.leSetScanEnable(enable: true, filterDuplicates: false))
        world.advance(.seconds(2))
        let heard = Self.reassembled(scanner)
        let bySID = Dictionary(grouping: heard.filter { $0.eventType & 0x10 == 0 }, by: \.sid)
        #expect(bySID[1]?.first?.data == Self.payload(40, seed: 1))
        #expect(bySID[2]?.first?.data == Self.payload(300, seed: 2))
        #expect(bySID[2]?.first?.secondaryPHY == .le2M)
        #expect(bySID[3]?.first?.data == Self.payload(500, seed: 3))
        #expect(bySID[3]?.first?.primaryPHY == .leCoded)
        let legacy = heard.filter { $0.eventType & 0x10 != 0 }
        #expect(legacy.contains { $0.eventType == 0x12 && $0.data == Self.payload(20, seed: 4) && $0.sid == 0xFF }, "ADV_SCAN_IND")
        #expect(legacy.contains { $0.eventType == 0x1A && $0.data == Self.payload(25, seed: 5) }, "its SCAN_RSP")
        let old = legacyScanner.advertisingReports
        #expect(old.contains { $0.eventType == .advScanInd && $0.data == Self.payload(20, seed: 4) })
        #expect(old.contains { $0.eventType == .scanResponse && $0.data == Self.payload(25, seed: 5) })
        #expect(old.allSatisfy { $0.eventType == .advScanInd || $0.eventType == .scanResponse }, "no extended PDU reaches a legacy scanner")
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// A scannable extended set answers AUX_SCAN_REQ with 700 octets of scan response in a chain: the active
    /// scanner reports it (bit 3) after the advertisement's own empty report; a passive one never sends the request.
    @Test func scannableExtendedAdvertisingAnswersActiveScanners() throws {
        let world = World(devices: 3)
        let advertiser = world.hosts[0], active = world.hosts[1], passive = world.hosts[2]
        let response = Self.payload(700, seed: 9)
        advertiser.send(.extended(.leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
            advertisingHandle: 0, eventProperties: [.scannable], primaryIntervalMin: 160, primaryIntervalMax: 160,
            secondaryPHY: .le2M, scanRequestNotificationEnable: true))))
        Self.setData(advertiser, handle: 0, response, scanResponse: true)
        advertiser.send(.extended(.leSetExtendedAdvertisingEnable(enable: true, sets: [LEExtendedAdvertisingSet(advertisingHandle: 0)])))
        Self.scan(active, active: true)
        Self.scan(passive, active: false)
        world.advance(.seconds(1))
        let heard = Self.reassembled(active)
        #expect(heard.contains { $0.eventType == 0x02 && $0.data.isEmpty })
        #expect(heard.contains { $0.eventType == 0x0A && $0.data == response })
        #expect(Self.reassembled(passive).allSatisfy { $0.eventType == 0x02 })
        let notifications = advertiser.events.compactMap { event -> LEScanRequestReceived? in
            if case .leMeta(.extended(.scanRequestReceived(let request))) = event { return request }
            return nil
        }
        #expect(!notifications.isEmpty && notifications.allSatisfy { $0.scannerAddress == active.controller.publicAddress })
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// LE Extended Create Connection to a connectable extended set whose AUX_ADV_IND is on `secondary`: both ends
    /// connect on that PHY; the advertiser's host hears Connection Complete, then Advertising Set Terminated with
    /// the connection's handle; the advertiser's other set goes on advertising.
    @Test(arguments: [LEPhy.le1M, .le2M, .leCoded])
    func aConnectionFromExtendedAdvertisingStartsOnTheSecondaryPHY(secondary: LEPhy) throws {
        let world = World(devices: 3)
        let peripheral = world.hosts[0], central = world.hosts[1], scanner = world.hosts[2]
        let primary: LEPhy = secondary == .leCoded ? .leCoded : .le1M
        Self.advertise(peripheral, handle: 0, properties: [.connectable], primary: primary, secondary: secondary,
                       data: Self.payload(200))
        Self.advertise(peripheral, handle: 1, sid: 4, data: Self.payload(50, seed: 1))
        let block = LEExtendedInitiatingPHYParameters(
            scanInterval: 16, scanWindow: 16, connection: LEConnectionParameters(intervalMin: 24, intervalMax: 24, supervisionTimeout: 100))
        central.send(.extended(.leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            peer: peripheral.controller.publicAddress, le1M: block, le2M: block, leCoded: block))))
        world.advance(.seconds(1))
        let atCentral = try #require(central.connectionCompletes.first)
        let atPeripheral = try #require(peripheral.connectionCompletes.first)
        #expect(atCentral.status == .success && atPeripheral.status == .success)
        #expect(atCentral.peerAddress == peripheral.controller.publicAddress)
        let events = peripheral.events
        let completeIndex = try #require(events.firstIndex {
            if case .leMeta(.connectionComplete) = $0 { return true }
            if case .leMeta(.enhancedConnectionComplete) = $0 { return true }
            return false
        })
        let terminated = events.enumerated().compactMap { index, event -> (Int, LEAdvertisingSetTerminated)? in
            if case .leMeta(.extended(.advertisingSetTerminated(let t))) = event { return (index, t) }
            return nil
        }
        try #require(terminated.count == 1)
        #expect(terminated[0].0 > completeIndex, "after the connection complete event")
        #expect(terminated[0].1.status == .success && terminated[0].1.advertisingHandle == 0
                && terminated[0].1.connectionHandle == atPeripheral.handle)
        for (host, handle) in [(central, atCentral.handle), (peripheral, atPeripheral.handle)] {
            host.drain()
            host.send(.leReadPHY(handle: handle))
            world.loop.run()
            guard case .commandComplete(_, _, .leReadPHY(_, _, let tx, let rx)) = host.response(.leReadPHY) else {
                Issue.record("no LE Read PHY answer")
                continue
            }
            #expect(tx == secondary && rx == secondary)
        }
        // Set 1 still advertises; set 0 does not.
        scanner.drain()
        Self.scan(scanner)
        world.advance(.seconds(1))
        let heard = Self.reassembled(scanner)
        #expect(heard.contains { $0.sid == 4 })
        #expect(!heard.contains { $0.eventType & 0x01 != 0 })
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// An initiator given parameters for LE 1M only still connects to a set on 2M (with the 1M parameters) but
    /// cannot hear a set whose primary PHY is Coded.
    @Test func anInitiatorListensOnlyOnItsPrimaryPHYs() throws {
        let world = World(devices: 2)
        let peripheral = world.hosts[0], central = world.hosts[1]
        Self.advertise(peripheral, properties: [.connectable], primary: .leCoded, secondary: .leCoded)
        central.send(.extended(.leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            peer: peripheral.controller.publicAddress))))
        world.advance(.seconds(1))
        #expect(central.connectionCompletes.isEmpty)
        central.send(.leCreateConnectionCancel)
        world.advance(.milliseconds(100))
        #expect(central.connectionCompletes.first?.status == .unknownConnectionIdentifier)
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }

    /// Duration and Max_Extended_Advertising_Events end a set with LE Advertising Set Terminated 0x3C and 0x43; a
    /// scan's Duration ends it with LE Scan Timeout, and with a Period it starts again.
    @Test func durationsAndLimitsEndSetsAndScans() throws {
        let world = World(devices: 3)
        let advertiser = world.hosts[0], scanner = world.hosts[1], periodic = world.hosts[2]
        Self.advertise(advertiser, handle: 0, interval: 160, data: [1, 2, 3], duration: 50)
        Self.advertise(advertiser, handle: 1, interval: 160, data: [4, 5, 6], maxEvents: 3)
        Self.scan(scanner, duration: 100)
        Self.scan(periodic, filterDuplicates: 2, duration: 50, period: 1)
        world.advance(.seconds(3))
        let terminated = advertiser.events.compactMap { event -> LEAdvertisingSetTerminated? in
            if case .leMeta(.extended(.advertisingSetTerminated(let t))) = event { return t }
            return nil
        }
        #expect(terminated.contains { $0.advertisingHandle == 0 && $0.status == .advertisingTimeout })
        #expect(terminated.contains { $0.advertisingHandle == 1 && $0.status == .limitReached && $0.numCompletedExtendedAdvertisingEvents == 3 })
        let timeouts = scanner.events.filter { if case .leMeta(.extended(.scanTimeout)) = $0 { return true } else { return false } }
        #expect(timeouts.count == 1)
        #expect(periodic.events.allSatisfy { if case .leMeta(.extended(.scanTimeout)) = $0 { return false } else { return true } },
                "a periodic scan has no timeout")
        let settled = world.powerOffAllAndSettle()
        #expect(settled.pending == "nothing" && settled.links == 0)
    }
}
