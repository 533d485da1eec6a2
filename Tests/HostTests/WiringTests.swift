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

    @Test("read, read long (512 octets), write, write without response, long write, reliable write")
    func readsAndWrites() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        #expect(stacks.run(until: { stacks.mtus.central == 517 }))
        let handles = TwoStacks.smallDatabase().service.characteristics.map(\.value)
        let long = (0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7) }

        #expect(try stacks.gatt(.readCharacteristicValue(handle: handles[0]))?.get() == .value([1, 2, 3]))
        #expect(try stacks.gatt(.readLongCharacteristicValue(handle: handles[1]))?.get() == .value(long))

        #expect(try stacks.gatt(.writeCharacteristicValue(handle: handles[0], value: [9, 8]))?.get() == .written)
        #expect(try stacks.gatt(.readCharacteristicValue(handle: handles[0]))?.get() == .value([9, 8]))

        #expect(try stacks.gatt(.writeWithoutResponse(handle: handles[0], value: [7]))?.get() == .written)
        #expect(stacks.run(until: { stacks.peripheral.localGATTServer.database.attribute(handles[0])?.storedValue == [7] }))

        let longValue = (0..<600).map { UInt8(truncatingIfNeeded: $0 &+ 1) }
        let written = stacks.gatt(.writeLongCharacteristicValue(handle: handles[1], value: Array(longValue.prefix(512))))
        #expect(try written?.get() == .written)
        #expect(try stacks.gatt(.readLongCharacteristicValue(handle: handles[1]))?.get() == .value(Array(longValue.prefix(512))))

        let reliable = stacks.gatt(.reliableWrite([
            GATTReliableWriteItem(handle: handles[0], value: [0xAA, 0xBB]),
            GATTReliableWriteItem(handle: handles[1], value: Array(repeating: 0x55, count: 700 - 200)),
        ]))
        #expect(try reliable?.get() == .written)
        #expect(try stacks.gatt(.readCharacteristicValue(handle: handles[0]))?.get() == .value([0xAA, 0xBB]))
        #expect(try stacks.gatt(.readLongCharacteristicValue(handle: handles[1]))?.get() == .value(Array(repeating: 0x55, count: 500)))

        // Too long for the characteristic: Invalid Attribute Value Length from the peer's server.
        let tooLong = stacks.gatt(.writeLongCharacteristicValue(handle: handles[1], value: longValue))
        #expect(tooLong.map { if case .failure(.attError(.invalidAttributeValueLength, _)) = $0 { true } else { false } } == true)

        // The server reported each write to its application.
        let writes = stacks.peripheralEvents.values.compactMap { event -> [UInt8]? in
            if case .gattServer(.valueWritten(_, let handle, let value)) = event, handle == handles[0] { return value }
            return nil
        }
        #expect(writes == [[9, 8], [7], [0xAA, 0xBB]])
        stacks.disconnectAndCheckLeaks()
    }

    @Test("subscribe, notifications and indications (confirmed), readiness of the send queue")
    func notificationsAndIndications() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        #expect(stacks.run(until: { stacks.mtus.central == 517 }))
        let characteristic = try #require(TwoStacks.smallDatabase().service.characteristics.last)
        let cccd = try #require(characteristic.clientConfiguration)

        #expect(try stacks.gatt(.subscribe(cccdHandle: cccd, configuration: .notifications))?.get() == .written)
        #expect(stacks.peripheralEvents.values.contains {
            if case .gattServer(.subscriptionChanged(_, characteristic.value, .notification)) = $0 { true } else { false }
        })
        let sent = Recorder<[UInt16]>()
        stacks.peripheral.updateValue([1, 2, 3], handle: characteristic.value) { if let to = try? $0.get() { sent.append(to) } }
        #expect(stacks.run(until: { sent.count == 1 }))
        #expect(sent.values == [[stacks.peripheralHandle]])
        #expect(stacks.run(until: { stacks.centralEvents.values.contains {
            if case .gattNotification(_, characteristic.value, [1, 2, 3]) = $0 { true } else { false } } }))

        #expect(try stacks.gatt(.subscribe(cccdHandle: cccd, configuration: .indications))?.get() == .written)
        let big = Array(repeating: UInt8(0x42), count: 600)
        stacks.peripheral.updateValue(big, handle: characteristic.value)
        // Cut to ATT_MTU - 3 = 514, then stored whole (512: the attribute maximum).
        #expect(stacks.run(until: { stacks.peripheralEvents.values.contains {
            if case .gattIndicationConfirmed(_, characteristic.value) = $0 { true } else { false } } }))
        #expect(stacks.centralEvents.values.contains {
            if case .gattIndication(_, characteristic.value, let value) = $0 { value.count == 514 } else { false } })

        // Flow control: a burst of notifications fills the queue; updateValue(requireReady:) refuses, then
        // readyToSend comes when it drained.
        #expect(try stacks.gatt(.subscribe(cccdHandle: cccd, configuration: .notifications))?.get() == .written)
        var refused = false
        let outcomes = Recorder<Bool>()
        stacks.loop.execute {
            for index in 0..<200 {
                stacks.peripheral.updateValue([UInt8(truncatingIfNeeded: index)] + Array(repeating: 0, count: 243),
                                              handle: characteristic.value, requireReady: true) { outcomes.append((try? $0.get()) != nil) }
            }
        }
        stacks.loop.run()
        refused = outcomes.values.contains(false)
        #expect(refused)
        #expect(stacks.peripheral.isReadyToSend(connectionHandle: stacks.peripheralHandle) == false)
        #expect(stacks.run(until: { stacks.peripheralEvents.values.contains {
            if case .readyToSend(stacks.peripheralHandle) = $0 { true } else { false } } }))
        let accepted = outcomes.values.filter { $0 }.count
        #expect(stacks.run(until: {
            stacks.centralEvents.values.filter { if case .gattNotification = $0 { true } else { false } }.count == 1 + accepted
        }))
        stacks.disconnectAndCheckLeaks()
    }

    @Test("a database of 520 characteristics with values of 0 to 512 octets, discovered and read back whole")
    func largeDatabase() throws {
        var database = GATTDatabase()
        var expected: [(uuid: BluetoothUUID, value: [UInt8])] = []
        for serviceIndex in 0..<10 {
            var characteristics: [GATTCharacteristicDefinition] = []
            for index in 0..<52 {
                let number = serviceIndex * 52 + index
                let value = (0..<(number * 513 / 520)).map { UInt8(truncatingIfNeeded: $0 &+ number) }
                let uuid = BluetoothUUID(UInt16(0xA000 + number))
                expected.append((uuid, value))
                characteristics.append(GATTCharacteristicDefinition(uuid: uuid, properties: [.read], value: .stored(value)))
            }
            try database.add(GATTServiceDefinition(uuid: BluetoothUUID(UInt16(0xB000 + serviceIndex)), characteristics: characteristics))
        }
        #expect(expected.count == 520 && expected.first?.value.count == 0 && expected.last?.value.count == 512)
        let stacks = TwoStacks(database: database)
        #expect(stacks.connect())
        #expect(stacks.run(until: { stacks.mtus.central == 517 }))
        guard case .services(let services) = try #require(stacks.gatt(.discoverAllPrimaryServices)).get() else {
            Issue.record("no services"); return
        }
        #expect(services.count == 10)
        var found: [(uuid: BluetoothUUID, value: [UInt8])] = []
        for service in services {
            guard case .characteristics(let characteristics) = try #require(stacks.gatt(.discoverAllCharacteristics(of: service))).get() else {
                Issue.record("no characteristics"); return
            }
            for characteristic in characteristics {
                guard case .value(let value) = try #require(stacks.gatt(.readLongCharacteristicValue(handle: characteristic.valueHandle))).get() else {
                    Issue.record("no value"); return
                }
                found.append((characteristic.uuid, value))
            }
        }
        #expect(found.count == 520)
        #expect(found.map(\.uuid) == expected.map(\.uuid))
        #expect(found.map(\.value) == expected.map(\.value))
        stacks.disconnectAndCheckLeaks()
    }

    @Test("1,000 notifications of 244 octets paced by readyToSend arrive whole, in order, none lost")
    func notificationStream() throws {
        let stacks = TwoStacks()
        #expect(stacks.connect())
        #expect(stacks.run(until: { stacks.mtus.central == 517 }))
        let characteristic = try #require(TwoStacks.smallDatabase().service.characteristics.last)
        let cccd = try #require(characteristic.clientConfiguration)
        #expect(try stacks.gatt(.subscribe(cccdHandle: cccd, configuration: .notifications))?.get() == .written)
        let total = 1_000
        final class Sender: @unchecked Sendable {
            var next = 0
        }
        let sender = Sender()
        let peripheral = stacks.peripheral
        let handle = stacks.peripheralHandle
        @Sendable func pump() {
            while sender.next < total, peripheral.isReadyToSend(connectionHandle: handle) {
                var value = [UInt8](repeating: UInt8(truncatingIfNeeded: sender.next), count: 244)
                value[0] = UInt8(truncatingIfNeeded: sender.next >> 8)
                peripheral.updateValue(value, handle: characteristic.value)
                sender.next += 1
            }
        }
        let events = stacks.peripheralEvents
        peripheral.setEventHandler { event in
            events.append(event)
            if case .readyToSend = event { pump() }
        }
        stacks.loop.execute { pump() }
        let received = Recorder<[UInt8]>()
        stacks.central.setEventHandler { event in
            if case .gattNotification(_, _, let value) = event { received.append(value) }
        }
        let start = stacks.loop.now
        #expect(stacks.run(until: { received.count >= total }, limit: .seconds(600)))
        let elapsed = stacks.loop.now - start
        #expect(elapsed < .seconds(60), "\(elapsed) of virtual time")
        let values = received.values
        #expect(values.count == total)
        #expect(values.enumerated().allSatisfy { index, value in
            value.count == 244 && value[0] == UInt8(truncatingIfNeeded: index >> 8) && value[1] == UInt8(truncatingIfNeeded: index)
        })
        stacks.disconnectAndCheckLeaks()
    }
}
