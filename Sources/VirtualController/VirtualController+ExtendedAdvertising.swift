import BluetoothCore
import BluetoothRuntime
import HCI

/// Extended advertising, extended scanning and LE Extended Create Connection in ``VirtualController`` (Core 5.4
/// Vol 4 Part E §7.8.52–§7.8.66; Vol 6 Part B §4.4.2, §4.4.3): advertising sets, each advertising on the air on its
/// own schedule with legacy PDUs or ADV_EXT_IND and an auxiliary chain (``AuxiliaryChain``); extended scanning on
/// LE 1M and LE Coded with Duration and Period; initiating on several PHYs. The spec's refusals: an unknown set
/// 0x42, a set that is enabled 0x0C, data too long 0x07 or 0x45, a PHY or combination we do not have 0x11, bad
/// parameters 0x12, and a command of the other family than the host chose 0x0C (§3.1.1).
extension VirtualController {
    /// Whether `command` may run under the host's command family; fixes the family on its first legacy or extended
    /// advertising, scanning or initiating command (§3.1.1).
    func admitsFamily(of command: HCICommand) -> Bool {
        if case .extended = command {
            guard settings.family != .legacy else { return false }
            settings.family = .extended
        } else if AdvertisingCommandFamily.legacyOpcodes.contains(command.opcode) {
            guard settings.family != .extended else { return false }
            settings.family = .legacy
        }
        return true
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    func handleExtended(_ command: HCIExtendedCommand, now: StackInstant) {
        let opcode = command.opcode
        switch command {
        case .leSetAdvertisingSetRandomAddress(let handle, let address):
            guard settings.advertisingSets[handle] != nil else { return complete(opcode, .status(.unknownAdvertisingIdentifier)) }
            // §7.8.52: an enabled set takes the new address from its next advertising event on.
            settings.advertisingSets[handle]?.randomAddress = BluetoothAddress(address.value, type: .random)
            complete(opcode, .status(.success))
        case .leSetExtendedAdvertisingParameters(let parameters):
            let status = setAdvertisingSetParameters(parameters)
            complete(opcode, .leSetExtendedAdvertisingParameters(status: status, selectedTxPower: status == .success ? txPower : 0))
        case .leSetExtendedAdvertisingData(let fragment):
            complete(opcode, .status(setAdvertisingSetData(fragment, scanResponse: false)))
        case .leSetExtendedScanResponseData(let fragment):
            complete(opcode, .status(setAdvertisingSetData(fragment, scanResponse: true)))
        case .leSetExtendedAdvertisingEnable(let enable, let sets):
            complete(opcode, .status(enableAdvertisingSets(enable, sets, now: now)))
        case .leReadMaximumAdvertisingDataLength:
            complete(opcode, .leReadMaximumAdvertisingDataLength(status: .success,
                                                                 maximumLength: UInt16(AdvertisingSet.maximumAdvertisingDataLength)))
        case .leReadNumberOfSupportedAdvertisingSets:
            complete(opcode, .leReadNumberOfSupportedAdvertisingSets(status: .success, count: UInt8(AdvertisingSet.supportedSets)))
        case .leRemoveAdvertisingSet(let handle):
            guard let set = settings.advertisingSets[handle] else { return complete(opcode, .status(.unknownAdvertisingIdentifier)) }
            guard !set.enabled else { return complete(opcode, .status(.commandDisallowed)) }
            settings.advertisingSets[handle] = nil
            settings.advertisingSetOrder.removeAll { $0 == handle }
            complete(opcode, .status(.success))
        case .leClearAdvertisingSets:
            guard !settings.advertisingSets.values.contains(where: \.enabled) else { return complete(opcode, .status(.commandDisallowed)) }
            settings.advertisingSets = [:]
            settings.advertisingSetOrder = []
            complete(opcode, .status(.success))
        case .leSetExtendedScanParameters(let parameters):
            complete(opcode, .status(setExtendedScanParameters(parameters)))
        case .leSetExtendedScanEnable(let enable, let filterDuplicates, let duration, let period):
            complete(opcode, .status(enableExtendedScan(enable, filterDuplicates: filterDuplicates, duration: duration,
                                                        period: period, now: now)))
        case .leExtendedCreateConnection(let parameters):
            status(opcode, extendedCreateConnection(parameters, now: now))
        }
    }

    // MARK: Advertising sets

    private func setAdvertisingSetParameters(_ p: LEExtendedAdvertisingParameters) -> HCIStatus {
        guard p.advertisingHandle <= 0xEF else { return .invalidCommandParameters }
        let existing = settings.advertisingSets[p.advertisingHandle]
        if existing?.enabled == true { return .commandDisallowed }
        let properties = p.eventProperties
        guard properties.rawValue & 0xFF80 == 0, p.primaryChannelMap & 0x07 != 0, p.primaryChannelMap & 0xF8 == 0,
              p.ownAddressType.rawValue <= 3, p.filterPolicy <= 3, p.sid <= 0x0F else { return .invalidCommandParameters }
        if properties.contains(.directed), p.peerAddressType.rawValue > 1 { return .invalidCommandParameters }
        let highDuty = properties.contains(.highDutyCycleDirected) && properties.contains(.directed)
        if !highDuty {
            guard p.primaryIntervalMin >= 0x20, p.primaryIntervalMax >= p.primaryIntervalMin else { return .invalidCommandParameters }
        }
        if properties.contains(.legacy) {
            guard AdvertisingSet.legacyType(properties) != nil else { return .invalidCommandParameters }
            // Legacy PDUs are on LE 1M (§7.8.53); existing data must still fit them.
            if let existing, existing.data.count > 31 || existing.scanResponseData.count > 31 { return .invalidCommandParameters }
        } else {
            if properties.contains(.connectable) && properties.contains(.scannable) { return .invalidCommandParameters }
            if properties.contains(.anonymous) && properties.contains(.connectable) { return .invalidCommandParameters }
            guard [LEPhy.le1M, .leCoded].contains(p.primaryPHY), [LEPhy.le1M, .le2M, .leCoded].contains(p.secondaryPHY) else {
                return .unsupportedFeatureOrParameterValue
            }
        }
        if existing == nil {
            guard settings.advertisingSets.count < AdvertisingSet.supportedSets else { return .memoryCapacityExceeded }
            settings.advertisingSetOrder.append(p.advertisingHandle)
        }
        var set = existing ?? AdvertisingSet(parameters: p)
        set.parameters = p
        if !set.carriesAdvertisingData, !set.data.isEmpty { return .invalidCommandParameters }
        settings.advertisingSets[p.advertisingHandle] = set
        return .success
    }

    private func setAdvertisingSetData(_ fragment: LEExtendedAdvertisingData, scanResponse: Bool) -> HCIStatus {
        guard var set = settings.advertisingSets[fragment.advertisingHandle] else { return .unknownAdvertisingIdentifier }
        let operation = fragment.operation
        guard operation.rawValue <= 0x04, fragment.fragmentPreference <= 1 else { return .invalidCommandParameters }
        if scanResponse ? !set.carriesScanResponseData : !set.carriesAdvertisingData {
            // Nothing to carry it; an empty Complete is allowed (it clears).
            guard operation == .complete, fragment.data.isEmpty else { return .invalidCommandParameters }
        }
        if set.isLegacy, operation != .complete || fragment.data.count > 31 { return .invalidCommandParameters }
        if operation == .unchanged {
            // Only a new DID (§7.8.54); not for scan response data, nor without data.
            guard !scanResponse, fragment.data.isEmpty, !set.data.isEmpty, set.enabled else { return .invalidCommandParameters }
            set.dataID = (set.dataID &+ 1) & 0x0FFF
            settings.advertisingSets[fragment.advertisingHandle] = set
            return .success
        }
        if operation != .complete {
            // Fragmented data may only be given while the set is disabled, fragments carry data (§7.8.54).
            if set.enabled { return .commandDisallowed }
            if fragment.data.isEmpty { return .invalidCommandParameters }
        }
        var data = scanResponse ? set.scanResponseData : set.data
        var incomplete = scanResponse ? set.scanResponseIncomplete : set.dataIncomplete
        switch operation {
        case .complete, .firstFragment:
            data = fragment.data
            incomplete = operation == .firstFragment
        default:
            guard incomplete else { return .commandDisallowed }
            data += fragment.data
            incomplete = operation == .intermediateFragment
        }
        if data.count > AdvertisingSet.maximumAdvertisingDataLength {
            // The whole data is dropped (§7.8.54: Memory Capacity Exceeded).
            data = []
            incomplete = false
            set.dataIncomplete = scanResponse ? set.dataIncomplete : false
            if scanResponse { set.scanResponseData = [] } else { set.data = [] }
            settings.advertisingSets[fragment.advertisingHandle] = set
            return .memoryCapacityExceeded
        }
        if set.enabled, !scanResponse, data.count > set.maximumDataLength { return .packetTooLong }
        if scanResponse {
            set.scanResponseData = data
            set.scanResponseIncomplete = incomplete
        } else {
            set.data = data
            set.dataIncomplete = incomplete
            set.dataID = (set.dataID &+ 1) & 0x0FFF
        }
        settings.advertisingSets[fragment.advertisingHandle] = set
        return .success
    }

    private func enableAdvertisingSets(_ enable: Bool, _ sets: [LEExtendedAdvertisingSet], now: StackInstant) -> HCIStatus {
        guard enable else {
            let handles = sets.isEmpty ? settings.advertisingSetOrder : sets.map(\.advertisingHandle)
            guard handles.allSatisfy({ settings.advertisingSets[$0] != nil }) else { return .unknownAdvertisingIdentifier }
            for handle in handles { stopAdvertisingSet(handle) }
            return .success
        }
        guard !sets.isEmpty, Set(sets.map(\.advertisingHandle)).count == sets.count else { return .invalidCommandParameters }
        for entry in sets {
            guard let set = settings.advertisingSets[entry.advertisingHandle] else { return .unknownAdvertisingIdentifier }
            if set.dataIncomplete || set.scanResponseIncomplete { return .commandDisallowed }
            if !set.isLegacy, set.carriesScanResponseData, set.scanResponseData.isEmpty { return .commandDisallowed }
            if set.data.count > set.maximumDataLength { return .packetTooLong }
            let properties = set.properties
            if properties.contains(.highDutyCycleDirected), properties.contains(.directed),
               entry.duration == 0 || entry.duration > 128 { return .invalidCommandParameters }
            let random = set.parameters.ownAddressType.rawValue & 0x01 != 0
            if random, set.randomAddress == nil, !(set.parameters.ownAddressType.rawValue == 0x03 && settings.addressResolution) {
                return .invalidCommandParameters
            }
        }
        for entry in sets {
            guard var set = settings.advertisingSets[entry.advertisingHandle] else { continue }
            let restart = !set.enabled
            set.enabled = true
            set.deadline = entry.duration == 0 ? nil : now + .milliseconds(Int(entry.duration) * 10)
            set.maximumEvents = entry.maxExtendedAdvertisingEvents
            if restart { set.completedEvents = 0 }
            settings.advertisingSets[entry.advertisingHandle] = set
            if restart { air.scheduleAdvertising(self, set: entry.advertisingHandle, first: true) }
        }
        air.rescheduleControllerTimer(self)
        return .success
    }

    /// Disables set `handle` without an event (the host disabled it, or a connection ended it).
    func stopAdvertisingSet(_ handle: UInt8) {
        guard settings.advertisingSets[handle]?.enabled == true else { return }
        settings.advertisingSets[handle]?.enabled = false
        settings.advertisingSets[handle]?.deadline = nil
        air.cancelAdvertising(self, set: handle)
    }

    /// Stops set `handle` and tells the host with LE Advertising Set Terminated (`status`: 0x3C Duration elapsed,
    /// 0x43 Max_Extended_Advertising_Events reached).
    private func terminateAdvertisingSet(_ handle: UInt8, _ status: HCIStatus) {
        guard let set = settings.advertisingSets[handle], set.enabled else { return }
        stopAdvertisingSet(handle)
        send(.leMeta(.extended(.advertisingSetTerminated(LEAdvertisingSetTerminated(
            status: status, advertisingHandle: handle, connectionHandle: 0,
            numCompletedExtendedAdvertisingEvents: set.completedEvents)))))
    }

    /// The advertising event set `handle` sends now, nil when it does not advertise (any more).
    func currentAdvertisement(set handle: UInt8, now: StackInstant) -> AirAdvertisement? {
        guard let set = settings.advertisingSets[handle], set.enabled else { return nil }
        if let deadline = set.deadline, now >= deadline {
            terminateAdvertisingSet(handle, .advertisingTimeout)
            return nil
        }
        let p = set.parameters
        let peer = BluetoothAddress(p.peerAddress.value, type: p.peerAddressType.bluetoothAddressType)
        let directed = set.properties.contains(.directed)
        guard let address = ownAddress(p.ownAddressType, random: set.randomAddress, towards: directed ? peer : nil, now: now) else {
            return nil
        }
        return AirAdvertisement(
            properties: set.properties, address: address, target: directed ? peer : nil,
            data: set.carriesAdvertisingData ? set.data : [], setHandle: handle,
            primaryPHY: set.isLegacy ? .le1M : p.primaryPHY, secondaryPHY: set.isLegacy ? .le1M : p.secondaryPHY,
            sid: p.sid, dataID: set.dataID, txPower: set.properties.contains(.includeTxPower) ? txPower : nil)
    }

    /// After an advertising event of set `handle`: counts it, and stops the set at Max_Extended_Advertising_Events.
    func advertisingEventSent(set handle: UInt8) {
        guard var set = settings.advertisingSets[handle], set.enabled else { return }
        set.completedEvents = set.completedEvents &+ 1
        settings.advertisingSets[handle] = set
        if set.maximumEvents != 0, set.completedEvents >= set.maximumEvents { terminateAdvertisingSet(handle, .limitReached) }
    }

    /// The scan response data of the set behind `advertisement` (or of the legacy commands).
    func scanResponseData(for advertisement: AirAdvertisement) -> [UInt8] {
        guard let handle = advertisement.setHandle else { return settings.scanResponseData }
        return settings.advertisingSets[handle]?.scanResponseData ?? []
    }

    /// The interval between advertising events of set `handle` (0.625 ms units; 3.75 ms for high duty cycle).
    func advertisingInterval(set handle: UInt8) -> Duration? {
        guard let set = settings.advertisingSets[handle] else { return nil }
        if set.properties.contains(.highDutyCycleDirected), set.properties.contains(.directed) { return .microseconds(3750) }
        return .microseconds(Int(min(set.parameters.primaryIntervalMin, 0xFF_FFFF)) * 625)
    }

    // MARK: Extended scanning

    private func setExtendedScanParameters(_ p: LEExtendedScanParameters) -> HCIStatus {
        if settings.scanning { return .commandDisallowed }
        guard p.ownAddressType.rawValue <= 3, p.filterPolicy <= 3, p.le1M != nil || p.leCoded != nil else {
            return .invalidCommandParameters
        }
        for block in [p.le1M, p.leCoded].compactMap({ $0 }) {
            guard block.scanType <= 1, block.interval >= 4, (4...block.interval).contains(block.window) else {
                return .invalidCommandParameters
            }
        }
        settings.extendedScanParameters = p
        let first = p.le1M ?? p.leCoded ?? LEExtendedScanPHYParameters()
        settings.scanParameters = LEScanParameters(scanType: first.scanType, interval: first.interval, window: first.window,
                                                   ownAddressType: p.ownAddressType, filterPolicy: p.filterPolicy)
        return .success
    }

    private func enableExtendedScan(_ enable: Bool, filterDuplicates: UInt8, duration: UInt16, period: UInt16,
                                    now: StackInstant) -> HCIStatus {
        guard enable else {
            settings.scanning = false
            settings.reported = []
            settings.scanEnd = nil
            settings.scanRestart = nil
            air.rescheduleControllerTimer(self)
            return .success
        }
        guard filterDuplicates <= 2 else { return .invalidCommandParameters }
        if period != 0 {
            guard duration != 0, Int(duration) * 10 < Int(period) * 1280 else { return .invalidCommandParameters }
        }
        if settings.extendedScanParameters == nil { settings.extendedScanParameters = LEExtendedScanParameters() }
        guard ownAddress(settings.scanParameters.ownAddressType) != nil
                || (settings.scanParameters.ownAddressType.rawValue == 0x03 && settings.addressResolution) else {
            return .invalidCommandParameters
        }
        settings.filterDuplicates = filterDuplicates != 0
        settings.resetDuplicatesEachPeriod = filterDuplicates == 2
        settings.scanDuration = .milliseconds(Int(duration) * 10)
        settings.scanPeriod = .milliseconds(Int(period) * 1280)
        // Enabling again restarts Duration and Period (§7.8.65) and, with Filter_Duplicates, the duplicate filter.
        startScanPeriod(now: now)
        return .success
    }

    private func startScanPeriod(now: StackInstant) {
        settings.scanning = true
        settings.scanStart = now
        settings.reported = []
        settings.scanEnd = settings.scanDuration > .zero ? now + settings.scanDuration : nil
        settings.scanRestart = settings.scanPeriod > .zero ? now + settings.scanPeriod : nil
        air.rescheduleControllerTimer(self)
    }

    // MARK: Extended initiating

    private func extendedCreateConnection(_ p: LEExtendedCreateConnectionParameters, now: StackInstant) -> HCIStatus {
        if settings.initiating != nil { return .commandDisallowed }
        guard p.initiatorFilterPolicy <= 1, p.ownAddressType.rawValue <= 3, p.peerAddressType.rawValue <= 3,
              p.le1M != nil || p.leCoded != nil else { return .invalidCommandParameters }
        for block in [p.le1M, p.le2M, p.leCoded].compactMap({ $0 }) {
            guard Self.valid(block.connection) else { return .invalidCommandParameters }
            // LE 2M is never a primary PHY: its scan interval and window are not used (§7.8.66).
            if block != p.le2M {
                guard block.scanInterval >= 4, (4...block.scanInterval).contains(block.scanWindow) else { return .invalidCommandParameters }
            }
        }
        guard ownAddress(p.ownAddressType) != nil || (p.ownAddressType.rawValue == 0x03 && settings.addressResolution) else {
            return .invalidCommandParameters
        }
        if p.initiatorFilterPolicy == 0, connections.values.contains(where: {
            Self.matches(p.peerAddress, p.peerAddressType, $0.link.peerAddress)
        }) { return .connectionAlreadyExists }
        let first = p.le1M ?? p.leCoded ?? LEExtendedInitiatingPHYParameters()
        settings.extendedInitiating = p
        settings.initiating = LECreateConnectionParameters(
            scanInterval: first.scanInterval, scanWindow: first.scanWindow, initiatorFilterPolicy: p.initiatorFilterPolicy,
            peerAddressType: p.peerAddressType, peerAddress: p.peerAddress, ownAddressType: p.ownAddressType,
            connection: first.connection)
        settings.initiatingStart = now
        return .success
    }

    // MARK: The controller's timer

    /// The earliest of: the end of a scan Duration, the start of the next scan Period, an advertising set's Duration.
    var nextDeadline: StackInstant? {
        var deadlines = [settings.scanEnd, settings.scanRestart].compactMap { $0 }
        deadlines += settings.advertisingSets.values.compactMap { $0.enabled ? $0.deadline : nil }
        return deadlines.min()
    }

    /// The air's timer reached ``nextDeadline``.
    func deadlineReached(now: StackInstant) {
        if let end = settings.scanEnd, now >= end {
            settings.scanEnd = nil
            settings.scanning = false
            if settings.scanRestart == nil { send(.leMeta(.extended(.scanTimeout))) }
        }
        if let restart = settings.scanRestart, now >= restart {
            if settings.resetDuplicatesEachPeriod { settings.reported = [] }
            let reported = settings.reported
            startScanPeriod(now: now)
            if !settings.resetDuplicatesEachPeriod { settings.reported = reported }
        }
        for handle in settings.advertisingSetOrder {
            if let deadline = settings.advertisingSets[handle]?.deadline, settings.advertisingSets[handle]?.enabled == true,
               now >= deadline {
                terminateAdvertisingSet(handle, .advertisingTimeout)
            }
        }
        air.rescheduleControllerTimer(self)
    }
}
