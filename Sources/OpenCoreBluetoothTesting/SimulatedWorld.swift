import BluetoothRuntime
public import BluetoothCore
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
/// (DESIGN.md "The virtual controller and the air": distance gives RSSI and range). Time follows the wall clock
/// unless the world is made with virtual time (``Time``): then, while the test waits, the world skips ahead to its
/// next timer whenever it is idle.
public final class SimulatedWorld: Sendable {
    /// The air: every device of this world, and nothing else.
    public let air: InProcessAir
    /// The app's state (foreground, background, suspended) and background modes, as the test sets them.
    public let application: OCBApplication
    /// What the app's managers are made with.
    public let provider: CBBackendProvider
    /// How the world's clock runs.
    public enum Time: Sendable {
        /// The world's air and stacks follow one clock that keeps the wall clock's pace, except while the test waits
        /// (``eventually(within:on:_:)``, ``advance(by:)``): then it jumps to the next timer whenever every stack
        /// and the air are idle and the app has no delegate call pending, so a 30-second ATT timeout passes in about
        /// 0.3 s (at most a hundred times the wall clock's pace). The default.
        case virtual
        /// The wall clock: every second takes a second (an app that times itself with its own
        /// `DispatchQueue.asyncAfter` or `Timer`, which the world's clock does not drive).
        case wallClock
    }

    /// How much faster than the wall clock a virtual world's time may run while the test waits.
    static let virtualPace: Double = 100

    /// The clock of the world's loops (nil: the wall clock).
    let sharedTime: SharedTime?

    /// How the world's clock stands (virtual time: waiters, busy work, timers), for a failure message.
    public var clockSummary: String { sharedTime?.summary ?? "wall clock" }

    /// The world's time now (its air's clock).
    public var now: StackInstant { air.eventLoop.now }

    /// The recording (`blue air --replay`) and link-layer capture (`blue snoop show`, Wireshark) being written,
    /// when the world was asked for them.
    public let captures: SimulatedWorldCaptures?
    private let peripherals = LockedValue<[SimulatedPeripheral]>([])
    private let centrals = LockedValue<[SimulatedCentral]>([])
    private let log = LockedValue<[SimulatedExchange]>([])

    /// The environment variable naming a folder where every world of the process writes its captures (CI sets it,
    /// and keeps the folder of a failed run).
    public static let capturesEnvironmentVariable = "OCB_TEST_CAPTURES"

    /// A world with `seed` for its air's randomness (RSSI jitter, loss), the app in `application`'s state, its
    /// managers offering `attMTU` (an iPhone's 185 by default, as the app meets on a phone) and answering pairing
    /// prompts with `pairingAgent` (none: Just Works, as a program that sets nothing). With `captureDirectory`
    /// (else `OCB_TEST_CAPTURES` when set), the air's every step is recorded there as `NAME.airrec` and its packets
    /// as `NAME.pcap` (``captures``), finished by ``shutdown()``, and every stack's HCI traffic (the app's managers'
    /// and the declared devices') as `NAME.N-LABEL.btsnoop`.
    public init(seed: UInt64 = 1, application: OCBApplication = OCBApplication(), attMTU: Int = 185,
                pairingAgent: OCBPairingAgent? = nil, name: String? = nil, time: Time = .virtual,
                captureDirectory: String? = ProcessInfo.processInfo.environment[SimulatedWorld.capturesEnvironmentVariable]) throws {
        sharedTime = time == .virtual ? SharedTime(maximumPace: Self.virtualPace) : nil
        let worldName = name ?? "world-\(UUID().uuidString.prefix(8).lowercased())"
        let directory = captureDirectory.flatMap { $0.isEmpty ? nil : $0 }
        // Spacing 0: the app's devices stand at the origin; peripherals are placed from it. With a capture folder,
        // every stack's HCI goes to NAME.N-LABEL.btsnoop there.
        air = InProcessAir(seed: seed, spacing: 0, label: "OpenCoreBluetoothTesting.air", sharedTime: sharedTime,
                           snoopPathPrefix: directory.map { ($0 as NSString).appendingPathComponent(worldName) })
        self.application = application
        var provider = HostBackend.provider(.inProcess(air), application: application, preferredATTMTU: attMTU, pairingAgent: pairingAgent)
        // Known peers and restoration state in memory: a test leaves nothing in the user's files.
        provider.storesStateInFiles = false
        self.provider = provider
        if let directory {
            captures = try SimulatedWorldCaptures(directory: directory, name: worldName, air: air.air, seed: seed)
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
        let (stack, controller) = try await declaredDevice(role: "peripheral", label: spec.name ?? "peripheral",
                                                           personality: spec.personality, attMTU: spec.attMTU, proximity: spec.proximity)
        let origin = AirPosition()
        let name = spec.name ?? spec.advertisedName ?? "peripheral"
        let peripheral = SimulatedPeripheral(spec: spec, stack: stack, controller: controller, origin: origin,
                                             sharedTime: sharedTime) { [log] kind in
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

    /// Puts a declared central on the air (``CentralSpec``), to drive an app that is a peripheral: it scans,
    /// connects, reads, writes and subscribes when the test tells it to (``SimulatedCentral``).
    public func simulateCentral(_ spec: CentralSpec = CentralSpec()) async throws -> SimulatedCentral {
        let (stack, controller) = try await declaredDevice(role: "central", label: spec.name, personality: spec.personality,
                                                           attMTU: spec.attMTU, proximity: spec.proximity)
        let origin = AirPosition()
        let central = SimulatedCentral(spec: spec, stack: stack, controller: controller, origin: origin)
        centrals.withLock { $0.append(central) }
        return central
    }

    /// A declared device's stack on a controller of its own at `proximity` from the app: the platform's host
    /// settings (without its address rotation: tests are shorter than a phone's 15 minutes, and the address the
    /// app sees stays) and `attMTU`.
    private func declaredDevice(role: String, label: String, personality: PlatformPersonality?, attMTU: Int,
                                proximity: SimulatedProximity) async throws -> (LaunchedStack, VirtualController) {
        var host = HostConfiguration()
        if let personality {
            personality.configure(&host)
            host.security.privateAddressRotation = nil
        }
        host.preferredATTMTU = attMTU
        host.enhancedATTMTU = UInt16(attMTU)
        let origin = AirPosition()
        let stack: LaunchedStack
        do {
            stack = try await air.makeStack(options: StackLaunchOptions(host: host, label: "simulated.\(label)"),
                                            position: AirPosition(x: origin.x + proximity.distance, y: origin.y))
        } catch {
            throw SimulatedWorldError("the \(role)'s stack did not start: \(error)")
        }
        guard let controller = air.controller(of: stack.controllerInfo.publicAddress) else {
            stack.shutdown()
            throw SimulatedWorldError("the \(role)'s controller is not on the air")
        }
        return (stack, controller)
    }

    /// Waits until `condition` holds, checking it every 10 ms on `queue` (the app's delegate queue, so the app's
    /// state is read where the app writes it; the main queue by default), at most `limit`: whether it held. The
    /// default limit is generous (30 s): it costs nothing when the condition holds sooner, and a machine loaded by a
    /// whole parallel test run is slow.
    ///
    /// `limit` is world time: on a world with virtual time the world runs ahead while the test waits here, so a
    /// limit of 40 s around a 30-second timeout costs about 0.3 s of wall clock (at most `limit`, or a minute, of
    /// wall clock either way). The condition is checked from a thread of the wait's own, so the world stops skipping
    /// ahead as soon as it holds, however busy the test process's thread pool is. With `OCB_TEST_CLOCK_TRACE` set, a wait that gives up prints the clock's state.
    public func eventually(within limit: Duration = .seconds(30), on queue: DispatchQueue = .main,
                           _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        let wallLimit = ContinuousClock.now + max(limit, .seconds(60))
        guard let sharedTime else {
            let deadline = ContinuousClock.now + limit
            while true {
                let held = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
                    queue.async { done.resume(returning: condition()) }
                }
                if held { return true }
                guard ContinuousClock.now < deadline else { return false }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        let deadline = sharedTime.now + limit
        let wallStart = ContinuousClock.now
        // Checked from a thread of its own, not the cooperative pool: a pool starved by other tests would leave the
        // world running to the wait's limit before the condition is seen; the wait ends the moment it holds.
        sharedTime.beginWaiting(horizon: deadline)
        let held = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            Thread.detachNewThread {
                var held = false
                while true {
                    // The time before the check: a check that comes back late while the world moved on is followed
                    // by one more, so a condition that came true in time is seen.
                    let asOf = sharedTime.now
                    if queue.sync(execute: condition) {
                        held = true
                        break
                    }
                    guard asOf < deadline, ContinuousClock.now < wallLimit else { break }
                    usleep(1000)
                }
                sharedTime.endWaiting()
                done.resume(returning: held)
            }
        }
        if !held, ProcessInfo.processInfo.environment["OCB_TEST_CLOCK_TRACE"] != nil {
            FileHandle.standardError.write(Data("world clock: gave up after \(ContinuousClock.now - wallStart) of wall clock; \(sharedTime.summary)\n".utf8))
        }
        return held
    }

    /// Lets `duration` of world time pass (at the wall clock's pace with `.wallClock`; as fast as the world's work
    /// allows with virtual time).
    public func advance(by duration: Duration) async {
        guard let sharedTime else { return (try? await Task.sleep(for: duration)) ?? () }
        let target = sharedTime.now + duration
        let wallLimit = ContinuousClock.now + max(duration, .seconds(60))
        await sharedTime.waiting(until: target) {
            while sharedTime.now < target, ContinuousClock.now < wallLimit { try? await Task.sleep(for: .milliseconds(1)) }
        }
    }

    // MARK: The app's own Bluetooth

    /// The app's Bluetooth switch: ``simulatePowerOff()``, ``simulatePowerOn()``, ``simulateReset()`` turn it.
    public var bluetooth: OCBSystemBluetooth { provider.bluetooth }

    /// Turns the app's Bluetooth off, as the user does in Settings (Nordic's `CBMCentralManagerMock.simulatePowerOff`):
    /// every manager of the app goes `.poweredOff`, its links end without `didDisconnect` (the peripherals see them
    /// time out), its scan and advertising stop; a peripheral manager keeps its services.
    public func simulatePowerOff() { provider.bluetooth.turnOff() }

    /// Turns the app's Bluetooth on again (Nordic's `simulatePowerOn`): every manager goes `.poweredOn` on a new
    /// controller; the app scans, connects and advertises again as its code does on `.poweredOn`.
    public func simulatePowerOn() { provider.bluetooth.turnOn() }

    /// The system's Bluetooth service restarts under the app: every manager goes `.resetting` (a peripheral manager's
    /// services are gone and must be added again), then `.poweredOn` on a new controller.
    public func simulateReset() { provider.bluetooth.reset() }

    /// The app's controller stops answering (a hung chip): nothing it sends reaches its host or the air, so the
    /// peripherals see its links time out, and the app's stack notices at its next HCI command, which gets no
    /// answer within the host's command timeout (2 s). The system then resets Bluetooth, as bluetoothd and the
    /// Linux kernel reset a hung controller: `.resetting`, then `.poweredOn` on a new controller.
    public func simulateUnresponsiveController() {
        let declared = Set(peripherals.load().map(\.controller.publicAddress) + centrals.load().map(\.controller.publicAddress))
        for controller in air.allControllers where !declared.contains(controller.publicAddress) {
            controller.powerOff()
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
        for central in centrals.load() { central.stop() }
        air.shutdown()
        if let captures {
            captures.finish(air: air.air)
            // Where the evidence is, in the test's output.
            let files = [captures.recordingPath, captures.packetsPath] + captures.stackCaptures
            FileHandle.standardError.write(Data("SimulatedWorld \(captures.name): captures in \(captures.directory): \(files.map { ($0 as NSString).lastPathComponent }.joined(separator: ", "))\n".utf8))
        }
        sharedTime?.stop()
    }
}
