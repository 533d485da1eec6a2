import BluetoothCore
import BluetoothCrypto
import BluetoothRuntime
import HCI

/// HCI command handling of ``VirtualController`` (Core 5.4 Vol 4 Part E §7): every command gets Command Complete
/// or Command Status with the spec's return parameters; unknown opcodes 0x01, invalid parameters 0x12, a command
/// in the wrong state 0x0C, an unknown handle 0x02.
extension VirtualController {
    // swiftlint:disable:next cyclomatic_complexity function_body_length
    func handle(_ command: HCICommand) {
        let now = air.now
        guard admitsFamily(of: command) else { return fail(command.opcode, .commandDisallowed) }
        switch command {
        case .reset:
            dropEverything()
            complete(.reset, .status(.success))
        case .setEventMask(let mask):
            settings.eventMask = mask
            complete(.setEventMask, .status(.success))
        case .leSetEventMask(let mask):
            settings.leEventMask = mask
            complete(.leSetEventMask, .status(.success))
        case .setEventMaskPage2:
            complete(.setEventMaskPage2, .status(.success))
        case .writeLEHostSupport:
            complete(.writeLEHostSupport, .status(.success))
        case .setControllerToHostFlowControl(let value):
            complete(.setControllerToHostFlowControl, .status(value <= 3 ? .success : .invalidCommandParameters))
        case .hostBufferSize(let size):
            if size.aclDataPacketLength > 0 {
                settings.hostACLLength = Int(size.aclDataPacketLength)
                for handle in connections.keys.sorted() { connections[handle]?.link.hostMaximumACLLength = settings.hostACLLength }
            }
            complete(.hostBufferSize, .status(.success))
        case .readLocalVersionInformation:
            complete(.readLocalVersionInformation, .readLocalVersionInformation(status: .success, version: ControllerCapabilities.version))
        case .readLocalSupportedCommands:
            complete(.readLocalSupportedCommands, .readLocalSupportedCommands(status: .success, commands: ControllerCapabilities.supportedCommands))
        case .readLocalSupportedFeatures:
            complete(.readLocalSupportedFeatures, .readLocalSupportedFeatures(status: .success, features: ControllerCapabilities.lmpFeatures))
        case .readBufferSize:
            complete(.readBufferSize, .readBufferSize(status: .success, aclDataPacketLength: ControllerSettings.aclDataPacketLength,
                                                      synchronousDataPacketLength: 0,
                                                      totalNumACLDataPackets: UInt16(ControllerSettings.aclDataPacketCount),
                                                      totalNumSynchronousDataPackets: 0))
        case .readBDADDR:
            complete(.readBDADDR, .readBDADDR(status: .success, address: publicAddress))
        case .readRSSI(let handle):
            if let record = connections[handle] {
                complete(.readRSSI, .readRSSI(status: .success, handle: handle, rssi: record.link.lastRSSI))
            } else {
                complete(.readRSSI, .readRSSI(status: .unknownConnectionIdentifier, handle: handle, rssi: 127))
            }
        case .readTransmitPowerLevel(let handle, let type):
            let status: HCIStatus = connections[handle] == nil ? .unknownConnectionIdentifier : type > 1 ? .invalidCommandParameters : .success
            complete(.readTransmitPowerLevel, .readTransmitPowerLevel(status: status, handle: handle, txPowerLevel: txPower))
        case .leReadBufferSize:
            complete(.leReadBufferSize, .leReadBufferSize(status: .success, leACLDataPacketLength: ControllerSettings.aclDataPacketLength,
                                                          totalNumLEACLDataPackets: ControllerSettings.aclDataPacketCount))
        case .leReadBufferSizeV2:
            complete(.leReadBufferSizeV2, .leReadBufferSizeV2(status: .success, leACLDataPacketLength: ControllerSettings.aclDataPacketLength,
                                                              totalNumLEACLDataPackets: ControllerSettings.aclDataPacketCount,
                                                              isoDataPacketLength: 0, totalNumISODataPackets: 0))
        case .leReadLocalSupportedFeatures:
            complete(.leReadLocalSupportedFeatures, .leReadLocalSupportedFeatures(status: .success, features: ControllerCapabilities.leFeatures))
        case .leReadSupportedStates:
            complete(.leReadSupportedStates, .leReadSupportedStates(status: .success, states: ControllerCapabilities.supportedStates))
        case .leSetRandomAddress(let address):
            if settings.advertising || settings.scanning || settings.initiating != nil {
                // Advertising sets have their own random addresses (§7.8.52) and do not block this one.
                complete(.leSetRandomAddress, .status(.commandDisallowed))
            } else {
                settings.randomAddress = BluetoothAddress(address.value, type: .random)
                complete(.leSetRandomAddress, .status(.success))
            }
        case .leSetAdvertisingParameters(let parameters):
            if settings.advertising {
                complete(.leSetAdvertisingParameters, .status(.commandDisallowed))
            } else if !Self.valid(parameters) {
                complete(.leSetAdvertisingParameters, .status(.invalidCommandParameters))
            } else {
                settings.advertisingParameters = parameters
                complete(.leSetAdvertisingParameters, .status(.success))
            }
        case .leReadAdvertisingPhysicalChannelTxPower:
            complete(.leReadAdvertisingPhysicalChannelTxPower, .leReadAdvertisingPhysicalChannelTxPower(status: .success, txPowerLevel: txPower))
        case .leSetAdvertisingData(let data):
            settings.advertisingData = data
            complete(.leSetAdvertisingData, .status(.success))
        case .leSetScanResponseData(let data):
            settings.scanResponseData = data
            complete(.leSetScanResponseData, .status(.success))
        case .leSetAdvertisingEnable(let enable):
            complete(.leSetAdvertisingEnable, .status(setAdvertising(enable, now: now)))
        case .leSetScanParameters(let parameters):
            if settings.scanning {
                complete(.leSetScanParameters, .status(.commandDisallowed))
            } else if parameters.scanType > 1 || !(4...0x4000).contains(parameters.interval)
                        || !(4...parameters.interval).contains(parameters.window) || parameters.ownAddressType.rawValue > 3
                        || parameters.filterPolicy > 3 {
                complete(.leSetScanParameters, .status(.invalidCommandParameters))
            } else {
                settings.scanParameters = parameters
                settings.extendedScanParameters = nil
                complete(.leSetScanParameters, .status(.success))
            }
        case .leSetScanEnable(let enable, let filterDuplicates):
            if enable {
                if ownAddress(settings.scanParameters.ownAddressType) == nil {
                    complete(.leSetScanEnable, .status(.invalidCommandParameters))
                    return
                }
                if !settings.scanning {
                    settings.scanning = true
                    settings.scanStart = now
                    settings.reported = []
                }
                settings.filterDuplicates = filterDuplicates
            } else {
                settings.scanning = false
                settings.reported = []
            }
            complete(.leSetScanEnable, .status(.success))
        case .leCreateConnection(let parameters):
            if settings.initiating != nil {
                status(.leCreateConnection, .commandDisallowed)
            } else if !(4...0x4000).contains(parameters.scanInterval) || !(4...parameters.scanInterval).contains(parameters.scanWindow)
                        || parameters.initiatorFilterPolicy > 1 || parameters.peerAddressType.rawValue > 3
                        || !Self.valid(parameters.connection) || ownAddress(parameters.ownAddressType) == nil {
                status(.leCreateConnection, .invalidCommandParameters)
            } else if parameters.initiatorFilterPolicy == 0, connections.values.contains(where: {
                Self.matches(parameters.peerAddress, parameters.peerAddressType, $0.link.peerAddress)
            }) {
                status(.leCreateConnection, .connectionAlreadyExists)
            } else {
                settings.initiating = parameters
                settings.initiatingStart = now
                status(.leCreateConnection, .success)
            }
        case .leCreateConnectionCancel:
            guard let parameters = settings.initiating else {
                complete(.leCreateConnectionCancel, .status(.commandDisallowed))
                return
            }
            settings.initiating = nil
            settings.extendedInitiating = nil
            complete(.leCreateConnectionCancel, .status(.success))
            sendConnectionComplete(LEConnectionComplete(
                status: .unknownConnectionIdentifier, handle: 0, role: .central, peerAddressType: parameters.peerAddressType,
                peerAddress: parameters.peerAddress, connectionInterval: 0, supervisionTimeout: 0))
        case .leReadFilterAcceptListSize:
            complete(.leReadFilterAcceptListSize, .leReadFilterAcceptListSize(status: .success,
                                                                             size: UInt8(ControllerSettings.filterAcceptListSize)))
        case .leClearFilterAcceptList:
            if filterAcceptListInUse {
                complete(.leClearFilterAcceptList, .status(.commandDisallowed))
            } else {
                settings.filterAcceptList = []
                settings.acceptAnonymous = false
                complete(.leClearFilterAcceptList, .status(.success))
            }
        case .leAddDeviceToFilterAcceptList(let type, let address):
            complete(.leAddDeviceToFilterAcceptList, .status(changeFilterAcceptList(add: true, type: type, address: address)))
        case .leRemoveDeviceFromFilterAcceptList(let type, let address):
            complete(.leRemoveDeviceFromFilterAcceptList, .status(changeFilterAcceptList(add: false, type: type, address: address)))
        case .leConnectionUpdate(let handle, let parameters):
            guard let record = connections[handle] else {
                status(.leConnectionUpdate, .unknownConnectionIdentifier)
                return
            }
            if !Self.valid(parameters) {
                status(.leConnectionUpdate, .invalidCommandParameters)
            } else if record.link.role != .central || record.link.pendingUpdate != nil {
                status(.leConnectionUpdate, .commandDisallowed)
            } else {
                status(.leConnectionUpdate, .success)
                connections[handle]?.link.updateConnection(interval: parameters.intervalMin, latency: parameters.maxLatency,
                                                           timeout: parameters.supervisionTimeout)
            }
        case .leReadRemoteFeatures(let handle):
            guard connections[handle] != nil else {
                status(.leReadRemoteFeatures, .unknownConnectionIdentifier)
                return
            }
            status(.leReadRemoteFeatures, .success)
            perform(connections[handle]?.link.readRemoteFeatures() ?? [], handle: handle)
        case .readRemoteVersionInformation(let handle):
            guard connections[handle] != nil else {
                status(.readRemoteVersionInformation, .unknownConnectionIdentifier)
                return
            }
            status(.readRemoteVersionInformation, .success)
            perform(connections[handle]?.link.readRemoteVersion() ?? [], handle: handle)
        case .leEncrypt(let key, let plaintext):
            if let encrypted = try? SecurityToolbox.leEncrypt(keyLittleEndian: key, plaintextLittleEndian: plaintext) {
                complete(.leEncrypt, .leEncrypt(status: .success, encryptedData: encrypted))
            } else {
                complete(.leEncrypt, .status(.invalidCommandParameters))
            }
        case .leRand:
            complete(.leRand, .leRand(status: .success, randomNumber: air.nextRandom()))
        case .leEnableEncryption(let handle, let randomNumber, let ediv, let key):
            guard let record = connections[handle] else {
                status(.leEnableEncryption, .unknownConnectionIdentifier)
                return
            }
            guard record.link.role == .central, !record.link.isEncryptionProcedureRunning,
                  let ltk = try? Block128(littleEndian: key) else {
                status(.leEnableEncryption, .commandDisallowed)
                return
            }
            status(.leEnableEncryption, .success)
            air.withRandom { random in
                connections[handle]?.link.startEncryption(ltk: ltk, randomNumber: randomNumber, encryptedDiversifier: ediv,
                                                          random: &random)
            }
        case .leLongTermKeyRequestReply(let handle, let key):
            guard let record = connections[handle] else {
                complete(.leLongTermKeyRequestReply, .statusAndHandle(status: .unknownConnectionIdentifier, handle: handle))
                return
            }
            guard record.link.awaitsLongTermKey, let ltk = try? Block128(littleEndian: key) else {
                complete(.leLongTermKeyRequestReply, .statusAndHandle(status: .commandDisallowed, handle: handle))
                return
            }
            complete(.leLongTermKeyRequestReply, .statusAndHandle(status: .success, handle: handle))
            perform(connections[handle]?.link.longTermKeyReply(ltk) ?? [], handle: handle)
        case .leLongTermKeyRequestNegativeReply(let handle):
            guard let record = connections[handle] else {
                complete(.leLongTermKeyRequestNegativeReply, .statusAndHandle(status: .unknownConnectionIdentifier, handle: handle))
                return
            }
            guard record.link.awaitsLongTermKey else {
                complete(.leLongTermKeyRequestNegativeReply, .statusAndHandle(status: .commandDisallowed, handle: handle))
                return
            }
            complete(.leLongTermKeyRequestNegativeReply, .statusAndHandle(status: .success, handle: handle))
            perform(connections[handle]?.link.longTermKeyReply(nil) ?? [], handle: handle)
        case .leSetDataLength(let handle, let txOctets, let txTime):
            guard connections[handle] != nil else {
                complete(.leSetDataLength, .statusAndHandle(status: .unknownConnectionIdentifier, handle: handle))
                return
            }
            guard (27...251).contains(txOctets), (0x0148...0x4290).contains(txTime) else {
                complete(.leSetDataLength, .statusAndHandle(status: .invalidCommandParameters, handle: handle))
                return
            }
            complete(.leSetDataLength, .statusAndHandle(status: .success, handle: handle))
            connections[handle]?.link.setDataLength(txOctets: txOctets)
        case .leReadSuggestedDefaultDataLength:
            complete(.leReadSuggestedDefaultDataLength, .leReadSuggestedDefaultDataLength(
                status: .success, txOctets: settings.suggestedTxOctets, txTime: settings.suggestedTxTime))
        case .leWriteSuggestedDefaultDataLength(let txOctets, let txTime):
            if (27...251).contains(txOctets), (0x0148...0x4290).contains(txTime) {
                settings.suggestedTxOctets = txOctets
                settings.suggestedTxTime = txTime
                complete(.leWriteSuggestedDefaultDataLength, .status(.success))
            } else {
                complete(.leWriteSuggestedDefaultDataLength, .status(.invalidCommandParameters))
            }
        case .leReadMaximumDataLength:
            complete(.leReadMaximumDataLength, .leReadMaximumDataLength(
                status: .success, maxTxOctets: 251, maxTxTime: LinkLayerConnection.time(251),
                maxRxOctets: 251, maxRxTime: LinkLayerConnection.time(251)))
        case .leReadPHY(let handle):
            if let record = connections[handle] {
                complete(.leReadPHY, .leReadPHY(status: .success, handle: handle, txPHY: record.link.txPHY, rxPHY: record.link.rxPHY))
            } else {
                complete(.leReadPHY, .leReadPHY(status: .unknownConnectionIdentifier, handle: handle, txPHY: .le1M, rxPHY: .le1M))
            }
        case .leSetDefaultPHY(let all, let tx, let rx):
            guard let (txPHYs, rxPHYs) = Self.phyPreferences(all: all, tx: tx, rx: rx) else {
                complete(.leSetDefaultPHY, .status(.invalidCommandParameters))
                return
            }
            settings.defaultTxPHYs = txPHYs
            settings.defaultRxPHYs = rxPHYs
            complete(.leSetDefaultPHY, .status(.success))
        case .leSetPHY(let handle, let all, let tx, let rx, let options):
            guard let record = connections[handle] else {
                status(.leSetPHY, .unknownConnectionIdentifier)
                return
            }
            guard options <= 2, let (txPHYs, rxPHYs) = Self.phyPreferences(all: all, tx: tx, rx: rx) else {
                status(.leSetPHY, .invalidCommandParameters)
                return
            }
            guard !record.link.hostAwaitsPHY, record.link.pendingPHY == nil else {
                status(.leSetPHY, .commandDisallowed)
                return
            }
            status(.leSetPHY, .success)
            connections[handle]?.link.setPHY(txPHYs: txPHYs, rxPHYs: rxPHYs)
        case .disconnect(let handle, let reason):
            guard let record = connections[handle] else {
                status(.disconnect, .unknownConnectionIdentifier)
                return
            }
            guard [0x05, 0x13, 0x14, 0x15, 0x1A, 0x29, 0x3B].contains(reason.rawValue) else {
                status(.disconnect, .invalidCommandParameters)
                return
            }
            guard record.link.terminating == nil else {
                status(.disconnect, .commandDisallowed)
                return
            }
            status(.disconnect, .success)
            connections[handle]?.link.disconnect(reason: reason, now: air.now)
        case .leRemoteConnectionParameterRequestReply(let handle, _):
            complete(.leRemoteConnectionParameterRequestReply, .statusAndHandle(
                status: connections[handle] == nil ? .unknownConnectionIdentifier : .commandDisallowed, handle: handle))
        case .leRemoteConnectionParameterRequestNegativeReply(let handle, _):
            complete(.leRemoteConnectionParameterRequestNegativeReply, .statusAndHandle(
                status: connections[handle] == nil ? .unknownConnectionIdentifier : .commandDisallowed, handle: handle))
        case .leAddDeviceToResolvingList, .leRemoveDeviceFromResolvingList, .leClearResolvingList,
             .leSetAddressResolutionEnable, .leSetResolvablePrivateAddressTimeout, .leReadResolvingListSize,
             .leReadPeerResolvableAddress, .leReadLocalResolvableAddress, .leSetPrivacyMode:
            handlePrivacy(command)
        case .leReadLocalP256PublicKey, .leGenerateDHKey:
            complete(command.opcode, .status(.unknownCommand))
        case .extended(let extended):
            handleExtended(extended, now: now)
        case .unknown(let opcode, _):
            complete(opcode, .status(.unknownCommand))
        }
    }

    // MARK: Helpers

    static func valid(_ p: LEAdvertisingParameters) -> Bool {
        guard p.advertisingType.rawValue <= 4, p.ownAddressType.rawValue <= 3, p.channelMap & 0x07 != 0,
              p.channelMap & 0xF8 == 0, p.filterPolicy <= 3 else { return false }
        let directed = p.advertisingType == .connectableHighDutyCycleDirected
            || p.advertisingType == .connectableLowDutyCycleDirected
        if directed && p.peerAddressType.rawValue > 1 { return false }
        if p.advertisingType == .connectableHighDutyCycleDirected { return true }
        return (0x20...0x4000).contains(p.intervalMin) && (p.intervalMin...0x4000).contains(p.intervalMax)
    }

    static func valid(_ p: LEConnectionParameters) -> Bool {
        guard (6...0x0C80).contains(p.intervalMin), (p.intervalMin...0x0C80).contains(p.intervalMax),
              p.maxLatency <= 0x01F3, (0x0A...0x0C80).contains(p.supervisionTimeout) else { return false }
        // Timeout (10 ms units) must exceed (1 + latency) × interval × 2 (1.25 ms units).
        return Int(p.supervisionTimeout) * 8 > (1 + Int(p.maxLatency)) * Int(p.intervalMax) * 2
    }

    /// TX/RX PHY preference bit fields from LE Set (Default) PHY (§7.8.48): bit 0 of `all` = no TX preference.
    static func phyPreferences(all: UInt8, tx: UInt8, rx: UInt8) -> (UInt8, UInt8)? {
        guard all & 0xFC == 0, tx & 0xF8 == 0, rx & 0xF8 == 0 else { return nil }
        if all & 0x01 == 0 && tx == 0 { return nil }
        if all & 0x02 == 0 && rx == 0 { return nil }
        let txPHYs = all & 0x01 != 0 ? 0x07 : (tx & 0x07 == 0 ? 0x01 : tx & 0x07)
        let rxPHYs = all & 0x02 != 0 ? 0x07 : (rx & 0x07 == 0 ? 0x01 : rx & 0x07)
        return (txPHYs, rxPHYs)
    }

    var filterAcceptListInUse: Bool {
        (settings.advertising && settings.advertisingParameters.filterPolicy != 0)
            || settings.advertisingSets.values.contains { $0.enabled && $0.parameters.filterPolicy != 0 }
            || (settings.scanning && settings.scanParameters.filterPolicy & 0x01 != 0)
            || settings.initiating?.initiatorFilterPolicy == 1
    }

    func changeFilterAcceptList(add: Bool, type: LEAddressType, address: BluetoothAddress) -> HCIStatus {
        if filterAcceptListInUse { return .commandDisallowed }
        if type == .anonymous {
            settings.acceptAnonymous = add
            return .success
        }
        guard type.rawValue <= 1 else { return .invalidCommandParameters }
        let entry = BluetoothAddress(address.value, type: type.bluetoothAddressType)
        if add {
            if settings.filterAcceptList.contains(entry) { return .success }
            guard settings.filterAcceptList.count < ControllerSettings.filterAcceptListSize else { return .memoryCapacityExceeded }
            settings.filterAcceptList.append(entry)
        } else {
            settings.filterAcceptList.removeAll { $0 == entry }
        }
        return .success
    }

    func setAdvertising(_ enable: Bool, now: StackInstant) -> HCIStatus {
        guard enable else {
            settings.advertising = false
            air.cancelAdvertising(self)
            return .success
        }
        if settings.advertising { return .success }
        let parameters = settings.advertisingParameters
        guard ownAddress(parameters.ownAddressType) != nil else { return .invalidCommandParameters }
        settings.advertising = true
        settings.advertisingStart = now
        air.scheduleAdvertising(self, first: true)
        return .success
    }

    func sendConnectionComplete(_ complete: LEConnectionComplete, localRPA: BluetoothAddress? = nil, peerRPA: BluetoothAddress? = nil) {
        if isLEEventEnabled(.enhancedConnectionComplete) {
            let none = BluetoothAddress(0, type: .random)
            send(.leMeta(.enhancedConnectionComplete(LEEnhancedConnectionComplete(
                connection: complete, localResolvablePrivateAddress: localRPA ?? none, peerResolvablePrivateAddress: peerRPA ?? none))))
        } else {
            send(.leMeta(.connectionComplete(complete)))
        }
    }
}
