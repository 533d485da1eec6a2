public import BluetoothCore
public import BluetoothRuntime

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
    /// The device's identity address (public or static random).
    public var address: BluetoothAddress
    /// Names the device with identity address `address`.
    public init(address: BluetoothAddress) { self.address = address }
    public var description: String { address.description }
}

/// Why a backend operation failed: an ATT Error Response from the peer (Core 5.4 Vol 3 Part F §3.4.1.1), which
/// reaches the app as a `CBATTError`, or a local condition, which reaches it as a `CBError`.
public enum CBBackendError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The peer answered with an ATT Error Response carrying this error code.
    case att(UInt8)
    /// A local failure: the `CBError` code to report and the reason, in words.
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
    /// The advertiser.
    public var peer: CBBackendPeer
    /// dBm; 127 = not available.
    public var rssi: Int
    /// Whether the advertising event type was connectable (`CBAdvertisementDataIsConnectable`).
    public var isConnectable: Bool
    /// The advertised local name, if any.
    public var localName: String?
    /// The service UUIDs advertised.
    public var serviceUUIDs: [BluetoothUUID]
    /// Service UUIDs offered through an overflow area (`CBAdvertisementDataOverflowServiceUUIDsKey`); the façade
    /// adds those it finds in the overflow area of Apple manufacturer data.
    public var overflowServiceUUIDs: [BluetoothUUID]
    /// The service solicitation UUIDs advertised.
    public var solicitedServiceUUIDs: [BluetoothUUID]
    /// Service data by service UUID.
    public var serviceData: [BluetoothUUID: [UInt8]]
    /// Company identifier first, little-endian, as on the air.
    public var manufacturerData: [UInt8]?
    /// The advertised TX Power Level in dBm, if any.
    public var txPowerLevel: Int?

    /// Creates a report; only the advertiser and RSSI are required.
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
    /// The services to scan for; nil for every device.
    public var serviceUUIDs: [BluetoothUUID]?
    /// Whether every report is wanted (`CBCentralManagerScanOptionAllowDuplicatesKey`) rather than one per device.
    public var allowDuplicates: Bool
    /// Devices soliciting these services match too (`CBCentralManagerScanOptionSolicitedServiceUUIDsKey`).
    public var solicitedServiceUUIDs: [BluetoothUUID]
    /// Scan less often (an app in the background, on iOS): a long scan interval for a short window.
    public var lowDutyCycle: Bool
    /// Creates scan parameters; `lowDutyCycle` defaults to false.
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
    /// The service type.
    public var uuid: BluetoothUUID
    /// Whether the declaration is a primary (not secondary) service.
    public var isPrimary: Bool
    /// The handle of the service declaration.
    public var startHandle: UInt16
    /// The last handle of the service.
    public var endHandle: UInt16
    /// Creates a service over the handle range `startHandle...endHandle`; primary by default.
    public init(uuid: BluetoothUUID, isPrimary: Bool = true, startHandle: UInt16, endHandle: UInt16) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.startHandle = startHandle
        self.endHandle = endHandle
    }
}

/// A remote characteristic: declaration (Core 5.4 Vol 3 Part G §3.3.1) and the last handle of its definition.
public struct CBBackendCharacteristic: Sendable, Hashable {
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// The GATT Characteristic Properties octet.
    public var properties: UInt8
    /// The handle of the characteristic declaration.
    public var declarationHandle: UInt16
    /// The handle of the characteristic value, the one reads, writes and notifications use.
    public var valueHandle: UInt16
    /// The last handle of the characteristic's definition; its descriptors lie after `valueHandle` up to here.
    public var endHandle: UInt16
    /// Creates a characteristic from its declaration and the end of its definition.
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
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// The descriptor's attribute handle.
    public var handle: UInt16
    /// Creates a descriptor at `handle`.
    public init(uuid: BluetoothUUID, handle: UInt16) {
        self.uuid = uuid
        self.handle = handle
    }
}

/// What a central backend reports, in order.
public enum CBCentralBackendEvent: Sendable {
    /// The adapter's state changed; leaving `.poweredOn` stops the scan and ends every connection, with no
    /// `didDisconnectPeripheral` (as on iOS 10 and later).
    case stateChanged(CBManagerState)
    /// Every advertising report while scanning (the façade filters by service and coalesces duplicates).
    case advertisement(CBBackendAdvertisement)
    /// A connection exists and the ATT MTU is `mtu` (23 until an exchange; later changes come as `mtuChanged`).
    case connected(CBBackendPeer, mtu: Int)
    /// A connection attempt failed; reported as `centralManager(_:didFailToConnect:error:)`.
    case connectionFailed(CBBackendPeer, CBBackendError)
    /// The link is gone: `nil` after `cancelConnection`, an error otherwise (supervision timeout, remote close).
    case disconnected(CBBackendPeer, CBBackendError?)
    /// The ATT MTU of a connection changed; it sets `CBPeripheral.maximumWriteValueLength(for:)`.
    case mtuChanged(CBBackendPeer, mtu: Int)
    /// A Handle Value Notification or Indication (the backend confirms indications itself).
    case valueUpdated(CBBackendPeer, handle: UInt16, value: [UInt8])
    /// The Write Command queue has room again after `writeWithoutResponse` returned false.
    case readyToSendWriteWithoutResponse(CBBackendPeer)
    /// The GAP Device Name became known or changed.
    case nameUpdated(CBBackendPeer, String)
    /// Service Changed (Core 5.4 Vol 3 Part G §7.1): the handles in the range are no longer valid.
    case servicesChanged(CBBackendPeer, startHandle: UInt16, endHandle: UInt16)
    /// The links a stack kept for the manager (``CBCentralBackend/keepStack(restoreIdentifier:)``) still holds, with
    /// their ATT MTU: empty for a stack of its own. Sent once, before the first `.stateChanged`.
    case restoredLinks([CBBackendPeer: Int])
    /// Every link of the Bluetooth service's stacks (all programs'), with the services known of each peer, for a
    /// manager on it: the system's connections that `retrieveConnectedPeripherals(withServices:)` and connection
    /// events look at. Sent when they change.
    case systemLinks([CBBackendPeer: Set<BluetoothUUID>])
}

/// A stack that can play the GAP central and GATT client roles for the façade. Handles come from discovery;
/// long reads and writes (Read Blob, Prepare/Execute Write) are the backend's business.
public protocol CBCentralBackend: AnyObject, Sendable {
    /// Asks for a stack that the system keeps when the program dies (the Bluetooth service), under the manager's
    /// restore identifier; before ``start(_:)``. True when the backend will have one: it then reports
    /// `.restoredLinks` before its first state. False (the default) when its transport cannot.
    func keepStack(restoreIdentifier: String) -> Bool
    /// Hands the backend its event sink; the first `.stateChanged` follows.
    func start(_ events: @escaping @Sendable (CBCentralBackendEvent) -> Void)
    /// The manager is gone: stop scanning, drop every connection, deliver nothing more.
    func shutdown()
    /// Starts scanning, or replaces the parameters of the running scan.
    func startScan(_ parameters: CBBackendScanParameters)
    /// Stops scanning; does nothing when not scanning.
    func stopScan()
    /// Connects and waits as long as it takes (CoreBluetooth connections never time out); reports `.connected`
    /// (after exchanging the MTU or not) or `.connectionFailed`.
    func connect(_ peer: CBBackendPeer)
    /// Cancels a pending connection or disconnects; ends in `.disconnected(peer, nil)` if a link existed.
    func cancelConnection(_ peer: CBBackendPeer)
    /// Devices the backend knows from an earlier run or a bond (for `retrievePeripherals(withIdentifiers:)`).
    func knownPeers() -> [CBBackendPeer]
    /// Discovers the primary services of a connected peer; `uuids` nil for all of them.
    func discoverServices(_ peer: CBBackendPeer, uuids: [BluetoothUUID]?,
                          completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void)
    /// Discovers the services `service` includes; `uuids` nil for all of them.
    func discoverIncludedServices(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                  completion: @escaping @Sendable (Result<[CBBackendService], CBBackendError>) -> Void)
    /// Discovers the characteristics of `service`; `uuids` nil for all of them.
    func discoverCharacteristics(_ peer: CBBackendPeer, in service: CBBackendService, uuids: [BluetoothUUID]?,
                                 completion: @escaping @Sendable (Result<[CBBackendCharacteristic], CBBackendError>) -> Void)
    /// Discovers the descriptors of `characteristic`.
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
    /// Reads the RSSI of a connection, in dBm.
    func readRSSI(_ peer: CBBackendPeer, completion: @escaping @Sendable (Result<Int, CBBackendError>) -> Void)
    /// Opens an LE credit-based channel to `psm` on a connected peer.
    func openL2CAPChannel(_ peer: CBBackendPeer, psm: CBL2CAPPSM,
                          completion: @escaping @Sendable (Result<any CBL2CAPChannelBackend, CBBackendError>) -> Void)
}

extension CBCentralBackend {
    /// A backend of its own stack only.
    public func keepStack(restoreIdentifier: String) -> Bool { false }
}

// MARK: - Peripheral role

/// A local service to publish, flattened from `CBMutableService` (ids are the façade's, stable while published).
public struct CBBackendLocalService: Sendable, Hashable {
    /// The façade's id for the service.
    public var id: Int
    /// The service type.
    public var uuid: BluetoothUUID
    /// Whether to declare a primary (not secondary) service.
    public var isPrimary: Bool
    /// The ids of already published services this one includes.
    public var includedServiceIDs: [Int]
    /// The service's characteristics, in order.
    public var characteristics: [CBBackendLocalCharacteristic]
    /// Creates a service definition.
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
    /// The façade's id for the characteristic, used by request events, `updateValue` and subscriptions.
    public var id: Int
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// `CBCharacteristicProperties` raw value (the low octet is the GATT properties octet).
    public var properties: UInt
    /// `CBAttributePermissions` raw value.
    public var permissions: UInt
    /// The cached value the backend serves itself, or nil for a dynamic value.
    public var staticValue: [UInt8]?
    /// The static descriptors to add besides those the backend derives from the properties.
    public var descriptors: [CBBackendLocalDescriptor]
    /// Creates a characteristic definition.
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
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// The descriptor's value bytes.
    public var value: [UInt8]
    /// Creates a static descriptor.
    public init(uuid: BluetoothUUID, value: [UInt8]) {
        self.uuid = uuid
        self.value = value
    }
}

/// One write of a request batch.
public struct CBBackendWrite: Sendable, Hashable {
    /// The id of the written characteristic.
    public var characteristicID: Int
    /// Where in the value the bytes go (non-zero for prepared writes of a long value).
    public var offset: Int
    /// The bytes written.
    public var value: [UInt8]
    /// Creates a write.
    public init(characteristicID: Int, offset: Int, value: [UInt8]) {
        self.characteristicID = characteristicID
        self.offset = offset
        self.value = value
    }
}

/// What a peripheral backend reports, in order.
public enum CBPeripheralBackendEvent: Sendable {
    /// The adapter's state changed; leaving `.poweredOn` stops advertising and forgets centrals and subscriptions.
    case stateChanged(CBManagerState)
    /// A central connected, with ATT MTU `mtu`; there is no delegate callback for this.
    case centralConnected(CBBackendPeer, mtu: Int)
    /// A central's link is gone; the façade reports each of its subscriptions as ended.
    case centralDisconnected(CBBackendPeer)
    /// The ATT MTU with a central changed; it sets `CBCentral.maximumUpdateValueLength`.
    case mtuChanged(CBBackendPeer, mtu: Int)
    /// A Read or Read Blob Request on a dynamic value; answer with `respond(to:result:value:)`. Long reads arrive
    /// as several requests with growing offsets, each answered with the bytes from that offset.
    case readRequest(id: UInt64, central: CBBackendPeer, characteristicID: Int, offset: Int)
    /// A Write Request (one write), an Execute Write (the prepared writes, in order) or Write Commands
    /// (`responseRequired` false). Answered once for the whole batch.
    case writeRequests(id: UInt64, central: CBBackendPeer, writes: [CBBackendWrite], responseRequired: Bool)
    /// A central enabled notifications or indications of a characteristic (wrote its CCCD).
    case subscribed(CBBackendPeer, characteristicID: Int)
    /// A central disabled notifications and indications of a characteristic.
    case unsubscribed(CBBackendPeer, characteristicID: Int)
    /// The update queue has room again after `updateValue` returned false.
    case readyToUpdateSubscribers
    /// A central opened a channel on a published PSM.
    case l2capChannelOpened(any CBL2CAPChannelBackend)
    /// A kept stack taken back (``CBPeripheralBackend/keepStack(restoreIdentifier:)``): the centrals the system
    /// kept connected and what they subscribed to, before the stack's first state (once; empty when nothing was
    /// kept), so that the restored services carry their subscribed centrals in `willRestoreState`.
    case restoredCentrals([CBBackendKeptCentral])
}

/// A central a kept server still has (``CBPeripheralBackendEvent/restoredCentrals(_:)``): its ATT_MTU and the
/// characteristics whose notifications or indications it enabled (Core 5.4 Vol 3 Part G §3.3.3.3), each named by
/// where it was in the services the app had published.
public struct CBBackendKeptCentral: Sendable, Equatable {
    public var peer: CBBackendPeer
    public var mtu: Int
    public var subscriptions: [CBBackendCharacteristicPosition]

    public init(peer: CBBackendPeer, mtu: Int, subscriptions: [CBBackendCharacteristicPosition]) {
        self.peer = peer
        self.mtu = mtu
        self.subscriptions = subscriptions
    }
}

/// A characteristic by position: the index of its service among the app's published services (in the order they
/// were added), its index in that service, and both UUIDs (to check the restored services are the same).
public struct CBBackendCharacteristicPosition: Sendable, Hashable {
    public var service: Int
    public var serviceUUID: BluetoothUUID
    public var characteristic: Int
    public var characteristicUUID: BluetoothUUID

    public init(service: Int, serviceUUID: BluetoothUUID, characteristic: Int, characteristicUUID: BluetoothUUID) {
        self.service = service
        self.serviceUUID = serviceUUID
        self.characteristic = characteristic
        self.characteristicUUID = characteristicUUID
    }
}

/// A stack that can play the GAP peripheral and GATT server roles for the façade.
public protocol CBPeripheralBackend: AnyObject, Sendable {
    /// Asks for a stack that the system keeps when the program dies (the Bluetooth service), under the manager's
    /// restore identifier; before ``start(_:)``. True when the backend will have one: `.restoredCentrals` comes
    /// before the first state; taken back, its centrals come as `.centralConnected` (and their subscriptions as
    /// `.subscribed`) once the app's first `.poweredOn` is over. False (the default) when its transport cannot.
    func keepStack(restoreIdentifier: String) -> Bool
    /// The manager's delegate has had `.poweredOn` (the first after a restoration) and published what it wanted
    /// in it: a kept server is judged now, the database the app made against the one kept.
    func restoredStateSettled()
    /// Hands the backend its event sink; the first `.stateChanged` follows.
    func start(_ events: @escaping @Sendable (CBPeripheralBackendEvent) -> Void)
    /// The manager is gone: stop advertising and serving, deliver nothing more.
    func shutdown()
    /// Publishes a service in the GATT database.
    func addService(_ service: CBBackendLocalService, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
    /// Removes a published service from the GATT database.
    func removeService(id: Int)
    /// Removes every service this backend published.
    func removeAllServices()
    /// Advertises the name and service UUIDs (the two keys CoreBluetooth accepts), connectable; the
    /// `overflowServiceUUIDs` in the overflow area (`ServiceOverflowArea`: an app in the background). While
    /// advertising, replaces what is advertised.
    func startAdvertising(localName: String?, serviceUUIDs: [BluetoothUUID], overflowServiceUUIDs: [BluetoothUUID],
                          completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
    /// Stops advertising; does nothing when not advertising.
    func stopAdvertising()
    /// Answers a request batch: an ATT error code (0 = success) and, for reads, the value from the request's offset
    /// (the backend fits it into the response PDU).
    func respond(to requestID: UInt64, result: UInt8, value: [UInt8]?)
    /// Queues a notification (or indication) of `value` to each of `centrals`, truncated to each one's MTU - 3.
    /// Returns false, queueing nothing, when the queue is full; `.readyToUpdateSubscribers` follows.
    func updateValue(_ value: [UInt8], characteristicID: Int, centrals: [CBBackendPeer]) -> Bool
    /// Asks a central for connection parameters that suit `latency`.
    func setDesiredConnectionLatency(_ latency: CBPeripheralManagerConnectionLatency, for central: CBBackendPeer)
    /// Listens for LE credit-based channels on a free PSM of the backend's choosing (requiring encryption if
    /// `encryptionRequired`) and completes with that PSM.
    func publishL2CAPChannel(encryptionRequired: Bool, completion: @escaping @Sendable (Result<CBL2CAPPSM, CBBackendError>) -> Void)
    /// Stops listening on `psm` and closes the channels open on it.
    func unpublishL2CAPChannel(_ psm: CBL2CAPPSM, completion: @escaping @Sendable (Result<Void, CBBackendError>) -> Void)
}

extension CBPeripheralBackend {
    /// A backend of its own stack only.
    public func keepStack(restoreIdentifier: String) -> Bool { false }
    /// A backend of its own stack only: nothing kept to judge.
    public func restoredStateSettled() {}
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
    /// The channel's PSM.
    var psm: CBL2CAPPSM { get }
    /// The device at the other end.
    var peer: CBBackendPeer { get }
    /// Hands the channel its event sink.
    func start(_ events: @escaping @Sendable (CBL2CAPChannelBackendEvent) -> Void)
    /// Offers bytes to send; returns how many were accepted (0 when out of credits).
    func send(_ bytes: [UInt8]) -> Int
    /// Disconnects the channel; `.closed` follows.
    func close()
}

// MARK: - Choosing a backend

/// Makes the backends new managers use. The managers made from one provider form one "system" (one device's
/// Bluetooth, as iOS sees it): they share ``connections``.
public struct CBBackendProvider: Sendable {
    /// Makes the backend of a new `CBCentralManager`; nil leaves the manager `.unsupported`.
    public var makeCentral: @Sendable () -> (any CBCentralBackend)?
    /// Makes the backend of a new `CBPeripheralManager`; nil leaves the manager `.unsupported`.
    public var makePeripheral: @Sendable () -> (any CBPeripheralBackend)?
    /// The links of this provider's managers, for connection events and `retrieveConnectedPeripherals`.
    public let connections = SystemConnections()
    /// The app its managers belong to: foreground, background or suspended (``OCBApplication``).
    public let application: OCBApplication
    /// The system's Bluetooth switch its managers follow (``OCBSystemBluetooth``): off, on, reset. Only backends
    /// made with it follow it (``HostBackend/provider(_:application:preferredATTMTU:pairingAgent:)``'s do).
    public let bluetooth: OCBSystemBluetooth
    /// The clock of the air its stacks are on, when it is shared (a test kit's world): deliveries to the app are
    /// work it waits for before skipping ahead.
    public var sharedTime: SharedTime?
    /// Whether its managers keep known peers and restoration state in the user's files (true), or in memory only
    /// (a test kit's world: nothing of a test reaches the user's state).
    public var storesStateInFiles = true

    /// `application`: ``OCBApplication/process`` (the environment's) unless a test gives one of its own;
    /// `bluetooth`: the switch the backends `makeCentral` and `makePeripheral` make follow.
    public init(makeCentral: @escaping @Sendable () -> (any CBCentralBackend)?,
                makePeripheral: @escaping @Sendable () -> (any CBPeripheralBackend)?,
                application: OCBApplication = .process, bluetooth: OCBSystemBluetooth = OCBSystemBluetooth()) {
        self.makeCentral = makeCentral
        self.makePeripheral = makePeripheral
        self.application = application
        self.bluetooth = bluetooth
    }
}

/// Where managers get their backend when they are created: the task-local provider if one is bound (tests:
/// `CBBackendRegistry.$taskProvider.withValue(p) { ... }`), else the process-wide default, else the
/// ``HostBackend`` chosen by the environment (`OCB_HCI`). A provider that makes no backend gives `.unsupported`.
public enum CBBackendRegistry {
    /// The provider bound to the current task, if any; it wins over the process-wide default.
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
