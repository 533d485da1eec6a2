public import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
public import HCI

/// A software LE controller: the controller side of HCI (Core 5.4 Vol 4 Part E) over a link layer (Vol 6 Part B)
/// that transmits on a ``VirtualAir``.
///
/// The host talks to it in H4 frames: ``receiveFromHost(_:)`` takes commands and ACL data from any thread (the
/// frame hops onto the air's loop); ``toHost`` receives events and ACL data, in order, on the air's loop. All state
/// is confined to that loop. ``powerOff()`` drops off the air silently (peers see a supervision timeout);
/// ``powerOn()`` comes back in the power-on state, as after HCI_Reset.
public final class VirtualController: @unchecked Sendable {
    /// The air this controller transmits on.
    public let air: VirtualAir
    /// BD_ADDR (public).
    public let publicAddress: BluetoothAddress
    /// Transmit power (dBm) for RSSI and HCI_LE_Read_Advertising_Physical_Channel_Tx_Power.
    public let txPower: Int8
    package let identifier: Int

    private let sink = LockedValue<(@Sendable (H4Frame) -> Void)?>(nil)
    private let place: LockedValue<AirPosition>

    /// Where events and ACL data for the host go (called on the air's loop, in order).
    public var toHost: (@Sendable (H4Frame) -> Void)? {
        get { sink.load() }
        set { sink.store(newValue) }
    }

    /// The position on the air (metres); may change at any time, from any thread.
    public var position: AirPosition {
        get { place.load() }
        set { place.store(newValue) }
    }

    // Loop-confined state.
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var settings = ControllerSettings() { didSet { updateListening() } }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var connections: [UInt16: ConnectionRecord] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var powered = true { didSet { updateListening() } }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Whether the radio sends and hears (a hub's `power DEVICE off` turns it off; unlike ``powerOff()`` the
    /// controller still answers its host, which sees its links time out as the peers do).
    package var radioOn = true
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Whether the air counts this controller among its listeners (scanning or initiating, powered).
    private var listensOnAir = false
    var nextHandle: UInt16 = 0x0001
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Which of its entries in the air's schedule are current (the air's, kept here so that it finds them without
    /// hashing).
    var airTasks = AirTaskSequences()
    /// Host ACL packets not yet reported in Number Of Completed Packets.
    var bufferedHostPackets: Int { connections.values.reduce(0) { $0 + $1.link.outstandingHostPackets } }

    /// One connection of this controller. A class, not a struct: the air reads and changes
    /// `connections[handle]?.link` for every packet of every connection event, and through a struct each read
    /// copied the whole link-layer state (its queues included).
    final class ConnectionRecord {
        #if !DEBUG
        @exclusivity(unchecked)
        #endif
        var link: LinkLayerConnection
        let airLink: AirLink
        let handle: UInt16

        init(link: LinkLayerConnection, airLink: AirLink, handle: UInt16) {
            self.link = link
            self.airLink = airLink
            self.handle = handle
        }
    }

    /// Joins `air` at `position`, powered on.
    public init(air: VirtualAir, address: BluetoothAddress, position: AirPosition = .origin, txPower: Int8 = 0) {
        self.air = air
        self.publicAddress = BluetoothAddress(address.value, type: .public)
        self.txPower = txPower
        self.place = LockedValue(position)
        self.identifier = air.allocateIdentifier()
        air.attach(self)
    }

    // MARK: Host interface

    /// A command or ACL packet from the host; may be called from any thread.
    public func receiveFromHost(_ frame: H4Frame) {
        air.eventLoop.execute { [self] in
            air.step { time in
                air.recorder?.frame(frame, to: self, at: time)
                handleFrame(frame)
            }
        }
    }

    /// Turns the radio off: advertising, scanning and connections stop with no event (peers time out).
    public func powerOff() {
        air.eventLoop.execute { [self] in
            air.step { time in
                air.recorder?.fault("power \(identifier) 0", at: time)
                shutDown()
            }
        }
    }

    /// Power-off on the loop.
    func shutDown() {
        guard powered else { return }
        dropEverything()
        powered = false
    }

    /// Turns the radio back on, in the power-on state.
    public func powerOn() {
        air.eventLoop.execute { [self] in
            guard !powered else { return }
            air.step { time in air.recorder?.fault("power \(identifier) 1", at: time) }
            powered = true
            settings = ControllerSettings()
        }
    }

    /// Tells the air when this controller starts or stops listening for advertisements (scanning or initiating,
    /// powered), so that an advertising event visits only listeners, not every device on the air.
    private func updateListening() {
        let listens = powered && (settings.scanning || settings.initiating != nil)
        guard listens != listensOnAir else { return }
        listensOnAir = listens
        air.setListening(self, listens)
    }

    /// The number of live connections (for leak checks).
    public var connectionCount: Int { connections.count }

    private func handleFrame(_ frame: H4Frame) {
        guard powered else { return }
        switch frame.type {
        case .command:
            handleCommandPacket(frame.packet)
        case .aclData:
            guard let packet = try? HCIACLDataPacket(frame: frame) else { return }
            handleHostACL(packet)
        default:
            break
        }
    }

    private func handleCommandPacket(_ bytes: [UInt8]) {
        do {
            let command = try HCICommand(decoding: bytes)
            handle(command)
        } catch {
            guard bytes.count >= 2 else { return }
            let opcode = HCIOpcode(UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
            if HCICommand.table[opcode] == nil {
                complete(opcode, .status(.unknownCommand))
            } else {
                fail(opcode, .invalidCommandParameters)
            }
        }
    }

    private func handleHostACL(_ packet: HCIACLDataPacket) {
        guard let record = connections[packet.handle] else { return }
        guard packet.data.count <= Int(ControllerSettings.aclDataPacketLength),
              bufferedHostPackets < Int(ControllerSettings.aclDataPacketCount) else {
            send(.dataBufferOverflow(linkType: 0x01))
            return
        }
        record.link.queueHostPacket(packet)
    }

    // MARK: Output

    /// Command credits granted in every Command Complete / Command Status.
    static let commandCredits: UInt8 = 1

    func complete(_ opcode: HCIOpcode, _ parameters: HCIReturnParameters) {
        send(.commandComplete(numHCICommandPackets: Self.commandCredits, opcode: opcode, returnParameters: parameters))
    }

    func status(_ opcode: HCIOpcode, _ status: HCIStatus) {
        send(.commandStatus(status: status, numHCICommandPackets: Self.commandCredits, opcode: opcode))
    }

    /// An error answer in the form the command uses (Command Status or Command Complete).
    func fail(_ opcode: HCIOpcode, _ error: HCIStatus) {
        if HCICommand.table[opcode]?.answeredByCommandStatus == true {
            status(opcode, error)
        } else {
            complete(opcode, .status(error))
        }
    }

    /// Sends an event unless the host masked it (Set Event Mask §7.3.1, LE Set Event Mask §7.8.1).
    func send(_ event: HCIEvent) {
        guard powered, isUnmasked(event) else { return }
        let frame = H4Frame(type: .event, packet: event.encode())
        air.recorder?.toHost(frame, from: self)
        toHost?(frame)
    }

    func sendACL(_ packet: HCIACLDataPacket) {
        guard powered else { return }
        let frame = packet.frame
        air.recorder?.toHost(frame, from: self)
        toHost?(frame)
    }

    private func isUnmasked(_ event: HCIEvent) -> Bool {
        let mask = settings.eventMask
        switch event {
        case .disconnectionComplete: return mask & (1 << 4) != 0
        case .encryptionChange, .encryptionChangeV2: return mask & (1 << 7) != 0
        case .readRemoteVersionInformationComplete: return mask & (1 << 11) != 0
        case .hardwareError: return mask & (1 << 15) != 0
        case .dataBufferOverflow: return mask & (1 << 25) != 0
        case .encryptionKeyRefreshComplete: return mask & (1 << 47) != 0
        case .leMeta(let meta):
            guard mask & (1 << 61) != 0 else { return false }
            let bit = Int(meta.subevent.rawValue) - 1
            return bit >= 0 && bit < 64 && settings.leEventMask & (1 << UInt64(bit)) != 0
        default:
            return true
        }
    }

    func isLEEventEnabled(_ subevent: LESubeventCode) -> Bool {
        let bit = Int(subevent.rawValue) - 1
        return settings.eventMask & (1 << 61) != 0 && bit >= 0 && bit < 64 && settings.leEventMask & (1 << UInt64(bit)) != 0
    }

    // MARK: Addresses

    func ownAddress(_ type: LEAddressType) -> BluetoothAddress? {
        switch type.rawValue {
        case 0x00, 0x02: publicAddress
        case 0x01, 0x03: settings.randomAddress
        default: nil
        }
    }

    static func matches(_ address: BluetoothAddress, _ type: LEAddressType, _ other: BluetoothAddress) -> Bool {
        address.value == other.value && type.bluetoothAddressType == other.type
    }

    func isOnFilterAcceptList(_ address: BluetoothAddress) -> Bool {
        settings.filterAcceptList.contains { $0.value == address.value && $0.type == address.type }
    }

    // MARK: Reset

    /// Ends every activity without events (HCI_Reset, power-off): links go silent and peers time out.
    func dropEverything() {
        for handle in connections.keys.sorted() {
            if let record = connections.removeValue(forKey: handle) {
                record.airLink.endGone(self)
            }
        }
        air.cancelAdvertising(self)
        for handle in settings.advertisingSetOrder { air.cancelAdvertising(self, set: handle) }
        air.cancelControllerTimer(self)
        settings = ControllerSettings()
    }
}

/// The host-visible settings of a ``VirtualController``: what HCI_Reset restores (Core 5.4 Vol 4 Part E §7.3.2).
struct ControllerSettings {
    static let aclDataPacketLength: UInt16 = 251
    static let aclDataPacketCount: UInt8 = 8
    static let filterAcceptListSize = 16
    static let defaultEventMask: UInt64 = 0x0000_1FFF_FFFF_FFFF
    static let defaultLEEventMask: UInt64 = 0x1F

    var eventMask = defaultEventMask
    var leEventMask = defaultLEEventMask
    var randomAddress: BluetoothAddress?
    var advertisingParameters = LEAdvertisingParameters()
    var advertisingData: [UInt8] = []
    var scanResponseData: [UInt8] = []
    var advertising = false
    var advertisingStart = StackInstant.zero
    var scanParameters = LEScanParameters(scanType: 0x00, interval: 0x0010, window: 0x0010)
    var scanning = false
    var scanStart = StackInstant.zero
    var filterDuplicates = false
    var reported: Set<ReportKey> = []
    /// The extended scanning parameters (nil under the legacy commands; ``scanParameters`` then holds the LE 1M or
    /// else LE Coded block's values with the own address type and filter policy, so the shared code reads one place).
    var extendedScanParameters: LEExtendedScanParameters?
    /// LE Set Extended Scan Enable's Duration and Period (§7.8.65): scanning stops at `scanEnd` (LE Scan Timeout, or
    /// again at `scanRestart` with a period).
    var scanEnd: StackInstant?
    var scanRestart: StackInstant?
    var scanDuration = Duration.zero
    var scanPeriod = Duration.zero
    var resetDuplicatesEachPeriod = false
    /// The host's command family (§3.1.1).
    var family = AdvertisingCommandFamily.undetermined
    /// Advertising sets by handle (the extended advertising commands), in creation order.
    var advertisingSets: [UInt8: AdvertisingSet] = [:]
    var advertisingSetOrder: [UInt8] = []
    /// The legacy form of the initiator's parameters (its first PHY's scan and connection parameters) for the shared
    /// code, and the extended command's parameters per PHY (nil under the legacy commands).
    var initiating: LECreateConnectionParameters?
    var extendedInitiating: LEExtendedCreateConnectionParameters?
    var initiatingStart = StackInstant.zero
    var filterAcceptList: [BluetoothAddress] = []
    var acceptAnonymous = false
    var suggestedTxOctets: UInt16 = 27
    var suggestedTxTime: UInt16 = 328
    /// No preference: 1M, 2M and Coded (§7.8.48 ALL_PHYS).
    var defaultTxPHYs: UInt8 = 0x07
    var defaultRxPHYs: UInt8 = 0x07
    var hostACLLength = Int(aclDataPacketLength)
    /// Link-layer privacy (VirtualController+Privacy.swift).
    var resolvingList: [ResolvingListEntry] = []
    var addressResolution = false
    /// Seconds (§7.8.45; default 900 s, 15 minutes).
    var rpaTimeout: UInt16 = 900
    var rpaGenerated: StackInstant?

    /// What Filter_Duplicates compares (§7.8.11, §7.8.65: address and event type, and for extended advertising
    /// the SID and Data ID, so that new data is reported again).
    struct ReportKey: Hashable {
        var address: BluetoothAddress
        var eventType: UInt16
        var sid: UInt8?
        var dataID: UInt16?
    }
}
