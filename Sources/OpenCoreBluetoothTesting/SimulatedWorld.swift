import BluetoothRuntime
import Foundation
import Host
public import OpenCoreBluetooth
public import StackLauncher
import VirtualController

/// The world around the app under test (issue "a test kit for CoreBluetooth apps"): an air of its own in this
/// process, the peripherals the test declares on it, and the app's own CoreBluetooth managers on it, every one the
/// app creates inside `run(_:)` (no change to the app's code). Each test makes its own world, so tests run in
/// parallel without meeting; ``shutdown()`` ends it.
///
/// The app's devices stand at the origin of the air and each peripheral at its ``SimulatedProximity`` from it
/// (DESIGN.md "The virtual controller and the air": distance gives RSSI and range). Time is the wall clock: a test
/// of ATT's 30-second timeout takes 30 seconds.
public final class SimulatedWorld: Sendable {
    /// The air: every device of this world, and nothing else.
    public let air: InProcessAir
    /// The app's state (foreground, background, suspended) and background modes, as the test sets them.
    public let application: OCBApplication
    /// What the app's managers are made with.
    public let provider: CBBackendProvider
    /// The recording (`blue air --replay`) and link-layer capture (`blue snoop show`, Wireshark) being written,
    /// when the world was asked for them.
    public let captures: SimulatedWorldCaptures?
    private let peripherals = LockedValue<[SimulatedPeripheral]>([])
    private let log = LockedValue<[SimulatedExchange]>([])

    /// The environment variable naming a folder where every world of the process writes its captures (CI sets it,
    /// and keeps the folder of a failed run).
    public static let capturesEnvironmentVariable = "OCB_TEST_CAPTURES"

    /// A world with `seed` for its air's randomness (RSSI jitter, loss), the app in `application`'s state, its
    /// managers offering `attMTU` (an iPhone's 185 by default, as the app meets on a phone) and answering pairing
    /// prompts with `pairingAgent` (none: Just Works, as a program that sets nothing). With `captureDirectory`
    /// (else `OCB_TEST_CAPTURES` when set), the air's every step is recorded there as `NAME.airrec` and its packets
    /// as `NAME.pcap` (``captures``), finished by ``shutdown()``.
    public init(seed: UInt64 = 1, application: OCBApplication = OCBApplication(), attMTU: Int = 185,
                pairingAgent: OCBPairingAgent? = nil, name: String? = nil,
                captureDirectory: String? = ProcessInfo.processInfo.environment[SimulatedWorld.capturesEnvironmentVariable]) throws {
        // Spacing 0: the app's devices stand at the origin; peripherals are placed from it.
        air = InProcessAir(seed: seed, spacing: 0, label: "OpenCoreBluetoothTesting.air")
        self.application = application
        provider = HostBackend.provider(.inProcess(air), application: application, preferredATTMTU: attMTU, pairingAgent: pairingAgent)
        if let directory = captureDirectory, !directory.isEmpty {
            captures = try SimulatedWorldCaptures(directory: directory, name: name ?? "world-\(UUID().uuidString.prefix(8).lowercased())",
                                                  air: air.air, seed: seed)
        } else {
            captures = nil
        }
    }

    /// Runs `body` with this world as the radio of every `CBCentralManager` and `CBPeripheralManager` created in it
    /// (and in tasks it starts; a manager made later on another thread needs ``provider`` through
    /// `CBBackendRegistry`).
    public func run<T>(_ body: () throws -> T) rethrows -> T {
        try CBBackendRegistry.$taskProvider.withValue(provider, operation: body)
    }

    /// `run(_:)` for asynchronous code.
    public func run<T>(_ body: () async throws -> T) async rethrows -> T {
        try await CBBackendRegistry.$taskProvider.withValue(provider, operation: body)
    }

    /// Puts a declared peripheral on the air: its stack started, its services published, advertising when its spec
    /// says so (Nordic's `CBMCentralManagerMock.simulatePeripherals`).
    @discardableResult
    public func simulatePeripheral(_ spec: PeripheralSpec) async throws -> SimulatedPeripheral {
        var host = HostConfiguration()
        host.preferredATTMTU = spec.attMTU
        host.enhancedATTMTU = UInt16(spec.attMTU)
        let origin = AirPosition()
        let stack: LaunchedStack
        do {
            stack = try await air.makeStack(options: StackLaunchOptions(host: host, label: "simulated.\(spec.name ?? "peripheral")"),
                                            position: AirPosition(x: origin.x + spec.proximity.distance, y: origin.y))
        } catch {
            throw SimulatedWorldError("the peripheral's stack did not start: \(error)")
        }
        guard let controller = air.controller(of: stack.controllerInfo.publicAddress) else {
            stack.shutdown()
            throw SimulatedWorldError("the peripheral's controller is not on the air")
        }
        let name = spec.name ?? spec.advertisedName ?? "peripheral"
        let peripheral = SimulatedPeripheral(spec: spec, stack: stack, controller: controller, origin: origin) { [log] kind in
            log.withLock { $0.append(SimulatedExchange(peripheral: name, kind: kind)) }
        }
        peripheral.watchEvents()
        do throws(SimulatedWorldError) {
            let database = try peripheral.build(spec.services)
            let published = await stack.awaitCompletion { stack.engine.replaceGATTDatabase(database, changedRange: nil, completion: $0) }
            try published.mapError { SimulatedWorldError("the services were refused: \($0.reason)") }.get()
            try await peripheral.startAdvertising()
        } catch {
            peripheral.stop()
            throw error
        }
        peripherals.withLock { $0.append(peripheral) }
        return peripheral
    }

    /// Waits until `condition` holds, checking it every 10 ms on `queue` (the app's delegate queue, so the app's
    /// state is read where the app writes it; the main queue by default), at most `limit`: whether it held.
    public func eventually(within limit: Duration = .seconds(10), on queue: DispatchQueue = .main,
                           _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while true {
            let holds = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in queue.async { done.resume(returning: condition()) } }
            if holds { return true }
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Everything the simulated peripherals saw of the app, in order.
    public var exchanges: [SimulatedExchange] { log.load() }

    /// The part of every packet on the air that is lost (0...1): the app's requests retried by the link layer, its
    /// links slower, at 1 a link that dies.
    public var packetLoss: Double {
        get { air.air.configuration.packetLoss }
        set { air.air.setPacketLoss(newValue) }
    }

    /// Stops every peripheral and every device of the air (the app's managers see their links end), then finishes
    /// the captures.
    public func shutdown() {
        for peripheral in peripherals.load() { peripheral.stop() }
        air.shutdown()
        captures?.finish(air: air.air)
    }
}
