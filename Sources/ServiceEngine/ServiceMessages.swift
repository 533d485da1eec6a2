public import BluetoothCore
public import BluetoothEngine
public import GATT
public import L2CAP
public import SMP

/// What a program sends the Bluetooth service: a hello first, then calls of the seam, and a goodbye when it
/// ends by its own choice (which releases everything, as a user quitting an app on iOS does).
public enum ServiceRequest: Sendable, Codable {
    case hello(ServiceHello)
    /// ``ServiceOperation/expectsAnswer``: the service answers with ``ServiceMessage/result(id:_:)`` of this id.
    case call(id: UInt64, ServiceOperation)
    case goodbye
}

/// Who the program is and which stack it wants.
public struct ServiceHello: Sendable, Codable, Equatable {
    /// ``ServiceProtocol/version``; another version is refused with one line.
    public var version: Int
    /// The stack the service opens for the program, by StackLauncher's names ("virtual", "air:PATH", "hci0").
    public var stack: String
    /// The program's restore identifier: with one, its stack outlives the connection (the program dies, the links
    /// stay) and a program that says hello with the same identifier gets it back. Without, it ends with the
    /// connection.
    public var identifier: String?
    /// The program's name, for the service's log.
    public var program: String
    /// How to start the program again when an event arrives for it while it is gone (with an identifier only).
    public var relaunch: ServiceRelaunch?
    /// What the program asks of its host (nil: the service's defaults).
    public var host: ServiceHostSettings?

    public init(version: Int = ServiceProtocol.version, stack: String, identifier: String?, program: String,
                relaunch: ServiceRelaunch? = nil, host: ServiceHostSettings? = nil) {
        self.version = version
        self.stack = stack
        self.identifier = identifier
        self.program = program
        self.relaunch = relaunch
        self.host = host
    }
}

/// The host settings a program chooses for its stack: the ATT_MTU it offers (Core 5.4 Vol 3 Part F §3.4.2) and
/// how it pairs (IO capability and MITM, Vol 3 Part H §2.3.2, §2.3.1).
public struct ServiceHostSettings: Sendable, Codable, Equatable {
    public var preferredATTMTU: Int
    public var ioCapability: SMPIOCapability
    public var mitm: Bool

    public init(preferredATTMTU: Int, ioCapability: SMPIOCapability, mitm: Bool) {
        self.preferredATTMTU = preferredATTMTU
        self.ioCapability = ioCapability
        self.mitm = mitm
    }
}

/// A program's registration for relaunch, standing in for an iOS app's bundle: when an event iOS would relaunch a
/// terminated app for (a connection or disconnection, a notification or indication, a read, write or subscription
/// of its server) reaches its kept stack while no program is attached, the service starts `arguments` once (until
/// a program takes the stack back), in a session of its own, with `environment` over the service's and the launch
/// options iOS passes as variables: `OCB_LAUNCH_BLUETOOTH_CENTRALS` or `OCB_LAUNCH_BLUETOOTH_PERIPHERALS` (iOS's
/// `UIApplication.LaunchOptionsKey.bluetoothCentrals` / `.bluetoothPeripherals`) set to the restore identifier,
/// and `OCB_LAUNCH_EVENT` naming the event.
public struct ServiceRelaunch: Sendable, Codable, Equatable {
    /// Which launch option names the identifier.
    public enum Role: String, Sendable, Codable {
        /// A central manager's (`OCB_LAUNCH_BLUETOOTH_CENTRALS`).
        case central
        /// A peripheral manager's (`OCB_LAUNCH_BLUETOOTH_PERIPHERALS`).
        case peripheral
    }

    /// The executable's path, then its arguments.
    public var arguments: [String]
    public var environment: [String: String]
    public var role: Role

    public init(arguments: [String], environment: [String: String] = [:], role: Role) {
        self.arguments = arguments
        self.environment = environment
        self.role = role
    }

    /// The variable of iOS's launch option for `role`.
    public var launchOptionVariable: String {
        role == .central ? "OCB_LAUNCH_BLUETOOTH_CENTRALS" : "OCB_LAUNCH_BLUETOOTH_PERIPHERALS"
    }
}

/// What the service sends a program.
public enum ServiceMessage: Sendable, Codable {
    /// The stack is ready: the first message after a hello.
    case welcome(ServiceWelcome)
    /// The hello was refused (bad version, a stack that cannot open, an identifier in use); the service closes.
    case refused(String)
    /// The answer to the call `id`.
    case result(id: UInt64, ServiceOutcome)
    /// An event of the program's stack, in order.
    case event(HostEvent)
    /// A GATT request the program's deferral asked for (answer with ``ServiceOperation/respondToGATTRequest(handle:id:_:)``).
    case deferredRequest(GATTPendingRequest)
    /// A write of a dynamic value, already accepted by the service.
    case dynamicWrite(GATTWriteRequest)
    /// A request of the program's deferral that the service answered while no program was attached (a write,
    /// accepted): the program hears of it as of any request, and its answer goes nowhere.
    case answeredRequest(GATTPendingRequest)
    /// The stack's controller went away (the service closes the connection after this).
    case lost(String)
    /// Every link of every stack the service runs now, as iOS's system connections (sent when they change).
    case systemLinks([ServiceSystemLink])
}

/// A peer linked to one of the service's stacks, whichever program's, with the services known of it (advertised or
/// discovered by any of them): what `retrieveConnectedPeripherals(withServices:)` looks at on iOS.
public struct ServiceSystemLink: Sendable, Codable, Equatable, Hashable {
    public var peer: BluetoothAddress
    public var services: [BluetoothUUID]

    public init(peer: BluetoothAddress, services: [BluetoothUUID]) {
        self.peer = peer
        self.services = services
    }
}

/// The stack a program gets: new, or the one it left (``reattached``) with the links that still exist.
public struct ServiceWelcome: Sendable, Codable {
    public var controller: ControllerInfo
    public var exchangesMTUOnConnect: Bool
    public var reportsPeerNames: Bool
    public var knownPeers: [BluetoothAddress]
    /// Whether this is the stack a program with the same identifier left.
    public var reattached: Bool
    /// The links of the stack now, with their ATT_MTU (empty for a new stack).
    public var links: [ServiceLink]
    /// Events that arrived while no program was attached, dropped (oldest first) beyond the queue's bound.
    public var droppedEvents: Int
    /// The clients' subscriptions to the stack's server now (CCCD values, Core 5.4 Vol 3 Part G §3.3.3.3).
    public var subscriptions: [ServiceSubscription]
    /// The database the program last gave the stack's server (nil: none).
    public var database: ServiceGATTDatabase?
    /// Every link of the service's stacks (``ServiceMessage/systemLinks(_:)``).
    public var systemLinks: [ServiceSystemLink] = []

    public init(controller: ControllerInfo, exchangesMTUOnConnect: Bool, reportsPeerNames: Bool, knownPeers: [BluetoothAddress],
                reattached: Bool, links: [ServiceLink], droppedEvents: Int, subscriptions: [ServiceSubscription] = [],
                database: ServiceGATTDatabase? = nil) {
        self.controller = controller
        self.exchangesMTUOnConnect = exchangesMTUOnConnect
        self.reportsPeerNames = reportsPeerNames
        self.knownPeers = knownPeers
        self.reattached = reattached
        self.links = links
        self.droppedEvents = droppedEvents
        self.subscriptions = subscriptions
        self.database = database
    }
}

/// A client's subscription to a value of the stack's server.
public struct ServiceSubscription: Sendable, Codable, Equatable, Hashable {
    public var connection: UInt16
    public var valueHandle: UInt16
    public var configuration: GATTClientConfiguration

    public init(connection: UInt16, valueHandle: UInt16, configuration: GATTClientConfiguration) {
        self.connection = connection
        self.valueHandle = valueHandle
        self.configuration = configuration
    }
}

/// A link the service's stack holds.
public struct ServiceLink: Sendable, Codable, Equatable {
    public var connection: Connection
    public var attMTU: Int

    public init(connection: Connection, attMTU: Int) {
        self.connection = connection
        self.attMTU = attMTU
    }
}

/// The result of a call, whatever its type on the seam.
public enum ServiceOutcome: Sendable, Codable {
    case done
    case failed(HostError)
    case address(BluetoothAddress)
    case connection(Connection)
    case status(HCIStatus)
    case linkInfo(LinkInfo?)
    case accepted(Bool)
    case mtu(Int)
    case rssi(Int8)
    case gatt(GATTProcedureResult)
    case gattFailed(GATTClientError)
    case targets([UInt16])
    case l2capChannel(L2CAPChannelInfo)
    case l2capFailed(L2CAPLinkError)
    case pairing(PairingOutcome)
    case outOfBand(LocalOutOfBandData)
}

/// The constants of the service's protocol.
public enum ServiceProtocol {
    /// The version a hello names.
    public static let version = 1
    /// The longest message (one JSON line) either side accepts; a longer one ends the connection.
    public static let maximumMessageLength = 1 << 20
}
