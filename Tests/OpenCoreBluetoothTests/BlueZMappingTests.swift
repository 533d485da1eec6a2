import BlueZ
import BluetoothCore
import DBus
import Testing
@testable import OpenCoreBluetooth

/// How the BlueZ backend reads bluetoothd's Device1 properties (BlueZ's doc/org.bluez.Device.rst) as a scan report
/// and then as CoreBluetooth's advertisement data, and which `OCB_HCI` names choose it.
@Suite struct BlueZMappingTests {
    @Test func aDeviceIsAnAdvertisement() throws {
        let properties: [String: DBusValue] = [
            "Address": .string("C0:11:22:33:44:55"), "AddressType": .string("random"), "Name": .string("Peripheral - iOS"),
            "RSSI": .int16(-48), "TxPower": .int16(4),
            "UUIDs": .array(.string, [.string("0cdbe648-eed0-11e6-bc64-92361f002671"), .string("0000180d-0000-1000-8000-00805f9b34fb")]),
            "ManufacturerData": .dictionary(key: .uint16, value: .variant, [(.uint16(0x004C), .variant(.bytes([0x02, 0x15])))]),
            "ServiceData": .dictionary(key: .string, value: .variant, [(.string("0000feaa-0000-1000-8000-00805f9b34fb"), .variant(.bytes([0x10])))]),
        ]
        let advertisement = EngineCentralBackend.advertisement(try #require(BlueZDevice.scanReport(properties)))
        #expect(advertisement.peer.address == (try BluetoothAddress(string: "C0:11:22:33:44:55", type: .random)))
        #expect(advertisement.localName == "Peripheral - iOS")
        #expect(advertisement.rssi == -48 && advertisement.txPowerLevel == 4)
        // Rebuilt into AD structures: the 16-bit list before the 128-bit one.
        #expect(advertisement.serviceUUIDs == [BluetoothUUID(0x180D), try BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")])
        #expect(advertisement.manufacturerData == [0x4C, 0x00, 0x02, 0x15])
        #expect(advertisement.serviceData == [BluetoothUUID(0xFEAA): [0x10]])
        #expect(BlueZDevice.scanReport(["Name": .string("no address")]) == nil)
    }

    @Test func bluezIsChosenByName() {
        if case .bluez(let adapter) = HostBackend.transport(named: "bluez") { #expect(adapter == nil) } else { Issue.record("bluez") }
        if case .bluez(let adapter) = HostBackend.transport(named: "bluez:hci1") { #expect(adapter == "hci1") } else {
            Issue.record("bluez:hci1")
        }
        if case .specification = HostBackend.transport(named: "bluez:") {} else { Issue.record("bluez: without an adapter is not bluez") }
        #expect(BlueZDevice.propertyBits["write-without-response"] == 0x04)
    }
}
