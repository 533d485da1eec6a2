import BluetoothCore
import BluetoothEngine
import GATT
import ServiceEngine
import Testing
@testable import OpenCoreBluetooth

/// The centrals of a server the Bluetooth service kept, placed in the app's services for `willRestoreState`: the
/// kept database built again gives each subscribed value handle's service and characteristic (after the GAP and
/// GATT services, CCCDs and descriptors counted as the database lays them out, Core 5.4 Vol 3 Part G §3).
@Suite struct KeptServerTests {
    @Test func subscriptionsArePlacedInTheAppsServices() throws {
        let battery = BluetoothUUID(0x180F), level = BluetoothUUID(0x2A19)
        let heart = BluetoothUUID(0x180D), measurement = BluetoothUUID(0x2A37), location = BluetoothUUID(0x2A38)
        var database = GATTDatabase()
        _ = try database.addGAPService(deviceName: "kept")
        _ = try database.addGATTService(serverSupportedFeatures: .enhancedATT)
        let first = try database.add(GATTServiceDefinition(uuid: battery, characteristics: [
            GATTCharacteristicDefinition(uuid: level, properties: [.read, .notify], value: .stored([50]), maximumLength: 1,
                                         descriptors: [GATTDescriptorDefinition(uuid: BluetoothUUID(0x2901), permissions: .readOnly, value: .stored([65]))]),
        ]))
        let second = try database.add(GATTServiceDefinition(uuid: heart, characteristics: [
            GATTCharacteristicDefinition(uuid: location, properties: [.read], value: .stored([1]), maximumLength: 1),
            GATTCharacteristicDefinition(uuid: measurement, properties: [.notify, .indicate], value: .stored([0, 60]), maximumLength: 20),
        ]))
        let one = BluetoothAddress(0xC0_11_22_33_44_55, type: .random), two = BluetoothAddress(0xC0_11_22_33_44_66, type: .random)
        let parameters = ConnectionParameters(interval: 24, latency: 0, supervisionTimeout: 500)
        let kept = EnginePeripheralBackend.KeptServer(
            database: ServiceGATTDatabase(database),
            links: [ServiceLink(connection: Connection(handle: 1, role: .peripheral, peer: one, peerAddressType: .random, parameters: parameters), attMTU: 185),
                    ServiceLink(connection: Connection(handle: 2, role: .peripheral, peer: two, peerAddressType: .random, parameters: parameters), attMTU: 23)],
            subscriptions: [ServiceSubscription(connection: 1, valueHandle: second.characteristics[1].value, configuration: .indication),
                            ServiceSubscription(connection: 1, valueHandle: first.characteristics[0].value, configuration: .notification),
                            ServiceSubscription(connection: 7, valueHandle: first.characteristics[0].value, configuration: .notification)])
        let centrals = kept.centrals
        #expect(centrals.map(\.peer) == [CBBackendPeer(address: one), CBBackendPeer(address: two)])
        #expect(centrals.map(\.mtu) == [185, 23])
        #expect(centrals[0].subscriptions == [
            CBBackendCharacteristicPosition(service: 0, serviceUUID: battery, characteristic: 0, characteristicUUID: level),
            CBBackendCharacteristicPosition(service: 1, serviceUUID: heart, characteristic: 1, characteristicUUID: measurement),
        ])
        #expect(centrals[1].subscriptions.isEmpty)
    }
}
