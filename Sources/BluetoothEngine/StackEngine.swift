public import AdvertisingData
public import ATT
public import BluetoothCore
public import BluetoothCrypto
public import BluetoothRuntime
public import GATT
public import HCI
public import L2CAP

/// The seam between the APIs and the stacks that do the work: what the async API (`BluetoothStack`) asks of the
/// Bluetooth stack underneath it, with our host's own signatures, so that `HostStack` is an engine as it is and
/// bluetoothd is another (the BlueZ module's `BlueZEngine`). Core 5.4 Vol 3 Part C (GAP), Part G (GATT), Part A
/// (L2CAP), Part H (SMP) name what each operation does.
///
/// Contract (the host's): every method may be called from any thread and hops onto ``eventLoop``; completions and
/// events run on that loop, in order; each completion is called once (also when the link ends). ``attMTU(connectionHandle:)``,
/// ``isReadyToSend(connectionHandle:)`` and ``controllerInfo`` are read on the loop. Connection handles name links in
/// both roles; attribute handles name the local server's and each peer's attributes.
public protocol StackEngine: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// The controller as the engine knows it (the own address for ``BluetoothStack/localAddress()``). On the loop.
    var controllerInfo: ControllerInfo { get }
    func setEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void)
    /// Adds a handler of every event from the next one on, called after the one ``setEventHandler(_:)`` set, in the
    /// order handlers were added (``StackEventHandlers``); callable from any thread.
    @discardableResult
    func addEventHandler(_ handler: @escaping @Sendable (HostEvent) -> Void) -> StackEventSubscription
    func start(completion: @escaping @Sendable (Result<ControllerInfo, HostError>) -> Void)
    func shutdown()
    /// The address peers see now: a resolvable private address the controller makes itself is read from it
    /// (LE Read Local Resolvable Address, Core 5.4 Vol 4 Part E §7.8.43), else ``ControllerInfo/ownAddress``.
    func currentPrivateAddress(completion: @escaping @Sendable (BluetoothAddress) -> Void)
    /// Peers the engine remembers from before this run, as CoreBluetooth's `retrievePeripherals(withIdentifiers:)`
    /// finds them (bluetoothd: the devices it paired with); callable from any thread.
    func knownPeers() -> [BluetoothAddress]
    /// Whether the engine exchanges ATT MTUs itself as a link starts and tells the result in
    /// ``HostEvent/attMTUChanged(handle:mtu:)`` shortly after ``HostEvent/connected(_:)`` (Vol 3 Part F §3.4.2), so
    /// that an API may wait for it before reporting the link.
    var exchangesMTUOnConnect: Bool { get }
    /// Whether the engine reads a connected peer's GAP Device Name itself and tells it in
    /// ``HostEvent/peerNameUpdated(peer:name:)`` (bluetoothd does; our host leaves it to the API above).
    var reportsPeerNames: Bool { get }

    // GAP
    func startScanning(_ options: ScanOptions, completion: @escaping @Sendable (Result<Void, HostError>) -> Void)
    func stopScanning(completion: (@Sendable (Result<Void, HostError>) -> Void)?)
    /// Connects to `peer` as central; connects to other peers may be pending at the same time (one per peer; a
    /// second to the same peer fails with ``HostError/Code/busy``).
    func connect(to peer: BluetoothAddress, options: ConnectOptions, completion: @escaping @Sendable (Result<Connection, HostError>) -> Void)
    /// Cancels the pending connect to `peer` (it completes with ``HostError/Code/cancelled``, unless its connection
    /// was made first).
    func cancelConnect(to peer: BluetoothAddress, completion: (@Sendable (Result<Void, HostError>) -> Void)?)
    func disconnect(connectionHandle handle: UInt16, reason: HCIStatus, completion: (@Sendable (Result<HCIStatus, HostError>) -> Void)?)
    func startAdvertising(_ content: AdvertisingContent, options: AdvertisingOptions, completion: @escaping @Sendable (Result<Void, HostError>) -> Void)
    /// Advertises exactly this advertising data and scan response (CoreBluetooth lays its own out).
    func startAdvertising(advertisingData: AdvertisingData, scanResponse: AdvertisingData, options: AdvertisingOptions,
                          completion: @escaping @Sendable (Result<Void, HostError>) -> Void)
    func stopAdvertising(completion: (@Sendable (Result<Void, HostError>) -> Void)?)

    // The link
    /// What is known of the link: parameters, PHYs, data length, ATT_MTU (nil: no such link, or the engine is not
    /// told; Core 5.4 Vol 6 Part B §4.5).
    func linkInfo(connectionHandle handle: UInt16, completion: @escaping @Sendable (LinkInfo?) -> Void)
    /// New connection parameters, asked as central (LE Connection Update, Vol 4 Part E §7.8.18) or as peripheral.
    func updateConnectionParameters(connectionHandle handle: UInt16, _ parameters: LEConnectionParameters,
                                    completion: (@Sendable (Result<Connection, HostError>) -> Void)?)
    /// A longer data channel PDU (LE Set Data Length, Vol 4 Part E §7.8.33); true when the controller took it.
    func requestDataLength(connectionHandle handle: UInt16, txOctets: UInt16, txTime: UInt16,
                           completion: @escaping @Sendable (Result<Bool, HostError>) -> Void)
    /// The PHYs to prefer (LE Set PHY, Vol 4 Part E §7.8.49; bits: 1M 0x01, 2M 0x02, Coded 0x04).
    func setPHY(connectionHandle handle: UInt16, txPHYs: UInt8, rxPHYs: UInt8,
                completion: @escaping @Sendable (Result<Void, HostError>) -> Void)
    /// The ATT MTU exchange (Vol 3 Part F §3.4.2), once per connection; the new ATT_MTU.
    func exchangeMTU(connectionHandle handle: UInt16, completion: (@Sendable (Result<Int, HostError>) -> Void)?)
    /// The RSSI of the link's last packets (Core 5.4 Vol 4 Part E §7.5.4).
    func readRSSI(connectionHandle handle: UInt16, completion: @escaping @Sendable (Result<Int8, HostError>) -> Void)
    /// A peripheral's L2CAP Connection Parameter Update Request (Vol 3 Part A §4.20); true when the central accepted.
    func requestConnectionParameterUpdate(connectionHandle handle: UInt16, _ request: L2CAPConnectionParameterUpdateRequest,
                                          completion: (@Sendable (Result<Bool, HostError>) -> Void)?)

    // GATT client
    func attMTU(connectionHandle handle: UInt16) -> Int?
    func isReadyToSend(connectionHandle handle: UInt16) -> Bool
    func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure,
              completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void)
    /// A procedure kept in call order with the others of `lane` (``GATTClientLane``; nil: none).
    func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure, lane: GATTClientLane?,
              completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void)

    // GATT server
    /// Adds services to the local server (with the GAP and GATT services first when the engine keeps them itself
    /// and the database is empty) and returns the handles each got.
    func publish(deviceName: String, _ definitions: [GATTServiceDefinition],
                 completion: @escaping @Sendable (Result<[GATTServiceHandles], HostError>) -> Void)
    /// Replaces the whole local database (CoreBluetooth's add/remove service), telling subscribed clients that
    /// `changedRange` changed (Service Changed, Vol 3 Part G §7.1) when given.
    func replaceGATTDatabase(_ database: GATTDatabase, changedRange: ATTHandleRange?,
                             completion: (@Sendable (Result<Void, HostError>) -> Void)?)
    func setGATTDeferral(_ deferral: GATTDeferral?)
    func respondToGATTRequest(connectionHandle handle: UInt16, id: UInt64, result: Result<[UInt8], GATTAttributeError>)
    func updateValue(_ value: [UInt8], handle: UInt16, to targets: Set<UInt16>?, requireReady: Bool,
                     completion: (@Sendable (Result<[UInt16], HostError>) -> Void)?)

    // L2CAP credit-based channels
    func registerL2CAPServer(_ server: L2CAPChannelServer, requiresEncryption: Bool,
                             completion: (@Sendable (Result<Void, L2CAPLinkError>) -> Void)?)
    func unregisterL2CAPServer(psm: UInt16)
    func openChannel(connectionHandle handle: UInt16, psm: UInt16, mtu: UInt16,
                     completion: @escaping @Sendable (Result<L2CAPChannelInfo, HostError>) -> Void)
    func sendL2CAPSDU(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier, _ sdu: [UInt8],
                      completion: (@Sendable (Result<Void, HostError>) -> Void)?)
    func closeL2CAPChannel(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier,
                           completion: (@Sendable (Result<Void, HostError>) -> Void)?)

    // Security
    func pair(connectionHandle handle: UInt16, options: PairingOptions,
              completion: @escaping @Sendable (Result<PairingOutcome, HostError>) -> Void)
    func requestSecurity(connectionHandle handle: UInt16, mitm: Bool?,
                         completion: (@Sendable (Result<PairingOutcome, HostError>) -> Void)?)
    func answerPairing(connectionHandle handle: UInt16, _ answer: PairingAnswer)

    // MARK: Out-of-band pairing data (Core 5.4 Vol 3 Part H §2.3.5.4, §2.3.5.6.4)
    /// Our LE Secure Connections OOB data (address, r, C); an engine without it fails with ``HostError/Code/notOffered``.
    func localOutOfBandData(completion: @escaping @Sendable (Result<LocalOutOfBandData, HostError>) -> Void)
    /// The peer's LE Secure Connections OOB data (r, C) for pairings with `address`.
    func setPeerOutOfBandData(for address: BluetoothAddress, random: Block128, confirm: Block128)
    /// The legacy OOB temporary key shared with `address`.
    func setLegacyOutOfBandKey(for address: BluetoothAddress, temporaryKey: Block128)
    /// Forgets the OOB data of `address` (peer data and legacy key).
    func removeOutOfBandData(for address: BluetoothAddress)
}

/// The host's defaults, for callers through the seam (every engine takes the full forms above).
extension StackEngine {
    public func startScanning(completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        startScanning(ScanOptions(), completion: completion)
    }

    public func stopScanning() { stopScanning(completion: nil) }

    public func connect(to peer: BluetoothAddress, completion: @escaping @Sendable (Result<Connection, HostError>) -> Void) {
        connect(to: peer, options: ConnectOptions(), completion: completion)
    }

    /// Disconnects with Remote User Terminated Connection (Core 5.4 Vol 4 Part E §7.1.6).
    public func disconnect(connectionHandle handle: UInt16) {
        disconnect(connectionHandle: handle, reason: .remoteUserTerminatedConnection, completion: nil)
    }

    public func startAdvertising(advertisingData: AdvertisingData, scanResponse: AdvertisingData,
                                 completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        startAdvertising(advertisingData: advertisingData, scanResponse: scanResponse, options: AdvertisingOptions(),
                         completion: completion)
    }

    public func stopAdvertising() { stopAdvertising(completion: nil) }

    public func cancelConnect(to peer: BluetoothAddress) { cancelConnect(to: peer, completion: nil) }

    public func replaceGATTDatabase(_ database: GATTDatabase, changedRange: ATTHandleRange?) {
        replaceGATTDatabase(database, changedRange: changedRange, completion: nil)
    }

    public func updateValue(_ value: [UInt8], handle: UInt16, to targets: Set<UInt16>?,
                            completion: (@Sendable (Result<[UInt16], HostError>) -> Void)?) {
        updateValue(value, handle: handle, to: targets, requireReady: false, completion: completion)
    }

    public func requestConnectionParameterUpdate(connectionHandle handle: UInt16,
                                                 _ request: L2CAPConnectionParameterUpdateRequest) {
        requestConnectionParameterUpdate(connectionHandle: handle, request, completion: nil)
    }

    public func closeL2CAPChannel(connectionHandle handle: UInt16, channel: L2CAPChannelIdentifier) {
        closeL2CAPChannel(connectionHandle: handle, channel: channel, completion: nil)
    }

    public func pair(connectionHandle handle: UInt16, completion: @escaping @Sendable (Result<PairingOutcome, HostError>) -> Void) {
        pair(connectionHandle: handle, options: PairingOptions(), completion: completion)
    }
}
