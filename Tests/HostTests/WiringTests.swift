import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import HCI
@testable import Host
import L2CAP
import Testing
import VirtualController

@Suite("L2CAP, ATT and GATT wired between two stacks on the virtual air")
struct WiringTests {
    @Test("connect, MTU exchanged to 517 automatically, discovery of services, characteristics and descriptors")
    func discovery() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        #expect(stacks.run(until: { stacks.mtus.central == 517 && stacks.mtus.peripheral == 517 }))
        #expect(stacks.centralEvents.values.contains { if case .attMTUChanged(_, 517) = $0 { true } else { false } })
        #expect(stacks.peripheralEvents.values.contains { if case .attMTUChanged(_, 517) = $0 { true } else { false } })

        let services = try #require(stacks.gatt(.discoverAllPrimaryServices)).get()
        guard case .services(let list) = services else { Issue.record("\(services)"); return }
        #expect(list.map(\.uuid) == [BluetoothUUID(0x1800), BluetoothUUID(0x1801), BluetoothUUID(0xFFE0)])
        let test = try #require(list.last)
        let expected = TwoStacks.smallDatabase().service
        #expect(test.startHandle == expected.start && test.endHandle == expected.end)

        let characteristics = try #require(stacks.gatt(.discoverAllCharacteristics(of: test))).get()
        guard case .characteristics(let chars) = characteristics else { Issue.record("\(characteristics)"); return }
        #expect(chars.map(\.uuid) == [BluetoothUUID(0xFFE1), BluetoothUUID(0xFFE2), BluetoothUUID(0xFFE3)])
        #expect(chars.map(\.valueHandle) == expected.characteristics.map(\.value))
        #expect(chars[0].properties == [.read, .write, .writeWithoutResponse, .extendedProperties])

        let descriptors = try #require(stacks.gatt(.discoverAllDescriptors(of: chars[0]))).get()
        #expect(descriptors == .descriptors([
            GATTDiscoveredDescriptor(handle: chars[0].valueHandle + 1, uuid: BluetoothUUID(0x2900)),
            GATTDiscoveredDescriptor(handle: chars[0].valueHandle + 2, uuid: BluetoothUUID(0x2901)),
        ]))
        let cccd = try #require(stacks.gatt(.discoverAllDescriptors(of: chars[2]))).get()
        #expect(cccd == .descriptors([GATTDiscoveredDescriptor(handle: chars[2].valueHandle + 1, uuid: BluetoothUUID(0x2902))]))
        let byUUID = try #require(stacks.gatt(.discoverPrimaryServices(uuid: BluetoothUUID(0xFFE0)))).get()
        #expect(byUUID == .services([test]))
        stacks.disconnectAndCheckLeaks()
    }
}
