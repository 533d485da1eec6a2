import BluetoothCore
import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Testing

/// The world driven from a test beyond its peripherals (issue 28 items 3, 4 and 7): a request never answered (the
/// app's 30-second ATT timeout, on virtual time), the user's "Don't Allow", and the app's foreground and background.
@Suite struct WorldStateTests {
    @Test("a write never answered: the app's ATT transaction times out after 30 s and the link ends")
    func aWriteNeverAnswered() async throws {
        let behaviour = ScriptedBehaviour()
        behaviour.answerWrites(of: controlUUID, with: .never)
        // Virtual time (issue 28 item 4), with the generous limits it needs on a loaded machine (SimulatedWorld.Time).
        let world = try SimulatedWorld(time: .virtual)
        defer { world.shutdown() }
        let (_, app) = try await SimulatedWorldTests.ready(sensor(delegate: behaviour), in: world, within: .seconds(120))
        app.reconnects = false
        let asked = world.now, wallAsked = ContinuousClock.now
        app.write(Data([0x07]), to: controlUUID)
        #expect(await world.eventually(within: .seconds(120), on: app.queue) { app.log.contains { $0.hasPrefix("disconnected") } },
                "\(app.log) \(world.clockSummary)")
        // At least 30 s of the world's time, less than that on the wall clock.
        let waited = world.now - asked, wall = ContinuousClock.now - wallAsked
        #expect(waited >= .seconds(30), "\(waited)")
        #expect(wall < waited, "\(wall) of wall clock for \(waited) of world time")
        print("ATT timeout test: \(waited) of world time in \(wall) of wall clock")
        // The write fails with the link, then the link is gone.
        let tail = Array(app.log.suffix(2))
        #expect(tail.first?.hasPrefix("wrote \(controlUUID) error") == true, "\(app.log)")
        #expect(world.exchanges.map(\.description).contains("Sensor: write 07 to \(controlUUID) with response"))
    }

    @Test("the user's Don't Allow: the app's manager is .unauthorized and finds nothing")
    func bluetoothNotAllowed() async throws {
        let world = try SimulatedWorld(application: OCBApplication(authorization: .denied))
        defer { world.shutdown() }
        try await world.simulatePeripheral(sensor())
        let app = world.run { ProbeApp(service: sensorService) }
        #expect(await world.eventually(on: app.queue) { app.log.contains("state \(CBManagerState.unauthorized.rawValue)") }, "\(app.log)")
        try await Task.sleep(for: .milliseconds(500))
        #expect(!app.log.contains { $0.hasPrefix("discovered") })
    }

    @Test("suspended, the app hears nothing; back in the foreground, what waited arrives and it connects")
    func suspendedThenForeground() async throws {
        let world = try SimulatedWorld(application: OCBApplication(state: .suspended))
        defer { world.shutdown() }
        try await world.simulatePeripheral(sensor())
        let app = world.run { ProbeApp(service: sensorService) }
        try await Task.sleep(for: .seconds(1))
        #expect(!app.log.contains("connected"), "\(app.log)")
        world.application.enter(.foreground)
        #expect(await world.eventually(within: .seconds(20), on: app.queue) { app.log.contains("ready") }, "\(app.log)")
    }
}
