import BluetoothCore
@testable import BluetoothLE
import BluetoothRuntime
import Host
import Testing
import VirtualController
import StackLauncher

/// Two stacks (central, peripheral) on one in-process virtual air, everything on ONE DispatchEventLoop: async
/// tests need real time, so they keep their radio work short (20 ms advertising, 30–50 ms connection events).
final class TestAir: Sendable {
    let loop = DispatchEventLoop(label: "BluetoothLETests")
    let air: VirtualAir
    let centralHost: HostStack
    let peripheralHost: HostStack
    let central: BluetoothStack
    let peripheral: BluetoothStack

    init(central centralConfiguration: HostConfiguration = HostConfiguration(address: .randomStatic(seed: 2)),
         peripheral peripheralConfiguration: HostConfiguration = HostConfiguration(address: .randomStatic(seed: 1)),
         seed: UInt64 = 7) {
        air = VirtualAir(eventLoop: loop, seed: seed)
        let peripheralController = VirtualController(air: air, address: BluetoothAddress(0x00_11_22_33_44_01, type: .public))
        let centralController = VirtualController(air: air, address: BluetoothAddress(0x00_11_22_33_44_02, type: .public),
                                                  position: AirPosition(x: 1))
        peripheralHost = HostStack(transport: VirtualControllerTransport(controller: peripheralController), eventLoop: loop,
                                   configuration: peripheralConfiguration)
        centralHost = HostStack(transport: VirtualControllerTransport(controller: centralController), eventLoop: loop,
                                configuration: centralConfiguration)
        central = BluetoothStack(host: centralHost)
        peripheral = BluetoothStack(host: peripheralHost)
    }

    /// Both stacks started.
    static func started(central: HostConfiguration = HostConfiguration(address: .randomStatic(seed: 2)),
                        peripheral: HostConfiguration = HostConfiguration(address: .randomStatic(seed: 1))) async throws -> TestAir {
        let air = TestAir(central: central, peripheral: peripheral)
        try await air.central.start()
        try await air.peripheral.start()
        return air
    }

    /// Advertises from the peripheral stack and connects from the central one; returns both ends.
    func connect(name: String = "async-le") async throws -> (Peripheral, Central) {
        let incoming = peripheral.connections()
        let advertising = try await peripheral.advertise(name: name, interval: .milliseconds(20))
        let target = await peripheral.localAddress()
        let remote = try await withTimeout { [central] in try await central.connect(to: target, timeout: .seconds(5)) }
        var iterator = incoming.makeAsyncIterator()
        guard let local = await iterator.next() else { throw BluetoothLEError(.notConnected, "no central came") }
        await advertising.stop()
        return (remote, local)
    }

    /// Disconnects what is connected, then checks that nothing is left in either stack, host or the air.
    func finish(_ peripherals: [Peripheral] = [], sourceLocation: SourceLocation = #_sourceLocation) async {
        for remote in peripherals { try? await withTimeout { try await remote.disconnect() } }
        let quiet = await eventually {
            let resources = await (self.central.resources(), self.peripheral.resources())
            return resources.0.isQuiescent && resources.1.isQuiescent && self.hostsQuiescent
        }
        let resources = await (central.resources(), peripheral.resources())
        #expect(quiet, "central: \(resources.0); peripheral: \(resources.1); hosts: \(hostResources)", sourceLocation: sourceLocation)
        await central.shutdown()
        await peripheral.shutdown()
    }

    var hostsQuiescent: Bool {
        loop.sync { [centralHost, peripheralHost, air] in
            centralHost.resources.isQuiescent && peripheralHost.resources.isQuiescent
                && centralHost.resources.connections == 0 && peripheralHost.resources.connections == 0
                && air.linkCount == 0 && air.scheduledTaskCount == 0
        }
    }

    var hostResources: String {
        loop.sync { [centralHost, peripheralHost, air] in
            "central \(centralHost.resources); peripheral \(peripheralHost.resources); air links \(air.linkCount) tasks \(air.scheduledTaskCount)"
        }
    }
}

struct TimedOut: Error {}

/// Runs `body`, failing with ``TimedOut`` after `seconds` of real time (a hung test fails instead of hanging).
func withTimeout<Value: Sendable>(_ seconds: Double = 10, _ body: @escaping @Sendable () async throws -> Value) async throws -> Value {
    try await withThrowingTaskGroup(of: Value.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            throw TimedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw TimedOut() }
        return first
    }
}

/// Polls `condition` every 10 ms for up to `seconds`; whether it held.
func eventually(_ seconds: Double = 5, _ condition: @Sendable () async -> Bool) async -> Bool {
    let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

/// A value behind a lock, for test recorders.
typealias LockedBox = LockedValue
