import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Seed001CentralApp
import Testing

nonisolated(unsafe) let blueEarService = CBUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")
nonisolated(unsafe) let blueEarCharacteristic = CBUUID(string: "199AB74C-EED0-11E6-BC64-92361F002672")

/// Seed 001's iOS peripheral, declared in the test: it sends {"Hello": "Darkness"} to each central that subscribes
/// (the seed's `didSubscribeTo`), and answers the central's write as `answer` says.
final class BlueEarPeripheral: SimulatedPeripheralDelegate, @unchecked Sendable {
    let answer: SimulatedResponse<Void>
    init(answer: SimulatedResponse<Void> = .success(())) { self.answer = answer }

    static func plist(_ dictionary: [String: String]) -> Data {
        (try? PropertyListSerialization.data(fromPropertyList: dictionary, format: .binary, options: 0)) ?? Data()
    }

    func peripheral(_ peripheral: SimulatedPeripheral, didSubscribeTo characteristic: SimulatedCharacteristic) {
        peripheral.simulateValueUpdate(Self.plist(["Hello": "Darkness"]), for: characteristic.cbUUID)
    }
    func peripheral(_ peripheral: SimulatedPeripheral, didReceiveWriteRequestFor characteristic: SimulatedCharacteristic,
                    data: Data) -> SimulatedResponse<Void> { answer }

    static func spec(answer: SimulatedResponse<Void> = .success(())) -> PeripheralSpec {
        PeripheralSpec.simulatePeripheral(proximity: .near)
            .advertising(advertisementData: [CBAdvertisementDataLocalNameKey: "Peripheral - iOS",
                                             CBAdvertisementDataServiceUUIDsKey: [blueEarService]])
            .connectable(name: "iPhone", services: [SimulatedService(blueEarService, characteristics: [
                SimulatedCharacteristic(blueEarCharacteristic, properties: [.read, .notify, .write, .writeWithoutResponse]),
            ])], delegate: BlueEarPeripheral(answer: answer))
            .build()
    }
}

/// A seed's BlueEar calls, kept in order.
final class EventLog<Event: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Event] = []
    func add(_ event: Event) { lock.withLock { list.append(event) } }
    var events: [Event] { lock.withLock { list } }
}

/// Issue 28 item 7: seed 001's macOS central, its BluetoothManager unchanged (Examples/Seed001CentralApp), tested with
/// the kit against a declared peripheral, which behaves and then misbehaves.
@Suite struct Seed001WithKitTests {
    /// The seed's app made on the main queue (its manager's delegate queue is nil: main) inside the world.
    static func start(in world: SimulatedWorld, log: EventLog<CentralApp.Event>) async -> CentralApp {
        await withCheckedContinuation { (done: CheckedContinuation<UnsafeTransfer<CentralApp>, Never>) in
            DispatchQueue.main.async {
                // The seed's button: scan() creates the central manager, so it runs in the world too.
                let app = world.run {
                    let app = CentralApp(log: { _ in }) { log.add($0) }
                    app.scan()
                    return app
                }
                done.resume(returning: UnsafeTransfer(app))
            }
        }.value
    }

    @Test("the seed's exchange: subscribe, read the plist, write {\"Yo\": \"Lo\"}, disconnect")
    func theSeedsExchange() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        try await world.simulatePeripheral(BlueEarPeripheral.spec())
        let log = EventLog<CentralApp.Event>()
        let app = await Self.start(in: world, log: log)
        #expect(await world.eventually { log.events.contains(.didDisconnectPeripheral(name: "iPhone")) }, "\(log.events) \(world.clockSummary)")
        #expect(log.events == [.didStartConfiguration, .didStartScanningPeripherals, .didConnectPeripheral(name: "Peripheral - iOS"),
                               .didReceiveData, .didSendData, .didDisconnectPeripheral(name: "iPhone")])
        // The peripheral hears of the link's end on its own side, a moment after the app.
        #expect(await world.eventually { world.exchanges.last?.kind == .disconnected }, "\(world.exchanges)")
        let exchanges = world.exchanges.map(\.kind)
        #expect(exchanges == [.connected, .subscribe(characteristic: blueEarCharacteristic.uuidString, enabled: true),
                              .write(characteristic: blueEarCharacteristic.uuidString, value: BlueEarPeripheral.plist(["Yo": "Lo"]), withResponse: true),
                              .disconnected], "\(world.exchanges)")
        withExtendedLifetime(app) {}
    }

    @Test("a peripheral that refuses the write: the seed disconnects all the same (it ignores the error)")
    func aPeripheralThatRefusesTheWrite() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        try await world.simulatePeripheral(BlueEarPeripheral.spec(answer: .error(.writeNotPermitted)))
        let log = EventLog<CentralApp.Event>()
        let app = await Self.start(in: world, log: log)
        #expect(await world.eventually { log.events.contains(.didDisconnectPeripheral(name: "iPhone")) }, "\(log.events) \(world.clockSummary)")
        #expect(log.events.contains(.didSendData))
        withExtendedLifetime(app) {}
    }
}

/// Carries a value across a concurrency boundary the test knows is safe (made on main, used only there or not at all).
struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
