import Dispatch
import BluetoothCore
@testable import BluetoothLE
import GATT
import Host
import Testing

@Suite(.serialized)
struct ServerTests {
    @Test func aDeclarativeServerWithWriteHandlers() async throws {
        let air = try await TestAir.started()
        let seen = Recorded<String>()
        let name = Characteristic(BluetoothUUID(0x2A3D), properties: [.read, .write], text: "initial")
            .onWrite { write in seen.append(String(decoding: write.value, as: UTF8.self)) }
        let flags = Characteristic(BluetoothUUID(0xFFF2), properties: [.read], value: [0x5A])
        let extra = [BluetoothUUID(0xFFF3), BluetoothUUID(0xFFF4)].map {
            Characteristic($0, properties: [.read], value: [UInt8(truncatingIfNeeded: $0.uuid16 ?? 0)])
        }
        let includeBattery = true
        try await air.peripheral.publish(deviceName: "declared") {
            Service(BluetoothUUID(0xFFF0)) {
                name
                flags
                for characteristic in extra { characteristic }
            }
            if includeBattery {
                Service(BluetoothUUID(0x180F)) { Characteristic(BluetoothUUID(0x2A19), properties: [.read, .notify], value: [87]) }
            }
        }
        #expect(name.valueHandle != nil && flags.valueHandle != nil)
        let (remote, local) = try await air.connect()
        let services = try await remote.discoverServices()
        #expect(services.map(\.uuid) == [BluetoothUUID(0x1800), BluetoothUUID(0x1801), BluetoothUUID(0xFFF0), BluetoothUUID(0x180F)])
        // The GAP Device Name is the one given to publish.
        let deviceName = try await remote.characteristic(BluetoothUUID(0x2A00), service: BluetoothUUID(0x1800))
        #expect(try await remote.read(deviceName) == Array("declared".utf8))
        let characteristics = try await remote.discoverCharacteristics(of: services[2])
        #expect(characteristics.map(\.uuid) == [BluetoothUUID(0x2A3D), BluetoothUUID(0xFFF2), BluetoothUUID(0xFFF3), BluetoothUUID(0xFFF4)])
        #expect(try await remote.read(characteristics[3]) == [0xF4])
        #expect(try await remote.read(characteristics[0]) == Array("initial".utf8))
        try await remote.write(characteristics[0], value: Array("first".utf8))
        try await remote.write(characteristics[0], value: Array("second".utf8))
        // The handler runs off the loop, in write order.
        #expect(await eventually { seen.values == ["first", "second"] })
        #expect(name.value == Array("second".utf8))
        // setValue changes what reads see without notifying.
        try await air.peripheral.setValue(flags, [0x01, 0x02])
        #expect(try await remote.read(characteristics[1]) == [0x01, 0x02])
        // Writes to a read-only characteristic are refused by its permissions.
        await #expect(throws: BluetoothLEError.self) { try await remote.write(characteristics[1], value: [0]) }
        #expect(local.isConnected)
        await air.finish([remote])
    }

    @Test func fiveHundredBackpressuredNotificationsArriveCompleteAndInOrder() async throws {
        // A send queue of 4 ACL packets: notify must wait for room many times.
        var peripheralConfiguration = HostConfiguration(address: .randomStatic(seed: 1))
        peripheralConfiguration.sendQueueLimit = 4
        let air = try await TestAir.started(peripheral: peripheralConfiguration)
        let stream = Characteristic(BluetoothUUID(0xFFE9), properties: [.notify], value: [])
        try await air.peripheral.publish { Service(BluetoothUUID(0xFFE8)) { stream } }
        let (remote, local) = try await air.connect()
        #expect(await eventually { local.mtu == 517 })
        let characteristic = try await remote.characteristic(BluetoothUUID(0xFFE9), service: BluetoothUUID(0xFFE8))
        let values = try await remote.notifications(for: characteristic)
        let count = 500
        let producer = Task { [stack = air.peripheral] in
            for index in 0..<count {
                // 100 octets each: several ACL packets per notification at the default data length.
                let value = [UInt8(index & 0xFF), UInt8(index >> 8)] + Array(repeating: UInt8(index % 251), count: 98)
                try await stack.notify(stream, value: value, to: local)
            }
        }
        let received = try await withTimeout(30) { () -> [[UInt8]] in
            var received: [[UInt8]] = []
            for await value in values {
                received.append(value)
                if received.count == count { break }
            }
            return received
        }
        try await producer.value
        #expect(received.count == count)
        let indices = received.map { Int($0[0]) | Int($0[1]) << 8 }
        #expect(indices == Array(0..<count))
        #expect(received.allSatisfy { $0.count == 100 })
        let resources = await air.peripheral.resources()
        #expect(resources.readyWaiters == 0)
        #expect(resources.flowControlWaits > 0, "notify never had to wait: the test did not exercise backpressure")
        await air.finish([remote])
    }

    @Test func cancellingABlockedNotifyDropsThatValueOnly() async throws {
        var peripheralConfiguration = HostConfiguration(address: .randomStatic(seed: 1))
        peripheralConfiguration.sendQueueLimit = 1
        let air = try await TestAir.started(peripheral: peripheralConfiguration)
        let stream = Characteristic(BluetoothUUID(0xFFE9), properties: [.notify], value: [])
        try await air.peripheral.publish { Service(BluetoothUUID(0xFFE8)) { stream } }
        let (remote, _) = try await air.connect()
        let characteristic = try await remote.characteristic(BluetoothUUID(0xFFE9), service: BluetoothUUID(0xFFE8))
        let values = try await remote.notifications(for: characteristic)
        // Many notifies at once (200: draining them takes many connection events, so many still wait when they are
        // cancelled): the later ones wait for room; cancel them all, then send a last one.
        let blocked = (0..<200).map { index in
            Task { [stack = air.peripheral] in try await stack.notify(stream, value: [UInt8(truncatingIfNeeded: index)]) }
        }
        // Wait until some are blocked on a full queue, then cancel all while the stacks' loop is held, so the queue
        // cannot drain them first (on a loaded machine it once had, between the look and the cancel).
        #expect(await eventually { await air.peripheral.resources().flowControlWaits > 0 })
        let gate = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (held: CheckedContinuation<Void, Never>) in
            air.loop.execute { held.resume(); gate.wait() }
        }
        for task in blocked { task.cancel() }
        gate.signal()
        var outcomes = (sent: 0, cancelled: 0)
        for task in blocked {
            do {
                try await task.value
                outcomes.sent += 1
            } catch is CancellationError {
                outcomes.cancelled += 1
            }
        }
        #expect(outcomes.sent + outcomes.cancelled == 200)
        #expect(outcomes.sent > 0)
        #expect(outcomes.cancelled > 0)
        try await withTimeout { try await air.peripheral.notify(stream, value: [0xFF]) }
        let received = try await withTimeout { () -> [[UInt8]] in
            var received: [[UInt8]] = []
            for await value in values {
                received.append(value)
                if value == [0xFF] { break }
            }
            return received
        }
        // Exactly the notifies that reported success arrived, then the last one.
        #expect(received.count == outcomes.sent + 1)
        await air.finish([remote])
    }

    @Test func writesWithoutResponseArePacedAndArriveInOrder() async throws {
        var centralConfiguration = HostConfiguration(address: .randomStatic(seed: 2))
        centralConfiguration.sendQueueLimit = 2
        let air = try await TestAir.started(central: centralConfiguration)
        let sink = Characteristic(BluetoothUUID(0xFFD1), properties: [.writeWithoutResponse], value: [])
        try await air.peripheral.publish { Service(BluetoothUUID(0xFFD0)) { sink } }
        let writes = sink.writes()
        let (remote, _) = try await air.connect()
        let characteristic = try await remote.characteristic(BluetoothUUID(0xFFD1), service: BluetoothUUID(0xFFD0))
        let count = 200
        try await withTimeout(30) {
            for index in 0..<count {
                try await remote.write(characteristic, value: [UInt8(index & 0xFF), UInt8(index >> 8)] + Array(repeating: 0x33, count: 18),
                                       type: .withoutResponse)
            }
        }
        let received = try await withTimeout(30) { () -> [Int] in
            var received: [Int] = []
            for await write in writes {
                received.append(Int(write.value[0]) | Int(write.value[1]) << 8)
                if received.count == count { break }
            }
            return received
        }
        #expect(received == Array(0..<count))
        #expect(await air.central.resources().flowControlWaits > 0)
        #expect(sink.writeStreamCount == 0)
        await air.finish([remote])
    }

    @Test func l2capChannelEcho() async throws {
        let air = try await TestAir.started()
        let listener = try await air.peripheral.publishL2CAPChannel(psm: 0x0081)
        let echo = Task {
            for await channel in listener {
                for await sdu in channel.incoming { try await channel.send(sdu.reversed()) }
                return
            }
        }
        let (remote, _) = try await air.connect()
        let channel = try await withTimeout { try await remote.openL2CAPChannel(psm: 0x0081) }
        #expect(channel.psm == 0x0081)
        #expect(channel.peerMTU == 2048)
        let messages: [[UInt8]] = [[1, 2, 3], Array(0..<200).map { UInt8($0) }, (0..<2000).map { UInt8(truncatingIfNeeded: $0 &* 3) }]
        let replies = try await withTimeout { () -> [[UInt8]] in
            var iterator = channel.incoming.makeAsyncIterator()
            var replies: [[UInt8]] = []
            for message in messages {
                try await channel.send(message)
                if let reply = await iterator.next() { replies.append(reply) }
            }
            return replies
        }
        #expect(replies == messages.map { Array($0.reversed()) })
        await channel.close()
        try await withTimeout { try await echo.value }
        // An unknown PSM is refused with a typed error.
        do {
            _ = try await withTimeout { try await remote.openL2CAPChannel(psm: 0x0099) }
            Issue.record("opened a channel nobody listens on")
        } catch let error as BluetoothLEError {
            #expect(error.code == .channelFailed)
        }
        listener.stop()
        await air.finish([remote])
    }
}

/// Values appended from any task.
final class Recorded<Value: Sendable>: Sendable {
    private let storage = LockedBox<[Value]>([])
    func append(_ value: Value) { storage.withLock { $0.append(value) } }
    var values: [Value] { storage.withLock { $0 } }
}
