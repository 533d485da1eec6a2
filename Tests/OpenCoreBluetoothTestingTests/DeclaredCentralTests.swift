import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Testing

/// Declared centrals against a peripheral app (issue 28 item 2): the app's answers as the phone sees them, and
/// Apple's rule on a peripheral manager's services: kept through `.poweredOff`, gone through `.resetting`.
@Suite struct DeclaredCentralTests {
    static func connect(_ phone: SimulatedCentral) async throws -> SimulatedCentralLink {
        try await phone.connect(try await phone.scan(forService: probeService, within: .seconds(30)))
    }

    @Test("the app's answers reach the phone: a value, and an ATT error as CBATTError")
    func theAppsAnswers() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let app = world.run { ProbePeripheralApp() }
        let phone = try await world.simulateCentral(CentralSpec(name: "Pixel", proximity: .far, personality: .android))
        let found = try await phone.scan(forService: probeService)
        // 30 m away: about −70 dBm.
        #expect((-80 ... -60).contains(found.rssi), "\(found)")
        #expect(found.isConnectable)
        let link = try await phone.connect(found)
        // The phone offers 517, the app's iPhone 185 (the world's default): the smaller one holds (Vol 3 Part F §3.4.2.2).
        #expect(link.attMTU == 185)
        #expect(try await link.read(probeOpenUUID) == Data("open".utf8))
        do {
            _ = try await link.read(probeLockedUUID)
            Issue.record("the locked read succeeded")
        } catch let error as CBATTError {
            #expect(error.code == .insufficientAuthorization)
        }
        withExtendedLifetime(app) {}
    }

    @Test("services survive the app's Bluetooth switched off and on, but not the system's Bluetooth resetting")
    func servicesThroughOffAndReset() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let app = world.run { ProbePeripheralApp() }
        let phone = try await world.simulateCentral()
        let first = try await Self.connect(phone)
        #expect(first.services.contains(probeService))

        world.simulatePowerOff()
        #expect(await world.eventually(within: .seconds(30)) { !first.isConnected })
        world.simulatePowerOn()
        let second = try await Self.connect(phone)
        #expect(second.services.contains(probeService), "\(second.services)")
        #expect(try await second.read(probeOpenUUID) == Data("open".utf8))

        world.simulateReset()
        #expect(await world.eventually(within: .seconds(30)) { !second.isConnected })
        let third = try await Self.connect(phone)
        // Apple: below .poweredOff the local database is cleared; this app did not add its service again.
        #expect(!third.services.contains(probeService), "\(third.services)")
        #expect(app.log.filter { $0.hasPrefix("state") } == ["state 5", "state 4", "state 5", "state 1", "state 5"], "\(app.log)")
        #expect(app.log.filter { $0 == "added" }.count == 1, "\(app.log)")
    }
}
