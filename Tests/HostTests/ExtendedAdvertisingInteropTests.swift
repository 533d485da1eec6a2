import AdvertisingData
import BluetoothCore
import Foundation
import HCI
import Host
import Testing
import BluetoothEngine

/// Extended advertising against code we did not write (issue 15 items 1 and 5): Bumble's host
/// (Interop/peers/bumble_extended_peer.py) and our host on one controller, ours, Bumble's stock controller and
/// RootCanal in turn. Bumble advertises 240 octets in extended PDUs on LE 2M (Bumble sends a set's data in one LE Set
/// Extended Advertising Data, so 251 at most; our controller's own tests go to 1,650) and our host's scan report
/// carries them whole, joined from two reports, with the PHYs; our host advertises 200 octets (connectable extended
/// advertising on LE 2M), Bumble's extended scan joins them, and Bumble connects with LE Extended Create Connection.
///
/// Not on Bumble's stock controller: it sets LE feature bit 12 but none of the extended commands in Supported_Commands,
/// so our host stays with the legacy commands there (InteropCentralTests and InteropPeripheralTests run that).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ExtendedAdvertisingInteropTests {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0011, type: .random)
    static let peerAddress = BluetoothAddress(0xF00C_B100_0011, type: .random)

    static var enabled: Bool { InteropEnvironment.bumbleEnabled && InteropEnvironment.rootCanalEnabled }

    @Test(.enabled(if: enabled, "no Python with Bumble and rootcanal (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.ourAir, .rootCanal])
    func ourScanHearsBumblesLongExtendedAdvertising(on kind: InteropControllerKind) async throws {
        let python = try #require(InteropEnvironment.python)
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        let ours = try await InteropHost(port: controllers.hostPort, label: "scanner",
                                         configuration: HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(Self.ourAddress)),
                                         controllerAlive: { controllers.isRunning })
        defer { ours.shutdown() }
        let info = try await ours.start()
        #expect(info.usesExtendedAdvertising, "\(kind): the host uses the extended commands")
        let peer = try InteropProcess("bumble-extended-advertiser", executable: python, arguments: [
            InteropEnvironment.peersDirectory + "/bumble_extended_peer.py", "--port", "\(controllers.peerPort)",
            "--address", Self.peerAddress.string, "--timeout", "60", "advertise", "--length", "240", "--phy", "2M",
        ])
        defer { peer.kill() }
        let ready = try await peer.waitForEvent("ready", seconds: 30)
        let sent = try #require(ready.bytes("data"))
        #expect(sent.count == 240)
        let started: Result<Void, HostError> = try await InteropHost.wait(10, "start scanning") { done in
            ours.host.startScanning(ScanOptions(active: false, filterDuplicates: false)) { done($0) }
        }
        try started.get()
        let whole: @Sendable ([HostEvent]) -> Bool = { events in
            events.contains { if case .advertisingReport(let report) = $0 { report.rawAdvertisingData.count == 240 } else { false } }
        }
        try await ours.waitForEvents(20, "a 240-octet extended advertisement", whole)
        let report = try #require(ours.events.lazy.compactMap { event -> ScanReport? in
            if case .advertisingReport(let report) = event, report.rawAdvertisingData.count == 240 { report } else { nil }
        }.first)
        #expect(report.rawAdvertisingData == sent, "\(kind): the data arrived byte for byte")
        #expect(report.address == Self.peerAddress)
        #expect(!report.isLegacy && report.secondaryPHY == .le2M && report.primaryPHY == .le1M && report.advertisingSID == 5, "\(kind)")
        #expect(report.localName == "OCB-Ext" && !report.isConnectable)
    }

    @Test(.enabled(if: enabled, "no Python with Bumble and rootcanal (set OCB_PYTHON)"),
          arguments: [InteropControllerKind.ourAir, .rootCanal])
    func bumbleHearsAndConnectsToOurConnectableExtendedAdvertising(on kind: InteropControllerKind) async throws {
        let python = try #require(InteropEnvironment.python)
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        let ours = try await InteropHost(port: controllers.hostPort, label: "advertiser",
                                         configuration: HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(Self.ourAddress)),
                                         controllerAlive: { controllers.isRunning })
        defer { ours.shutdown() }
        let info = try await ours.start()
        #expect(info.usesExtendedAdvertising, "\(kind): the host uses the extended commands")
        let name = "OCB-ours-ext"
        let payload = (0..<180).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        let content = AdvertisingContent(localName: name, manufacturerData: (CompanyIdentifier(0x05F1), payload))
        let advertising: Result<Void, HostError> = try await InteropHost.wait(10, "start advertising") { done in
            ours.host.startAdvertising(content, options: AdvertisingOptions(kind: .connectable, secondaryPHY: .le2M)) { done($0) }
        }
        try advertising.get()
        let peer = try InteropProcess("bumble-extended-scanner", executable: python, arguments: [
            InteropEnvironment.peersDirectory + "/bumble_extended_peer.py", "--port", "\(controllers.peerPort)",
            "--address", Self.peerAddress.string, "--timeout", "60", "scan", "--name", name, "--connect",
        ])
        defer { peer.kill() }
        let heard = try await peer.waitForEvent("advertisement", seconds: 30)
        let data = try #require(heard.bytes("data"))
        #expect(data.count == 3 + 2 + name.utf8.count + 4 + payload.count, "\(kind): \(data.count) octets")
        #expect(AdvertisingData.lenient(data).manufacturerData?.data == payload, "\(kind)")
        #expect(heard.bool("legacy") == false && heard.bool("connectable") == true && heard.bool("truncated") == false)
        #expect(heard.int("primaryPhy") == 1 && heard.int("secondaryPhy") == 2, "\(kind): LE 1M then LE 2M")
        let connected = try await peer.waitForEvent("connected", seconds: 20)
        if kind == .rootCanal {
            // RootCanal 1.10 starts every connection on LE 1M (it does not model AUX_CONNECT_REQ's PHY).
            #expect(connected.int("txPhy") == 1 && connected.int("rxPhy") == 1, "\(kind): \(connected)")
        } else {
            #expect(connected.int("txPhy") == 2 && connected.int("rxPhy") == 2, "\(kind): the connection starts on LE 2M")
        }
        _ = try await peer.waitForEvent("done", seconds: 20)
    }
}

extension AdvertisingData {
    /// AD structures of untrusted bytes, as the host's scan merger reads them.
    static func lenient(_ bytes: [UInt8]) -> AdvertisingData {
        (try? AdvertisingData(decoding: bytes, kind: .extended, lenient: true)) ?? AdvertisingData()
    }
}
