import AdvertisingData
import BluetoothCore
import BluetoothRuntime
import HCI
import Host
import TestSupport
import Testing
import BluetoothEngine

@Suite("GAP")
struct GAPTests {
    static let peer = BluetoothAddress(0xC1_2233_4455_66, type: .random)

    static func padded(_ bytes: [UInt8]) -> [UInt8] {
        [UInt8(bytes.count)] + bytes + [UInt8](repeating: 0, count: 31 - bytes.count)
    }

    // MARK: Advertising

    @Test("advertising: exact parameters, data, scan response and enable")
    func advertisingBytes() {
        let rig = Rig()
        let result = Recorder<Result<Void, HostError>>()
        let content = AdvertisingContent(localName: "Heart", serviceUUIDs: [BluetoothUUID(0x180D)], txPowerLevel: -4)
        rig.host.startAdvertising(content) { result.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [
            hex("01 06 20 0F A0 00 A0 00 00 01 00 00 00 00 00 00 00 07 00"),
            hex("01 08 20 20") + Self.padded(hex("02 01 06 03 03 0D 18 02 0A FC")),
            hex("01 09 20 20") + Self.padded(hex("06 09 48 65 61 72 74")),
            hex("01 0A 20 01 01"),
        ])
        #expect((try? result.last?.get()) != nil)
        rig.host.stopAdvertising()
        rig.loop.run()
        #expect(rig.controller.sentBytes.last == hex("01 0A 20 01 00"))
        rig.expectNothingLeft()
    }

    @Test("non-connectable advertising: ADV_NONCONN_IND, no scan response, everything in the advertising data")
    func nonConnectable() {
        let rig = Rig()
        let content = AdvertisingContent(localName: "B", manufacturerData: (CompanyIdentifier(0x004C), [0x02, 0x15]), flags: nil)
        rig.host.startAdvertising(content, options: AdvertisingOptions(kind: .nonConnectable, intervalMin: 0x0100, intervalMax: 0x0200)) { _ in }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [
            hex("01 06 20 0F 00 01 00 02 03 01 00 00 00 00 00 00 00 07 00"),
            hex("01 08 20 20") + Self.padded(hex("05 FF 4C 00 02 15 02 09 42")),
            hex("01 0A 20 01 01"),
        ])
        rig.expectNothingLeft()
    }

    @Test("a structure that fits in neither packet is refused, naming it, and nothing is sent")
    func advertisingTooLarge() {
        let rig = Rig()
        let result = Recorder<Result<Void, HostError>>()
        let content = AdvertisingContent(localName: "A rather long device name here",
                                         manufacturerData: (CompanyIdentifier(0x0059), [UInt8](repeating: 7, count: 30)))
        rig.host.startAdvertising(content) { result.append($0) }
        rig.loop.run()
        guard case .failure(let error) = result.last else {
            Issue.record("expected a refusal")
            return
        }
        #expect(error.code == .advertisingDataTooLarge)
        #expect(error.reason.contains("Manufacturer Specific Data"))
        #expect(error.reason.contains("needs 34 octets"))
        #expect(rig.controller.sentBytes.isEmpty)

        // The name overflows from the scan response into the advertising data and then fails, named.
        let name = String(repeating: "n", count: 40)
        let tooLong = AdvertisingContent(localName: name)
        #expect(throws: HostError.self) { try tooLong.build(hasScanResponse: true) }
        do {
            _ = try tooLong.build(hasScanResponse: false)
            Issue.record("a 40-character name cannot fit")
        } catch {
            #expect(error.code == .advertisingDataTooLarge)
            #expect(error.reason.contains("Complete Local Name"))
        }
        // What overflows the advertising data moves to the scan response.
        let built = try? AdvertisingContent(
            serviceUUIDs: [BluetoothUUID(0x180D), BluetoothUUID(0x180F)],
            manufacturerData: (CompanyIdentifier(0x0059), [UInt8](repeating: 1, count: 20))).build(hasScanResponse: true)
        #expect(built?.advertisingData.encodedLength == 9)  // Flags (3) + two 16-bit UUIDs (6)
        #expect(built?.scanResponse.manufacturerData?.data.count == 20)
        rig.expectNothingLeft()
    }

    // MARK: Scanning

    @Test("scanning: exact commands; ADV_IND and SCAN_RSP merged per device")
    func scanMerging() throws {
        let rig = Rig()
        let started = Recorder<Result<Void, HostError>>()
        rig.host.startScanning(ScanOptions(active: true, interval: 0x0060, window: 0x0030, filterDuplicates: true)) {
            started.append($0)
        }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [hex("01 0B 20 07 01 60 00 30 00 01 00"), hex("01 0C 20 02 01 01")])
        #expect((try? started.last?.get()) != nil)
        let device = BluetoothAddress(0xD0_0102_0304_05, type: .random)
        let other = BluetoothAddress(0x0A0B_0C0D_0E0F)
        rig.controller.deliver(.leMeta(.advertisingReport([
            LEAdvertisingReport(eventType: .advInd, address: device, data: hex("02 01 06 03 03 0D 18"), rssi: -60),
            LEAdvertisingReport(eventType: .advNonconnInd, address: other, data: hex("03 FF 59 00"), rssi: -80),
        ])))
        rig.controller.deliver(.leMeta(.advertisingReport([
            LEAdvertisingReport(eventType: .scanResponse, address: device, data: hex("07 09 53 65 6E 73 6F 72"), rssi: -58),
        ])))
        rig.loop.run()
        let reports = rig.events.values.compactMap { event -> ScanReport? in
            if case .advertisingReport(let report) = event { report } else { nil }
        }
        #expect(reports.count == 3)
        let merged = try #require(reports.last)
        #expect(merged.address == device)
        #expect(merged.localName == "Sensor")
        #expect(merged.advertisingData.serviceUUIDs == [BluetoothUUID(0x180D)])
        #expect(merged.isConnectable)
        #expect(merged.rssi == -58)
        #expect(merged.eventType == .scanResponse)
        #expect(merged.rawScanResponse == hex("07 09 53 65 6E 73 6F 72"))
        #expect(reports[0].localName == nil)
        #expect(reports[1].isConnectable == false)
        #expect(reports[1].advertisingData.manufacturerData?.company == CompanyIdentifier(0x0059))
        rig.host.stopScanning()
        rig.loop.run()
        #expect(rig.controller.sentBytes.last == hex("01 0C 20 02 00 00"))
        // Reports after the scan stopped are not delivered.
        rig.controller.deliver(.leMeta(.advertisingReport([
            LEAdvertisingReport(eventType: .advInd, address: device, data: [], rssi: -60),
        ])))
        rig.loop.run()
        #expect(rig.events.count == 3)
        rig.expectNothingLeft()
    }

    @Test("passive scan without duplicate filter; bad interval/window refused")
    func passiveScan() {
        let rig = Rig()
        rig.host.startScanning(ScanOptions(active: false, interval: 0x0010, window: 0x0010, filterDuplicates: false)) { _ in }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [hex("01 0B 20 07 00 10 00 10 00 01 00"), hex("01 0C 20 02 01 00")])
        let refused = Recorder<Result<Void, HostError>>()
        rig.host.startScanning(ScanOptions(interval: 0x0010, window: 0x0020)) { refused.append($0) }
        rig.loop.run()
        if case .failure(let error) = refused.last { #expect(error.code == .invalidParameters) } else { Issue.record("expected refusal") }
        rig.host.stopScanning()
        rig.expectNothingLeft()
    }

    // MARK: Connecting

    @Test("connect then cancel: the connect reports cancelled; the late Unknown Connection Identifier is swallowed")
    func connectCancel() {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer) { connect.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [
            hex("01 0D 20 19 60 00 60 00 00 01 66 55 44 33 22 C1 01 18 00 28 00 00 00 F4 01 00 00 00 00"),
        ])
        // A pending connect has no time limit of its own.
        #expect(rig.loop.pendingWorkDescription == "nothing")
        rig.loop.advance(by: .seconds(600))
        #expect(connect.count == 0)
        let busy = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer) { busy.append($0) }
        rig.loop.run()
        if case .failure(let error) = busy.last { #expect(error.code == .busy) } else { Issue.record("expected busy") }

        let cancelled = Recorder<Result<Void, HostError>>()
        rig.host.cancelConnect(to: Self.peer) { cancelled.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes.last == hex("01 0E 20 00"))
        if case .failure(let error) = connect.last { #expect(error.code == .cancelled) } else { Issue.record("expected cancelled") }
        #expect((try? cancelled.last?.get()) != nil)
        rig.controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            status: .unknownConnectionIdentifier, handle: 0, role: .central, peerAddressType: .random, peerAddress: Self.peer,
            connectionInterval: 0, supervisionTimeout: 0))))
        rig.loop.run()
        #expect(connect.count == 1)
        #expect(rig.events.count == 0)
        rig.expectNothingLeft()
    }

    @Test("a connect with its own time limit is cancelled and reported as timed out")
    func connectTimeout() {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer, options: ConnectOptions(timeout: .seconds(5))) { connect.append($0) }
        rig.loop.advance(by: .milliseconds(4999))
        #expect(connect.count == 0)
        rig.loop.advance(by: .milliseconds(1))
        #expect(rig.controller.sentCommands.map(\.opcode) == [.leCreateConnection, .leCreateConnectionCancel])
        if case .failure(let error) = connect.last { #expect(error.code == .timedOut) } else { Issue.record("expected timeout") }
        rig.expectNothingLeft()
    }

    @Test("connect succeeds: connected event then completion; the central updates parameters; disconnect with a reason")
    func connectUpdateDisconnect() throws {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer) { connect.append($0) }
        rig.loop.run()
        rig.connect(handle: 0x0040, role: .central, peer: Self.peer)
        let connection = try #require(try connect.last?.get())
        #expect(connection.handle == 0x0040 && connection.role == .central && connection.peer == Self.peer)
        guard case .connected(let reported) = rig.events.values.first else {
            Issue.record("expected connected first")
            return
        }
        #expect(reported == connection)
        rig.controller.clearSent()

        let updated = Recorder<Result<Connection, HostError>>()
        let parameters = LEConnectionParameters(intervalMin: 6, intervalMax: 12, maxLatency: 0, supervisionTimeout: 100)
        rig.host.updateConnectionParameters(connectionHandle: 0x0040, parameters) { updated.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [hex("01 13 20 0E 40 00 06 00 0C 00 00 00 64 00 00 00 00 00")])
        #expect(rig.host.resources.pendingOperations == 1)
        rig.controller.deliver(.leMeta(.connectionUpdateComplete(status: .success, handle: 0x0040, connectionInterval: 12,
                                                                  peripheralLatency: 0, supervisionTimeout: 100)))
        rig.loop.run()
        #expect((try? updated.last?.get())?.parameters == ConnectionParameters(interval: 12, latency: 0, supervisionTimeout: 100))
        guard case .connectionUpdated(let after) = rig.events.last else {
            Issue.record("expected connectionUpdated")
            return
        }
        #expect(after.parameters.interval == 12)
        rig.controller.clearSent()

        let disconnected = Recorder<Result<HCIStatus, HostError>>()
        rig.host.disconnect(connectionHandle: 0x0040, reason: .remoteUserTerminatedConnection) { disconnected.append($0) }
        rig.loop.run()
        #expect(rig.controller.sentBytes == [hex("01 06 04 03 40 00 13")])
        rig.controller.deliver(.disconnectionComplete(status: .success, handle: 0x0040, reason: .connectionTerminatedByLocalHost))
        rig.loop.run()
        #expect((try? disconnected.last?.get()) == .connectionTerminatedByLocalHost)
        #expect(rig.host.openConnections.isEmpty)
        rig.expectNothingLeft()
    }

    @Test("a directed advertising timeout does not fail a pending connect")
    func advertisingTimeoutIsNotAConnectFailure() {
        let rig = Rig()
        let connect = Recorder<Result<Connection, HostError>>()
        rig.host.connect(to: Self.peer) { connect.append($0) }
        rig.controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            status: .advertisingTimeout, handle: 0, role: .peripheral, peerAddressType: .public, peerAddress: .zero,
            connectionInterval: 0, supervisionTimeout: 0))))
        rig.loop.run()
        #expect(connect.count == 0)
        rig.controller.deliver(.leMeta(.connectionComplete(LEConnectionComplete(
            status: .rejectedLimitedResources, handle: 0, role: .central, peerAddressType: .random, peerAddress: Self.peer,
            connectionInterval: 0, supervisionTimeout: 0))))
        rig.loop.run()
        if case .failure(let error) = connect.last {
            #expect(error.code == .commandFailed && error.status == .rejectedLimitedResources)
        } else {
            Issue.record("expected the connect to fail")
        }
        rig.expectNothingLeft()
    }

    @Test("a pending parameter update fails when the link drops")
    func updateFailsOnDisconnect() {
        let rig = Rig()
        rig.connect(handle: 0x0005)
        let updated = Recorder<Result<Connection, HostError>>()
        rig.host.updateConnectionParameters(connectionHandle: 0x0005, LEConnectionParameters()) { updated.append($0) }
        rig.loop.run()
        rig.controller.deliver(.disconnectionComplete(status: .success, handle: 0x0005, reason: .connectionTimeout))
        rig.loop.run()
        if case .failure(let error) = updated.last { #expect(error.code == .disconnected) } else { Issue.record("expected failure") }
        rig.expectNothingLeft()
    }

    @Test("the peer's connection parameter request is accepted by default, rejected when configured")
    func remoteParameterRequest() {
        let rig = Rig()
        rig.connect(handle: 0x0040)
        rig.controller.clearSent()
        rig.controller.deliver(.leMeta(.remoteConnectionParameterRequest(handle: 0x0040, intervalMin: 8, intervalMax: 16,
                                                                          maxLatency: 2, timeout: 300)))
        rig.loop.run()
        #expect(rig.controller.sentBytes == [hex("01 20 20 0E 40 00 08 00 10 00 02 00 2C 01 00 00 00 00")])
        // The peripheral side learns of the new parameters from the update complete alone.
        rig.controller.deliver(.leMeta(.connectionUpdateComplete(status: .success, handle: 0x0040, connectionInterval: 16,
                                                                  peripheralLatency: 2, supervisionTimeout: 300)))
        rig.loop.run()
        if case .connectionUpdated(let connection) = rig.events.last {
            #expect(connection.parameters == ConnectionParameters(interval: 16, latency: 2, supervisionTimeout: 300))
        } else {
            Issue.record("expected connectionUpdated")
        }
        rig.expectNothingLeft()

        var configuration = Rig.defaultConfiguration
        configuration.acceptsConnectionParameterRequests = false
        let strict = Rig(configuration: configuration)
        strict.connect(handle: 0x0041)
        strict.controller.clearSent()
        strict.controller.deliver(.leMeta(.remoteConnectionParameterRequest(handle: 0x0041, intervalMin: 8, intervalMax: 16,
                                                                             maxLatency: 2, timeout: 300)))
        strict.loop.run()
        #expect(strict.controller.sentBytes == [hex("01 21 20 03 41 00 3B")])
        strict.expectNothingLeft()
    }

    // MARK: Link queries and Bumble's quirks

    @Test("Read RSSI on a controller that has it")
    func readRSSI() {
        let rig = Rig()
        rig.connect(handle: 0x0040)
        let rssi = Recorder<Result<Int8, HostError>>()
        rig.host.readRSSI(connectionHandle: 0x0040) { rssi.append($0) }
        rig.loop.run()
        #expect((try? rssi.last?.get()) == -42)
        #expect(rig.controller.sentBytes.last == hex("01 05 14 02 40 00"))
        rig.expectNothingLeft()
    }

    @Test("Bumble's quirks: Read RSSI unknown, Set Data Length 0x01, Set PHY ignored — clean failures, the stack keeps working")
    func bumbleQuirks() {
        var model = ControllerModel()
        model.unknown = [.readRSSI, .leSetDataLength]
        model.ignored = [.leSetPHY]
        let rig = Rig(model: model)
        rig.connect(handle: 0x0040)
        let rssi = Recorder<Result<Int8, HostError>>()
        rig.host.readRSSI(connectionHandle: 0x0040) { rssi.append($0) }
        let length = Recorder<Result<Bool, HostError>>()
        rig.host.requestDataLength(connectionHandle: 0x0040) { length.append($0) }
        let phy = Recorder<Result<Void, HostError>>()
        rig.host.setPHY(connectionHandle: 0x0040) { phy.append($0) }
        rig.loop.run()
        if case .failure(let error) = rssi.last { #expect(error.code == .unsupported) } else { Issue.record("expected unsupported") }
        #expect((try? length.last?.get()) == false)
        #expect(phy.count == 0)
        rig.loop.advance(by: .seconds(2))
        if case .failure(let error) = phy.last { #expect(error.code == .unresponsiveController) } else { Issue.record("expected timeout") }
        // Still working: advertising goes through.
        let advertising = Recorder<Result<Void, HostError>>()
        rig.host.startAdvertising(AdvertisingContent(localName: "ok")) { advertising.append($0) }
        rig.loop.run()
        #expect((try? advertising.last?.get()) != nil)
        rig.expectNothingLeft()
    }

    @Test("encryption changes pass through and mark the connection")
    func encryptionPassThrough() {
        let rig = Rig()
        rig.connect(handle: 0x0040)
        rig.controller.deliver(.encryptionChange(status: .success, handle: 0x0040, encryptionEnabled: 1))
        rig.controller.deliver(.leMeta(.longTermKeyRequest(handle: 0x0040, randomNumber: 9, encryptedDiversifier: 3)))
        rig.loop.run()
        #expect(rig.host.openConnections.first?.isEncrypted == true)
        let kinds = rig.events.values.map { event -> String in
            switch event {
            case .connected: "connected"
            case .encryptionChanged(let handle, let status, let enabled): "encryption \(handle) \(status == .success) \(enabled)"
            case .longTermKeyRequest(let handle, let random, let ediv): "ltk \(handle) \(random) \(ediv)"
            default: "other"
            }
        }
        #expect(kinds == ["connected", "encryption 64 true true", "ltk 64 9 3"])
        rig.expectNothingLeft()
    }
}
