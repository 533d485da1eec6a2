import BluetoothCore
import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Testing

nonisolated(unsafe) let sensorService = CBUUID(string: "F00D0000-0000-4000-8000-00000000F00D")
nonisolated(unsafe) let levelUUID = CBUUID(string: "F00D0001-0000-4000-8000-00000000F00D")
nonisolated(unsafe) let controlUUID = CBUUID(string: "F00D0002-0000-4000-8000-00000000F00D")
nonisolated(unsafe) let slowUUID = CBUUID(string: "F00D0003-0000-4000-8000-00000000F00D")

/// The sensor the tests declare: a level (read, notify: 0x2A), a control point (write) and a slow value (read).
func sensor(_ name: String = "Sensor", proximity: SimulatedProximity = .near, delegate: (any SimulatedPeripheralDelegate)? = nil) -> PeripheralSpec {
    PeripheralSpec.simulatePeripheral(proximity: proximity)
        .advertising(advertisementData: [CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [sensorService]],
                     withInterval: 0.05)
        .connectable(name: name, services: [
            SimulatedService(sensorService, characteristics: [
                SimulatedCharacteristic(levelUUID, properties: [.read, .notify], value: Data([0x2A])),
                SimulatedCharacteristic(controlUUID, properties: [.write, .writeWithoutResponse]),
                SimulatedCharacteristic(slowUUID, properties: [.read], value: Data("slow".utf8)),
            ]),
        ], delegate: delegate)
        .build()
}

/// A delegate whose answers the test sets per characteristic.
final class ScriptedBehaviour: SimulatedPeripheralDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var reads: [String: SimulatedResponse<Data>] = [:]
    private var writes: [String: SimulatedResponse<Void>] = [:]
    var onSubscribe: (@Sendable (SimulatedPeripheral, SimulatedCharacteristic) -> Void)?

    func answerReads(of uuid: CBUUID, with response: SimulatedResponse<Data>) { lock.withLock { reads[uuid.uuidString] = response } }
    func answerWrites(of uuid: CBUUID, with response: SimulatedResponse<Void>) { lock.withLock { writes[uuid.uuidString] = response } }

    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveReadRequestFor characteristic: SimulatedCharacteristic,
                    offset: Int) -> SimulatedResponse<Data> {
        lock.withLock { reads[characteristic.uuid] } ?? .success(peripheral.value(of: characteristic.cbUUID) ?? Data())
    }
    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveWriteRequestFor characteristic: SimulatedCharacteristic,
                    data: Data) -> SimulatedResponse<Void> {
        lock.withLock { writes[characteristic.uuid] } ?? .success(())
    }
    func peripheral(_ peripheral: SimulatedPeripheral, didSubscribeTo characteristic: SimulatedCharacteristic) {
        onSubscribe?(peripheral, characteristic)
    }
}

/// Issue 28: the world around a CoreBluetooth app, declared and driven from its tests. The app is ``ProbeApp``,
/// plain CoreBluetooth code; each test has a world of its own (they run in parallel).
@Suite struct SimulatedWorldTests {
    /// A world with `spec` on it and the app in it, once the app is ready.
    static func ready(_ spec: PeripheralSpec, in world: SimulatedWorld, within limit: Duration = .seconds(30)) async throws
        -> (SimulatedPeripheral, ProbeApp) {
        let peripheral = try await world.simulatePeripheral(spec)
        let app = world.run { ProbeApp(service: sensorService) }
        let ready = await world.eventually(within: limit, on: app.queue) { app.log.contains("ready") }
        #expect(ready, "\(app.log) \(world.clockSummary)")
        return (peripheral, app)
    }

    @Test("a declared peripheral is found, connected, read, written and subscribed to; the world logs it in order")
    func theAppMeetsADeclaredPeripheral() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (peripheral, app) = try await Self.ready(sensor(), in: world)
        app.read(levelUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains("value \(levelUUID) 2a") }, "\(app.log)")
        app.subscribe(levelUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains("notifying \(levelUUID) true") })
        app.write(Data([0x01]), to: controlUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains("wrote \(controlUUID)") })
        #expect(peripheral.value(of: controlUUID) == Data([0x01]))
        #expect(peripheral.isSubscribed(levelUUID))
        let seen = world.exchanges.map(\.description)
        #expect(seen == ["Sensor: connected", "Sensor: read \(levelUUID)", "Sensor: subscribe to \(levelUUID)",
                         "Sensor: write 01 to \(controlUUID) with response"], "\(seen)")
        #expect(app.log.prefix(3) == ["state \(CBManagerState.poweredOn.rawValue)", "discovered Sensor", "connected"])
    }

    @Test("answers: an ATT error after a delay, a write answered by dropping the link")
    func answersLateWithErrorsOrByDisconnecting() async throws {
        let behaviour = ScriptedBehaviour()
        behaviour.answerReads(of: slowUUID, with: SimulatedResponse.error(.insufficientAuthorization).after(.milliseconds(300)))
        behaviour.answerWrites(of: controlUUID, with: .disconnect)
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (_, app) = try await Self.ready(sensor(delegate: behaviour), in: world)
        app.reconnects = false
        let asked = world.now
        app.read(slowUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains { $0.hasPrefix("value \(slowUUID)") } })
        #expect(world.now - asked >= .milliseconds(300))
        #expect(app.log.contains("value \(slowUUID)  error 0x08"), "\(app.log)")
        app.write(Data([0x02]), to: controlUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains { $0.hasPrefix("disconnected") } }, "\(app.log)")
    }

    @Test("value updates: sent once, dropped, duplicated")
    func valueUpdatesSentDroppedOrDuplicated() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (peripheral, app) = try await Self.ready(sensor(), in: world)
        app.subscribe(levelUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains("notifying \(levelUUID) true") })
        peripheral.simulateValueUpdate(Data([0x01]), for: levelUUID)
        peripheral.simulateValueUpdate(Data([0x02]), for: levelUUID, delivery: .dropped)
        peripheral.simulateValueUpdate(Data([0x03]), for: levelUUID, delivery: .duplicated)
        #expect(await world.eventually(on: app.queue) { app.log.filter { $0 == "value \(levelUUID) 03" }.count == 2 }, "\(app.log)")
        let values = app.log.filter { $0.hasPrefix("value \(levelUUID)") }
        #expect(values == ["value \(levelUUID) 01", "value \(levelUUID) 03", "value \(levelUUID) 03"])
        // The dropped update still changed the value a read answers.
        #expect(peripheral.value(of: levelUUID) == Data([0x03]))
    }

    @Test("proximity: the RSSI follows the distance; out of range the link times out; back in range the app reconnects")
    func proximityChanges() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (peripheral, app) = try await Self.ready(sensor(proximity: .far), in: world)
        let far = try #require(app.heard.first)
        #expect((-75)...(-65) ~= far, "\(far)")
        #expect(peripheral.isConnected)
        peripheral.simulateProximityChange(.outOfRange)
        #expect(await world.eventually(within: .seconds(30), on: app.queue) { app.log.contains { $0.hasPrefix("disconnected error") } },
                "\(app.log)")
        peripheral.simulateProximityChange(.immediate)
        #expect(await world.eventually(within: .seconds(20), on: app.queue) { app.log.filter { $0 == "connected" }.count == 2 }, "\(app.log)")
    }

    @Test("power: off ends the link and the advertising, on brings both back")
    func powerOffAndOn() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (peripheral, app) = try await Self.ready(sensor(), in: world)
        peripheral.simulatePowerOff()
        #expect(await world.eventually(within: .seconds(30), on: app.queue) { app.log.contains { $0.hasPrefix("disconnected error") } },
                "\(app.log)")
        #expect(await world.eventually(within: .seconds(30)) { !peripheral.isConnected })
        peripheral.simulatePowerOn()
        #expect(await world.eventually(within: .seconds(20), on: app.queue) { app.log.filter { $0 == "connected" }.count == 2 }, "\(app.log)")
    }

    @Test("a changed database: with Service Changed the app hears of it, without it does not")
    func serviceChangeWithAndWithoutIndication() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (peripheral, app) = try await Self.ready(sensor(), in: world)
        let extra = CBUUID(string: "F00D0009-0000-4000-8000-00000000F00D")
        let updated = [SimulatedService(sensorService, characteristics: [
            SimulatedCharacteristic(levelUUID, properties: [.read, .notify], value: Data([0x2A])),
            SimulatedCharacteristic(extra, properties: [.read], value: Data([0x09])),
        ])]
        try await peripheral.simulateServiceChange(updated, notifying: false)
        try await Task.sleep(for: .milliseconds(500))
        #expect(!app.log.contains("services modified"))
        try await peripheral.simulateServiceChange(updated, notifying: true)
        #expect(await world.eventually(on: app.queue) { app.log.contains("services modified") }, "\(app.log)")
        let extraText = extra.uuidString
        #expect(await world.eventually(on: app.queue) { app.characteristic(CBUUID(string: extraText)) != nil })
    }

    @Test("two worlds do not meet: each app sees its own world's peripheral only")
    func worldsAreSeparate() async throws {
        let one = try SimulatedWorld(seed: 1), two = try SimulatedWorld(seed: 2)
        defer { one.shutdown(); two.shutdown() }
        let (_, appOne) = try await Self.ready(sensor("One"), in: one)
        let (_, appTwo) = try await Self.ready(sensor("Two"), in: two)
        #expect(appOne.log.contains("discovered One") && !appOne.log.contains("discovered Two"))
        #expect(appTwo.log.contains("discovered Two") && !appTwo.log.contains("discovered One"))
    }
}
