import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Seed001PeripheralApp
import Testing

typealias PeripheralEventLog = EventLog<PeripheralApp.Event>

/// Issue 28 items 2 and 7: seed 001's iOS peripheral app, its BluetoothManager unchanged
/// (Examples/Seed001PeripheralApp), tested with a central declared in the test (``SimulatedCentral``): the seed's
/// own exchange, the read it never answers, and the app's Bluetooth switched off and on under a connected phone.
@Suite struct Seed001PeripheralWithKitTests {
    static func start(in world: SimulatedWorld, log: PeripheralEventLog) async -> PeripheralApp {
        await withCheckedContinuation { (done: CheckedContinuation<UnsafeTransfer<PeripheralApp>, Never>) in
            DispatchQueue.main.async {
                // The seed's viewDidAppear: the BluetoothManager makes its peripheral manager (queue nil: main).
                done.resume(returning: UnsafeTransfer(world.run { PeripheralApp(log: { _ in }) { log.add($0) } }))
            }
        }.value
    }

    @Test("a phone finds the seed, subscribes and gets {\"Hello\": \"Darkness\"}, writes {\"Yo\": \"Lo\"} and the seed hears it")
    func theSeedsExchange() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let log = PeripheralEventLog()
        let app = await Self.start(in: world, log: log)
        let phone = try await world.simulateCentral(CentralSpec(name: "Mac", attMTU: 185))
        let found = try await phone.scan(forService: blueEarService)
        #expect(found.localName == "Peripheral - iOS")
        #expect(found.serviceUUIDs == [blueEarService])
        let link = try await phone.connect(found)
        #expect(link.attMTU == 185)
        #expect(link.services.contains(blueEarService), "\(link.services)")
        let values = try await link.subscribe(to: blueEarCharacteristic)
        #expect(await values.next() == BlueEarPeripheral.plist(["Hello": "Darkness"]))
        try await link.write(BlueEarPeripheral.plist(["Yo": "Lo"]), to: blueEarCharacteristic)
        #expect(await world.eventually { log.events.contains(.didReceiveData) }, "\(log.events)")
        #expect(log.events == [.didStartConfiguration, .didStartAdvertising, .didSendData, .didReceiveData], "\(log.events)")
        await link.disconnect()
        withExtendedLifetime(app) {}
    }

    @Test("an unknown characteristic is the test's mistake, said in words")
    func anUnknownCharacteristic() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let app = await Self.start(in: world, log: PeripheralEventLog())
        let phone = try await world.simulateCentral()
        let link = try await phone.connect(try await phone.scan(forService: blueEarService))
        await #expect(throws: SimulatedWorldError.self) { try await link.read(CBUUID(string: "2A37")) }
        withExtendedLifetime(app) {}
    }

    @Test("the seed's app switched off under a connected phone: the link ends; on again, it advertises and answers anew")
    func switchedOffUnderAPhone() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let log = PeripheralEventLog()
        let app = await Self.start(in: world, log: log)
        let phone = try await world.simulateCentral()
        let link = try await phone.connect(try await phone.scan(forService: blueEarService))
        world.simulatePowerOff()
        #expect(await world.eventually(within: .seconds(30)) { !link.isConnected })
        world.simulatePowerOn()
        let again = try await phone.connect(try await phone.scan(forService: blueEarService, within: .seconds(30)))
        let values = try await again.subscribe(to: blueEarCharacteristic)
        #expect(await values.next() == BlueEarPeripheral.plist(["Hello": "Darkness"]))
        #expect(log.events.filter { $0 == .didStartAdvertising }.count == 2, "\(log.events)")
        withExtendedLifetime(app) {}
    }
}
