public import BluetoothCore

/// The Bluetooth 5 extended advertising, extended scanning and extended connection creation commands
/// (Core 5.4 Vol 4 Part E §7.8.52–§7.8.60, §7.8.64–§7.8.66), typed.
///
/// They are listed in ``HCICommand/table`` (names, lengths, return parameters); ``HCICommand`` decodes them into
/// ``HCICommand/extended(_:)``.
public enum HCIExtendedCommand: Hashable, Sendable {
    /// §7.8.52: the random address of an advertising set.
    case leSetAdvertisingSetRandomAddress(advertisingHandle: UInt8, address: BluetoothAddress)
    /// §7.8.53 [v1].
    case leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters)
    /// §7.8.54.
    case leSetExtendedAdvertisingData(LEExtendedAdvertisingData)
    /// §7.8.55.
    case leSetExtendedScanResponseData(LEExtendedAdvertisingData)
    /// §7.8.56: at most 63 sets (more are dropped when encoding); no sets with `enable == false` disables all.
    case leSetExtendedAdvertisingEnable(enable: Bool, sets: [LEExtendedAdvertisingSet])
    /// §7.8.57.
    case leReadMaximumAdvertisingDataLength
    /// §7.8.58.
    case leReadNumberOfSupportedAdvertisingSets
    /// §7.8.59.
    case leRemoveAdvertisingSet(advertisingHandle: UInt8)
    /// §7.8.60.
    case leClearAdvertisingSets
    /// §7.8.64.
    case leSetExtendedScanParameters(LEExtendedScanParameters)
    /// §7.8.65: Filter_Duplicates 0x00 off, 0x01 on, 0x02 on and reset each period; duration in 10 ms units
    /// (0: until disabled), period in 1.28 s units (0: continuous).
    case leSetExtendedScanEnable(enable: Bool, filterDuplicates: UInt8, duration: UInt16, period: UInt16)
    /// §7.8.66 [v1], answered by Command Status.
    case leExtendedCreateConnection(LEExtendedCreateConnectionParameters)

    /// The largest Num_Sets of LE Set Extended Advertising Enable.
    public static let maximumNumberOfSets = 63

    /// The opcodes of these commands.
    public static let opcodes: Set<HCIOpcode> = [
        .leSetAdvertisingSetRandomAddress, .leSetExtendedAdvertisingParameters, .leSetExtendedAdvertisingData,
        .leSetExtendedScanResponseData, .leSetExtendedAdvertisingEnable, .leReadMaximumAdvertisingDataLength,
        .leReadNumberOfSupportedAdvertisingSets, .leRemoveAdvertisingSet, .leClearAdvertisingSets,
        .leSetExtendedScanParameters, .leSetExtendedScanEnable, .leExtendedCreateConnection,
    ]

    public var opcode: HCIOpcode {
        switch self {
        case .leSetAdvertisingSetRandomAddress: .leSetAdvertisingSetRandomAddress
        case .leSetExtendedAdvertisingParameters: .leSetExtendedAdvertisingParameters
        case .leSetExtendedAdvertisingData: .leSetExtendedAdvertisingData
        case .leSetExtendedScanResponseData: .leSetExtendedScanResponseData
        case .leSetExtendedAdvertisingEnable: .leSetExtendedAdvertisingEnable
        case .leReadMaximumAdvertisingDataLength: .leReadMaximumAdvertisingDataLength
        case .leReadNumberOfSupportedAdvertisingSets: .leReadNumberOfSupportedAdvertisingSets
        case .leRemoveAdvertisingSet: .leRemoveAdvertisingSet
        case .leClearAdvertisingSets: .leClearAdvertisingSets
        case .leSetExtendedScanParameters: .leSetExtendedScanParameters
        case .leSetExtendedScanEnable: .leSetExtendedScanEnable
        case .leExtendedCreateConnection: .leExtendedCreateConnection
        }
    }

    /// The spec name, from ``HCICommand/table``.
    public var name: String { HCICommand.table[opcode]?.name ?? opcode.description }

    /// The command packet, as ``HCICommand/encode()`` writes it.
    public func encode() -> [UInt8] { HCICommand.extended(self).encode() }

    // MARK: Encoding

    /// The parameter block (without opcode and length).
    public var parameters: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .leSetAdvertisingSetRandomAddress(let handle, let address):
            w.write(handle)
            w.hciWrite(address)
        case .leSetExtendedAdvertisingParameters(let p):
            w.write(p.advertisingHandle)
            w.write(p.eventProperties.rawValue)
            w.writeUInt24(p.primaryIntervalMin)
            w.writeUInt24(p.primaryIntervalMax)
            w.write(p.primaryChannelMap)
            w.write(p.ownAddressType.rawValue)
            w.write(p.peerAddressType.rawValue)
            w.hciWrite(p.peerAddress)
            w.write(p.filterPolicy)
            w.write(p.txPower)
            w.write(p.primaryPHY.rawValue)
            w.write(p.secondaryMaxSkip)
            w.write(p.secondaryPHY.rawValue)
            w.write(p.sid)
            w.write(UInt8(p.scanRequestNotificationEnable ? 1 : 0))
        case .leSetExtendedAdvertisingData(let d), .leSetExtendedScanResponseData(let d):
            let data = d.data.prefix(LEExtendedAdvertisingData.maximumFragmentLength)
            w.write(d.advertisingHandle)
            w.write(d.operation.rawValue)
            w.write(d.fragmentPreference)
            w.write(UInt8(data.count))
            w.write(data)
        case .leSetExtendedAdvertisingEnable(let enable, let sets):
            let sets = sets.prefix(Self.maximumNumberOfSets)
            w.write(UInt8(enable ? 1 : 0))
            w.write(UInt8(sets.count))
            for set in sets {
                w.write(set.advertisingHandle)
                w.write(set.duration)
                w.write(set.maxExtendedAdvertisingEvents)
            }
        case .leReadMaximumAdvertisingDataLength, .leReadNumberOfSupportedAdvertisingSets, .leClearAdvertisingSets:
            break
        case .leRemoveAdvertisingSet(let handle):
            w.write(handle)
        case .leSetExtendedScanParameters(let p):
            w.write(p.ownAddressType.rawValue)
            w.write(p.filterPolicy)
            w.write(p.scanningPHYs)
            for (_, block) in p.blocks {
                w.write(block.scanType)
                w.write(block.interval)
                w.write(block.window)
            }
        case .leSetExtendedScanEnable(let enable, let filterDuplicates, let duration, let period):
            w.write(UInt8(enable ? 1 : 0))
            w.write(filterDuplicates)
            w.write(duration)
            w.write(period)
        case .leExtendedCreateConnection(let p):
            w.write(p.initiatorFilterPolicy)
            w.write(p.ownAddressType.rawValue)
            w.write(p.peerAddressType.rawValue)
            w.hciWrite(p.peerAddress)
            w.write(p.initiatingPHYs)
            for (_, block) in p.blocks {
                w.write(block.scanInterval)
                w.write(block.scanWindow)
                block.connection.encode(into: &w)
            }
        }
        return w.bytes
    }

    // MARK: Decoding

    /// Decodes the parameters of the extended command `opcode`; they must be exactly the command's parameters.
    /// Opcodes that are not in ``opcodes`` throw ``DecodeError/Code/unknownType``.
    public init(opcode: HCIOpcode, parameters: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(parameters, baseOffset: 3)
        try self.init(opcode: opcode, reading: &reader)
        try reader.expectEnd(HCICommand.table[opcode]?.name ?? "command")
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    init(opcode: HCIOpcode, reading r: inout ByteReader) throws(DecodeError) {
        switch opcode {
        case .leSetAdvertisingSetRandomAddress:
            self = .leSetAdvertisingSetRandomAddress(advertisingHandle: try r.readUInt8("Advertising_Handle"),
                                                     address: try r.hciReadAddress("Random_Address", type: .random))
        case .leSetExtendedAdvertisingParameters:
            let handle = try r.readUInt8("Advertising_Handle")
            let properties = LEAdvertisingEventProperties(rawValue: try r.readUInt16("Advertising_Event_Properties"))
            let intervalMin = try r.readUInt24("Primary_Advertising_Interval_Min")
            let intervalMax = try r.readUInt24("Primary_Advertising_Interval_Max")
            let channelMap = try r.readUInt8("Primary_Advertising_Channel_Map")
            let own = try r.hciReadAddressType("Own_Address_Type")
            let peerType = try r.hciReadAddressType("Peer_Address_Type")
            let peer = try r.hciReadAddress("Peer_Address", type: peerType)
            self = .leSetExtendedAdvertisingParameters(LEExtendedAdvertisingParameters(
                advertisingHandle: handle, eventProperties: properties, primaryIntervalMin: intervalMin,
                primaryIntervalMax: intervalMax, primaryChannelMap: channelMap, ownAddressType: own,
                peerAddressType: peerType, peerAddress: peer, filterPolicy: try r.readUInt8("Advertising_Filter_Policy"),
                txPower: try r.readInt8("Advertising_TX_Power"), primaryPHY: LEPhy(try r.readUInt8("Primary_Advertising_PHY")),
                secondaryMaxSkip: try r.readUInt8("Secondary_Advertising_Max_Skip"),
                secondaryPHY: LEPhy(try r.readUInt8("Secondary_Advertising_PHY")),
                sid: try r.readUInt8("Advertising_SID"),
                scanRequestNotificationEnable: try Self.readEnable(&r, "Scan_Request_Notification_Enable")))
        case .leSetExtendedAdvertisingData:
            self = .leSetExtendedAdvertisingData(try Self.readData(&r, "Advertising_Data"))
        case .leSetExtendedScanResponseData:
            self = .leSetExtendedScanResponseData(try Self.readData(&r, "Scan_Response_Data"))
        case .leSetExtendedAdvertisingEnable:
            let enable = try Self.readEnable(&r, "Enable")
            let start = r.offset
            let count = Int(try r.readUInt8("Num_Sets"))
            guard count <= Self.maximumNumberOfSets else {
                throw DecodeError(.invalidValue, at: start, "Num_Sets \(count) is above \(Self.maximumNumberOfSets)")
            }
            guard r.remaining == 4 * count else {
                throw DecodeError(.invalidLength, at: start, "Num_Sets \(count) needs \(4 * count) octets, \(r.remaining) follow")
            }
            var sets: [LEExtendedAdvertisingSet] = []
            sets.reserveCapacity(count)
            for _ in 0..<count {
                sets.append(LEExtendedAdvertisingSet(
                    advertisingHandle: try r.readUInt8("Advertising_Handle"), duration: try r.readUInt16("Duration"),
                    maxExtendedAdvertisingEvents: try r.readUInt8("Max_Extended_Advertising_Events")))
            }
            self = .leSetExtendedAdvertisingEnable(enable: enable, sets: sets)
        case .leReadMaximumAdvertisingDataLength: self = .leReadMaximumAdvertisingDataLength
        case .leReadNumberOfSupportedAdvertisingSets: self = .leReadNumberOfSupportedAdvertisingSets
        case .leRemoveAdvertisingSet: self = .leRemoveAdvertisingSet(advertisingHandle: try r.readUInt8("Advertising_Handle"))
        case .leClearAdvertisingSets: self = .leClearAdvertisingSets
        case .leSetExtendedScanParameters:
            let own = try r.hciReadAddressType("Own_Address_Type")
            let policy = try r.readUInt8("Scanning_Filter_Policy")
            let bits = try Self.readPHYs(&r, "Scanning_PHYs", allowed: 0x05, blockLength: 5)
            var blocks: [UInt8: LEExtendedScanPHYParameters] = [:]
            for bit in bits {
                blocks[bit] = LEExtendedScanPHYParameters(scanType: try r.readUInt8("Scan_Type"),
                                                          interval: try r.readUInt16("Scan_Interval"),
                                                          window: try r.readUInt16("Scan_Window"))
            }
            self = .leSetExtendedScanParameters(LEExtendedScanParameters(
                ownAddressType: own, filterPolicy: policy, le1M: blocks[0x01], leCoded: blocks[0x04]))
        case .leSetExtendedScanEnable:
            let enable = try Self.readEnable(&r, "Enable")
            let start = r.offset
            let filter = try r.readUInt8("Filter_Duplicates")
            guard filter <= 2 else {
                throw DecodeError(.invalidValue, at: start, "Filter_Duplicates must be 0x00...0x02, not \(Dissection.hex8(filter))")
            }
            self = .leSetExtendedScanEnable(enable: enable, filterDuplicates: filter, duration: try r.readUInt16("Duration"),
                                            period: try r.readUInt16("Period"))
        case .leExtendedCreateConnection:
            let policy = try r.readUInt8("Initiator_Filter_Policy")
            let own = try r.hciReadAddressType("Own_Address_Type")
            let peerType = try r.hciReadAddressType("Peer_Address_Type")
            let peer = try r.hciReadAddress("Peer_Address", type: peerType)
            let bits = try Self.readPHYs(&r, "Initiating_PHYs", allowed: 0x07, blockLength: 16)
            var blocks: [UInt8: LEExtendedInitiatingPHYParameters] = [:]
            for bit in bits {
                blocks[bit] = LEExtendedInitiatingPHYParameters(
                    scanInterval: try r.readUInt16("Scan_Interval"), scanWindow: try r.readUInt16("Scan_Window"),
                    connection: try LEConnectionParameters(from: &r))
            }
            self = .leExtendedCreateConnection(LEExtendedCreateConnectionParameters(
                initiatorFilterPolicy: policy, ownAddressType: own, peerAddressType: peerType, peerAddress: peer,
                le1M: blocks[0x01], le2M: blocks[0x02], leCoded: blocks[0x04]))
        default:
            throw r.error(.unknownType, "\(opcode) is not an extended advertising, scanning or initiating command")
        }
    }

    private static func readEnable(_ reader: inout ByteReader, _ field: String) throws(DecodeError) -> Bool {
        let start = reader.offset
        switch try reader.readUInt8(field) {
        case 0x00: return false
        case 0x01: return true
        case let other: throw DecodeError(.invalidValue, at: start, "\(field) must be 0x00 or 0x01, not \(Dissection.hex8(other))")
        }
    }

    /// Advertising_Handle, Operation, Fragment_Preference, then a length octet that must match the octets left.
    private static func readData(_ r: inout ByteReader, _ field: String) throws(DecodeError) -> LEExtendedAdvertisingData {
        let handle = try r.readUInt8("Advertising_Handle")
        let operation = LEAdvertisingDataOperation(try r.readUInt8("Operation"))
        let preference = try r.readUInt8("Fragment_Preference")
        let start = r.offset
        let length = Int(try r.readUInt8("\(field)_Length"))
        guard length <= LEExtendedAdvertisingData.maximumFragmentLength else {
            throw DecodeError(.invalidLength, at: start, "\(field)_Length \(length) exceeds 251")
        }
        guard r.remaining == length else {
            throw DecodeError(.invalidLength, at: start, "\(field)_Length says \(length) octets, \(r.remaining) follow")
        }
        return LEExtendedAdvertisingData(advertisingHandle: handle, operation: operation, fragmentPreference: preference,
                                         data: try r.readBytes(length, field))
    }

    /// Reads a PHY bit field, rejects reserved bits and checks that one block per bit follows exactly.
    private static func readPHYs(_ r: inout ByteReader, _ field: String, allowed: UInt8, blockLength: Int)
        throws(DecodeError) -> [UInt8]
    {
        let start = r.offset
        let phys = try r.readUInt8(field)
        guard phys & ~allowed == 0 else {
            throw DecodeError(.invalidValue, at: start, "\(field) \(Dissection.hex8(phys)) sets reserved bits")
        }
        let bits = [UInt8(0x01), 0x02, 0x04].filter { phys & $0 != 0 }
        guard r.remaining == bits.count * blockLength else {
            throw DecodeError(.invalidLength, at: start,
                              "\(field) \(Dissection.hex8(phys)) needs \(bits.count * blockLength) octets, \(r.remaining) follow")
        }
        return bits
    }
}

extension HCICommand {
    /// The extended advertising, scanning or initiating command this is, if it is one.
    public var extendedCommand: HCIExtendedCommand? {
        guard case .extended(let command) = self else { return nil }
        return command
    }
}
