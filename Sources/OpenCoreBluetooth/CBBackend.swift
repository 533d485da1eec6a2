public import BluetoothCore
import BluetoothRuntime

// The seam between the CoreBluetooth façade and a Bluetooth stack. The façade (CBCentralManager, CBPeripheral,
// CBPeripheralManager...) keeps Apple's objects and semantics; a backend does the Bluetooth: GAP, ATT/GATT,
// L2CAP. The production backend runs on the Host stack (issue 5); tests use an in-memory fake.
//
// Contract for every backend:
// - Methods may be called from any thread and must not block: they hop onto the backend's own executor.
// - `start(_:)` hands the backend its event sink. Events and completions may be delivered on any thread, but in
//   the order they happen, one at a time (the façade re-queues each, in order, on the app's queue). The backend
//   reports its first state only after `start(_:)` returns or from within it; the façade never delivers it inside
//   the manager's initializer.
// - The two flow-control queries (`writeWithoutResponse`, `updateValue`) answer synchronously from a
//   lock-protected credit count, then report space again with an event.
// - Every command with a completion completes exactly once, also when the link drops (with `.notConnected`).

/// A remote device as a backend names it: its identity address (Core 5.4 Vol 6 Part B §1.3). The façade derives
/// the `CBPeer.identifier` from it (``CBPeerIdentifier``).
public struct CBBackendPeer: Hashable, Sendable, CustomStringConvertible {
    public var address: BluetoothAddress
    public init(address: BluetoothAddress) { self.address = address }
    public var description: String { address.description }
}

/// Why a backend operation failed: an ATT Error Response from the peer (Core 5.4 Vol 3 Part F §3.4.1.1), which
/// reaches the app as a `CBATTError`, or a local condition, which reaches it as a `CBError`.
public enum CBBackendError: Error, Sendable, Hashable, CustomStringConvertible {
    case att(UInt8)
    case core(CBError.Code, String)

    /// The error delivered to the app's delegate.
    public var cbError: any Error {
        switch self {
        case .att(let code): CBATTError(attErrorCode: code)
        case .core(let code, let reason): CBError(code, reason: reason)
        }
    }

    public var description: String {
        switch self {
        case .att(let code): "ATT error 0x\(String(code, radix: 16))"
        case .core(let code, let reason): "CBError \(code.rawValue): \(reason)"
        }
    }
}

// MARK: - Central role

/// One advertising report (advertising data merged with the scan response), decoded (Core Supplement Part A).
public struct CBBackendAdvertisement: Sendable, Hashable {
    public var peer: CBBackendPeer
    /// dBm; 127 = not available.
    public var rssi: Int
    public var isConnectable: Bool
    public var localName: String?
    public var serviceUUIDs: [BluetoothUUID]
    public var overflowServiceUUIDs: [BluetoothUUID]
    public var solicitedServiceUUIDs: [BluetoothUUID]
    public var serviceData: [BluetoothUUID: [UInt8]]
    /// Company identifier first, little-endian, as on the air.
    public var manufacturerData: [UInt8]?
    public var txPowerLevel: Int?

    public init(peer: CBBackendPeer, rssi: Int, isConnectable: Bool = true, localName: String? = nil,
                serviceUUIDs: [BluetoothUUID] = [], overflowServiceUUIDs: [BluetoothUUID] = [],
                solicitedServiceUUIDs: [BluetoothUUID] = [], serviceData: [BluetoothUUID: [UInt8]] = [:],
                manufacturerData: [UInt8]? = nil, txPowerLevel: Int? = nil) {
        self.peer = peer
        self.rssi = rssi
        self.isConnectable = isConnectable
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
        self.overflowServiceUUIDs = overflowServiceUUIDs
        self.solicitedServiceUUIDs = solicitedServiceUUIDs
        self.serviceData = serviceData
        self.manufacturerData = manufacturerData
        self.txPowerLevel = txPowerLevel
    }
}

/// What the app asked to scan for. The façade filters and coalesces reports itself; a backend may use these to
/// program the controller (duplicate filtering) but must not rely on the façade not filtering.
public struct CBBackendScanParameters: Sendable, Hashable {
    public var serviceUUIDs: [BluetoothUUID]?
    public var allowDuplicates: Bool
    public var solicitedServiceUUIDs: [BluetoothUUID]
    /// Scan less often (an app in the background, on iOS): a long scan interval for a short window.
    public var lowDutyCycle: Bool
    public init(serviceUUIDs: [BluetoothUUID]?, allowDuplicates: Bool, solicitedServiceUUIDs: [BluetoothUUID],
                lowDutyCycle: Bool = false) {
        self.serviceUUIDs = serviceUUIDs
        self.allowDuplicates = allowDuplicates
        self.solicitedServiceUUIDs = solicitedServiceUUIDs
        self.lowDutyCycle = lowDutyCycle
    }
}

/// A remote service: its declaration's handle range (Core 5.4 Vol 3 Part G §4.4).
public struct CBBackendService: Sendable, Hashable {
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    public var startHandle: UInt16
    public var endHandle: UInt16
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, startHandle: UInt16, endHandle: UInt16) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.startHandle = startHandle
        self.endHandle = endHandle
    }
}

/// A remote characteristic: declaration (Core 5.4 Vol 3 Part G §3.3.1) and the last handle of its definition.
public struct CBBackendCharacteristic: Sendable, Hashable {
    public var uuid: BluetoothUUID
    /// The GATT Characteristic Properties octet.
    public var properties: UInt8
    public var declarationHandle: UInt16
    public var valueHandle: UInt16
    public var endHandle: UInt16
    public init(uuid: BluetoothUUID, properties: UInt8, declarationHandle: UInt16, valueHandle: UInt16, endHandle: UInt16) {
        self.uuid = uuid
        self.properties = properties
        self.declarationHandle = declarationHandle
        self.valueHandle = valueHandle
        self.endHandle = endHandle
    }
}

/// A remote characteristic descriptor (Core 5.4 Vol 3 Part G §3.3.3).
public struct CBBackendDescriptor: Sendable, Hashable {
    public var uuid: BluetoothUUID
    public var handle: UInt16
    public init(uuid: BluetoothUUID, handle: UInt16) {
        self.uuid = uuid
        self.handle = handle
    }
}

/// What a central backend reports, in order.
public enum CBCentralBackendEvent: Sendable {
    case stateChanged(CBManagerState)
    /// Every advertising report while scanning (the façade filters by service and coalesces duplicates).
    case advertisement(CBBackendAdvertisement)
    /// A connection exists and the ATT MTU is `mtu` (23 until an exchange; later changes come as `mtuChanged`).
    case connected(CBBackendPeer, mtu: Int)
    case connectionFailed(CBBackendPeer, CBBackendError)
    /// The link is gone: `nil` after `cancelConnection`, an error otherwise (supervision timeout, remote close).
    case disconnected(CBBackendPeer, CBBackendError?)
    case mtuChanged(CBBackendPeer, mtu: Int)
    /// A Handle Value Notification or Indication (the backend confirms indications itself).
    case valueUpdated(CBBackendPeer, handle: UInt16, value: [UInt8])
    /// The Write Command queue has room again after `writeWithoutResponse` returned false.
    case readyToSendWriteWithoutResponse(CBBackendPeer)
    /// The GAP Device Name became known or changed.
    case nameUpdated(CBBackendPeer, String)
    /// Service Changed (Core 5.4 Vol 3 Part G §7.1): the handles in the range are no longer valid.
    case servicesChanged(CBBackendPeer, startHandle: UInt16, endHandle: UInt16)
}

/// A stack that can play the GAP central and GATT client roles for the façade. Handles come from discovery;
/// long reads and writes (Read Blob, Prepare/Execute Write) are the backend's business.
public protocol CBCentralBackend: AnyObject, Sendable {
    func start(_ events: @escaping @Sendable (CBCentralBackendEvent) -> Void)
    /// The manager is gone: stop scanning, drop every connection, deliver nothing more.
    func shutdown()
    func startScan(_ parameters: CBBackendScanParameters)
    func stopScan()
    /// Connects and waits as long as it takes (CoreBluetooth connections never time out); reports `.connected`
    /// (after exchanging the MTU or not) or `.connectionFailed`.
    func connect(_ peer: CBBackendPeer)
    /// Cancels a pending connection or disconnects; ends in `.disconnected(peer, nil)` if a link existed.
    func cancelConnection(_ peer: CBBackendPeer)
    /// Devices the backend knows from an earlier run or a bond (for `retrievePeripherals(withIdentifiers:)`).
    func knownPeers() -> [CBBackendPeer]
    func discoverServices(_ peer: CBBackendPeer, uuids: [BluetoothUUID]?,
                          completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void)
    func discoverIncludedServices(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                  completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void)
    func discoverCharacteristics(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                 completion: @escaping @Sendable (Result<[CBBackendCharacteristic], CBBackendError>) -> Void)
    func discoverDescriptors(_ peer: CBBackendPeer, for characteristic: CBBackendCharacteristic,
                             completion: @escaping @Sendable (Result<[CBBackendDescriptor], CBBackendError>) -> Void)
    /// Reads a whole value (Read, then Read Blob while responses are full).
    func read(_ peer: CBBackendPeer, handle: UInt16, completion: @escaping @Sendable (Result<[UInt8], CBBackendError>) -> Void)
    /// Writes with a response (Write Request, or Prepare/Execute Write for values longer than MTU - 3).
    func write(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8],
               completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
    /// Queues a Write Command. Returns whether the queue still has room after this one; when it returned false,
    /// `.readyToSendWriteWithoutResponse` follows once it has room again.
    func writeWithoutResponse(_ peer: CBBackendPeer, handle: UInt16, value: [UInt8]) -> Bool
    /// Writes the CCCD (`cccdHandle` if discovered, else the backend finds it) with notifications (or
    /// indications when the characteristic cannot notify) on or off.
    func setNotifications(_ peer: CBBackendPeer, characteristic: CBBackendCharacteristic, cccdHandle: UInt16?, enabled: Bool,
                          completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
    func readRSSI(_ peer: CBBackendPeer, completion: @escaping @Sendable (Result<Int, CBBackendError>) -> Void)
    func openL2CAPChannel(_ peer: CBBackendPeer, psm: CBL2CAPPSM,
                          completion: @escaping @Sendable (Result<any CBL2CAPChannelBackend, CBBackendError>) -> Void)
}

// MARK: - Peripheral role

/// A local service to publish, flattened from `CBMutableService` (ids are the façade's, stable while published).
public struct CBBackendLocalService: Sendable, Hashable {
    public var id: Int
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    public var includedServiceIDs: [Int]
    public var characteristics: [CBBackendLocalCharacteristic]
    public init(id: Int, uuid: BluetoothUUID, isPrimary: Bool, includedServiceIDs: [Int], characteristics: [CBBackendLocalCharacteristic]) {
        self.id = id
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includedServiceIDs = includedServiceIDs
        self.characteristics = characteristics
    }
}

/// A local characteristic. `staticValue` non-nil: the backend serves reads itself and never asks the façade
/// (CoreBluetooth's cached values); nil: every read and write becomes a request event.
public struct CBBackendLocalCharacteristic: Sendable, Hashable {
    public var id: Int
    public var uuid: BluetoothUUID
    /// `CBCharacteristicProperties` raw value (the low octet is the GATT properties octet).
    public var properties: UInt
    /// `CBAttributePermissions` raw value.
    public var permissions: UInt
    public var staticValue: [UInt8]?
    public var descriptors: [CBBackendLocalDescriptor]
    public init(id: Int, uuid: BluetoothUUID, properties: UInt, permissions: UInt, staticValue: [UInt8]?,
                descriptors: [CBBackendLocalDescriptor]) {
        self.id = id
        self.uuid = uuid
        self.properties = properties
        self.permissions = permissions
        self.staticValue = staticValue
        self.descriptors = descriptors
    }
}

/// A static descriptor (User Description 0x2901 or Presentation Format 0x2904; the CCCD and Extended Properties
/// are the backend's to add from the properties).
public struct CBBackendLocalDescriptor: Sendable, Hashable {
    public var uuid: BluetoothUUID
    public var value: [UInt8]
    public init(uuid: BluetoothUUID, value: [UInt8]) {
        self.uuid = uuid
        self.value = value
    }
}

/// One write of a request batch.
public struct CBBackendWrite: Sendable, Hashable {
    public var characteristicID: Int
    public var offset: Int
    public var value: [UInt8]
    public init(characteristicID: Int, offset: Int, value: [UInt8]) {
        self.characteristicID = characteristicID
        self.offset = offset
        self.value = value
    }
}

/// What a peripheral backend reports, in order.
public enum CBPeripheralBackendEvent: Sendable {
    case stateChanged(CBManagerState)
    case centralConnected(CBBackendPeer, mtu: Int)
    case centralDisconnected(CBBackendPeer)
    case mtuChanged(CBBackendPeer, mtu: Int)
    /// A Read or Read Blob Request on a dynamic value; answer with `respond(to:result:value:)`. Long reads arrive
    /// as several requests with growing offsets, each answered with the bytes from that offset.
    case readRequest(id: UInt64, central: CBBackendPeer, characteristicID: Int, offset: Int)
    /// A Write Request (one write), an Execute Write (the prepared writes, in order) or Write Commands
    /// (`responseRequired` false). Answered once for the whole batch.
    case writeRequests(id: UInt64, central: CBBackendPeer, writes: [CBBackendWrite], responseRequired: Bool)
    case subscribed(CBBackendPeer, characteristicID: Int)
    case unsubscribed(CBBackendPeer, characteristicID: Int)
    /// The update queue has room again after `updateValue` returned false.
    case readyToUpdateSubscribers
    /// A central opened a channel on a published PSM.
    case l2capChannelOpened(any CBL2CAPChannelBackend)
}

/// A stack that can play the GAP peripheral and GATT server roles for the façade.
public protocol CBPeripheralBackend: AnyObject, Sendable {
    func start(_ events: @escaping @Sendable (CBPeripheralBackendEvent) -> Void)
    func shutdown()
    func addService(_ service: CBBackendLocalService, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
    func removeService(id: Int)
    func removeAllServices()
    /// Advertises the name and service UUIDs (the two keys CoreBluetooth accepts), connectable; the
    /// `overflowServiceUUIDs` in the overflow area (`ServiceOverflowArea`: an app in the background). While
    /// advertising, replaces what is advertised.
    func startAdvertising(localName: String?, serviceUUIDs: [BluetoothUUID], overflowServiceUUIDs: [BluetoothUUID],
                          completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
    func stopAdvertising()
    /// Answers a request batch: an ATT error code (0 = success) and, for reads, the value from the request's offset
    /// (the backend fits it into the response PDU).
    func respond(to requestID: UInt64, result: UInt8, value: [UInt8]?)
    /// Queues a notification (or indication) of `value` to each of `centrals`, truncated to each one's MTU - 3.
    /// Returns false, queueing nothing, when the queue is full; `.readyToUpdateSubscribers` follows.
    func updateValue(_ value: [UInt8], characteristicID: Int, centrals: [CBBackendPeer]) -> Bool
    func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBBackendPeer)
    func publishL2CAPChannel(encryptionRequired: Bool, completion: @escaping @Sendable (Result<CBL2CAPPSM, CBBackendError>) -> Void)
    func unpublishL2CAPChannel(_ psm: CBL2CAPPSM, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
}

// MARK: - L2CAP

/// What an L2CAP channel reports.
public enum CBL2CAPChannelBackendEvent: Sendable {
    /// One SDU received.
    case received([UInt8])
    /// There are credits to send again after `send` accepted less than offered.
    case canSend
    /// The channel closed (by either side or with the link).
    case closed
}

/// An open LE credit-based channel (Core 5.4 Vol 3 Part A §10.1).
public protocol CBL2CAPChannelBackend: AnyObject, Sendable {
    var psm: CBL2CAPPSM { get }
    var peer: CBBackendPeer { get }
    func start(_ events: @escaping @Sendable (CBL2CAPChannelBackendEvent) -> Void)
    /// Offers bytes to send; returns how many were accepted (0 when out of credits).
    func send(_ bytes: [UInt8]) -> Int
    func close()
}

// MARK: - Choosing a backend

/// Makes the backends new managers use. The managers made from one provider form one "system" (one device's
/// Bluetooth, as iOS sees it): they share ``connections``.
public struct CBBackendProvider: Sendable {
    public var makeCentral: @Sendable () -> (any CBCentralBackend)?
    public var makePeripheral: @Sendable () -> (any CBPeripheralBackend)?
    /// The links of this provider's managers, for connection events and `retrieveConnectedPeripherals`.
    public let connections = SystemConnections()
    /// The app its managers belong to: foreground, background or suspended (``OCBApplication``).
    public let application: OCBApplication

    /// `application`: ``OCBApplication/process`` (the environment's) unless a test gives one of its own.
    public init(makeCentral: @escaping @Sendable () -> (any CBCentralBackend)?,
                makePeripheral: @escaping @Sendable () -> (any CBPeripheralBackend)?,
                application: OCBApplication = .process) {
        self.makeCentral = makeCentral
        self.makePeripheral = makePeripheral
        self.application = application
    }
}

/// Where managers get their backend when they are created: the task-local provider if one is bound (tests:
/// `CBBackendRegistry.$taskProvider.withValue(p) { ... }`), else the process-wide default, else the
/// ``HostBackend`` chosen by the environment (`OCB_HCI`). A provider that makes no backend gives `.unsupported`.
public enum CBBackendRegistry {
    @TaskLocal public static var taskProvider: CBBackendProvider?
    private static let defaultProvider = LockedValue<CBBackendProvider?>(nil)

    /// Sets the process-wide default (the stack a program runs on).
    public static func setDefault(_ provider: CBBackendProvider?) {
        defaultProvider.withLock { $0 = provider }
    }

    static var current: CBBackendProvider? {
        taskProvider ?? defaultProvider.load() ?? HostBackend.defaultProvider
    }
}
