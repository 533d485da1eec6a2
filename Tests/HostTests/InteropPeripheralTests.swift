import AdvertisingData
import BluetoothCore
import BluetoothRuntime
import Foundation
import GATT
import HCI
import Host
import Testing
import BluetoothEngine

/// Issue 4 item 7, second half: a **Bumble central** (Interop/peers/bumble_gatt_central.py, Google's GATT client,
/// which we did not write) against **our GATT server** (HostStack advertising the interop database), on our
/// virtual controller, Bumble's stock controller and RootCanal.
///
/// Covered on each: our legacy advertising found by Bumble's scan (name in the advertising data), a connection we
/// accept as peripheral, the MTU exchange Bumble asks for (517 on our air, where every value then fits one
/// response; 247 on the others, where 512 octets take Read + 2 Read Blob), discovery, a read, a long read of 512 octets
/// (Read + Read Blob), Write Request, Write Command, a long write (Bumble's prepared writes), a reliable write of
/// two characteristics (Prepare Write Requests of both, echoes checked, one Execute Write), everything read back
/// and reported by our server, the 500 characteristics of 0...512 octets all read back whole by Bumble,
/// notifications and indications (confirmed by Bumble), and the disconnect Bumble makes.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct InteropPeripheralTests {
    @Test(.enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"))
    func bumbleCentralOnOurAirAgainstOurServer() async throws {
        try await InteropPeripheralScenario.run(.ourAir)
    }

    @Test(.enabled(if: InteropEnvironment.bumbleEnabled, "no Python with Bumble (set OCB_PYTHON)"))
    func bumbleCentralOnBumbleControllerAgainstOurServer() async throws {
        try await InteropPeripheralScenario.run(.bumble)
    }

    @Test(.enabled(if: InteropEnvironment.bumbleEnabled && InteropEnvironment.rootCanalEnabled,
                   "no Python with Bumble and rootcanal (set OCB_PYTHON)"))
    func bumbleCentralOnRootCanalAgainstOurServer() async throws {
        try await InteropPeripheralScenario.run(.rootCanal)
    }
}

/// The scenario of ``InteropPeripheralTests`` on one kind of controller.
enum InteropPeripheralScenario {
    static let ourAddress = BluetoothAddress(0xC0CB_0000_0002, type: .random)
    static let centralAddress = BluetoothAddress(0xF00C_B100_0002, type: .random)
    static let ourName = "OCB-Host"

    /// The MTU Bumble's central asks for: the largest on our air, a common one elsewhere (long reads need blobs).
    static func mtu(_ kind: InteropControllerKind) -> Int { kind == .ourAir ? 517 : 247 }

    static func run(_ kind: InteropControllerKind) async throws {
        guard let python = InteropEnvironment.python else {
            Issue.record("OCB_REQUIRE_INTEROP=1 but no Python with Bumble was found (set OCB_PYTHON)")
            return
        }
        let controllers = try InteropControllers.start(kind)
        defer { controllers.stop() }
        let configuration = HostConfiguration(commandTimeout: .seconds(2), address: .fixedRandom(ourAddress))
        let ours = try await InteropHost(port: controllers.hostPort, label: "peripheral", configuration: configuration,
                                         controllerAlive: { controllers.isRunning })
        defer { ours.shutdown() }
        let info = try await ours.start()
        #expect(info.ownAddress == ourAddress, "\(kind): own address \(info.ownAddress), warnings \(info.warnings)")

        let database = try InteropDatabase.make(deviceName: ourName)
        let handles = Dictionary(database.services.flatMap(\.characteristics).map { ($0.uuid, $0.value) },
                                 uniquingKeysWith: { first, _ in first })
        guard let notifyHandle = handles[InteropDatabase.notify], let indicateHandle = handles[InteropDatabase.indicate] else {
            throw InteropFailure("the database has no notify/indicate characteristic")
        }
        let _: Bool = try await InteropHost.wait(10, "set the database") { done in
            ours.host.setGATTDatabase(database) { done(true) }
        }

        // Subscriptions make us send: all notifications at once, each indication after the previous one's
        // confirmation (one outstanding per bearer).
        let indicationsSent = LockedValue(0)
        let host = ours.host
        ours.react { event in
            switch event {
            case .gattServer(.subscriptionChanged(_, notifyHandle, let configuration)) where configuration.contains(.notification):
                for value in InteropDatabase.notifications { host.updateValue(value, handle: notifyHandle) }
            case .gattServer(.subscriptionChanged(_, indicateHandle, let configuration)) where configuration.contains(.indication):
                indicationsSent.store(1)
                host.updateValue(InteropDatabase.indications[0], handle: indicateHandle)
            case .gattIndicationConfirmed(_, indicateHandle):
                let next = indicationsSent.withLock { sent -> Int? in
                    guard sent < InteropDatabase.indications.count else { return nil }
                    sent += 1
                    return sent - 1
                }
                if let next { host.updateValue(InteropDatabase.indications[next], handle: indicateHandle) }
            default:
                break
            }
        }

        // The name goes in the advertising data itself: Bumble's controller never sends scan responses.
        let advertisingData = AdvertisingData([.flags(.generalDiscoverableLEOnly), .localName(LocalName(ourName), complete: true)])
        let scanResponse = AdvertisingData([.serviceUUIDs128([InteropDatabase.mainService], complete: true)])
        let advertising: Result<Void, HostError> = try await InteropHost.wait(10, "start advertising") { done in
            ours.host.startAdvertising(advertisingData: advertisingData, scanResponse: scanResponse,
                                       options: AdvertisingOptions(intervalMin: 0x0020, intervalMax: 0x0030)) { done($0) }
        }
        try advertising.get()

        let central = try InteropProcess("bumble-gatt-central", executable: python, arguments: [
            InteropEnvironment.peersDirectory + "/bumble_gatt_central.py", "--port", "\(controllers.peerPort)",
            "--address", centralAddress.string, "--peer", ourAddress.string, "--name", ourName, "--mtu", "\(mtu(kind))",
        ])
        defer { central.kill() }
        do {
            try await check(kind, ours, central, handles: handles)
        } catch {
            Issue.record("\(kind): \(error)\n\(controllers.transcript)")
            throw error
        }
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func check(_ kind: InteropControllerKind, _ ours: InteropHost, _ central: InteropProcess,
                      handles: [BluetoothUUID: UInt16]) async throws {
        let started = Date()
        let result = try await central.waitForEvent("result", seconds: 150)
        print("interop \(kind): Bumble's central ran its procedures against our server in "
              + String(format: "%.1f s", Date().timeIntervalSince(started)))

        #expect(result.string("scanned") == ourAddress.string, "\(kind): Bumble's scan found \(String(describing: result.string("scanned")))")
        let mtu = mtu(kind)
        #expect(result.int("mtu") == mtu, "\(kind)")
        let services = result.strings("services") ?? []
        #expect(services.contains(InteropDatabase.mainService.description.uppercased()) || services.contains { $0.uppercased().contains("5E1F0001") },
                "\(kind): services \(services)")
        #expect((result.int("characteristics") ?? 0) >= 9 + InteropDatabase.bigCount, "\(kind)")
        #expect(result.bytes("read") == InteropDatabase.readValue, "\(kind): read")
        #expect(result.bytes("longRead") == InteropDatabase.longReadValue, "\(kind): long read")
        let readBack = result.child("readBack")
        for (name, _, value) in InteropDatabase.writtenValues {
            #expect(readBack?.bytes(name) == value, "\(kind): \(name) read back by Bumble")
        }
        let parts = [InteropDatabase.reliable1Value.count, InteropDatabase.reliable2Value.count]
            .reduce(0) { $0 + ($1 + mtu - 6) / (mtu - 5) }
        #expect(result.int("reliablePrepares") == parts, "\(kind)")
        #expect(result.int("bigRead") == InteropDatabase.bigCount, "\(kind)")
        #expect(result.array("bigMismatches")?.isEmpty == true, "\(kind): \(String(describing: result.array("bigMismatches")))")
        #expect(result.int("bigBytes") == (0..<InteropDatabase.bigCount).reduce(0) { $0 + InteropDatabase.bigLength($1) })
        #expect(result.strings("notifications") == InteropDatabase.notifications.map(hex), "\(kind)")
        #expect(result.strings("indications") == InteropDatabase.indications.map(hex), "\(kind)")

        // Our side: the server saw each value written whole, Bumble confirmed both indications, and the link ended
        // with Bumble's disconnect.
        try await ours.waitForEvents(10, "disconnection") { events in
            events.contains { if case .disconnected = $0 { true } else { false } }
        }
        let events = ours.events
        for (name, uuid, value) in InteropDatabase.writtenValues {
            let written = events.compactMap { event -> [UInt8]? in
                if case .gattServer(.valueWritten(_, handles[uuid], let value)) = event { value } else { nil }
            }
            #expect(written.last == value, "\(kind): our server got \(name) (\(written.map(\.count)) octets)")
        }
        let confirmed = events.filter { if case .gattIndicationConfirmed = $0 { true } else { false } }.count
        #expect(confirmed == InteropDatabase.indications.count, "\(kind)")
        let mtus = events.compactMap { event -> Int? in if case .attMTUChanged(_, let mtu) = event { mtu } else { nil } }
        #expect(mtus == [mtu], "\(kind)")
        let reasons = events.compactMap { event -> HCIStatus? in if case .disconnected(_, let reason) = event { reason } else { nil } }
        #expect(reasons == [.remoteUserTerminatedConnection], "\(kind)")
        let left = try await ours.onLoop { host in (host.openConnections.count, host.resources.isQuiescent, "\(host.resources)") }
        #expect(left.0 == 0)
        #expect(left.1, "\(kind): \(left.2)")
    }
}
