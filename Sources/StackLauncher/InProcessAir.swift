public import BluetoothCore
public import BluetoothRuntime
import HCITransport
import Host
public import VirtualController
import SharedAir

/// A private virtual air in this process (DESIGN.md "The virtual controller and the air"): one ``VirtualAir`` on
/// its own `DispatchEventLoop`, and any number of stacks on it, each a ``HostStack`` on its own loop over its own
/// ``VirtualController`` (through ``VirtualControllerTransport``: frames handed over, nothing serialised). For
/// `blue demo`, benchmarks and tests that want N stacks that see each other without a hub.
///
/// Device n gets the public address `0A:1C:00:00:00:nn` and place n on a 4-wide grid 2 m apart (as the hub does,
/// with its own prefix so the two never clash in a capture).
public final class InProcessAir: Sendable {
    public let eventLoop: DispatchEventLoop
    public let air: VirtualAir
    private let controllers = LockedValue<[VirtualController]>([])
    private let spacing: Double

    /// The clock the air and every stack made on it follow, when it has one (a test kit's world).
    public let sharedTime: SharedTime?

    /// Where every stack made on the air writes a btsnoop capture of its HCI traffic, unless its options name one:
    /// `PREFIX.N-LABEL.btsnoop` for device N (nil: none).
    public let snoopPathPrefix: String?

    /// An air at `spacing` metres between devices; with `sharedTime`, the air's loop and every stack's follow it;
    /// with `snoopPathPrefix`, every stack's HCI is captured.
    public init(seed: UInt64 = 1, configuration: AirConfiguration = AirConfiguration(), spacing: Double = 2,
                label: String = "OpenCoreBluetooth.air", sharedTime: SharedTime? = nil, snoopPathPrefix: String? = nil) {
        self.sharedTime = sharedTime
        self.snoopPathPrefix = snoopPathPrefix
        let loop = DispatchEventLoop(label: label, sharedTime: sharedTime)
        eventLoop = loop
        air = VirtualAir(eventLoop: loop, seed: seed, configuration: configuration)
        self.spacing = spacing
    }

    private static let processAir = LockedValue<InProcessAir?>(nil)

    /// The process's own in-process air (`in-process` as `OCB_HCI` or `BluetoothStack.open` name it: every
    /// CoreBluetooth manager and async stack of the process that asks for it shares this one; made on first use).
    public static var process: InProcessAir {
        processAir.withLock { air in
            if let air { return air }
            let made = InProcessAir(label: "OpenCoreBluetooth.processAir")
            air = made
            return made
        }
    }

    /// The public address of device `number` (from 1) on an in-process air.
    public static func address(forDevice number: Int) -> BluetoothAddress {
        BluetoothAddress(0x0A1C_0000_0000 | (UInt64(truncatingIfNeeded: number) & 0xFFFF_FFFF), type: .public)
    }

    /// A new controller on the air and a started stack on it. `options.snoopPath` taps this stack's HCI.
    public func makeStack(options: StackLaunchOptions = StackLaunchOptions(), position: AirPosition? = nil)
        async throws(StackLaunchError) -> LaunchedStack {
        try await makeStack(options: options, position: position, owned: false)
    }

    /// `count` started stacks on the air (stack i's loop is labelled "<label>.i").
    public func makeStacks(_ count: Int, options: StackLaunchOptions = StackLaunchOptions()) async throws(StackLaunchError) -> [LaunchedStack] {
        var stacks: [LaunchedStack] = []
        for index in 0..<max(0, count) {
            var each = options
            each.label = "\(options.label).\(index + 1)"
            do {
                stacks.append(try await makeStack(options: each))
            } catch {
                for stack in stacks { stack.shutdown() }
                throw error
            }
        }
        return stacks
    }

    func makeStack(options: StackLaunchOptions, position: AirPosition?, owned: Bool) async throws(StackLaunchError) -> LaunchedStack {
        var options = options
        if options.sharedTime == nil { options.sharedTime = sharedTime }
        let (controller, number) = controllers.withLock { list -> (VirtualController, Int) in
            let number = list.count + 1
            let controller = VirtualController(
                air: air, address: Self.address(forDevice: number),
                position: position ?? AirHub.position(forDevice: number, spacing: spacing))
            list.append(controller)
            return (controller, number)
        }
        if options.snoopPath == nil, let prefix = snoopPathPrefix {
            let label = String(options.label.map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" })
            options.snoopPath = "\(prefix).\(number)-\(label).btsnoop"
        }
        return try await StackLauncher.launch(
            transport: VirtualControllerTransport(controller: controller), spec: .inProcess,
            description: "in-process air (\(controller.publicAddress.string))", options: options,
            ownedAir: owned ? self : nil)
    }

    /// Powers off the controller of the stack whose public address is `address` (its peers see the link time out),
    /// for a stack whose owner is done with it: closing the host's transport alone leaves the controller on the air.
    public func powerOffController(of address: BluetoothAddress) {
        controllers.load().first { $0.publicAddress == address }?.powerOff()
    }

    /// The controller whose public address is `address` (a stack's `controllerInfo.publicAddress`), to move it or
    /// silence its radio.
    public func controller(of address: BluetoothAddress) -> VirtualController? {
        controllers.load().first { $0.publicAddress == address }
    }

    /// Every controller on the air, in the order they joined.
    public var allControllers: [VirtualController] { controllers.load() }

    /// Powers every controller off (their links end for the peers). The stacks are shut down by their owners.
    public func shutdown() {
        for controller in controllers.load() { controller.powerOff() }
    }
}
