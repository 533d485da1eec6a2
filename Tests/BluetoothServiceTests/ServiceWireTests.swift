import AdvertisingData
import ATT
import BluetoothCore
import BluetoothEngine
import Foundation
import GATT
import HCI
import ServiceEngine
import Testing

/// The service's messages as JSON: what one side encodes the other decodes to the same value, and what a
/// checked initialiser refuses is refused when it arrives on the socket too.
struct ServiceWireTests {
    private func roundTrip<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }

    @Test(arguments: [
        ServiceOperation.startScanning(ScanOptions()),
        .connect(BluetoothAddress(0xC0_11_22_33_44_55, type: .random), ConnectOptions()),
        .gatt(handle: 0x0040, .readLongCharacteristicValue(handle: 0x0012), lane: GATTClientLane(3)),
        .gatt(handle: 0x0040, .writeWithoutResponse(handle: 0x0014, value: [1, 2, 3]), lane: nil),
        .startAdvertising(advertisingData: AdvertisingData([.localName(LocalName("wire"), complete: true)]), scanResponse: AdvertisingData(),
                          AdvertisingOptions()),
        .respondToGATTRequest(handle: 0x0041, id: 9, .error(GATTAttributeError(.insufficientAuthentication))),
        .updateValue([9, 9], attribute: 0x0020, targets: [0x0040, 0x0041], requireReady: true),
        .disconnect(handle: 0x0040, reason: .remoteUserTerminatedConnection),
    ])
    func operationsSurviveTheSocket(_ operation: ServiceOperation) throws {
        #expect(try roundTrip(operation) == operation)
    }

    @Test func eventsSurviveTheSocket() throws {
        let events: [HostEvent] = [
            .gattNotification(handle: 0x0040, attributeHandle: 0x0012, value: [1, 2]),
            .disconnected(handle: 0x0040, reason: .connectionTimeout),
            .attMTUChanged(handle: 0x0040, mtu: 247),
            .pairingFailed(handle: 0x0040, reason: .confirmValueFailed, error: HostError(.securityFailed, "confirm")),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        for event in events {
            let again = try roundTrip(event)
            #expect(try encoder.encode(again) == encoder.encode(event))
        }
    }

    @Test func checkedValuesAreCheckedOnArrival() throws {
        // A UUID travels as its string and is parsed again.
        #expect(String(decoding: try JSONEncoder().encode(BluetoothUUID(0x180D)), as: UTF8.self) == #""180D""#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(BluetoothUUID.self, from: Data(#""not-a-uuid""#.utf8)) }
        // An address keeps 48 bits whatever arrives.
        let wide = try JSONDecoder().decode(BluetoothAddress.self, from: Data(#"{"value":18446744073709551615,"type":0}"#.utf8))
        #expect(wide.value == 0xFFFF_FFFF_FFFF)
        // Advertising data arrives as octets and is parsed, framing checked.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(AdvertisingData.self, from: Data("[5,9,65]".utf8)) }
        let content = AdvertisingContent(localName: "wire", serviceUUIDs: [BluetoothUUID(0x180F)],
                                         manufacturerData: (CompanyIdentifier(0x004C), [1, 2]))
        #expect(try roundTrip(content) == content)
    }

    /// A database travels as the steps that built it: built again from them, it has the same attributes and
    /// handles; a dynamic value's writes go to the function the service gives.
    @Test func aDatabaseIsBuiltAgainFromItsSteps() throws {
        var database = GATTDatabase()
        try database.addGAPService(deviceName: "steps")
        try database.addGATTService(serverSupportedFeatures: .enhancedATT)
        let battery = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0x180F), characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0x2A19), properties: [.read, .notify], value: .stored([99])),
        ]))
        try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFE00), includes: [battery], characteristics: [
            GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFE01), properties: [.read, .write, .writeWithoutResponse],
                                         value: .dynamic(read: { _ in .success([1]) }, write: { _ in nil }),
                                         descriptors: [GATTDescriptorDefinition(uuid: BluetoothUUID(0x2901), value: .stored(Array("x".utf8)))]),
        ]))
        let wire = try roundTrip(ServiceGATTDatabase(database))
        #expect(wire == ServiceGATTDatabase(database))
        let rebuilt = try wire.database { _ in }
        #expect(rebuilt.lastHandle == database.lastHandle)
        #expect(rebuilt.services == database.services)
        #expect(rebuilt.attributes.map(\.type) == database.attributes.map(\.type))
        #expect(rebuilt.attributes.map(\.permissions) == database.attributes.map(\.permissions))
        #expect(Set(ServiceGATTDatabase.dynamicValues(of: rebuilt).keys) == Set(ServiceGATTDatabase.dynamicValues(of: database).keys))
        #expect(ServiceGATTDatabase.dynamicValues(of: database).count == 1)
    }

    @Test func theSocketIsPrivate() throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let socket = try FileManager.default.attributesOfItem(atPath: world.servicePath)
        #expect((socket[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }
}
