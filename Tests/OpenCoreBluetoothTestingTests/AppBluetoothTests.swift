import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Testing

/// The app's own Bluetooth driven from a test (issue 28 item 3): the user's switch, the system's Bluetooth service
/// restarting, and a controller that stops answering. The app is ``ProbeApp``, which discovers again whenever it is
/// powered on (Apple: peripherals obtained before are invalid once Bluetooth was off).
@Suite struct AppBluetoothTests {
    static func count(_ entry: String, in log: [String]) -> Int { log.filter { $0 == entry }.count }

    @Test("switched off: .poweredOff with no didDisconnect, the peripheral's link times out; on again: found and connected anew")
    func switchedOffAndOn() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (_, app) = try await SimulatedWorldTests.ready(sensor(), in: world)
        app.reconnects = false
        world.simulatePowerOff()
        #expect(world.bluetooth.power == .off)
        #expect(await world.eventually(on: app.queue) { app.log.contains("state \(CBManagerState.poweredOff.rawValue)") }, "\(app.log)")
        // The peripheral sees the app's device go silent: its link ends by supervision timeout.
        #expect(await world.eventually(within: .seconds(30)) { world.exchanges.last?.kind == .disconnected }, "\(world.exchanges)")
        // iOS 10 and later: no didDisconnect when Bluetooth goes away.
        #expect(!app.log.contains { $0.hasPrefix("disconnected") }, "\(app.log)")
        // A manager made while Bluetooth is off starts .poweredOff (then released: the sensor takes one link).
        do {
            let late = world.run { ProbeApp(service: sensorService) }
            #expect(await world.eventually(on: late.queue) { late.log == ["state \(CBManagerState.poweredOff.rawValue)"] }, "\(late.log)")
        }

        world.simulatePowerOn()
        #expect(await world.eventually(within: .seconds(30), on: app.queue) { Self.count("ready", in: app.log) == 2 }, "\(app.log)")
        let states = app.log.filter { $0.hasPrefix("state") }
        #expect(states == ["state 5", "state 4", "state 5"], "\(app.log)")
        #expect(world.exchanges.map(\.kind) == [.connected, .disconnected, .connected], "\(world.exchanges)")
    }

    @Test("the system's Bluetooth service restarts: .resetting, then .poweredOn on a new controller")
    func systemReset() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (_, app) = try await SimulatedWorldTests.ready(sensor(), in: world)
        world.simulateReset()
        #expect(await world.eventually(within: .seconds(30), on: app.queue) { Self.count("ready", in: app.log) == 2 }, "\(app.log)")
        let states = app.log.filter { $0.hasPrefix("state") }
        #expect(states == ["state 5", "state 1", "state 5"], "\(app.log)")
        #expect(world.bluetooth.power == .on)
    }

    @Test("a controller that stops answering: the next command times out, the system resets Bluetooth, the app carries on")
    func unresponsiveController() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (_, app) = try await SimulatedWorldTests.ready(sensor(), in: world)
        app.reconnects = false
        world.simulateUnresponsiveController()
        // Reading the RSSI is an HCI command (LE Read RSSI): it gets no answer.
        app.readRSSI()
        #expect(await world.eventually(within: .seconds(30), on: app.queue) { app.log.contains("state \(CBManagerState.resetting.rawValue)") },
                "\(app.log)")
        #expect(await world.eventually(within: .seconds(30), on: app.queue) { Self.count("ready", in: app.log) == 2 }, "\(app.log)")
        let states = app.log.filter { $0.hasPrefix("state") }
        #expect(states == ["state 5", "state 1", "state 5"], "\(app.log)")
        // The silent controller's link timed out on the peripheral's side before the app connected again.
        let kinds = world.exchanges.map(\.kind)
        #expect(kinds.filter { $0 == .connected }.count == 2 && kinds.contains(.disconnected), "\(world.exchanges)")
    }

    @Test("switched off and on again while the app's first stack is still opening: one stack, .poweredOn, ready once")
    func switchedWhileOpening() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        try await world.simulatePeripheral(sensor())
        let app = world.run { ProbeApp(service: sensorService) }
        world.simulatePowerOff()
        world.simulatePowerOn()
        #expect(await world.eventually(on: app.queue) { app.log.contains("ready") }, "\(app.log)")
        try await Task.sleep(for: .milliseconds(300))
        #expect(app.log.filter { $0 == "ready" }.count == 1, "\(app.log)")
        #expect(app.log.last == "ready" || app.log.filter { $0.hasPrefix("state") }.last == "state 5", "\(app.log)")
        // One device of the app's on the air, besides the sensor: no stack opened twice.
        let powered = world.air.allControllers.count
        #expect(powered == 2, "\(powered) controllers")
    }
}
