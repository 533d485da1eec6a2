import AdvertisingData
import BluetoothCore
import HCI
import BluetoothEngine

/// GAP with the Bluetooth 5 extended commands (Core 5.4 Vol 4 Part E §7.8.53–§7.8.66), used when
/// ``ControllerInfo/usesExtendedAdvertising``: one advertising set (handle 0) with legacy PDUs when the data fits
/// them, else ADV_EXT_IND and its auxiliary chain on the chosen PHYs; extended scanning on LE 1M (and LE Coded when
/// the controller has it); LE Extended Create Connection with parameters for each PHY the controller has. The
/// controller takes one command family until Reset (§3.1.1), so the host never mixes them.
extension HostStack {
    /// The advertising set the host uses.
    static let advertisingHandle: UInt8 = 0

    /// What one AUX_ADV_IND of connectable extended advertising carries (no AUX_CHAIN_IND follows it, Vol 6 Part B
    /// §4.4.2.2.2): 255 octets of payload minus the extended header length and AdvMode, the header flags, AdvA (6)
    /// and ADI (2).
    static let connectableExtendedDataLength = 245

    /// The commands that start advertising `advertisingData` and `scanResponse` with the extended commands, or why
    /// they cannot.
    func extendedAdvertisingCommands(advertisingData: AdvertisingData, scanResponse: AdvertisingData,
                                     options: AdvertisingOptions) throws(HostError) -> [HCICommand] {
        let fitsLegacy = advertisingData.encodedLength <= HCICommand.maximumAdvertisingDataLength
            && scanResponse.encodedLength <= HCICommand.maximumAdvertisingDataLength
        let handle = Self.advertisingHandle
        var properties: LEAdvertisingEventProperties
        var data = advertisingData.encode()
        var response = scanResponse.encode()
        if fitsLegacy, options.pdus == .automatic {
            properties = switch options.kind {
            case .connectable: [.connectable, .scannable, .legacy]
            case .scannable: [.scannable, .legacy]
            case .nonConnectable: [.legacy]
            }
        } else {
            // Extended PDUs are connectable or scannable, not both (§7.8.53): the scan response's structures join
            // the advertising data, or for scannable advertising everything is scan response.
            switch options.kind {
            case .connectable:
                properties = [.connectable]
                data += response
                response = []
            case .scannable:
                properties = [.scannable]
                response = data + response
                data = []
            case .nonConnectable:
                properties = []
                data += response
                response = []
            }
            let limit = options.kind == .connectable
                ? min(Self.connectableExtendedDataLength, info.maximumAdvertisingDataLength) : info.maximumAdvertisingDataLength
            let length = max(data.count, response.count)
            guard length <= limit else {
                throw HostError(.advertisingDataTooLarge,
                                "the advertising data takes \(length) octets; this controller's \(options.kind) extended advertising carries \(limit)")
            }
        }
        let parameters = LEExtendedAdvertisingParameters(
            advertisingHandle: handle, eventProperties: properties, primaryIntervalMin: UInt32(options.intervalMin),
            primaryIntervalMax: UInt32(options.intervalMax), primaryChannelMap: options.channelMap,
            ownAddressType: info.ownAddressType, primaryPHY: properties.contains(.legacy) ? .le1M : options.primaryPHY,
            secondaryPHY: properties.contains(.legacy) ? .le1M : options.secondaryPHY, sid: 0)
        // A set keeps its data across new parameters (§7.8.53): remove it first (failing when it does not exist).
        var commands: [HCICommand] = [.extended(.leRemoveAdvertisingSet(advertisingHandle: handle)),
                                      .extended(.leSetExtendedAdvertisingParameters(parameters))]
        if info.ownAddressType.rawValue & 0x01 != 0, info.ownAddress.type == .random {
            commands.append(.extended(.leSetAdvertisingSetRandomAddress(advertisingHandle: handle, address: info.ownAddress)))
        }
        if !properties.contains(.scannable) || properties.contains(.legacy) {
            commands += Self.dataFragments(data, handle: handle, scanResponse: false)
        }
        if properties.contains(.scannable) {
            commands += Self.dataFragments(response, handle: handle, scanResponse: true)
        }
        commands.append(.extended(.leSetExtendedAdvertisingEnable(enable: true, sets: [LEExtendedAdvertisingSet(advertisingHandle: handle)])))
        return commands
    }

    /// LE Set Extended Advertising / Scan Response Data commands for `data`: Complete when it fits one command
    /// (251 octets), else First, Intermediate..., Last (§7.8.54).
    static func dataFragments(_ data: [UInt8], handle: UInt8, scanResponse: Bool) -> [HCICommand] {
        let size = LEExtendedAdvertisingData.maximumFragmentLength
        let chunks = stride(from: 0, to: max(data.count, 1), by: size).map { Array(data[$0..<min($0 + size, data.count)]) }
        return chunks.enumerated().map { index, chunk in
            let operation: LEAdvertisingDataOperation = chunks.count == 1 ? .complete
                : index == 0 ? .firstFragment : index == chunks.count - 1 ? .lastFragment : .intermediateFragment
            let fragment = LEExtendedAdvertisingData(advertisingHandle: handle, operation: operation, data: chunk)
            return .extended(scanResponse ? .leSetExtendedScanResponseData(fragment) : .leSetExtendedAdvertisingData(fragment))
        }
    }

    /// Disables every advertising set (Num_Sets 0 disables all and never names an unknown set, §7.8.56).
    static let extendedAdvertisingDisable = HCICommand.extended(.leSetExtendedAdvertisingEnable(enable: false, sets: []))

    /// The commands that start extended scanning (§7.8.64, §7.8.65).
    func extendedScanCommands(_ options: ScanOptions) -> [HCICommand] {
        let block = LEExtendedScanPHYParameters(scanType: options.active ? 0x01 : 0x00, interval: options.interval, window: options.window)
        let parameters = LEExtendedScanParameters(ownAddressType: info.ownAddressType, le1M: block,
                                                  leCoded: options.scansCodedPHY && info.hasCodedPHY ? block : nil)
        return [.extended(.leSetExtendedScanParameters(parameters)),
                .extended(.leSetExtendedScanEnable(enable: true, filterDuplicates: options.filterDuplicates ? 1 : 0, duration: 0, period: 0))]
    }

    static let extendedScanDisable = HCICommand.extended(.leSetExtendedScanEnable(enable: false, filterDuplicates: 0, duration: 0, period: 0))

    /// LE Create Connection, or with the extended commands LE Extended Create Connection with the same scan and
    /// connection parameters for LE 1M, and LE 2M and LE Coded when the controller has them (§7.8.66).
    func createConnectionCommand(_ parameters: LECreateConnectionParameters) -> HCICommand {
        guard info.usesExtendedAdvertising else { return .leCreateConnection(parameters) }
        let block = LEExtendedInitiatingPHYParameters(scanInterval: parameters.scanInterval, scanWindow: parameters.scanWindow,
                                                      connection: parameters.connection)
        return .extended(.leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
            initiatorFilterPolicy: parameters.initiatorFilterPolicy, ownAddressType: parameters.ownAddressType,
            peerAddressType: parameters.peerAddressType, peerAddress: parameters.peerAddress, le1M: block,
            le2M: info.has2MPHY ? block : nil, leCoded: info.hasCodedPHY ? block : nil)))
    }

    /// A connection made from extended advertising starts on the PHY of its AUX_CONNECT_REQ, 2M or Coded too, and
    /// no LE PHY Update Complete says so (Vol 6 Part B §4.5.1): LE Read PHY (§7.8.47) learns it for ``LinkInfo``.
    func readPHYsOfExtendedConnection(_ handle: UInt16) {
        guard info.usesExtendedAdvertising, info.supportsCommand(octet: SupportedCommandBit.leReadPHY.octet,
                                                                bit: SupportedCommandBit.leReadPHY.bit) else { return }
        command(.leReadPHY(handle: handle)) { [self] result in
            guard case .success(.leReadPHY(.success, let answered, let tx, let rx)) = result, answered == handle else { return }
            connections[handle]?.phys = (tx, rx)
        }
    }
}
