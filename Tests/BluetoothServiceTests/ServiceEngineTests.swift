import BluetoothCore
import BluetoothEngine
import BluetoothLE
import BluetoothRuntime
import BluetoothService
import Foundation
import GATT
import ServiceEngine
import StackLauncher
import TestSupport
import Testing

private let serviceUUID = BluetoothUUID(0xFE10)
private let levelUUID = BluetoothUUID(0xFE11)
private let askedUUID = BluetoothUUID(0xFE12)

/// Two programs on one private air, one of them through the Bluetooth service: everything our host does, seen by
/// a program on the seam's third engine.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ServiceEngineTests {
    /// A peripheral on the air (our host in this process) and a central whose stack the service runs: scan,
    /// connect, discover, read, subscribe, all through the service's socket.
    @Test func aCentralThroughTheServiceScansConnectsReadsAndSubscribes() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let peripheral = try await world.directStack()
        let level = Characteristic(levelUUID, properties: [.read, .notify], value: [42])
        try await peripheral.publish(deviceName: "served") { Service(serviceUUID) { level } }
        _ = try await peripheral.advertise(name: "served", services: [serviceUUID], interval: .milliseconds(20))

        let opened = try await world.serviceStack()
        #expect(opened.transportDescription.hasPrefix("service:\(world.servicePath)"))
        #expect(!opened.serviceEngine.welcome.reattached)
        let central = BluetoothStack(opened: opened)
        var scan = central.scan(services: [serviceUUID]).makeAsyncIterator()
        var named: Advertisement?
        while named == nil, let next = try await scan.next() {
            if next.localName != nil { named = next }
        }
        let found = try #require(named)
        #expect(found.localName == "served")
        let remote = try await central.connect(to: found, timeout: .seconds(10))
        #expect(await eventually { remote.mtu > 23 })
        let characteristic = try await remote.characteristic(levelUUID, service: serviceUUID)
        #expect(try await remote.read(characteristic) == [42])
        let values = try await remote.notifications(for: characteristic)
        #expect(await eventually { !level.subscribedConnections.isEmpty })
        try await peripheral.notify(level, value: [43])
        try await peripheral.notify(level, value: [44])
        var iterator = values.makeAsyncIterator()
        #expect(await iterator.next() == [43])
        #expect(await iterator.next() == [44])
        try await remote.disconnect()
        await central.shutdown()
        await peripheral.shutdown()
    }

    /// A peripheral whose stack the service runs answers with the program's own handlers: a read asks `onRead`, a
    /// Write Request asks `onWriteRequest` (which may refuse it with an ATT error), a Write Command reaches
    /// `onWrite`.
    @Test func aPeripheralThroughTheServiceAnswersWithItsHandlers() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let server = BluetoothStack(opened: try await world.serviceStack())
        let reads = LockedBox(0)
        let asked = Characteristic(askedUUID, properties: [.read, .write, .writeWithoutResponse])
            .onRead { _ in
                reads.update { $0 += 1 }
                return [7, 7, 7]
            }
            .onWriteRequest { write in
                if write.value == [0xFF] { throw GATTAttributeError(ATTErrorCode(0x80)) }
            }
        try await server.publish(deviceName: "served") { Service(serviceUUID) { asked } }
        _ = try await server.advertise(name: "served", services: [serviceUUID], interval: .milliseconds(20))

        let client = try await world.directStack()
        var scan = client.scan(services: [serviceUUID]).makeAsyncIterator()
        let found = try #require(await scan.next())
        let remote = try await client.connect(to: found, timeout: .seconds(10))
        let characteristic = try await remote.characteristic(askedUUID, service: serviceUUID)
        #expect(try await remote.read(characteristic) == [7, 7, 7])
        #expect(reads.value == 1)
        try await remote.write(characteristic, value: [1, 2])
        #expect(await eventually { asked.value == [1, 2] })
        do {
            try await remote.write(characteristic, value: [0xFF])
            Issue.record("the handler's refusal did not reach the client")
        } catch let error as BluetoothLEError {
            #expect(error.attError == ATTErrorCode(0x80))
        }
        try await remote.write(characteristic, value: [3], type: .withoutResponse)
        #expect(await eventually { asked.value == [3] })
        try await remote.disconnect()
        await client.shutdown()
        await server.shutdown()
    }

    /// A central with a restore identifier subscribes, then its program dies (the connection ends without a
    /// goodbye). The link stays: the peripheral sees no disconnection and its notifications are queued. The next
    /// program with the identifier takes the stack back: the welcome lists the link, the queued notifications
    /// arrive in order before the live ones, with no connect and no subscribe. Its goodbye then ends the link.
    @Test func aStackWithARestoreIdentifierOutlivesItsProgram() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let peripheral = try await world.directStack()
        let level = Characteristic(levelUUID, properties: [.read, .notify], value: [1])
        try await peripheral.publish(deviceName: "kept") { Service(serviceUUID) { level } }
        let incoming = peripheral.connections()
        _ = try await peripheral.advertise(name: "kept", services: [serviceUUID], interval: .milliseconds(20))

        let first = try await world.serviceStack(identifier: "com.example.kept")
        let central = BluetoothStack(opened: first)
        var scan = central.scan(services: [serviceUUID]).makeAsyncIterator()
        let found = try #require(await scan.next())
        let remote = try await central.connect(to: found, timeout: .seconds(10))
        let handle = remote.connectionHandle
        var centrals = incoming.makeAsyncIterator()
        let seen = try #require(await centrals.next())
        let characteristic = try await remote.characteristic(levelUUID, service: serviceUUID)
        let values = try await remote.notifications(for: characteristic)
        #expect(await eventually { !level.subscribedConnections.isEmpty })
        try await peripheral.notify(level, value: [10])
        var iterator = values.makeAsyncIterator()
        #expect(await iterator.next() == [10])

        // The program dies.
        first.serviceEngine.abandon()
        #expect(await eventually { world.service.keptStacks == ["com.example.kept": false] })
        for value: UInt8 in [11, 12, 13] { try await peripheral.notify(level, value: [value]) }
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.isConnected, "the link ended with the program")

        // The next launch takes it back.
        let second = try await world.serviceStack(identifier: "com.example.kept")
        let welcome = second.serviceEngine.welcome
        #expect(welcome.reattached)
        #expect(welcome.links.map(\.connection.handle) == [handle])
        #expect(welcome.links.first?.attMTU == remote.mtu)
        #expect(second.transportDescription.hasSuffix(", taken back)"))
        let log = EventLog(second.engine)
        #expect(await eventually { log.notifications == [[11], [12], [13]] })
        try await peripheral.notify(level, value: [14])
        #expect(await eventually { log.notifications == [[11], [12], [13], [14]] })
        #expect(world.service.keptStacks == ["com.example.kept": true])

        // A clean exit releases everything.
        second.shutdown()
        #expect(await eventually { !seen.isConnected })
        #expect(await eventually { world.service.keptStacks.isEmpty })
        await central.shutdown()
        await peripheral.shutdown()
    }

    /// A kept peripheral whose program is gone goes on advertising after a central connects (the controller
    /// stops for the connection; the program's own stack would start again, so the service does), as iOS keeps a
    /// terminated app's advertising: a second central finds it while the first is connected.
    @Test func aKeptPeripheralAdvertisesAgainAfterAConnection() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let kept = try await world.serviceStack(identifier: "com.example.beacon")
        let peripheral = BluetoothStack(opened: kept)
        try await peripheral.publish(deviceName: "beacon") { Service(serviceUUID) { Characteristic(levelUUID, properties: [.read], value: [7]) } }
        _ = try await peripheral.advertise(name: "beacon", services: [serviceUUID], interval: .milliseconds(20))
        kept.serviceEngine.abandon()
        #expect(await eventually { world.service.keptStacks == ["com.example.beacon": false] })

        let firstCentral = try await world.directStack()
        var scan = firstCentral.scan(services: [serviceUUID]).makeAsyncIterator()
        let found = try #require(await scan.next())
        let remote = try await firstCentral.connect(to: found, timeout: .seconds(10))
        let secondCentral = try await world.directStack()
        let seenAgain = LockedValue<Bool>(false)
        let scanning = Task {
            for try await advertisement in secondCentral.scan(services: [serviceUUID]) where advertisement.address == found.address {
                seenAgain.store(true)
                break
            }
        }
        #expect(await eventually(5) { seenAgain.load() }, "no advertising after the connection")
        scanning.cancel()
        #expect(remote.isConnected)
        await firstCentral.shutdown()
        await secondCentral.shutdown()
    }

    /// Write Commands that reached a kept server while its program was gone are queued and, once the next program
    /// with the identifier gives the same database, reach its handlers in order (Core 5.4 Vol 3 Part F §3.4.5.3:
    /// a command has no answer, so only the program can act on it).
    @Test func writeCommandsOfTheAbsenceReachTheNextProgram() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        // A database whose switch is a dynamic value: its writes go to the program's handler (as a CoreBluetooth
        // peripheral manager's characteristics without a static value do).
        func install(on stack: ServiceStack, heard: LockedBox<[[UInt8]]>) async throws {
            var database = GATTDatabase()
            _ = try database.addGAPService(deviceName: "lamp")
            _ = try database.addGATTService(serverSupportedFeatures: .enhancedATT)
            _ = try database.add(GATTServiceDefinition(uuid: serviceUUID, characteristics: [
                GATTCharacteristicDefinition(uuid: askedUUID, properties: [.writeWithoutResponse], permissions: .readWrite,
                                             value: .dynamic(read: nil, write: { write in heard.update { $0.append(write.value) }; return nil }),
                                             maximumLength: 20),
            ]))
            let installed: Result<Void, HostError> = await withCheckedContinuation { continuation in
                stack.engine.replaceGATTDatabase(database, changedRange: nil) { continuation.resume(returning: $0) }
            }
            try installed.get()
        }
        let first = try await world.serviceStack(identifier: "com.example.lamp")
        let heardFirst = LockedBox<[[UInt8]]>([])
        try await install(on: first, heard: heardFirst)
        _ = try await BluetoothStack(opened: first).advertise(name: "lamp", services: [serviceUUID], interval: .milliseconds(20))
        first.serviceEngine.abandon()
        #expect(await eventually { world.service.keptStacks == ["com.example.lamp": false] })

        let client = try await world.directStack()
        var scan = client.scan(services: [serviceUUID]).makeAsyncIterator()
        let remote = try await client.connect(to: try #require(await scan.next()), timeout: .seconds(10))
        let switched = try await remote.characteristic(askedUUID, service: serviceUUID)
        for value: UInt8 in [1, 0, 1] { try await remote.write(switched, value: [value], type: .withoutResponse) }
        try await Task.sleep(for: .milliseconds(300))

        let second = try await world.serviceStack(identifier: "com.example.lamp")
        let heard = LockedBox<[[UInt8]]>([])
        // The queue arrives as soon as the program listens, before it gives its database (a restored peripheral
        // manager gives it once its first .poweredOn is over).
        second.engine.addEventHandler { _ in }
        try await Task.sleep(for: .milliseconds(300))
        try await install(on: second, heard: heard)
        #expect(await eventually { heard.value == [[1], [0], [1]] }, "\(heard.value)")
        try await remote.write(switched, value: [0], type: .withoutResponse)
        #expect(await eventually { heard.value == [[1], [0], [1], [0]] }, "\(heard.value)")
        #expect(heardFirst.value.isEmpty)
        await client.shutdown()
        second.shutdown()
    }

    /// The queue for a program that is gone is bounded: past it the oldest are dropped, and the program taking
    /// the stack back is told how many; what is left comes in order.
    @Test func theQueueDropsTheOldestAndCountsThem() async throws {
        let world = try ServiceWorld(queueLimit: 5)
        defer { world.stop() }
        let peripheral = try await world.directStack()
        let level = Characteristic(levelUUID, properties: [.read, .notify], value: [0])
        try await peripheral.publish(deviceName: "busy") { Service(serviceUUID) { level } }
        _ = try await peripheral.advertise(name: "busy", services: [serviceUUID], interval: .milliseconds(20))
        let first = try await world.serviceStack(identifier: "com.example.busy")
        let central = BluetoothStack(opened: first)
        let remote = try await central.connect(to: await peripheral.localAddress(), timeout: .seconds(10))
        let characteristic = try await remote.characteristic(levelUUID, service: serviceUUID)
        _ = try await remote.notifications(for: characteristic)
        #expect(await eventually { !level.subscribedConnections.isEmpty })
        first.serviceEngine.abandon()
        #expect(await eventually { world.service.keptStacks == ["com.example.busy": false] })
        for value: UInt8 in 1...8 { try await peripheral.notify(level, value: [value]) }
        try await Task.sleep(for: .milliseconds(300))

        let second = try await world.serviceStack(identifier: "com.example.busy")
        // Eight notifications (and whatever else the link said meanwhile) into a queue of five.
        let dropped = second.serviceEngine.welcome.droppedEvents
        #expect(dropped >= 3)
        let log = EventLog(second.engine)
        #expect(await eventually { log.notifications.last == [8] })
        let values = log.notifications.map { $0[0] }
        #expect(values.count <= 5 && values.count + dropped >= 8)
        #expect(values == Array((9 - UInt8(values.count))...8), "the newest, in order: \(values)")
        second.shutdown()
        await central.shutdown()
        await peripheral.shutdown()
    }

    /// Without a restore identifier the stack ends with the program: the peer sees the link go.
    @Test func withoutAnIdentifierTheStackEndsWithItsProgram() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let peripheral = try await world.directStack()
        let incoming = peripheral.connections()
        _ = try await peripheral.advertise(name: "brief", services: [serviceUUID], interval: .milliseconds(20))
        let opened = try await world.serviceStack()
        let central = BluetoothStack(opened: opened)
        var scan = central.scan(services: [serviceUUID]).makeAsyncIterator()
        let found = try #require(await scan.next())
        _ = try await central.connect(to: found, timeout: .seconds(10))
        var centrals = incoming.makeAsyncIterator()
        let seen = try #require(await centrals.next())
        opened.serviceEngine.abandon()
        #expect(await eventually { !seen.isConnected })
        #expect(world.service.keptStacks.isEmpty)
        await peripheral.shutdown()
    }

    /// A peripheral app registered for relaunch is terminated; a central connects and writes to its
    /// characteristic. The service starts the registered command once, with the launch option naming the
    /// identifier (`OCB_LAUNCH_BLUETOOTH_PERIPHERALS`), not again for the events that follow, and the write waits
    /// for the app in the queue.
    @Test func aTerminatedPeripheralIsRelaunchedByACentralsWrite() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let marker = world.folder + "/launched"
        let relaunch = ServiceRelaunch(arguments: ["/bin/sh", "-c", "echo \"$OCB_LAUNCH_BLUETOOTH_PERIPHERALS $OCB_LAUNCH_EVENT $OCB_TEST_MARK\" >> \(marker)"],
                                       environment: ["OCB_TEST_MARK": "registered"], role: .peripheral)
        let app = try await world.serviceStack(identifier: "com.example.sensor", relaunch: relaunch)
        let server = BluetoothStack(opened: app)
        let asked = Characteristic(askedUUID, properties: [.read, .write]).onWriteRequest { _ in }
        try await server.publish(deviceName: "sensor") { Service(serviceUUID) { asked } }
        _ = try await server.advertise(name: "sensor", services: [serviceUUID], interval: .milliseconds(20))
        app.serviceEngine.abandon()
        #expect(await eventually { world.service.keptStacks == ["com.example.sensor": false] })
        #expect(!FileManager.default.fileExists(atPath: marker))

        let client = try await world.directStack()
        var scan = client.scan(services: [serviceUUID]).makeAsyncIterator()
        let found = try #require(await scan.next())
        let remote = try await client.connect(to: found, timeout: .seconds(10))
        let characteristic = try await remote.characteristic(askedUUID, service: serviceUUID)
        try await remote.write(characteristic, value: [5])
        #expect(await eventually { (try? String(contentsOfFile: marker, encoding: .utf8)) != nil })
        try await Task.sleep(for: .milliseconds(300))
        let lines = try String(contentsOfFile: marker, encoding: .utf8).split(separator: "\n")
        #expect(lines == ["com.example.sensor connection registered"])

        // The relaunched app takes the stack back and hears of the connection and of the write made while it was
        // gone (the service accepted it; the app's answer goes nowhere).
        let back = try await world.serviceStack(identifier: "com.example.sensor")
        let writes = LockedBox<[[UInt8]]>([])
        back.engine.setGATTDeferral(GATTDeferral(handles: []) { request in
            if case .write(_, let value) = request.kind { writes.update { $0.append(value) } }
        })
        let log = EventLog(back.engine)
        #expect(back.serviceEngine.welcome.reattached)
        #expect(await eventually { log.all.contains { if case .connected = $0 { true } else { false } } })
        #expect(await eventually { writes.value == [[5]] })
        back.shutdown()
        await client.shutdown()
    }

    /// A program with a restore identifier is the same device from one stack to the next (its address and IRK
    /// kept in a private folder of the identifier's), another identifier another device.
    @Test func anIdentifierKeepsItsAddressAcrossStacks() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let first = try await world.serviceStack(identifier: "com.example/same")
        let address = first.controllerInfo.ownAddress
        first.shutdown()
        #expect(await eventually { world.service.keptStacks.isEmpty })
        let again = try await world.serviceStack(identifier: "com.example/same")
        #expect(!again.serviceEngine.welcome.reattached)
        #expect(again.controllerInfo.ownAddress == address)
        let other = try await world.serviceStack(identifier: "com.example.other")
        #expect(other.controllerInfo.ownAddress != address)
        #expect(FileManager.default.fileExists(atPath: world.folder + "/state/com.example%2Fsame"))
        again.shutdown()
        other.shutdown()
    }

    /// The host settings a program chooses travel with its hello: an iPhone's ATT_MTU of 185 is what the link gets.
    @Test func theProgramsHostSettingsTravel() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let peripheral = try await world.directStack()
        _ = try await peripheral.advertise(name: "mtu", services: [serviceUUID], interval: .milliseconds(20))
        let central = BluetoothStack(opened: try await world.serviceStack(preferredATTMTU: 185))
        var scan = central.scan(services: [serviceUUID]).makeAsyncIterator()
        let found = try #require(await scan.next())
        let remote = try await central.connect(to: found, timeout: .seconds(10))
        #expect(await eventually { remote.mtu == 185 })
        try await remote.disconnect()
        await central.shutdown()
        await peripheral.shutdown()
    }

    /// One program per identifier: a second one while the first runs is refused with one line.
    @Test func anIdentifierInUseIsRefused() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let first = try await world.serviceStack(identifier: "com.example.once")
        await #expect {
            _ = try await world.serviceStack(identifier: "com.example.once")
        } throws: { error in
            "\(error)".contains("com.example.once is in use by a running program")
        }
        first.shutdown()
        #expect(await eventually { world.service.keptStacks.isEmpty })
        let again = try await world.serviceStack(identifier: "com.example.once")
        #expect(!again.serviceEngine.welcome.reattached)
        again.shutdown()
    }
}

/// A value shared with a handler that runs on a task of its own.
final class LockedBox<Value: Sendable>: Sendable {
    private let storage: LockedValue<Value>
    init(_ value: Value) { storage = LockedValue(value) }
    var value: Value { storage.load() }
    func update(_ body: (inout Value) -> Void) { storage.withLock { body(&$0) } }
}
