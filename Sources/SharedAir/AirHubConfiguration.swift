public import BluetoothCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
public import VirtualController

/// How an ``AirHub`` is set up: where hosts join (a UNIX socket, TCP ports), the radio model and seed, where
/// captures go, and how devices are placed (DESIGN.md "The virtual controller and the air").
public struct AirHubConfiguration: Hashable, Sendable {
    /// The UNIX socket hosts join through (each connection is a new controller); nil for none.
    public var socketPath: String?
    /// TCP endpoints (IPv4) where each accepted connection is a new controller speaking H4 (like RootCanal's HCI
    /// port): Bumble's host joins with `tcp-client:HOST:PORT`.
    public var tcpEndpoints: [AirHubTCPEndpoint]
    /// A directory for one btsnoop capture per controller (created if missing); nil for none.
    public var snoopDirectory: String?
    /// The seed of the air's random source (advDelay, loss, jitter, LE Rand).
    public var seed: UInt64
    /// The radio model (path loss, sensitivity, jitter, packet loss).
    public var air: AirConfiguration
    /// Distance between neighbouring devices (metres): device n sits on a 4-wide grid with this spacing.
    public var spacing: Double
    /// How often a ``AirHubEvent/statistics(_:)`` summary is emitted; nil for never (only at stop).
    public var statisticsInterval: Duration?
    /// A file to record every step of the air in (``AirRecorder``), for ``AirReplay``; nil for none.
    public var recordPath: String?
    /// A pcap file to write every PDU on the air in, as a sniffer would capture it (``LinkLayerSniffer``); nil for none.
    public var sniffPath: String?
    /// The most frames (events, ACL data) that may wait for one host that does not read its socket fast enough;
    /// beyond it the hub disconnects that host (``AirHubEvent/warning(_:)``) instead of stalling the air.
    public var hostQueueLimit: Int

    public init(
        socketPath: String? = AirHub.defaultSocketPath, tcpEndpoints: [AirHubTCPEndpoint] = [],
        snoopDirectory: String? = nil, seed: UInt64 = 1, air: AirConfiguration = AirConfiguration(),
        spacing: Double = 2.0, statisticsInterval: Duration? = .seconds(5), hostQueueLimit: Int = 8192
    ) {
        self.hostQueueLimit = hostQueueLimit
        self.socketPath = socketPath
        self.tcpEndpoints = tcpEndpoints
        self.snoopDirectory = snoopDirectory
        self.seed = seed
        self.air = air
        self.spacing = spacing
        self.statisticsInterval = statisticsInterval
    }
}

/// A TCP listening endpoint, written `HOST:PORT` (`127.0.0.1:9000`; port 0 lets the kernel choose).
public struct AirHubTCPEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String = "127.0.0.1", port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or a bare `PORT` (on 127.0.0.1).
    public init(parsing text: String) throws(AirHubError) {
        let hostText: String
        let portText: String
        if let colon = text.lastIndex(of: ":") {
            hostText = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
        } else {
            hostText = "127.0.0.1"
            portText = text
        }
        guard !hostText.isEmpty else {
            throw AirHubError(.invalidEndpoint, "\"\(text)\": expected HOST:PORT (127.0.0.1:9000)")
        }
        guard !portText.isEmpty, portText.utf8.count <= 5, portText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let port = Int(portText), port <= 65535 else {
            throw AirHubError(.invalidEndpoint, "\"\(text)\": invalid TCP port \"\(portText)\"; expected 0...65535")
        }
        self.host = hostText
        self.port = UInt16(port)
    }

    public var description: String { "\(host):\(port)" }
}

/// Why an ``AirHub`` could not start, with a code a program can test and a reason a person can read.
public struct AirHubError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// Another hub accepts connections on the socket path.
        case alreadyRunning
        /// A socket could not be created, bound or listened on.
        case listenFailed
        /// The snoop directory or a capture file could not be created.
        case snoopFailed
        /// A `HOST:PORT` endpoint is not understood.
        case invalidEndpoint
        /// `start` was called twice, or after `stop`.
        case invalidState
        /// A control command (``AirHubFault``) is not understood.
        case invalidCommand
        /// A control command names a device that is not on the air, or asks what cannot be done now.
        case refused
        /// A recording (``AirReplay``) is not one, or its replay diverged.
        case invalidRecording
        /// The socket's folder or the socket file is not this user's alone (another user owns it, it is open to
        /// others, it is a symbolic link), or the hub behind it runs as another user.
        case untrusted
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason }
}

/// Who is on the hub: the device number (join order, from 1), its public address and position, where its host
/// came from and where its capture goes.
public struct AirHubDevice: Hashable, Sendable {
    public var number: Int
    public var address: BluetoothAddress
    public var position: AirPosition
    /// "unix:PATH" or "tcp:127.0.0.1:9000" (the listener the host came through).
    public var origin: String
    /// The btsnoop file of this controller, if any.
    public var snoopPath: String?
    /// The program that joined ("blue-serve", from the socket's peer credentials), when known.
    public var name: String?

    public init(number: Int, address: BluetoothAddress, position: AirPosition, origin: String, snoopPath: String?, name: String? = nil) {
        self.number = number
        self.address = address
        self.position = position
        self.origin = origin
        self.snoopPath = snoopPath
        self.name = name
    }

    /// "dev1 0A:1B:00:00:00:01".
    public var label: String { "dev\(number) \(address.string)" }
}

/// Traffic counts of one device (HCI packets between its host and its controller) or of the whole hub.
public struct AirHubTraffic: Hashable, Sendable {
    public var commands = 0
    public var events = 0
    /// ACL packets host → controller and controller → host.
    public var aclToController = 0
    public var aclToHost = 0
    /// Octets of every H4 frame, both ways.
    public var octets = 0

    public init() {}

    mutating func add(_ other: AirHubTraffic) {
        commands &+= other.commands
        events &+= other.events
        aclToController &+= other.aclToController
        aclToHost &+= other.aclToHost
        octets &+= other.octets
    }
}

/// A snapshot of the hub: devices, connections and traffic on HCI and on the air.
public struct AirHubStatistics: Hashable, Sendable {
    /// Devices on the air now, and since start.
    public var devices = 0
    public var devicesJoined = 0
    /// Live connections (counted once, at the central's end).
    public var connections = 0
    public var connectionsMade = 0
    /// HCI traffic summed over every device since start.
    public var traffic = AirHubTraffic()
    /// Packets put on the air: advertising PDUs, SCAN_REQ + SCAN_RSP, CONNECT_IND, data channel PDUs.
    public var advertisingPackets = 0
    public var scanPackets = 0
    public var connectRequests = 0
    public var dataPackets = 0
    /// Bytes the hub's process has allocated and not freed (glibc's mallinfo2), nil where the allocator does not
    /// say (another C library, a sanitizer's allocator): what a long-running hub holds, apart from what the
    /// allocator keeps for reuse (its resident size less this).
    public var heapBytesInUse: Int?

    public init() {}
}

/// What an ``AirHub`` reports: devices joining and leaving, connections, encryption and traffic summaries.
public enum AirHubEvent: Hashable, Sendable {
    /// The hub accepts hosts on this endpoint ("unix:PATH", "tcp:127.0.0.1:9000").
    case listening(String)
    case joined(AirHubDevice)
    /// The host went away (its socket closed) or the hub stopped; the controller is powered off.
    case left(AirHubDevice, reason: String)
    /// A connection reached the Connection State at `device` (each link is reported at both ends).
    case connected(device: Int, handle: UInt16, role: String, peer: BluetoothAddress, peerDevice: Int?)
    case disconnected(device: Int, handle: UInt16, reason: HCIStatus)
    case encryptionChanged(device: Int, handle: UInt16, status: HCIStatus, enabled: Bool)
    case statistics(AirHubStatistics)
    case stopped(AirHubStatistics)
    /// A problem that does not stop the hub (a capture that could not be written...).
    case warning(String)
    /// A fault or change applied at run time (``AirHub/apply(_:completion:)``): what was done, in one line.
    case fault(AirHubFault, String)
}
