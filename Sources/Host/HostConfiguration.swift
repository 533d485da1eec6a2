public import BluetoothCore
public import Logging

/// How a ``HostStack`` behaves: timeouts, the address it uses and its policies.
public struct HostConfiguration: Sendable {
    /// Which address the host uses on air (Core 5.4 Vol 6 Part B §1.3).
    public enum AddressPolicy: Hashable, Sendable {
        /// A random static address generated at start (from `seed` when given, else the system generator) and set
        /// with LE Set Random Address. The default: Bumble's controllers all have the public address 0.
        case randomStatic(seed: UInt64?)
        /// This random static address.
        case fixedRandom(BluetoothAddress)
        /// The controller's public address (BD_ADDR).
        case publicAddress
    }

    /// Whether to advertise, scan and connect with the Bluetooth 5 extended commands when the controller has them
    /// (Core 5.4 Vol 4 Part E §7.8.53–§7.8.66): advertising data beyond 31 octets, the PHYs of advertisers, the
    /// 2M and Coded PHYs for connections. Off: the legacy commands, as on a 4.2 controller.
    public var usesExtendedAdvertising = true

    /// How long a command may wait for its Command Complete / Command Status before it fails as an unresponsive
    /// controller (the pipe then continues with one credit).
    public var commandTimeout: Duration = .seconds(2)
    /// The same for the commands of the initialisation (Reset first): a controller just reset, or an air hub just
    /// started on a busy machine, may take longer than a running one (Linux waits HCI_INIT_TIMEOUT, 10 s, there).
    /// Two unresponsive steps end the initialisation, so a dead controller costs at most twice this.
    public var initialisationCommandTimeout: Duration = .seconds(5)
    public var address: AddressPolicy = .randomStatic(seed: nil)
    /// Makes each layer's logger from its label (``LogLabel``): `Logger(label:)` by default, so the process's
    /// `LoggingSystem` routes and filters it. A program with several stacks can add metadata to tell them apart
    /// (`{ var logger = Logger(label: $0); logger[metadataKey: "stack"] = "left"; return logger }`).
    public var makeLogger: @Sendable (String) -> Logger = { Logger(label: $0) }
    /// Answer LE Remote Connection Parameter Request with the requested values (true) or reject it with
    /// Unacceptable Connection Parameters (false).
    public var acceptsConnectionParameterRequests = true
    /// Set Event Mask (§7.3.1): Disconnection Complete, Encryption Change, Read Remote Version Information
    /// Complete, Hardware Error, Data Buffer Overflow, Encryption Key Refresh Complete, LE Meta.
    public var eventMask: UInt64 = 0x2000_8000_0200_8890
    /// LE Set Event Mask (§7.8.1): the LE subevents 0x01...0x0C (connection complete to PHY update complete).
    public var leEventMask: UInt64 = 0x0000_0000_0000_0FFF
    /// How many devices the scan merges advertising and scan response for at once (oldest forgotten first).
    public var maximumScanCacheEntries = 256
    /// The largest L2CAP PDU accepted from the controller (basic header included).
    public var maximumReassembledPDULength = 65_539
    /// Our ATT Rx MTU, offered in every Exchange MTU (23...517, Core 5.4 Vol 3 Part F §3.4.2).
    public var preferredATTMTU = 517
    /// As central, send the Exchange MTU Request right after connecting (CoreBluetooth does).
    public var exchangesMTUOnConnect = true
    /// The data length (27...251 octets) the controller is told to use for new connections (LE Write Suggested
    /// Default Data Length, Core 5.4 Vol 4 Part E §7.8.35) when it has LE Data Packet Length Extension, as the
    /// Linux kernel, Zephyr, NimBLE and iOS do: its link layer then negotiates it on every link (LL_LENGTH_REQ).
    /// nil leaves the controller's default (27).
    public var suggestedDataLength: UInt16? = 251
    /// ACL packets queued per connection at or above which the connection is not ready to send
    /// (``HostStack/isReadyToSend(connectionHandle:)``): flow control for notifications and writes without response.
    public var sendQueueLimit = 64
    /// Whether an unanswered L2CAP signaling request (30 s RTX) also drops the link (Vol 3 Part A §6.2.1).
    public var disconnectsOnSignalingTimeout = false
    /// Enhanced ATT (Core 5.4 Vol 3 Part F §3.2.11, `HostStack+EATT.swift`): how many EATT bearers (1...5) the
    /// client opens on an encrypted link to a server whose Server Supported Features has the EATT bit; 0 turns
    /// EATT off (no bearer opened, none accepted).
    public var enhancedATTBearerCount = 3
    /// Whether the client opens EATT bearers by itself once the link is encrypted (reading the peer's Server
    /// Supported Features first), as iOS does. Off: only ``HostStack/openEnhancedATTBearers(connectionHandle:count:completion:)``.
    public var opensEnhancedATTAutomatically = true
    /// Our L2CAP MTU on EATT channels (at least 64); ATT_MTU is the smaller of ours and the peer's.
    public var enhancedATTMTU: UInt16 = 517
    /// The Security Manager: pairing, bonds, attribute security, privacy (`HostStack+Security.swift`).
    public var security = HostSecurityConfiguration()

    public init(commandTimeout: Duration = .seconds(2), address: AddressPolicy = .randomStatic(seed: nil)) {
        self.commandTimeout = commandTimeout
        self.address = address
    }
}
