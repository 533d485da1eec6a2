import BluetoothCore
import BluetoothRuntime
import HCI

/// An advertising event as the air carries it (Core 5.4 Vol 6 Part B §2.3): legacy PDUs (ADV_IND, ADV_DIRECT_IND,
/// ADV_SCAN_IND, ADV_NONCONN_IND) or extended ones (ADV_EXT_IND and its auxiliary chain), with AdvA, TargetA for
/// directed advertising and AdvData.
struct AirAdvertisement: Hashable, Sendable {
    /// The event's kind, as LE Set Extended Advertising Parameters names it (``LEAdvertisingEventProperties/legacy``
    /// for legacy PDUs).
    var properties: LEAdvertisingEventProperties
    var address: BluetoothAddress
    var target: BluetoothAddress?
    var data: [UInt8]
    /// The advertising set (nil: the legacy advertising commands).
    var setHandle: UInt8?
    var primaryPHY: LEPhy = .le1M
    var secondaryPHY: LEPhy = .le1M
    /// Advertising_SID and the Advertising Data ID of the ADI (extended PDUs).
    var sid: UInt8 = 0
    var dataID: UInt16 = 0
    /// TxPower in the extended header, when the set includes it.
    var txPower: Int8?

    var isLegacy: Bool { properties.contains(.legacy) }
    var isDirected: Bool { properties.contains(.directed) }
    var isConnectable: Bool { properties.contains(.connectable) }
    var isScannable: Bool { properties.contains(.scannable) }
    var isAnonymous: Bool { properties.contains(.anonymous) }

    /// The legacy PDU type (for legacy PDUs).
    var legacyType: LEAdvertisingType { AdvertisingSet.legacyType(properties) ?? .nonConnectableUndirected }

    var reportType: LEAdvertisingReportType {
        switch legacyType {
        case .connectableUndirected: .advInd
        case .scannableUndirected: .advScanInd
        case .nonConnectableUndirected: .advNonconnInd
        default: .advDirectInd
        }
    }

    /// Event_Type of the LE Extended Advertising Report (§7.7.65.13) without the data status: bit 0 connectable,
    /// 1 scannable, 2 directed, 3 scan response, 4 legacy.
    func extendedEventType(scanResponse: Bool) -> UInt16 {
        var type = properties.rawValue & 0x07
        if isLegacy { type |= 0x10 }
        if scanResponse { type |= 0x08 }
        return type
    }
}

/// The air-facing side of ``VirtualController``: advertising, scanning and initiating (Core 5.4 Vol 6 Part B
/// §4.4), and the ends of connections the air drives at each connection event (§4.5).
extension VirtualController {
    // MARK: Advertising state

    /// The PDU of this advertising event, or nil when not advertising (high duty cycle directed advertising ends
    /// after 1.28 s with LE Connection Complete 0x3C, §4.4.2.4.3).
    func currentAdvertisement(now: StackInstant) -> AirAdvertisement? {
        guard settings.advertising else { return nil }
        let parameters = settings.advertisingParameters
        // Peer_Address names the resolving-list entry whose local IRK makes the RPA (Own_Address_Type 0x02/0x03).
        let peer = BluetoothAddress(parameters.peerAddress.value, type: parameters.peerAddressType.bluetoothAddressType)
        guard let address = ownAddress(parameters.ownAddressType, towards: peer, now: now) else { return nil }
        if parameters.advertisingType == .connectableHighDutyCycleDirected, now - settings.advertisingStart >= .milliseconds(1280) {
            settings.advertising = false
            sendConnectionComplete(LEConnectionComplete(
                status: .advertisingTimeout, handle: 0, role: .peripheral, peerAddressType: parameters.peerAddressType,
                peerAddress: parameters.peerAddress, connectionInterval: 0, supervisionTimeout: 0))
            return nil
        }
        let properties = AdvertisingSet.properties(of: parameters.advertisingType)
        let directed = properties.contains(.directed)
        return AirAdvertisement(
            properties: properties, address: address,
            target: directed ? BluetoothAddress(parameters.peerAddress.value, type: parameters.peerAddressType.bluetoothAddressType) : nil,
            data: directed ? [] : settings.advertisingData)
    }

    /// The advertising and filter parameters behind `advertisement` while it is still on the air.
    private func advertiserFilter(_ advertisement: AirAdvertisement) -> (properties: LEAdvertisingEventProperties, filterPolicy: UInt8,
                                                                      peerType: LEAddressType, peer: BluetoothAddress)? {
        if let handle = advertisement.setHandle {
            guard let set = settings.advertisingSets[handle], set.enabled else { return nil }
            let p = set.parameters
            return (p.eventProperties, p.filterPolicy, p.peerAddressType, p.peerAddress)
        }
        guard settings.advertising else { return nil }
        let p = settings.advertisingParameters
        return (AdvertisingSet.properties(of: p.advertisingType), p.filterPolicy, p.peerAddressType, p.peerAddress)
    }

    /// Whether the advertiser answers a scan request (SCAN_REQ, AUX_SCAN_REQ) from `scanner` (§4.4.2.1, filter
    /// policy bit 0); with Scan_Request_Notification_Enable the host hears of it (§7.7.65.19).
    func acceptsScanRequest(from scanner: BluetoothAddress, for advertisement: AirAdvertisement) -> Bool {
        guard let filter = advertiserFilter(advertisement), filter.properties.contains(.scannable) else { return false }
        let resolved = resolve(scanner)
        guard filter.filterPolicy & 0x01 == 0 || isOnFilterAcceptList(resolved.address) else { return false }
        if let handle = advertisement.setHandle, settings.advertisingSets[handle]?.parameters.scanRequestNotificationEnable == true {
            send(.leMeta(.extended(.scanRequestReceived(LEScanRequestReceived(
                advertisingHandle: handle, scannerAddressType: resolved.type, scannerAddress: resolved.address)))))
        }
        return true
    }

    /// Whether the advertiser accepts CONNECT_IND / AUX_CONNECT_REQ from `initiator` (§4.4.2.1, filter policy bit 1;
    /// directed advertising only from its peer).
    func acceptsConnection(from initiator: BluetoothAddress, for advertisement: AirAdvertisement) -> Bool {
        guard let filter = advertiserFilter(advertisement), filter.properties.contains(.connectable) else { return false }
        if filter.properties.contains(.directed) {
            return Self.matches(filter.peer, filter.peerType, initiator) || Self.names(filter.peer, filter.peerType, resolve(initiator))
        }
        return filter.filterPolicy & 0x02 == 0 || isOnFilterAcceptList(resolve(initiator).address)
    }

    // MARK: Scanning and initiating

    private static func inWindow(start: StackInstant, interval: UInt16, window: UInt16, now: StackInstant) -> Bool {
        guard window < interval else { return true }
        let elapsed = UInt64(max(0, (now - start).nanosecondsClamped))
        let period = UInt64(interval) * 625_000
        return elapsed % period < UInt64(window) * 625_000
    }

    /// Whether this controller listens on the primary advertising channels on `phy` now (scanning or initiating,
    /// within the window of that PHY's interval). Legacy scanning and initiating listen on LE 1M only.
    func isListening(now: StackInstant, phy: LEPhy = .le1M) -> Bool {
        guard powered else { return false }
        if settings.initiating != nil, let block = initiatingBlock(scanning: phy),
           Self.inWindow(start: settings.initiatingStart, interval: block.scanInterval, window: block.scanWindow, now: now) {
            return true
        }
        guard settings.scanning, let block = scanBlock(phy) else { return false }
        return Self.inWindow(start: settings.scanStart, interval: block.interval, window: block.window, now: now)
    }

    /// The scan parameters on the primary PHY `phy` (the legacy ones on LE 1M).
    func scanBlock(_ phy: LEPhy) -> LEExtendedScanPHYParameters? {
        guard let extended = settings.extendedScanParameters else {
            guard phy == .le1M else { return nil }
            let p = settings.scanParameters
            return LEExtendedScanPHYParameters(scanType: p.scanType, interval: p.interval, window: p.window)
        }
        return phy == .le1M ? extended.le1M : phy == .leCoded ? extended.leCoded : nil
    }

    /// The initiator's scan parameters on the primary PHY `phy` (the legacy ones on LE 1M).
    private func initiatingBlock(scanning phy: LEPhy) -> LEExtendedInitiatingPHYParameters? {
        guard let initiating = settings.initiating else { return nil }
        guard let extended = settings.extendedInitiating else {
            guard phy == .le1M else { return nil }
            return LEExtendedInitiatingPHYParameters(scanInterval: initiating.scanInterval, scanWindow: initiating.scanWindow,
                                                     connection: initiating.connection)
        }
        return phy == .le1M ? extended.le1M : phy == .leCoded ? extended.leCoded : nil
    }

    /// The connection parameters for a connection that starts on `phy` (§7.8.66: the block of that PHY; a
    /// controller given none for LE 2M uses the LE 1M ones, as Zephyr's does), nil when there are none.
    private func initiatingConnection(on phy: LEPhy) -> LEConnectionParameters? {
        guard let initiating = settings.initiating else { return nil }
        guard let extended = settings.extendedInitiating else { return phy == .le1M ? initiating.connection : nil }
        switch phy {
        case .le1M: return extended.le1M?.connection
        case .le2M: return (extended.le2M ?? extended.le1M)?.connection
        default: return extended.leCoded?.connection
        }
    }

    /// A legacy advertising PDU heard on LE 1M.
    func receiveAdvertisement(_ advertisement: AirAdvertisement, rssi: Int8, from advertiser: VirtualController, now: StackInstant) {
        receive(advertisement, data: advertisement.data, complete: true, rssi: rssi, from: advertiser, now: now)
    }

    /// An extended advertising event heard: ADV_EXT_IND on its primary PHY and AUX_ADV_IND on its secondary, then
    /// as many AUX_CHAIN_INDs as were heard in a row (`data` is their AdvData; `complete` when none was lost).
    func receiveExtendedAdvertisement(_ advertisement: AirAdvertisement, data: [UInt8], complete: Bool, rssi: Int8,
                                      from advertiser: VirtualController, now: StackInstant) {
        guard settings.family == .extended else { return }
        receive(advertisement, data: data, complete: complete, rssi: rssi, from: advertiser, now: now)
    }

    private func receive(_ advertisement: AirAdvertisement, data: [UInt8], complete: Bool, rssi: Int8,
                         from advertiser: VirtualController, now: StackInstant) {
        if isIgnoredIdentity(advertisement.address) { return }
        // The advertiser as the host will see it: its identity when the resolving list resolves its RPA (§6.3).
        let resolved = resolve(advertisement.address)
        let connectionPHY = advertisement.isLegacy ? LEPhy.le1M : advertisement.secondaryPHY
        if let initiating = settings.initiating, advertisement.isConnectable, !advertisement.isAnonymous,
           isListening(now: now, phy: advertisement.primaryPHY),
           let connection = initiatingConnection(on: connectionPHY),
           let own = ownAddress(initiating.ownAddressType, towards: resolved.address, now: now) {
            let targetMatches = advertisement.target.map { $0 == own || isLocalResolvableAddress($0) } ?? true
            let peerMatches = initiating.initiatorFilterPolicy == 1
                ? isOnFilterAcceptList(resolved.address)
                : Self.matches(initiating.peerAddress, initiating.peerAddressType, advertisement.address)
                    || Self.names(initiating.peerAddress, initiating.peerAddressType, resolved)
            if targetMatches, peerMatches,
               air.connect(initiator: self, initiatorAddress: own, advertiser: advertiser, advertisement: advertisement,
                           parameters: connection) {
                return
            }
        }
        guard settings.scanning, let block = scanBlock(advertisement.primaryPHY),
              let own = ownAddress(settings.scanParameters.ownAddressType, towards: resolved.address, now: now) else {
            return
        }
        if let target = advertisement.target, target != own, !isLocalResolvableAddress(target) { return }
        if settings.scanParameters.filterPolicy & 0x01 != 0, !isOnFilterAcceptList(resolved.address) { return }
        let sender = advertisement.isAnonymous ? nil : resolved
        report(advertisement, sender: sender, data: data, complete: complete, rssi: rssi, scanResponse: false)
        guard block.scanType == 0x01, advertisement.isScannable, !advertisement.isAnonymous else { return }
        if advertisement.isLegacy {
            if let response = air.exchangeScanRequest(scanner: self, scannerAddress: own, advertiser: advertiser,
                                                      advertisement: advertisement) {
                report(advertisement, sender: sender, data: response.data, complete: true, rssi: response.rssi, scanResponse: true)
            }
        } else if let response = air.exchangeAuxiliaryScanRequest(scanner: self, scannerAddress: own, advertiser: advertiser,
                                                                  advertisement: advertisement) {
            report(advertisement, sender: sender, data: response.data, complete: response.complete, rssi: response.rssi,
                   scanResponse: true)
        }
    }

    /// Reports what was heard to the host: an LE Advertising Report under the legacy commands, else LE Extended
    /// Advertising Reports, the data cut into pieces of at most 229 octets with data status "more to come" on all
    /// but the last, and "truncated" on the last when a PDU of the chain was lost (§7.7.65.13). `sender` nil: an
    /// anonymous advertiser (Address_Type 0xFF).
    private func report(_ advertisement: AirAdvertisement, sender: ResolvedAddress?, data: [UInt8], complete: Bool, rssi: Int8,
                        scanResponse: Bool) {
        let eventType = settings.family == .extended
            ? advertisement.extendedEventType(scanResponse: scanResponse)
            : UInt16(scanResponse ? LEAdvertisingReportType.scanResponse.rawValue : advertisement.reportType.rawValue)
        let address = sender?.address ?? .zero
        if settings.filterDuplicates {
            let key = ControllerSettings.ReportKey(address: address, eventType: eventType,
                                                   sid: advertisement.isLegacy ? nil : advertisement.sid,
                                                   dataID: advertisement.isLegacy ? nil : advertisement.dataID)
            if settings.reported.contains(key) { return }
            if settings.reported.count < 4096 { settings.reported.insert(key) }
        }
        let addressType = sender?.type ?? LEAddressType(0xFF)
        guard settings.family == .extended else {
            send(.leMeta(.advertisingReport([LEAdvertisingReport(
                eventType: LEAdvertisingReportType(UInt8(eventType)), addressType: addressType, address: address,
                data: data, rssi: rssi)])))
            return
        }
        let pieces = Self.reportPieces(data)
        let target = advertisement.target
        for (index, piece) in pieces.enumerated() {
            let last = index == pieces.count - 1
            let status: UInt16 = !last ? 0b01 : complete ? 0b00 : 0b10
            send(.leMeta(.extendedAdvertisingReport([LEExtendedAdvertisingReport(
                eventType: eventType | status << 5, addressType: addressType, address: address,
                primaryPHY: advertisement.primaryPHY, secondaryPHY: advertisement.isLegacy ? LEPhy(0) : advertisement.secondaryPHY,
                advertisingSID: advertisement.isLegacy ? 0xFF : advertisement.sid, txPower: advertisement.txPower ?? 127,
                rssi: rssi, directAddressType: target.map { LEAddressType($0.type) } ?? .public,
                directAddress: target ?? .zero, data: piece)])))
        }
    }

    /// `data` cut into the pieces of LE Extended Advertising Reports (at most 229 octets each, §7.7.65.13), at AD
    /// structure boundaries where it can (a structure longer than a piece, or data that is not AD structures, is cut
    /// where the piece is full): every piece then parses on its own, as Wireshark and a host that reads the reports
    /// one by one expect. At least one piece, empty for no data.
    static func reportPieces(_ data: [UInt8]) -> [[UInt8]] {
        let limit = LEExtendedAdvertisingReport.maximumDataLength
        var pieces: [[UInt8]] = []
        var start = 0
        while start < data.count {
            var end = start
            while end < data.count {
                let next = end + 1 + Int(data[end])
                guard next <= data.count, next - start <= limit else { break }
                end = next
            }
            if end == start { end = min(start + limit, data.count) }
            pieces.append(Array(data[start..<end]))
            start = end
        }
        return pieces.isEmpty ? [[]] : pieces
    }

    // MARK: Connections

    private func allocateHandle() -> UInt16 {
        for _ in 0..<Int(HCIACLDataPacket.maximumHandle) {
            let candidate = nextHandle
            nextHandle = nextHandle >= HCIACLDataPacket.maximumHandle ? 1 : nextHandle + 1
            if connections[candidate] == nil { return candidate }
        }
        return 0
    }

    /// Enters the Connection State after CONNECT_IND (sent as central, received as peripheral) and tells the host.
    /// A connection made from extended advertising starts on the PHY of its AUX_CONNECT_REQ (`phy`, §4.5.1); the
    /// advertising set that made it stops, and its host hears LE Advertising Set Terminated after the connection
    /// complete event (§7.7.65.18).
    func establishConnection(link: AirLink, role: LinkLayerConnection.Role, peer: BluetoothAddress, local: BluetoothAddress,
                             parameters: LEConnectionParameters, phy: LEPhy = .le1M, advertisingSet: UInt8? = nil,
                             now: StackInstant) -> UInt16 {
        let resolved = resolve(peer)
        var terminatedSet: AdvertisingSet?
        if role == .peripheral {
            if let handle = advertisingSet {
                terminatedSet = settings.advertisingSets[handle]
                stopAdvertisingSet(handle)
            } else {
                settings.advertising = false
                air.cancelAdvertising(self)
            }
        } else {
            settings.initiating = nil
            settings.extendedInitiating = nil
        }
        let connectionHandle = allocateHandle()
        var connection = LinkLayerConnection(
            handle: connectionHandle, role: role, peerAddressType: LEAddressType(peer.type), peerAddress: peer,
            interval: parameters.intervalMin, latency: parameters.maxLatency, timeout: parameters.supervisionTimeout,
            now: now, suggestedTxOctets: settings.suggestedTxOctets, preferredTxPHYs: settings.defaultTxPHYs,
            preferredRxPHYs: settings.defaultRxPHYs, localFeatures: ControllerCapabilities.leFeatures,
            localVersion: (ControllerCapabilities.version.lmpVersion, ControllerCapabilities.version.companyIdentifier.rawValue,
                           ControllerCapabilities.version.lmpSubversion))
        connection.hostMaximumACLLength = settings.hostACLLength
        connection.txPHY = phy
        connection.rxPHY = phy
        if settings.suggestedTxOctets > LinkLayerConnection.minimumOctets {
            connection.setDataLength(txOctets: settings.suggestedTxOctets)
        }
        let record = ConnectionRecord(link: connection, airLink: link, handle: connectionHandle)
        connections[connectionHandle] = record
        if role == .central { link.centralRecord = record } else { link.peripheralRecord = record }
        sendConnectionComplete(LEConnectionComplete(
            status: .success, handle: connectionHandle, role: role == .central ? .central : .peripheral,
            peerAddressType: resolved.type, peerAddress: resolved.address, connectionInterval: parameters.intervalMin,
            peripheralLatency: parameters.maxLatency, supervisionTimeout: parameters.supervisionTimeout,
            centralClockAccuracy: 0x05),
            localRPA: local.kind == .resolvablePrivate ? local : nil, peerRPA: resolved.resolvedFrom)
        if let handle = advertisingSet, let set = terminatedSet {
            send(.leMeta(.extended(.advertisingSetTerminated(LEAdvertisingSetTerminated(
                status: .success, advertisingHandle: handle, connectionHandle: connectionHandle,
                numCompletedExtendedAdvertisingEvents: set.completedEvents)))))
        }
        return connectionHandle
    }

    func linkBeginEvent(_ handle: UInt16) {
        guard connections[handle] != nil else { return }
        perform(connections[handle]?.link.beginEvent() ?? [], handle: handle)
    }

    // The exchange's per-packet calls take the connection's record, which the air's link holds for both ends (no
    // look-up of the handle per packet: 11 per notification, issue 31 item 3).

    func linkTransmit(_ record: ConnectionRecord) -> [UInt8]? {
        record.link.nextTransmission()
    }

    /// The PDU this end last transmitted as it was before sealing (nil when it went in the clear).
    func linkLastPlaintext(_ record: ConnectionRecord) -> [UInt8]? {
        record.link.lastTransmittedPlaintext
    }

    /// The PHY this end transmits on.
    @inline(__always)
    func linkTransmitPHY(_ record: ConnectionRecord) -> LEPhy {
        record.link.txPHY
    }

    /// After one exchange of a timed connection event: Number Of Completed Packets at once, so the host refills
    /// the controller's buffers while the event goes on (a real controller reports them within the event).
    func linkExchangeEnded(_ handle: UInt16) {
        guard connections[handle] != nil else { return }
        flushCompleted(handle)
    }

    @inline(__always)
    func linkHasMoreData(_ record: ConnectionRecord) -> Bool {
        inPlace(&record.link) { $0.hasMoreData }
    }

    func linkInterval(_ handle: UInt16) -> Duration? {
        connections[handle]?.link.intervalDuration
    }

    func linkReceive(_ record: ConnectionRecord, _ bytes: [UInt8], rssi: Int8, now: StackInstant) {
        let actions = air.withRandom { random in
            record.link.receive(bytes, rssi: rssi, now: now, random: &random)
        }
        perform(actions, handle: record.handle)
    }

    /// After the event: supervision timeout (§4.5.2), the event counter, and Number Of Completed Packets for the
    /// host packets the peer acknowledged.
    func linkEndEvent(_ handle: UInt16, now: StackInstant) {
        guard let record = connections[handle] else { return }
        if record.link.supervisionExpired(now: now) {
            flushCompleted(handle)
            closeConnection(handle, reason: record.link.terminating == nil ? .connectionTimeout : .connectionTerminatedByLocalHost)
            return
        }
        connections[handle]?.link.endEvent()
        flushCompleted(handle)
    }

    private func flushCompleted(_ handle: UInt16) {
        guard let count = connections[handle]?.link.completedHostPackets, count > 0 else { return }
        connections[handle]?.link.completedHostPackets = 0
        send(.numberOfCompletedPackets([HCICompletedPackets(handle: handle, count: UInt16(clamping: count))]))
    }

    func perform(_ actions: [LinkLayerConnection.Action], handle: UInt16) {
        for action in actions {
            switch action {
            case .event(let event):
                send(event)
            case .acl(let packet):
                sendACL(packet)
            case .requestLongTermKey(let random, let ediv):
                if isLEEventEnabled(.longTermKeyRequest) {
                    send(.leMeta(.longTermKeyRequest(handle: handle, randomNumber: random, encryptedDiversifier: ediv)))
                } else {
                    perform(connections[handle]?.link.longTermKeyReply(nil) ?? [], handle: handle)
                }
            case .terminated(let reason, let peerReason):
                guard let record = connections[handle] else { return }
                flushCompleted(handle)
                closeConnection(handle, reason: reason)
                if let peerReason { air.terminatePeer(of: self, link: record.airLink, reason: peerReason) }
                return
            }
        }
    }

    /// Leaves the Connection State and reports Disconnection Complete, after Number Of Completed Packets for the
    /// host packets the peer acknowledged in this event (the peer may end the link in the exchange that acked them).
    func closeConnection(_ handle: UInt16, reason: HCIStatus) {
        flushCompleted(handle)
        guard let record = connections.removeValue(forKey: handle) else { return }
        record.airLink.endGone(self)
        send(.disconnectionComplete(status: .success, handle: handle, reason: reason))
    }
}

extension VirtualController {
    /// Silences the radio or turns it back on, from any thread (on the air's loop): while silent the controller
    /// still answers its host, nothing it sends is heard and it hears nothing, so its links time out at both ends
    /// (the hub's `power DEVICE off`, a test kit's device switched off).
    package func setRadio(_ on: Bool) {
        air.eventLoop.execute { [self] in
            air.step { time in
                air.recorder?.fault("radio \(identifier) \(on ? 1 : 0)", at: time)
                radioOn = on
            }
        }
    }

    /// Ends every link of this controller as a lost one: nothing more of them is heard, and both ends see a
    /// supervision timeout (the hub's `drop`), from any thread.
    package func dropLinks() {
        air.eventLoop.execute { [self] in
            air.step { time in
                air.recorder?.fault("jam \(identifier)", at: time)
                _ = air.jamLinks(of: self)
            }
        }
    }
}
