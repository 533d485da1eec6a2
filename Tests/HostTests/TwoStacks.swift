import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import HCI
import HCITransport
@testable import Host
import L2CAP
import Testing
import VirtualController
import StackLauncher
import BluetoothEngine

/// Two host stacks, each on its own virtual controller on one air, all on ONE manual loop (deterministic: the
/// `VirtualControllerTransport` hands frames over without threads). The peripheral advertises, the central connects.
final class TwoStacks: @unchecked Sendable {
    let loop = ManualEventLoop()
    let air: VirtualAir
    let peripheralController: VirtualController
    let centralController: VirtualController
    let peripheral: HostStack
    let central: HostStack
    let peripheralEvents = Recorder<HostEvent>()
    let centralEvents = Recorder<HostEvent>()
    /// Handles of the connection on each side, once connected.
    var peripheralHandle: UInt16 = 0
    var centralHandle: UInt16 = 0

    init(database: GATTDatabase = TwoStacks.smallDatabase().database,
         central centralConfiguration: HostConfiguration = HostConfiguration(address: .randomStatic(seed: 2)),
         peripheral peripheralConfiguration: HostConfiguration = HostConfiguration(address: .randomStatic(seed: 1)),
         seed: UInt64 = 42) {
        air = VirtualAir(eventLoop: loop, seed: seed)
        peripheralController = VirtualController(air: air, address: BluetoothAddress(0x00_11_22_33_44_01, type: .public))
        centralController = VirtualController(air: air, address: BluetoothAddress(0x00_11_22_33_44_02, type: .public),
                                              position: AirPosition(x: 1))
        peripheral = HostStack(transport: VirtualControllerTransport(controller: peripheralController), eventLoop: loop,
                               configuration: peripheralConfiguration)
        central = HostStack(transport: VirtualControllerTransport(controller: centralController), eventLoop: loop,
                            configuration: centralConfiguration)
        let pe = peripheralEvents, ce = centralEvents
        peripheral.setEventHandler { pe.append($0) }
        central.setEventHandler { ce.append($0) }
        peripheral.setGATTDatabase(database)
    }

    /// A small database: GAP, GATT (Service Changed), and a test service with one characteristic of each kind.
    static func smallDatabase() -> (database: GATTDatabase, service: GATTServiceHandles) {
        var database = GATTDatabase()
        do {
            try database.addGAPService(deviceName: "wiring")
            try database.addGATTService()
            let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xFFE0), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFE1), properties: [.read, .write, .writeWithoutResponse],
                                             extendedProperties: .reliableWrite, value: .stored([1, 2, 3]),
                                             descriptors: [.userDescription("first")]),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFE2), properties: [.read, .write],
                                             value: .stored((0..<512).map { UInt8(truncatingIfNeeded: $0 &* 7) })),
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xFFE3), properties: [.read, .notify, .indicate],
                                             value: .stored([0])),
            ]))
            return (database, service)
        } catch {
            Issue.record("database: \(error)")
            return (database, GATTServiceHandles(uuid: BluetoothUUID(0xFFE0), isPrimary: true, start: 0, end: 0))
        }
    }

    /// Moves time in 5 ms steps until `condition` holds (at most `limit` of virtual time). Returns whether it held.
    @discardableResult
    func run(until condition: () -> Bool, limit: Duration = .seconds(120)) -> Bool {
        let end = loop.now + limit
        loop.run()
        while !condition() {
            guard loop.now < end else { return false }
            loop.advance(by: .milliseconds(5))
        }
        return true
    }

    /// Starts both stacks, advertises, connects. Returns false on any failure.
    @discardableResult
    func connect() -> Bool {
        let started = Recorder<Bool>()
        peripheral.start { started.append((try? $0.get()) != nil) }
        central.start { started.append((try? $0.get()) != nil) }
        guard run(until: { started.count == 2 }), started.values == [true, true] else { return false }
        let advertising = Recorder<Bool>()
        peripheral.startAdvertising(AdvertisingContent(localName: "wiring")) { advertising.append((try? $0.get()) != nil) }
        guard run(until: { advertising.count == 1 }), advertising.values == [true] else { return false }
        let connected = Recorder<Connection>()
        central.connect(to: peripheral.controllerInfo.ownAddress) { if let c = try? $0.get() { connected.append(c) } }
        guard run(until: { connected.count == 1 && !self.peripheral.openConnections.isEmpty }) else { return false }
        centralHandle = connected.values[0].handle
        peripheralHandle = peripheral.openConnections[0].handle
        return true
    }

    /// Disconnects, the peripheral advertises again as `name` and the central reconnects (handles updated).
    func reconnect(advertisingAs name: String) -> Bool {
        let done = Recorder<Bool>()
        central.disconnect(connectionHandle: centralHandle) { done.append((try? $0.get()) != nil) }
        guard run(until: { done.count == 1 && self.peripheral.openConnections.isEmpty }) else { return false }
        let advertising = Recorder<Bool>()
        peripheral.startAdvertising(AdvertisingContent(localName: name)) { advertising.append((try? $0.get()) != nil) }
        guard run(until: { advertising.count == 1 }) else { return false }
        let connected = Recorder<Connection>()
        central.connect(to: peripheral.controllerInfo.ownAddress) { if let c = try? $0.get() { connected.append(c) } }
        guard run(until: { connected.count == 1 && !self.peripheral.openConnections.isEmpty }) else { return false }
        centralHandle = connected.values[0].handle
        peripheralHandle = peripheral.openConnections[0].handle
        loop.advance(by: .milliseconds(200))
        return true
    }

    /// Runs a GATT procedure from the central and waits for its completion.
    func gatt(_ procedure: GATTProcedure, limit: Duration = .seconds(120)) -> Result<GATTProcedureResult, GATTClientError>? {
        let result = Recorder<Result<GATTProcedureResult, GATTClientError>>()
        central.gatt(connectionHandle: centralHandle, procedure) { result.append($0) }
        run(until: { result.count == 1 }, limit: limit)
        return result.last
    }

    /// Disconnects from the central, powers nothing off, and checks that nothing is left anywhere.
    func disconnectAndCheckLeaks(sourceLocation: SourceLocation = #_sourceLocation) {
        if !central.openConnections.isEmpty {
            let done = Recorder<Bool>()
            central.disconnect(connectionHandle: centralHandle) { done.append((try? $0.get()) != nil) }
            #expect(run(until: { done.count == 1 && self.peripheral.openConnections.isEmpty }), sourceLocation: sourceLocation)
        }
        expectQuiescent(sourceLocation: sourceLocation)
    }

    func expectQuiescent(sourceLocation: SourceLocation = #_sourceLocation) {
        loop.run()
        #expect(central.resources.isQuiescent, "\(central.resources)", sourceLocation: sourceLocation)
        #expect(peripheral.resources.isQuiescent, "\(peripheral.resources)", sourceLocation: sourceLocation)
        #expect(central.resources.connections == 0 && peripheral.resources.connections == 0, sourceLocation: sourceLocation)
        #expect(central.resources.l2capChannels == 0 && peripheral.resources.l2capChannels == 0, sourceLocation: sourceLocation)
        #expect(peripheral.localGATTServer.connectionCount == 0, sourceLocation: sourceLocation)
        #expect(air.linkCount == 0, sourceLocation: sourceLocation)
        #expect(air.scheduledTaskCount == 0, sourceLocation: sourceLocation)
        #expect(loop.pendingWorkDescription == "nothing", sourceLocation: sourceLocation)
        peripheral.shutdown()
        central.shutdown()
        loop.run()
        #expect(loop.pendingWorkDescription == "nothing", sourceLocation: sourceLocation)
    }

    /// The ATT_MTU on each side.
    var mtus: (central: Int?, peripheral: Int?) {
        (central.attMTU(connectionHandle: centralHandle), peripheral.attMTU(connectionHandle: peripheralHandle))
    }
}
