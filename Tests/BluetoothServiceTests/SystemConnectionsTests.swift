import BluetoothCore
import BluetoothLE
import BluetoothRuntime
import Foundation
@testable import OpenCoreBluetooth
import StackLauncher
import TestSupport
import Testing

private let lockService = BluetoothUUID(0xFE20)

/// A CoreBluetooth central that says what it hears (on its own queue).
private final class Listener: NSObject, CBCentralManagerDelegate, @unchecked Sendable {
    let queue = DispatchQueue(label: "SystemConnectionsTests.listener")
    let states = LockedValue<[CBManagerState]>([])
    let events = LockedValue<[String]>([])

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        states.withLock { $0.append(central.state) }
    }

    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent, for peripheral: CBPeripheral) {
        events.withLock { $0.append("\(event == .peerConnected ? "connected" : "disconnected") \(peripheral.identifier.uuidString)") }
    }
}

/// iOS's `retrieveConnectedPeripherals(withServices:)` and connection events look at every link of the device,
/// whichever app made it: on the Bluetooth service, every program's links are the system's.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SystemConnectionsTests {
    @Test func aManagerOnTheServiceSeesAnotherProgramsLinks() async throws {
        let world = try ServiceWorld()
        defer { world.stop() }
        let restoration = world.folder + "/restoration"
        try FileManager.default.createDirectory(atPath: restoration, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])

        // A lock on the air, and another program (through the service) connected to it, its services discovered.
        let lock = try await world.directStack()
        try await lock.publish(deviceName: "lock") { Service(lockService) { Characteristic(BluetoothUUID(0xFE21), properties: [.read], value: [1]) } }
        _ = try await lock.advertise(name: "lock", interval: .milliseconds(20))
        let other = BluetoothStack(opened: try await world.serviceStack())
        let address = await lock.localAddress()
        let remote = try await other.connect(to: address, timeout: .seconds(10))
        _ = try await remote.discoverServices()

        // This program's manager, kept by the service (a restore identifier on the air hub).
        let listener = Listener()
        let manager = CBBackendRegistry.$taskProvider.withValue(HostBackend.provider(.hub(socketPath: world.airPath))) {
            StateRestorationStore.$taskDirectory.withValue(restoration) {
                CBCentralManager(delegate: listener, queue: listener.queue,
                                 options: [CBCentralManagerOptionRestoreIdentifierKey: "com.example.lock-app"])
            }
        }
        #expect(await eventually { listener.states.load().contains(.poweredOn) })
        #expect(world.service.keptStacks["central.com.example.lock-app"] == true)
        let identifier = CBPeerIdentifier.identifier(for: address)
        let found = listener.queue.sync { manager.retrieveConnectedPeripherals(withServices: [CBUUID(bluetoothUUID: lockService)]) }
        #expect(found.map(\.identifier) == [identifier])
        #expect(listener.queue.sync { manager.retrieveConnectedPeripherals(withServices: [CBUUID(string: "180D")]) }.isEmpty)

        // The other program's link ends: a connection event, as iOS reports a link of another app.
        listener.queue.sync { manager.registerForConnectionEvents(options: nil) }
        try await remote.disconnect()
        #expect(await eventually { listener.events.load() == ["disconnected \(identifier.uuidString)"] })
        #expect(listener.queue.sync { manager.retrieveConnectedPeripherals(withServices: [CBUUID(bluetoothUUID: lockService)]) }.isEmpty)
        withExtendedLifetime(manager) {}
        await other.shutdown()
        await lock.shutdown()
    }
}
