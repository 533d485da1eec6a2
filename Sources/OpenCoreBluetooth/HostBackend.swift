import BluetoothCore
import BluetoothRuntime
import Foundation
import Host
public import StackLauncher
import BluetoothEngine

/// The production backend: CoreBluetooth managers on this package's own `HostStack` (Core 5.4 Vol 3 Part C
/// GAP, Part G GATT over Part F ATT), on a virtual controller or on real hardware.
///
/// **One stack per manager.** Each `CBCentralManager` and each `CBPeripheralManager` gets its own `HostStack`
/// over its own controller, as two apps (or two radios) would. A central and a peripheral manager of one process
/// therefore meet over the air like any two devices: seed 001's both roles in one process (`blue demo`) connect
/// to each other, and one manager's events never need demultiplexing from another's.
///
/// **Which air** (chosen when a manager is created, from the environment variable `OCB_HCI`):
/// - unset, `virtual` (or its former name `virtual-hub`): the shared air, so that two programs meet as two apps on
///   two devices do — the `blue air` hub at its default socket (`$OCB_AIR_SOCKET`, else the hub's default path).
///   When no hub runs there, one is started in the background (`blue air --socket PATH`, the `blue` that
///   ``hubExecutable(environment:programPath:isExecutable:)`` finds; it outlives the program, for the next ones)
///   and joined; without any `blue`, this process hosts the hub until it exits (`SharedAirHub`);
/// - `air:PATH`: the hub at PATH, started the same way when PATH's directory exists;
/// - `in-process`: an air private to this process (``sharedAir``): its managers meet only each other (public
///   addresses `0A:1C:00:00:00:nn`, stable across runs), as `blue demo` and the tests do;
/// - `bluez`, `bluez:hciN`: not our stack but bluetoothd's, over D-Bus (StackLauncher's `BluetoothdStack`; the
///   managers run on it through the same engine seam);
/// - anything else: a `--hci` transport specification for `StackLauncher` (`tcp:HOST:PORT`, `unix:PATH`,
///   `serial:…`, `hci0`…).
///
/// When the stack cannot be opened, the manager reports `.unsupported` and the reason is logged (error).
/// Programs and tests can choose explicitly with ``provider(_:application:)`` (for example a private `InProcessAir` per
/// test) and `CBBackendRegistry.setDefault(_:)` or the task-local provider.
public enum HostBackend {
    /// Where a manager's stack runs.
    public enum Transport: Sendable {
        /// A new device on this in-process air.
        case inProcess(InProcessAir)
        /// A new device on the air hub listening at `socketPath` (`blue air`), started in the background first
        /// when none runs there.
        case hub(socketPath: String)
        /// A stack opened by `StackLauncher` from a `--hci` specification.
        case specification(String)
        /// Not our stack: bluetoothd over D-Bus (`bluez`, `bluez:hciN`; StackLauncher's `BluetoothdStack`).
        case bluez(adapter: String?)
    }

    /// The environment variable that chooses the transport.
    public static let environmentVariable = StackSpecification.environmentVariable

    /// Whether a manager whose controller goes away logs it (one error, besides its move to
    /// `.poweredOff`). On by default; a program that reports the loss itself (the `blue` tool) turns it off, so
    /// its user reads one line.
    public static var reportsControllerLoss: Bool {
        get { lossReporting.load() }
        set { lossReporting.store(newValue) }
    }
    private static let lossReporting = LockedValue(true)

    /// Whether a manager whose stack on the shared air's hub is lost opens it again (`.resetting`, then the hub
    /// started on demand, as iOS's Bluetooth daemon is restarted). On by default; a program that ends when its
    /// controller goes (the `blue` tool) turns it off, so it never starts a hub on its way out.
    public static var reopensLostStacks: Bool {
        get { reopening.load() }
        set { reopening.store(newValue) }
    }
    private static let reopening = LockedValue(true)

    /// The process's own in-process air (`OCB_HCI=in-process`; ``InProcessAir/process``, created on first use).
    public static var sharedAir: InProcessAir { InProcessAir.process }

    /// The transport `OCB_HCI` names (see the type's documentation).
    public static var environmentTransport: Transport {
        transport(named: ProcessInfo.processInfo.environment[environmentVariable] ?? "")
    }

    /// The transport a text names, as in `OCB_HCI` (``StackSpecification``, the one reading of a stack's name): empty
    /// or `virtual` (the shared air: the hub at its default socket), `air:PATH` (the hub at PATH), `in-process` (the
    /// process's own air), `bluez[:hciN]`, or another `--hci` transport. A name that does not parse is kept as a
    /// specification, which the launch refuses with the parser's reason (the manager then reports `.unsupported`).
    public static func transport(named text: String) -> Transport {
        let name = text.trimmingCharacters(in: .whitespaces)
        if name.isEmpty { return .hub(socketPath: StackLaunchOptions.defaultHubSocketPath) }
        guard let specification = try? StackSpecification(parsing: name) else { return .specification(name) }
        switch specification {
        case .bluez(let adapter): return .bluez(adapter: adapter)
        case .service: return .specification(specification.description)
        case .host(.inProcess): return .inProcess(sharedAir)
        case .host(let transport):
            if let socket = specification.airHubSocket() { return .hub(socketPath: socket) }
            return .specification(transport.description)
        }
    }

    /// The `blue` that starts an air hub (`blue air --socket PATH`): `$OCB_BLUE` when set, else `blue` beside
    /// `programPath`, else the first executable `blue` on `$PATH`; nil when there is none
    /// (`SharedAirHub/executable(environment:programPath:isExecutable:)`).
    public static func hubExecutable(environment: [String: String] = ProcessInfo.processInfo.environment,
                                     programPath: String = StackLauncher.currentExecutablePath,
                                     isExecutable: (String) -> Bool = { FileManager.default.isExecutableFile(atPath: $0) })
        -> String? {
        SharedAirHub.executable(environment: environment, programPath: programPath, isExecutable: isExecutable)
    }

    /// Opens the stack `transport` names: our host (starting the air hub when it names one that does not run yet) or
    /// bluetoothd's (``Transport/bluez(adapter:)``).
    package static func launch(_ transport: Transport, options: StackLaunchOptions) async throws(StackLaunchError) -> any OpenedStack {
        switch transport {
        case .inProcess(let air):
            return try await air.makeStack(options: options)
        case .hub(let path):
            try await ensureHub(at: path)
            return try await StackLauncher.open(spec: .air(path: path), options: options)
        case .specification(let text):
            return try await StackLauncher.open(specification: try StackSpecification(parsing: text), options: options)
        case .bluez(let adapter):
            return try await StackLauncher.open(specification: .bluez(adapter: adapter), options: options)
        }
    }

    private static let startedHubs = LockedValue<[Int32]>([])

    /// The process ids of the hubs this process started (in order). They outlive the process, as the hubs `blue`
    /// starts do; a program (or a test) that wants them gone stops them with SIGTERM.
    public static var hubsStarted: [Int32] { startedHubs.load() }

    /// Makes sure a hub listens at `path`, starting one when none does and `path`'s directory exists
    /// (``SharedAirHub``, the one place that starts the shared air), and records the process it started.
    static func ensureHub(at path: String) async throws(StackLaunchError) {
        if case .started(let pid) = try await SharedAirHub.ensure(at: path, starter: .automatic, inExistingDirectoryOnly: true) {
            startedHubs.withLock { $0.append(pid) }
        }
    }

    /// Backends on `transport` (``environmentTransport`` when nil, read when each manager is made), for managers of
    /// `application` (the process's unless given). `preferredATTMTU` (23...517) is the ATT_MTU each manager's stack
    /// offers in its Exchange MTU (Core 5.4 Vol 3 Part F §3.4.2): nil, `OCB_ATT_MTU` when set (read when each manager
    /// is made), else 517. An iPhone offers 185 (iOS 10 and later; 158 before); Android 14 and later offer 517 once
    /// the app asks for any (and 23, no exchange, until it does).
    ///
    /// `pairingAgent` answers the pairing dialogs iOS would show (``OCBPairingAgent``): nil, `OCB_PAIRING_AGENT` when
    /// set (read when each manager is made), else none (NoInputNoOutput, Just Works).
    public static func provider(_ transport: Transport? = nil, application: OCBApplication = .process,
                                preferredATTMTU: Int? = nil, pairingAgent: OCBPairingAgent? = nil) -> CBBackendProvider {
        let chosen = preferredATTMTU.map { min(max($0, attMTURange.lowerBound), attMTURange.upperBound) }
        let system = OCBSystemBluetooth()
        var provider = CBBackendProvider(
            makeCentral: {
                EngineCentralBackend(transport: transport ?? environmentTransport, preferredATTMTU: chosen ?? environmentATTMTU(),
                                     pairingAgent: pairingAgent ?? OCBPairingAgent.environment(), system: system)
            },
            makePeripheral: {
                EnginePeripheralBackend(transport: transport ?? environmentTransport, preferredATTMTU: chosen ?? environmentATTMTU(),
                                        pairingAgent: pairingAgent ?? OCBPairingAgent.environment(), system: system)
            },
            application: application, bluetooth: system)
        if case .inProcess(let air)? = transport { provider.sharedTime = air.sharedTime }
        return provider
    }

    /// The environment variable that sets the ATT_MTU every manager's stack offers (23...517), for whole programs:
    /// `OCB_ATT_MTU=185` makes the chunks an app computes from `maximumWriteValueLength(for:)` and
    /// `maximumUpdateValueLength` an iPhone's.
    public static let attMTUEnvironmentVariable = "OCB_ATT_MTU"

    /// The ATT_MTUs a manager's stack may offer: the minimum on LE (Core 5.4 Vol 3 Part F §3.2.8) to the longest
    /// attribute value (512) plus the largest header (5).
    static let attMTURange = 23...517

    /// The ATT_MTU `OCB_ATT_MTU` sets; nil when it is unset or empty. A value that is not a number from 23 to 517 is
    /// ignored, and said in one error line (the manager offers the default, 517).
    static func environmentATTMTU(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Int? {
        guard let text = environment[attMTUEnvironmentVariable]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return nil
        }
        guard let mtu = Int(text), attMTURange.contains(mtu) else {
            Log.coreBluetooth.error("\(attMTUEnvironmentVariable)=\(text): expected an ATT_MTU from 23 to 517; offering 517")
            return nil
        }
        return mtu
    }

    /// Backends on a new in-process air of their own (a test's private air: its managers meet only each other).
    /// `preferredATTMTU` (23...517) is the ATT_MTU every stack offers, to exercise long reads and writes.
    /// Its managers belong to `application` (a new one, in the foreground, unless given: a test's app state is its
    /// own).
    public static func privateAirProvider(seed: UInt64 = 1, preferredATTMTU: Int = 517,
                                          application: OCBApplication = OCBApplication()) -> CBBackendProvider {
        provider(.inProcess(InProcessAir(seed: seed, label: "OpenCoreBluetooth.privateAir")), application: application,
                 preferredATTMTU: preferredATTMTU)
    }

    /// The environment variable that makes bonds persistent: set (to anything but an absolute path), bonds and the
    /// local identity are kept in `FileBondStore/defaultDirectory()`; set to an absolute path, in that directory.
    /// Unset, bonds live in memory for the life of the process (each manager's stack has its own store), as a
    /// fresh, never-paired device.
    public static let bondsEnvironmentVariable = "OCB_BONDS"

    /// The bond directory `OCB_BONDS` names (nil: bonds in memory).
    static func bondsDirectory(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        guard let value = environment[bondsEnvironmentVariable]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else {
            return nil
        }
        return value.hasPrefix("/") ? value : FileBondStore.defaultDirectory()
    }

    /// The controller of the stack opened last whose features are known (nil before any): what
    /// `CBCentralManager.supports(_:)` answers from.
    static let lastController = LockedValue<ControllerInfo?>(nil)

    /// `CBCentralManager.supports(.extendedScanAndConnect)`: true when the host drives the controller with the
    /// extended advertising, scanning and connection commands (``ControllerInfo/usesExtendedAdvertising``: the
    /// controller has LE Extended Advertising, Core 5.4 Vol 6 Part B §4.6, and its commands); false before any stack
    /// opened, as on a device whose Bluetooth is off.
    static func supportsExtendedScanAndConnect(controller: ControllerInfo?) -> Bool {
        controller?.usesExtendedAdvertising ?? false
    }

    /// Managers made while no provider is registered use this one (``provider(_:)`` from the environment).
    static let defaultProvider = provider()
}
