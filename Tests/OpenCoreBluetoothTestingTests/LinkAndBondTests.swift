import Foundation
import OpenCoreBluetooth
import OpenCoreBluetoothTesting
import Testing

nonisolated(unsafe) let secretUUID = CBUUID(string: "F00D0004-0000-4000-8000-00000000F00D")

/// What a declared peripheral asks of the link and forgets of the app (issue 28 item 2): the connection parameters
/// it asks for, and its bond removed ("peer removed pairing information").
@Suite struct LinkAndBondTests {
    @Test("a peripheral that asks for 100–125 ms gets it from the app's central")
    func connectionParametersAsked() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let spec = PeripheralSpec.simulatePeripheral(proximity: .near)
            .advertising(advertisementData: [CBAdvertisementDataLocalNameKey: "Slow", CBAdvertisementDataServiceUUIDsKey: [sensorService]],
                         withInterval: 0.05)
            .connectable(name: "Slow", services: [SimulatedService(sensorService, characteristics: [
                SimulatedCharacteristic(levelUUID, properties: [.read], value: Data([1])),
            ])])
            .requestingConnectionParameters(interval: .milliseconds(100) ... .milliseconds(125), latency: 2, supervisionTimeout: .seconds(6))
            .build()
        let (peripheral, app) = try await SimulatedWorldTests.ready(spec, in: world)
        #expect(await world.eventually { (peripheral.connectionInterval ?? .zero) >= .milliseconds(100) }, "\(String(describing: peripheral.connectionInterval))")
        #expect(peripheral.connectionInterval.map { $0 <= .milliseconds(125) } == true)
        #expect(world.exchanges.contains { if case .connectionUpdated(let interval) = $0.kind { interval >= .milliseconds(100) } else { false } },
                "\(world.exchanges)")
        // The link still works at the new pace.
        app.read(levelUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains("value \(levelUUID) 01") }, "\(app.log)")
    }

    @Test("the peripheral forgets its bond: the app's next encryption fails with peerRemovedPairingInformation")
    func bondRemoved() async throws {
        let world = try SimulatedWorld()
        defer { world.shutdown() }
        let spec = PeripheralSpec.simulatePeripheral(proximity: .near)
            .advertising(advertisementData: [CBAdvertisementDataLocalNameKey: "Lock", CBAdvertisementDataServiceUUIDsKey: [sensorService]],
                         withInterval: 0.05)
            .connectable(name: "Lock", services: [SimulatedService(sensorService, characteristics: [
                SimulatedCharacteristic(secretUUID, properties: [.read], permissions: [.readEncryptionRequired], value: Data([0x5E])),
            ])])
            .build()
        let (peripheral, app) = try await SimulatedWorldTests.ready(spec, in: world)
        // The first read pairs (Just Works), then answers.
        app.read(secretUUID)
        #expect(await world.eventually(on: app.queue) { app.log.contains("value \(secretUUID) 5e") }, "\(app.log)")

        await peripheral.simulateBondRemoval()
        peripheral.simulateDisconnection()
        #expect(await world.eventually(within: .seconds(30), on: app.queue) { app.log.filter { $0 == "ready" }.count == 2 }, "\(app.log)")
        app.read(secretUUID)
        #expect(await world.eventually(within: .seconds(30), on: app.queue) {
            app.log.contains { $0.contains("error \(CBError.Code.peerRemovedPairingInformation)") }
        }, "\(app.log)")
        // The log: paired (LE Secure Connections, as CoreBluetooth does), then read. (The forgotten bond's failure is
        // the app's: the peripheral only answered its key request with a negative reply.)
        let kinds = world.exchanges.map(\.kind)
        let paired = kinds.firstIndex(of: .paired(secureConnections: true)), read = kinds.firstIndex(of: .read(characteristic: secretUUID.uuidString))
        #expect(paired != nil && read != nil && paired! < read!, "\(world.exchanges)")
    }
}
