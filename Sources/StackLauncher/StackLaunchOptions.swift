public import BluetoothRuntime
public import BlueZ
public import Host
public import ServiceEngine
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import VirtualController
import SharedAir

/// How ``StackLauncher/open(spec:options:)`` opens a stack.
public struct StackLaunchOptions: Sendable {
    /// Where to write a btsnoop capture of the stack's HCI traffic (Wireshark opens it); nil for none.
    public var snoopPath: String?
    /// The host's configuration (address policy, timeouts, MTU...).
    public var host: HostConfiguration
    /// The socket of the shared air (`virtual`): ``defaultHubSocketPath``.
    public var hubSocketPath: String
    /// Who starts the shared air's hub when none runs at ``hubSocketPath`` (``SharedAirHub``).
    public var hubStarter: SharedAirHub.Starter
    /// How long the controller may take to initialise before the launch fails.
    public var startTimeout: Duration
    /// The label of the stack's `DispatchEventLoop`.
    public var label: String
    /// Which identity (random static address, IRK, CSRK) the stack presents.
    public var identity: IdentityPolicy = .random
    /// The clock the stack's loop follows with other loops (a test kit's world); nil: its own continuous clock.
    public var sharedTime: SharedTime?
    /// What the program asks that only our host does (its options in use): opening bluetoothd's stack then fails
    /// with the first one's line (``StackLaunchError/Code/notOffered``), as it does with a ``snoopPath``.
    public var needingOurHost: [BluetoothdLimitation] = []
    /// The Bluetooth service's socket (`service[:TRANSPORT]`): ``defaultServiceSocketPath``.
    public var serviceSocketPath: String = StackLaunchOptions.defaultServiceSocketPath
    /// The program's restore identifier at the Bluetooth service: its stack outlives it, and the next program with
    /// this identifier takes it back (nil: the stack ends with the program).
    public var serviceIdentifier: String? = StackLaunchOptions.environmentServiceIdentifier
    /// Whether a `blue service` is started when none runs at ``serviceSocketPath`` (as the shared air's hub is).
    public var startsService = true
    /// How the Bluetooth service starts this program again for an event while it is gone (with a
    /// ``serviceIdentifier``; ServiceEngine's `ServiceRelaunch`): nil, never. By default what `OCB_RELAUNCH` says.
    public var serviceRelaunch: ServiceRelaunch? = StackLaunchOptions.environmentRelaunch

    /// ``identity``: a new random one per launch (in-process and test stacks), or the one kept in a
    /// ``LocalIdentityFile`` (nil directory: ``FileBondStore/defaultDirectory()``, next to the bonds), created on
    /// first use, so a peer's bond with us stays valid from one run to the next (`blue pair`).
    public enum IdentityPolicy: Hashable, Sendable {
        case random
        case persistent(directory: String?)
    }

    public init(snoopPath: String? = nil, host: HostConfiguration = HostConfiguration(),
                hubSocketPath: String = StackLaunchOptions.defaultHubSocketPath, hubStarter: SharedAirHub.Starter = .automatic,
                startTimeout: Duration = .seconds(12), label: String = "OpenCoreBluetooth.stack") {
        self.snoopPath = snoopPath
        self.host = host
        self.hubSocketPath = hubSocketPath
        self.hubStarter = hubStarter
        self.startTimeout = startTimeout
        self.label = label
    }

    /// The environment variable that overrides the shared air's socket path for `virtual` (and for the hub `blue`
    /// starts): `OCB_AIR_SOCKET=/tmp/x.sock blue scan` joins (or starts) the hub at /tmp/x.sock.
    public static let hubSocketEnvironmentVariable = "OCB_AIR_SOCKET"

    /// `$OCB_AIR_SOCKET` when set and not empty, else ``AirHub/defaultSocketPath``.
    public static var defaultHubSocketPath: String {
        if let value = getenv(hubSocketEnvironmentVariable), case let path = String(cString: value), !path.isEmpty {
            return path
        }
        return AirHub.defaultSocketPath
    }

    /// The environment variable that overrides the Bluetooth service's socket path.
    public static let serviceSocketEnvironmentVariable = "OCB_SERVICE_SOCKET"

    /// `$OCB_SERVICE_SOCKET` when set and not empty, else `service.sock` in the shared air's private folder
    /// (``AirHub/defaultSocketPath``'s: `$XDG_RUNTIME_DIR/opencorebluetooth/`, else `/tmp/opencorebluetooth-<uid>/`).
    public static var defaultServiceSocketPath: String {
        if let value = getenv(serviceSocketEnvironmentVariable), case let path = String(cString: value), !path.isEmpty {
            return path
        }
        let hub = AirHub.defaultSocketPath
        return String(hub[..<(hub.lastIndex(of: "/") ?? hub.startIndex)]) + "/service.sock"
    }

    /// The environment variable that gives a whole program a restore identifier at the Bluetooth service
    /// (`OCB_HCI=service OCB_RESTORE_ID=com.example.logger PROGRAM`): its stack outlives it.
    public static let serviceIdentifierEnvironmentVariable = "OCB_RESTORE_ID"

    /// `$OCB_RESTORE_ID` when set and not empty.
    public static var environmentServiceIdentifier: String? {
        guard let value = getenv(serviceIdentifierEnvironmentVariable), case let text = String(cString: value), !text.isEmpty else {
            return nil
        }
        return text
    }

    /// The environment variable that registers a whole program for relaunch by the Bluetooth service:
    /// `OCB_RELAUNCH=central` (or `peripheral`, the launch option that names it) starts the program's own command
    /// line again, with its `OCB_` variables, when an event arrives for its kept stack while it is gone.
    public static let relaunchEnvironmentVariable = "OCB_RELAUNCH"

    /// This program's relaunch when `OCB_RELAUNCH` is set (`peripheral`: as a peripheral manager; anything else: a
    /// central), else nil.
    public static var environmentRelaunch: ServiceRelaunch? {
        guard let value = getenv(relaunchEnvironmentVariable), case let role = String(cString: value), !role.isEmpty else {
            return nil
        }
        let environment = ProcessInfo.processInfo.environment.filter { $0.key.hasPrefix("OCB_") }
        return ServiceRelaunch(arguments: [StackLauncher.currentExecutablePath] + CommandLine.arguments.dropFirst(),
                               environment: environment, role: role == "peripheral" ? .peripheral : .central)
    }
}
