import BluetoothCore
@testable import BluetoothLE
import GATT
import Host
import Testing

/// A small server: a long readable value, a writable one with a handler, a notifying one, a static one.
struct TestServer {
    static let service = BluetoothUUID(0xFFE0)
    static let longUUID = BluetoothUUID(0xFFE1)
    static let writableUUID = BluetoothUUID(0xFFE2)
    static let notifyingUUID = BluetoothUUID(0xFFE3)
    static let readOnlyUUID = BluetoothUUID(0xFFE4)
    static let longValue = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }

    let long = Characteristic(longUUID, properties: [.read], value: longValue)
    let writable = Characteristic(writableUUID, properties: [.read, .write, .writeWithoutResponse], value: [0])
    let notifying = Characteristic(notifyingUUID, properties: [.read, .notify], value: [0, 0])
    let readOnly = Characteristic(readOnlyUUID, properties: [.read], text: "fixed", descriptors: [.userDescription("a fixed text")])

    func publish(on stack: BluetoothStack, withReadOnly: Bool = true) async throws {
        try await stack.publish(deviceName: "async-le") {
            Service(Self.service) {
                long
                writable
                notifying
                if withReadOnly { readOnly }
            }
        }
    }
}

@Suite(.serialized)
struct GATTTests {
    @Test func discoverReadAndWriteAtTheDefaultMTU() async throws {
        // No MTU exchange: ATT_MTU stays 23, so the 300-octet read takes Read Blob Requests and the 100-octet
        // write takes prepared writes.
        var centralConfiguration = HostConfiguration(address: .randomStatic(seed: 2))
        centralConfiguration.exchangesMTUOnConnect = false
        let air = try await TestAir.started(central: centralConfiguration)
        let server = TestServer()
        try await server.publish(on: air.peripheral)
        let writes = server.writable.writes()
        let (remote, _) = try await air.connect()
        #expect(remote.mtu == 23)

        let services = try await withTimeout { try await remote.discoverServices() }
        #expect(services.map(\.uuid) == [BluetoothUUID(0x1800), BluetoothUUID(0x1801), TestServer.service])
        let characteristics = try await withTimeout { try await remote.discoverCharacteristics(of: services[2]) }
        #expect(characteristics.map(\.uuid) == [TestServer.longUUID, TestServer.writableUUID, TestServer.notifyingUUID, TestServer.readOnlyUUID])
        #expect(characteristics[1].properties == [.read, .write, .writeWithoutResponse])
        #expect(characteristics[1].valueHandle == server.writable.valueHandle)
        let descriptors = try await withTimeout { try await remote.discoverDescriptors(of: characteristics[3]) }
        #expect(descriptors.map(\.uuid) == [GATTUUID.characteristicUserDescription])
        #expect(try await remote.read(descriptors[0]) == Array("a fixed text".utf8))

        #expect(try await withTimeout { try await remote.read(characteristics[0]) } == TestServer.longValue)
        #expect(try await remote.read(characteristics[3]) == Array("fixed".utf8))

        let long = (0..<100).map { UInt8($0) }
        try await withTimeout { try await remote.write(characteristics[1], value: long) }
        #expect(server.writable.value == long)
        #expect(try await remote.read(characteristics[1]) == long)
        try await withTimeout { try await remote.write(characteristics[1], value: [9, 8], type: .withoutResponse) }
        #expect(await eventually { server.writable.value == [9, 8] })
        var iterator = writes.makeAsyncIterator()
        #expect(await iterator.next()?.value == long)
        #expect(await iterator.next()?.value == [9, 8])

        // ATT errors come back typed: the read-only characteristic refuses writes.
        do {
            try await remote.write(characteristics[3], value: [1])
            Issue.record("a write to a read-only characteristic succeeded")
        } catch let error as BluetoothLEError {
            #expect(error.code == .attError)
            #expect(error.attError == .writeNotPermitted)
        }
        // Too long for a Write Command: refused before anything is sent.
        await #expect(throws: BluetoothLEError.self) {
            try await remote.write(characteristics[1], value: Array(repeating: 1, count: 21), type: .withoutResponse)
        }
        await air.finish([remote])
    }

    @Test func characteristicLookupByUUIDAndNotFound() async throws {
        let air = try await TestAir.started()
        let server = TestServer()
        try await server.publish(on: air.peripheral)
        let (remote, _) = try await air.connect()
        let found = try await withTimeout { try await remote.characteristic(TestServer.readOnlyUUID, service: TestServer.service) }
        #expect(found.valueHandle == server.readOnly.valueHandle)
        do {
            _ = try await remote.characteristic(BluetoothUUID(0xABCD), service: TestServer.service)
            Issue.record("found a characteristic that does not exist")
        } catch let error as BluetoothLEError {
            #expect(error.code == .notFound)
        }
        await air.finish([remote])
    }

    @Test func notificationsArriveInOrderAndEndingTheLoopUnsubscribes() async throws {
        let air = try await TestAir.started()
        let server = TestServer()
        try await server.publish(on: air.peripheral)
        let (remote, local) = try await air.connect()
        let characteristic = try await remote.characteristic(TestServer.notifyingUUID, service: TestServer.service)
        let values = try await withTimeout { try await remote.notifications(for: characteristic) }
        // Subscribed before notifications returned: the server sees CCCD 0x0001 for this central.
        #expect(server.notifying.clientConfiguration(connectionHandle: local.connectionHandle) == 0x0001)
        #expect(air.loop.sync {
            air.peripheralHost.localGATTServer.clientConfiguration(valueHandle: server.notifying.valueHandle ?? 0, for: GATTConnectionID(local.connectionHandle))
        } == .notification)
        let count = 10
        let producer = Task { [stack = air.peripheral] in
            for index in 0..<count { try await stack.notify(server.notifying, value: [UInt8(index), 0xAA]) }
        }
        let received = try await withTimeout { () -> [[UInt8]] in
            var received: [[UInt8]] = []
            for await value in values {
                received.append(value)
                if received.count == count { break }
            }
            return received
        }
        try await producer.value
        #expect(received == (0..<count).map { [UInt8($0), 0xAA] })
        #expect(server.notifying.value == [UInt8(count - 1), 0xAA])
        // Leaving the loop ended the subscription: the CCCD is written back to 0 on the server.
        #expect(await eventually { server.notifying.clientConfiguration(connectionHandle: local.connectionHandle) == 0 })
        #expect(await air.central.resources().notificationStreams == 0)
        await air.finish([remote])
    }

    @Test func indicationsStreamAndNonNotifyingCharacteristicsAreRefused() async throws {
        let air = try await TestAir.started()
        let indicating = Characteristic(BluetoothUUID(0xFFA1), properties: [.indicate], value: [])
        let plain = Characteristic(BluetoothUUID(0xFFA2), properties: [.read], value: [1])
        try await air.peripheral.publish { Service(BluetoothUUID(0xFFA0)) { indicating; plain } }
        let (remote, local) = try await air.connect()
        let characteristics = try await remote.discoverCharacteristics(of: try #require(remote.discoverServices([BluetoothUUID(0xFFA0)]).first))
        do {
            _ = try await remote.notifications(for: characteristics[1])
            Issue.record("subscribed to a characteristic that neither notifies nor indicates")
        } catch let error as BluetoothLEError {
            #expect(error.code == .notSupported)
        }
        let values = try await remote.notifications(for: characteristics[0])
        #expect(indicating.clientConfiguration(connectionHandle: local.connectionHandle) == 0x0002)
        for index in 0..<3 { try await air.peripheral.notify(indicating, value: [UInt8(index)]) }
        let received = try await withTimeout { () -> [[UInt8]] in
            var received: [[UInt8]] = []
            for await value in values {
                received.append(value)
                if received.count == 3 { break }
            }
            return received
        }
        #expect(received == [[0], [1], [2]])
        #expect(await eventually { indicating.clientConfiguration(connectionHandle: local.connectionHandle) == 0 })
        await air.finish([remote])
    }

    @Test func twoStreamsShareOneSubscription() async throws {
        let air = try await TestAir.started()
        let server = TestServer()
        try await server.publish(on: air.peripheral)
        let (remote, local) = try await air.connect()
        let characteristic = try await remote.characteristic(TestServer.notifyingUUID, service: TestServer.service)
        let first = try await remote.notifications(for: characteristic)
        let second = try await remote.notifications(for: characteristic)
        try await air.peripheral.notify(server.notifying, value: [1])
        var firstIterator = first.makeAsyncIterator()
        var secondIterator = second.makeAsyncIterator()
        #expect(await firstIterator.next() == [1])
        #expect(await secondIterator.next() == [1])
        first.stop()
        #expect(await firstIterator.next() == nil)
        // One stream left: still subscribed.
        try await air.peripheral.notify(server.notifying, value: [2])
        #expect(await secondIterator.next() == [2])
        #expect(server.notifying.clientConfiguration(connectionHandle: local.connectionHandle) == 0x0001)
        second.stop()
        #expect(await eventually { server.notifying.clientConfiguration(connectionHandle: local.connectionHandle) == 0 })
        await air.finish([remote])
    }

    @Test func notificationStreamsFinishWhenTheLinkEnds() async throws {
        let air = try await TestAir.started()
        let server = TestServer()
        try await server.publish(on: air.peripheral)
        let (remote, local) = try await air.connect()
        let characteristic = try await remote.characteristic(TestServer.notifyingUUID, service: TestServer.service)
        let values = try await remote.notifications(for: characteristic)
        try await local.disconnect()
        let ended = try await withTimeout { () -> Int in
            var count = 0
            for await _ in values { count += 1 }
            return count
        }
        #expect(ended == 0)
        #expect(try await remote.disconnected() == .remoteUserTerminatedConnection)
        await air.finish()
    }

    @Test func cancellingAPendingReadThrowsAndLeavesTheBearerUsable() async throws {
        let air = try await TestAir.started()
        let server = TestServer()
        try await server.publish(on: air.peripheral)
        let (remote, _) = try await air.connect()
        let characteristic = try await remote.characteristic(TestServer.longUUID, service: TestServer.service)
        // Queue reads, cancel them before the radio answered: each throws CancellationError at once.
        let reads = (0..<5).map { _ in Task { try await remote.read(characteristic) } }
        for read in reads { read.cancel() }
        for read in reads {
            await #expect(throws: CancellationError.self) { _ = try await read.value }
        }
        // The reads under way finish on the bearer and their results are dropped; the next read works.
        #expect(try await withTimeout { try await remote.read(characteristic) } == TestServer.longValue)
        #expect(await eventually {
            air.loop.sync { air.centralHost.resources.pendingATTTransactions == 0 }
        })
        // A task cancelled before it starts never touches the stack.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await remote.read(characteristic)
        }
        await #expect(throws: CancellationError.self) { _ = try await early.value }
        await air.finish([remote])
    }
}
