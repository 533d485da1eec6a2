import BluetoothCore
import BluetoothRuntime
import HCI

/// An advertising PDU as the air carries it (Core 5.4 Vol 6 Part B §2.3.1): its type, AdvA, TargetA for
/// ADV_DIRECT_IND, and AdvData.
struct AirAdvertisement: Hashable, Sendable {
    var type: LEAdvertisingType
    var address: BluetoothAddress
    var target: BluetoothAddress?
    var data: [UInt8]

    var isDirected: Bool { type == .connectableHighDutyCycleDirected || type == .connectableLowDutyCycleDirected }
    var isConnectable: Bool { type == .connectableUndirected || isDirected }
    var isScannable: Bool { type == .connectableUndirected || type == .scannableUndirected }

    var reportType: LEAdvertisingReportType {
        switch type {
        case .connectableUndirected: .advInd
        case .scannableUndirected: .advScanInd
        case .nonConnectableUndirected: .advNonconnInd
        default: .advDirectInd
        }
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
        let directed = parameters.advertisingType == .connectableHighDutyCycleDirected
            || parameters.advertisingType == .connectableLowDutyCycleDirected
        return AirAdvertisement(
            type: parameters.advertisingType, address: address,
            target: directed ? BluetoothAddress(parameters.peerAddress.value, type: parameters.peerAddressType.bluetoothAddressType) : nil,
            data: directed ? [] : settings.advertisingData)
    }

    func acceptsScanRequest(from scanner: BluetoothAddress) -> Bool {
        let parameters = settings.advertisingParameters
        guard settings.advertising, parameters.advertisingType == .connectableUndirected
                || parameters.advertisingType == .scannableUndirected else { return false }
        return parameters.filterPolicy & 0x01 == 0 || isOnFilterAcceptList(resolve(scanner).address)
    }

    func acceptsConnection(from initiator: BluetoothAddress) -> Bool {
        let parameters = settings.advertisingParameters
        guard settings.advertising else { return false }
        switch parameters.advertisingType {
        case .connectableUndirected:
            return parameters.filterPolicy & 0x02 == 0 || isOnFilterAcceptList(resolve(initiator).address)
        case .connectableHighDutyCycleDirected, .connectableLowDutyCycleDirected:
            return Self.matches(parameters.peerAddress, parameters.peerAddressType, initiator)
                || Self.names(parameters.peerAddress, parameters.peerAddressType, resolve(initiator))
        default:
            return false
        }
    }

    // MARK: Scanning and initiating

    private static func inWindow(start: StackInstant, interval: UInt16, window: UInt16, now: StackInstant) -> Bool {
        guard window < interval else { return true }
        let elapsed = UInt64(max(0, (now - start).nanosecondsClamped))
        let period = UInt64(interval) * 625_000
        return elapsed % period < UInt64(window) * 625_000
    }

    func isListening(now: StackInstant) -> Bool {
        guard powered else { return false }
        if let initiating = settings.initiating,
           Self.inWindow(start: settings.initiatingStart, interval: initiating.scanInterval, window: initiating.scanWindow, now: now) {
            return true
        }
        return settings.scanning && Self.inWindow(start: settings.scanStart, interval: settings.scanParameters.interval,
                                                  window: settings.scanParameters.window, now: now)
    }

    func receiveAdvertisement(_ advertisement: AirAdvertisement, rssi: Int8, from advertiser: VirtualController, now: StackInstant) {
        // The advertiser as the host will see it: its identity when the resolving list resolves its RPA (§6.3).
        let resolved = resolve(advertisement.address)
        if let initiating = settings.initiating, advertisement.isConnectable,
           let own = ownAddress(initiating.ownAddressType, towards: resolved.address, now: now) {
            let targetMatches = advertisement.target.map { $0 == own || isLocalResolvableAddress($0) } ?? true
            let peerMatches = initiating.initiatorFilterPolicy == 1
                ? isOnFilterAcceptList(resolved.address)
                : Self.matches(initiating.peerAddress, initiating.peerAddressType, advertisement.address)
                    || Self.names(initiating.peerAddress, initiating.peerAddressType, resolved)
            if targetMatches, peerMatches,
               air.connect(initiator: self, initiatorAddress: own, advertiser: advertiser,
                           advertiserAddress: advertisement.address, parameters: initiating.connection) {
                return
            }
        }
        guard settings.scanning, let own = ownAddress(settings.scanParameters.ownAddressType, towards: resolved.address, now: now) else {
            return
        }
        if let target = advertisement.target, target != own, !isLocalResolvableAddress(target) { return }
        let parameters = settings.scanParameters
        if parameters.filterPolicy & 0x01 != 0, !isOnFilterAcceptList(resolved.address) { return }
        report(advertisement.reportType, resolved, advertisement.data, rssi)
        if parameters.scanType == 0x01, advertisement.isScannable,
           let response = air.exchangeScanRequest(scanner: self, scannerAddress: own, advertiser: advertiser,
                                                  advertiserAddress: advertisement.address) {
            report(.scanResponse, resolved, response.data, response.rssi)
        }
    }

    private func report(_ type: LEAdvertisingReportType, _ sender: ResolvedAddress, _ data: [UInt8], _ rssi: Int8) {
        if settings.filterDuplicates {
            let key = ControllerSettings.ReportKey(address: sender.address, eventType: type.rawValue)
            if settings.reported.contains(key) { return }
            if settings.reported.count < 4096 { settings.reported.insert(key) }
        }
        send(.leMeta(.advertisingReport([LEAdvertisingReport(eventType: type, addressType: sender.type, address: sender.address,
                                                              data: data, rssi: rssi)])))
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
    func establishConnection(link: AirLink, role: LinkLayerConnection.Role, peer: BluetoothAddress, local: BluetoothAddress,
                             parameters: LEConnectionParameters, now: StackInstant) -> UInt16 {
        let resolved = resolve(peer)
        if role == .peripheral {
            settings.advertising = false
            air.cancelAdvertising(self)
        } else {
            settings.initiating = nil
        }
        let handle = allocateHandle()
        var connection = LinkLayerConnection(
            handle: handle, role: role, peerAddressType: LEAddressType(peer.type), peerAddress: peer,
            interval: parameters.intervalMin, latency: parameters.maxLatency, timeout: parameters.supervisionTimeout,
            now: now, suggestedTxOctets: settings.suggestedTxOctets, preferredTxPHYs: settings.defaultTxPHYs,
            preferredRxPHYs: settings.defaultRxPHYs, localFeatures: ControllerCapabilities.leFeatures,
            localVersion: (ControllerCapabilities.version.lmpVersion, ControllerCapabilities.version.companyIdentifier.rawValue,
                           ControllerCapabilities.version.lmpSubversion))
        connection.hostMaximumACLLength = settings.hostACLLength
        if settings.suggestedTxOctets > LinkLayerConnection.minimumOctets {
            connection.setDataLength(txOctets: settings.suggestedTxOctets)
        }
        connections[handle] = ConnectionRecord(link: connection, airLink: link)
        sendConnectionComplete(LEConnectionComplete(
            status: .success, handle: handle, role: role == .central ? .central : .peripheral,
            peerAddressType: resolved.type, peerAddress: resolved.address, connectionInterval: parameters.intervalMin,
            peripheralLatency: parameters.maxLatency, supervisionTimeout: parameters.supervisionTimeout,
            centralClockAccuracy: 0x05),
            localRPA: local.kind == .resolvablePrivate ? local : nil, peerRPA: resolved.resolvedFrom)
        return handle
    }

    func linkBeginEvent(_ handle: UInt16) {
        guard connections[handle] != nil else { return }
        perform(connections[handle]?.link.beginEvent() ?? [], handle: handle)
    }

    func linkTransmit(_ handle: UInt16) -> [UInt8]? {
        connections[handle]?.link.nextTransmission()
    }

    /// The PHY this end transmits on.
    func linkTransmitPHY(_ handle: UInt16) -> LEPhy {
        connections[handle]?.link.txPHY ?? .le1M
    }

    /// After one exchange of a timed connection event: Number Of Completed Packets at once, so the host refills
    /// the controller's buffers while the event goes on (a real controller reports them within the event).
    func linkExchangeEnded(_ handle: UInt16) {
        guard connections[handle] != nil else { return }
        flushCompleted(handle)
    }

    func linkHasMoreData(_ handle: UInt16) -> Bool {
        connections[handle]?.link.hasMoreData ?? false
    }

    func linkInterval(_ handle: UInt16) -> Duration? {
        connections[handle]?.link.intervalDuration
    }

    func linkReceive(_ handle: UInt16, _ bytes: [UInt8], rssi: Int8, now: StackInstant) {
        guard connections[handle] != nil else { return }
        let actions = air.withRandom { random in
            connections[handle]?.link.receive(bytes, rssi: rssi, now: now, random: &random) ?? []
        }
        perform(actions, handle: handle)
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
