import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import StackLauncher
import Testing

/// Declared peripherals with a platform's personality (issue 28 item 2, the fidelity issue's personalities): what
/// an app meets when the other end is an iPhone or an Android phone in the peripheral role.
@Suite struct PersonalityTests {
    static func phone(_ personality: PlatformPersonality, declaringCCCD: Bool = false, indicates: Bool = false) -> PeripheralSpec {
        PeripheralSpec.simulatePeripheral(proximity: .near)
            .advertising(advertisementData: [CBAdvertisementDataLocalNameKey: "Phone", CBAdvertisementDataServiceUUIDsKey: [sensorService]],
                         withInterval: 0.05)
            .connectable(name: "Phone", services: [SimulatedService(sensorService, characteristics: [
                SimulatedCharacteristic(levelUUID, properties: [.read, indicates ? .indicate : .notify], value: Data([1]),
                                        descriptors: declaringCCCD ? [SimulatedDescriptor(CBUUID(string: "2902"), value: Data([0, 0]))] : []),
            ])])
            .personality(personality)
            .build()
    }

    @Test("an app offering 517 meets an iPhone's 185 and Android's 517", arguments: [(PlatformPersonality.iphone, 182), (.android, 514)])
    func attMTU(personality: PlatformPersonality, length: Int) async throws {
        let world = try SimulatedWorld(attMTU: 517)
        defer { world.shutdown() }
        let (_, app) = try await SimulatedWorldTests.ready(Self.phone(personality, declaringCCCD: true), in: world)
        // The longest Write Without Response the app may send: ATT_MTU − 3, read where the app reads it.
        #expect(await world.eventually(on: app.queue) { app.peripheral?.maximumWriteValueLength(for: .withoutResponse) == length })
    }

    @Test("Android without a declared 2902: the app cannot subscribe")
    func androidWithoutCCCD() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (_, app) = try await SimulatedWorldTests.ready(Self.phone(.android), in: world)
        app.subscribe(levelUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains { $0.hasPrefix("notifying \(levelUUID) false error") } }, "\(app.log)")
    }

    @Test("Android with its 2902: subscribed, and a second indication while the first is not confirmed is refused as busy")
    func androidOneValueInFlight() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let (peripheral, app) = try await SimulatedWorldTests.ready(Self.phone(.android, declaringCCCD: true, indicates: true), in: world)
        app.subscribe(levelUUID)
        #expect(await world.eventually { peripheral.isSubscribed(levelUUID) }, "\(app.log)")
        // Out of the app's hearing for a moment (well within the link's supervision timeout), so the first
        // indication cannot be confirmed while the test sends the second.
        peripheral.simulateProximityChange(.outOfRange)
        #expect(peripheral.simulateValueUpdate(Data([2]), for: levelUUID))
        #expect(!peripheral.simulateValueUpdate(Data([3]), for: levelUUID))
        peripheral.simulateProximityChange(.near)
        #expect(await world.eventually(on: app.queue) { app.log.contains("value \(levelUUID) 02") }, "\(app.log)")
        // Confirmed: the next one is taken.
        #expect(await world.eventually { peripheral.simulateValueUpdate(Data([4]), for: levelUUID) })
        #expect(await world.eventually(on: app.queue) { app.log.contains("value \(levelUUID) 04") }, "\(app.log)")
        #expect(!app.log.contains("value \(levelUUID) 03"))
    }
}
