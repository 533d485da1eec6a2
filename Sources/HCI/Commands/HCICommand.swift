public import BluetoothCore

/// An HCI command packet (Core 5.4 Vol 4 Part E §5.4.1): `Opcode (2, LE) | Parameter_Total_Length (1) | parameters`,
/// without the H4 packet indicator. The host encodes these; the virtual controller decodes them.
///
/// Known opcodes (see ``table``) decode into typed cases with the exact parameter length the spec (§7) fixes;
/// anything else becomes ``unknown(opcode:parameters:)``. The Bluetooth 5 extended advertising, scanning and
/// initiating commands decode into ``extended(_:)`` (``HCIExtendedCommand``). Fixed-size byte
/// fields (keys, coordinates) always encode to their spec size (zero-padded or truncated); advertising data encodes
/// to at most 31 octets. Keys and coordinates are kept in HCI order (least significant octet first), as on the wire.
public enum HCICommand: Hashable, Sendable {
    // Link Control (§7.1)
    case disconnect(handle: UInt16, reason: HCIStatus)
    case readRemoteVersionInformation(handle: UInt16)
    // Controller & Baseband (§7.3)
    case setEventMask(UInt64)
    case reset
    /// Type 0x00: current, 0x01: maximum.
    case readTransmitPowerLevel(handle: UInt16, type: UInt8)
    /// 0x00 off, 0x01 ACL on, 0x02 synchronous on, 0x03 both.
    case setControllerToHostFlowControl(UInt8)
    case hostBufferSize(HostBufferSize)
    case setEventMaskPage2(UInt64)
    case writeLEHostSupport(leSupportedHost: UInt8, unused: UInt8)
    // Informational (§7.4)
    case readLocalVersionInformation
    case readLocalSupportedCommands
    case readLocalSupportedFeatures
    case readBufferSize
    case readBDADDR
    // Status parameters (§7.5)
    case readRSSI(handle: UInt16)
    // LE Controller (§7.8)
    case leSetEventMask(UInt64)
    case leReadBufferSize
    case leReadBufferSizeV2
    case leReadLocalSupportedFeatures
    case leSetRandomAddress(BluetoothAddress)
    case leSetAdvertisingParameters(LEAdvertisingParameters)
    case leReadAdvertisingPhysicalChannelTxPower
    /// The significant advertising data (AD structures), at most 31 octets; the dissector decodes the AD.
    case leSetAdvertisingData([UInt8])
    /// The significant scan response data, at most 31 octets.
    case leSetScanResponseData([UInt8])
    case leSetAdvertisingEnable(Bool)
    case leSetScanParameters(LEScanParameters)
    case leSetScanEnable(enable: Bool, filterDuplicates: Bool)
    case leCreateConnection(LECreateConnectionParameters)
    case leCreateConnectionCancel
    case leReadFilterAcceptListSize
    case leClearFilterAcceptList
    case leAddDeviceToFilterAcceptList(addressType: LEAddressType, address: BluetoothAddress)
    case leRemoveDeviceFromFilterAcceptList(addressType: LEAddressType, address: BluetoothAddress)
    case leConnectionUpdate(handle: UInt16, parameters: LEConnectionParameters)
    case leReadRemoteFeatures(handle: UInt16)
    /// Key and plaintext, 16 octets each, least significant octet first.
    case leEncrypt(key: [UInt8], plaintext: [UInt8])
    case leRand
    /// HCI_LE_Enable_Encryption (LE Start Encryption): Random_Number, EDIV and a 16-octet LTK.
    case leEnableEncryption(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16, longTermKey: [UInt8])
    case leLongTermKeyRequestReply(handle: UInt16, longTermKey: [UInt8])
    case leLongTermKeyRequestNegativeReply(handle: UInt16)
    case leReadSupportedStates
    case leRemoteConnectionParameterRequestReply(handle: UInt16, parameters: LEConnectionParameters)
    case leRemoteConnectionParameterRequestNegativeReply(handle: UInt16, reason: HCIStatus)
    case leSetDataLength(handle: UInt16, txOctets: UInt16, txTime: UInt16)
    case leReadSuggestedDefaultDataLength
    case leWriteSuggestedDefaultDataLength(txOctets: UInt16, txTime: UInt16)
    case leReadLocalP256PublicKey
    /// The remote public key's X and Y coordinates, 32 octets each, least significant octet first.
    case leGenerateDHKey(x: [UInt8], y: [UInt8])
    case leAddDeviceToResolvingList(LEResolvingListEntry)
    case leRemoveDeviceFromResolvingList(addressType: LEAddressType, address: BluetoothAddress)
    case leClearResolvingList
    /// §7.8.41.
    case leReadResolvingListSize
    /// §7.8.42: the RPA the controller last used for (or saw from) the peer of this identity.
    case leReadPeerResolvableAddress(addressType: LEAddressType, address: BluetoothAddress)
    /// §7.8.43: the RPA the controller uses towards the peer of this identity.
    case leReadLocalResolvableAddress(addressType: LEAddressType, address: BluetoothAddress)
    /// §7.8.77: 0x00 network privacy mode (the default), 0x01 device privacy mode (the peer's identity address is
    /// accepted too).
    case leSetPrivacyMode(addressType: LEAddressType, address: BluetoothAddress, mode: UInt8)
    case leSetAddressResolutionEnable(Bool)
    /// Seconds (0x0001...0x0E10).
    case leSetResolvablePrivateAddressTimeout(UInt16)
    case leReadMaximumDataLength
    case leReadPHY(handle: UInt16)
    case leSetDefaultPHY(allPHYs: UInt8, txPHYs: UInt8, rxPHYs: UInt8)
    case leSetPHY(handle: UInt16, allPHYs: UInt8, txPHYs: UInt8, rxPHYs: UInt8, phyOptions: UInt16)
    /// The Bluetooth 5 extended advertising, scanning and initiating commands (§7.8.52–§7.8.66).
    case extended(HCIExtendedCommand)
    /// A command this build has no codec for (or a vendor command), with its raw parameters.
    case unknown(opcode: HCIOpcode, parameters: [UInt8])

    /// The largest parameter block a command packet can carry.
    public static let maximumParameterLength = 255
    /// The largest advertising / scan response data of the legacy commands.
    public static let maximumAdvertisingDataLength = 31

    // MARK: Table

    /// What the spec says about one command: its name, its exact parameter length and the length of the return
    /// parameters of its Command Complete (nil for commands answered by Command Status).
    public struct Info: Hashable, Sendable {
        public let name: String
        /// The exact parameter length, or for a variable-length command the length of its fixed part (the least).
        public let parameterLength: Int
        public let returnParametersLength: Int?
        /// Whether the parameters are longer than ``parameterLength`` by a counted or bit-selected part (the
        /// extended advertising data, enable, scan parameters and create connection commands).
        public let isVariableLength: Bool

        init(name: String, parameterLength: Int, returnParametersLength: Int?, variableLength: Bool = false) {
            self.name = name
            self.parameterLength = parameterLength
            self.returnParametersLength = returnParametersLength
            isVariableLength = variableLength
        }

        /// Whether the controller answers with Command Status (the outcome follows in another event) rather than
        /// Command Complete.
        public var answeredByCommandStatus: Bool { returnParametersLength == nil }
    }

    /// Every command this build decodes, by opcode. Drives length validation in ``init(decoding:)`` and in
    /// Command Complete return parameter decoding.
    public static let table: [HCIOpcode: Info] = [
        .disconnect: Info(name: "Disconnect", parameterLength: 3, returnParametersLength: nil),
        .readRemoteVersionInformation: Info(name: "Read Remote Version Information", parameterLength: 2, returnParametersLength: nil),
        .setEventMask: Info(name: "Set Event Mask", parameterLength: 8, returnParametersLength: 1),
        .reset: Info(name: "Reset", parameterLength: 0, returnParametersLength: 1),
        .readTransmitPowerLevel: Info(name: "Read Transmit Power Level", parameterLength: 3, returnParametersLength: 4),
        .setControllerToHostFlowControl: Info(name: "Set Controller To Host Flow Control", parameterLength: 1, returnParametersLength: 1),
        .hostBufferSize: Info(name: "Host Buffer Size", parameterLength: 7, returnParametersLength: 1),
        .setEventMaskPage2: Info(name: "Set Event Mask Page 2", parameterLength: 8, returnParametersLength: 1),
        .writeLEHostSupport: Info(name: "Write LE Host Support", parameterLength: 2, returnParametersLength: 1),
        .readLocalVersionInformation: Info(name: "Read Local Version Information", parameterLength: 0, returnParametersLength: 9),
        .readLocalSupportedCommands: Info(name: "Read Local Supported Commands", parameterLength: 0, returnParametersLength: 65),
        .readLocalSupportedFeatures: Info(name: "Read Local Supported Features", parameterLength: 0, returnParametersLength: 9),
        .readBufferSize: Info(name: "Read Buffer Size", parameterLength: 0, returnParametersLength: 8),
        .readBDADDR: Info(name: "Read BD_ADDR", parameterLength: 0, returnParametersLength: 7),
        .readRSSI: Info(name: "Read RSSI", parameterLength: 2, returnParametersLength: 4),
        .leSetEventMask: Info(name: "LE Set Event Mask", parameterLength: 8, returnParametersLength: 1),
        .leReadBufferSize: Info(name: "LE Read Buffer Size", parameterLength: 0, returnParametersLength: 4),
        .leReadBufferSizeV2: Info(name: "LE Read Buffer Size [v2]", parameterLength: 0, returnParametersLength: 7),
        .leReadLocalSupportedFeatures: Info(name: "LE Read Local Supported Features", parameterLength: 0, returnParametersLength: 9),
        .leSetRandomAddress: Info(name: "LE Set Random Address", parameterLength: 6, returnParametersLength: 1),
        .leSetAdvertisingParameters: Info(name: "LE Set Advertising Parameters", parameterLength: 15, returnParametersLength: 1),
        .leReadAdvertisingPhysicalChannelTxPower: Info(name: "LE Read Advertising Physical Channel Tx Power", parameterLength: 0, returnParametersLength: 2),
        .leSetAdvertisingData: Info(name: "LE Set Advertising Data", parameterLength: 32, returnParametersLength: 1),
        .leSetScanResponseData: Info(name: "LE Set Scan Response Data", parameterLength: 32, returnParametersLength: 1),
        .leSetAdvertisingEnable: Info(name: "LE Set Advertising Enable", parameterLength: 1, returnParametersLength: 1),
        .leSetScanParameters: Info(name: "LE Set Scan Parameters", parameterLength: 7, returnParametersLength: 1),
        .leSetScanEnable: Info(name: "LE Set Scan Enable", parameterLength: 2, returnParametersLength: 1),
        .leCreateConnection: Info(name: "LE Create Connection", parameterLength: 25, returnParametersLength: nil),
        .leCreateConnectionCancel: Info(name: "LE Create Connection Cancel", parameterLength: 0, returnParametersLength: 1),
        .leReadFilterAcceptListSize: Info(name: "LE Read Filter Accept List Size", parameterLength: 0, returnParametersLength: 2),
        .leClearFilterAcceptList: Info(name: "LE Clear Filter Accept List", parameterLength: 0, returnParametersLength: 1),
        .leAddDeviceToFilterAcceptList: Info(name: "LE Add Device To Filter Accept List", parameterLength: 7, returnParametersLength: 1),
        .leRemoveDeviceFromFilterAcceptList: Info(name: "LE Remove Device From Filter Accept List", parameterLength: 7, returnParametersLength: 1),
        .leConnectionUpdate: Info(name: "LE Connection Update", parameterLength: 14, returnParametersLength: nil),
        .leReadRemoteFeatures: Info(name: "LE Read Remote Features", parameterLength: 2, returnParametersLength: nil),
        .leEncrypt: Info(name: "LE Encrypt", parameterLength: 32, returnParametersLength: 17),
        .leRand: Info(name: "LE Rand", parameterLength: 0, returnParametersLength: 9),
        .leEnableEncryption: Info(name: "LE Enable Encryption", parameterLength: 28, returnParametersLength: nil),
        .leLongTermKeyRequestReply: Info(name: "LE Long Term Key Request Reply", parameterLength: 18, returnParametersLength: 3),
        .leLongTermKeyRequestNegativeReply: Info(name: "LE Long Term Key Request Negative Reply", parameterLength: 2, returnParametersLength: 3),
        .leReadSupportedStates: Info(name: "LE Read Supported States", parameterLength: 0, returnParametersLength: 9),
        .leRemoteConnectionParameterRequestReply: Info(name: "LE Remote Connection Parameter Request Reply", parameterLength: 14, returnParametersLength: 3),
        .leRemoteConnectionParameterRequestNegativeReply: Info(name: "LE Remote Connection Parameter Request Negative Reply", parameterLength: 3, returnParametersLength: 3),
        .leSetDataLength: Info(name: "LE Set Data Length", parameterLength: 6, returnParametersLength: 3),
        .leReadSuggestedDefaultDataLength: Info(name: "LE Read Suggested Default Data Length", parameterLength: 0, returnParametersLength: 5),
        .leWriteSuggestedDefaultDataLength: Info(name: "LE Write Suggested Default Data Length", parameterLength: 4, returnParametersLength: 1),
        .leReadLocalP256PublicKey: Info(name: "LE Read Local P-256 Public Key", parameterLength: 0, returnParametersLength: nil),
        .leGenerateDHKey: Info(name: "LE Generate DHKey", parameterLength: 64, returnParametersLength: nil),
        .leAddDeviceToResolvingList: Info(name: "LE Add Device To Resolving List", parameterLength: 39, returnParametersLength: 1),
        .leRemoveDeviceFromResolvingList: Info(name: "LE Remove Device From Resolving List", parameterLength: 7, returnParametersLength: 1),
        .leClearResolvingList: Info(name: "LE Clear Resolving List", parameterLength: 0, returnParametersLength: 1),
        .leReadResolvingListSize: Info(name: "LE Read Resolving List Size", parameterLength: 0, returnParametersLength: 2),
        .leReadPeerResolvableAddress: Info(name: "LE Read Peer Resolvable Address", parameterLength: 7, returnParametersLength: 7),
        .leReadLocalResolvableAddress: Info(name: "LE Read Local Resolvable Address", parameterLength: 7, returnParametersLength: 7),
        .leSetPrivacyMode: Info(name: "LE Set Privacy Mode", parameterLength: 8, returnParametersLength: 1),
        .leSetAddressResolutionEnable: Info(name: "LE Set Address Resolution Enable", parameterLength: 1, returnParametersLength: 1),
        .leSetResolvablePrivateAddressTimeout: Info(name: "LE Set Resolvable Private Address Timeout", parameterLength: 2, returnParametersLength: 1),
        .leReadMaximumDataLength: Info(name: "LE Read Maximum Data Length", parameterLength: 0, returnParametersLength: 9),
        .leReadPHY: Info(name: "LE Read PHY", parameterLength: 2, returnParametersLength: 5),
        .leSetDefaultPHY: Info(name: "LE Set Default PHY", parameterLength: 3, returnParametersLength: 1),
        .leSetPHY: Info(name: "LE Set PHY", parameterLength: 7, returnParametersLength: nil),
        // Extended advertising, scanning and initiating (see HCIExtendedCommand).
        .leSetAdvertisingSetRandomAddress: Info(name: "LE Set Advertising Set Random Address", parameterLength: 7, returnParametersLength: 1),
        .leSetExtendedAdvertisingParameters: Info(name: "LE Set Extended Advertising Parameters", parameterLength: 25, returnParametersLength: 2),
        .leSetExtendedAdvertisingData: Info(name: "LE Set Extended Advertising Data", parameterLength: 4, returnParametersLength: 1, variableLength: true),
        .leSetExtendedScanResponseData: Info(name: "LE Set Extended Scan Response Data", parameterLength: 4, returnParametersLength: 1, variableLength: true),
        .leSetExtendedAdvertisingEnable: Info(name: "LE Set Extended Advertising Enable", parameterLength: 2, returnParametersLength: 1, variableLength: true),
        .leReadMaximumAdvertisingDataLength: Info(name: "LE Read Maximum Advertising Data Length", parameterLength: 0, returnParametersLength: 3),
        .leReadNumberOfSupportedAdvertisingSets: Info(name: "LE Read Number of Supported Advertising Sets", parameterLength: 0, returnParametersLength: 2),
        .leRemoveAdvertisingSet: Info(name: "LE Remove Advertising Set", parameterLength: 1, returnParametersLength: 1),
        .leClearAdvertisingSets: Info(name: "LE Clear Advertising Sets", parameterLength: 0, returnParametersLength: 1),
        .leSetExtendedScanParameters: Info(name: "LE Set Extended Scan Parameters", parameterLength: 3, returnParametersLength: 1, variableLength: true),
        .leSetExtendedScanEnable: Info(name: "LE Set Extended Scan Enable", parameterLength: 6, returnParametersLength: 1),
        .leExtendedCreateConnection: Info(name: "LE Extended Create Connection", parameterLength: 10, returnParametersLength: nil, variableLength: true),
    ]

    static let opcodeNames: [UInt16: String] = {
        var names: [UInt16: String] = [0x0000: "No Operation"]
        for (opcode, info) in table { names[opcode.rawValue] = info.name }
        return names
    }()

    // MARK: Decoding

    /// Decodes a whole command packet: opcode, parameter length and parameters. The length octet must match the
    /// bytes that follow, and a known command must have exactly its spec parameter length.
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
        try reader.expectEnd("HCI command packet")
    }

    /// Reads one command packet from `reader` (the reader may hold more packets after it).
    public init(from reader: inout ByteReader) throws(DecodeError) {
        let opcode = HCIOpcode(try reader.readUInt16("Opcode"))
        let length = Int(try reader.readUInt8("Parameter_Total_Length"))
        guard reader.remaining >= length else {
            throw reader.error(.truncated, "Parameter_Total_Length says \(length) octets, \(reader.remaining) remain")
        }
        var parameters = try reader.readSubReader(length, "parameters")
        try self.init(opcode: opcode, parameters: &parameters)
    }

    /// Decodes the parameters of a command whose opcode is already known.
    public init(opcode: HCIOpcode, parameters: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(parameters, baseOffset: 3)
        try self.init(opcode: opcode, parameters: &reader)
    }

    private init(opcode: HCIOpcode, parameters reader: inout ByteReader) throws(DecodeError) {
        guard let info = Self.table[opcode] else {
            self = .unknown(opcode: opcode, parameters: reader.readRemaining())
            return
        }
        if info.isVariableLength {
            guard reader.remaining >= info.parameterLength else {
                throw reader.error(.invalidLength,
                                   "\(info.name) takes at least \(info.parameterLength) parameter octets, not \(reader.remaining)")
            }
        } else {
            guard reader.remaining == info.parameterLength else {
                throw reader.error(.invalidLength,
                                   "\(info.name) takes \(info.parameterLength) parameter octets, not \(reader.remaining)")
            }
        }
        if HCIExtendedCommand.opcodes.contains(opcode) {
            self = .extended(try HCIExtendedCommand(opcode: opcode, reading: &reader))
            try reader.expectEnd(info.name)
            return
        }
        self = try Self.decodeKnown(opcode, &reader)
        try reader.expectEnd(info.name)
    }

    private static func readEnable(_ reader: inout ByteReader, _ field: String) throws(DecodeError) -> Bool {
        let start = reader.offset
        switch try reader.readUInt8(field) {
        case 0x00: return false
        case 0x01: return true
        case let other: throw DecodeError(.invalidValue, at: start, "\(field) must be 0x00 or 0x01, not \(Dissection.hex8(other))")
        }
    }

    private static func readAdvertisingData(_ reader: inout ByteReader) throws(DecodeError) -> [UInt8] {
        let start = reader.offset
        let length = Int(try reader.readUInt8("Advertising_Data_Length"))
        guard length <= maximumAdvertisingDataLength else {
            throw DecodeError(.invalidLength, at: start, "Advertising_Data_Length \(length) exceeds 31")
        }
        let padded = try reader.readBytes(maximumAdvertisingDataLength, "Advertising_Data")
        return Array(padded.prefix(length))
    }

    private static func readTypedAddress(_ reader: inout ByteReader, _ typeField: String, _ field: String)
        throws(DecodeError) -> (LEAddressType, BluetoothAddress)
    {
        let type = try reader.hciReadAddressType(typeField)
        return (type, try reader.hciReadAddress(field, type: type))
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private static func decodeKnown(_ opcode: HCIOpcode, _ r: inout ByteReader) throws(DecodeError) -> HCICommand {
        switch opcode {
        case .disconnect:
            return .disconnect(handle: try r.hciReadHandle(), reason: HCIStatus(try r.readUInt8("Reason")))
        case .readRemoteVersionInformation: return .readRemoteVersionInformation(handle: try r.hciReadHandle())
        case .setEventMask: return .setEventMask(try r.readUInt64("Event_Mask"))
        case .reset: return .reset
        case .readTransmitPowerLevel:
            return .readTransmitPowerLevel(handle: try r.hciReadHandle(), type: try r.readUInt8("Type"))
        case .setControllerToHostFlowControl: return .setControllerToHostFlowControl(try r.readUInt8("Flow_Control_Enable"))
        case .hostBufferSize:
            return .hostBufferSize(HostBufferSize(
                aclDataPacketLength: try r.readUInt16("Host_ACL_Data_Packet_Length"),
                synchronousDataPacketLength: try r.readUInt8("Host_Synchronous_Data_Packet_Length"),
                totalNumACLDataPackets: try r.readUInt16("Host_Total_Num_ACL_Data_Packets"),
                totalNumSynchronousDataPackets: try r.readUInt16("Host_Total_Num_Synchronous_Data_Packets")))
        case .setEventMaskPage2: return .setEventMaskPage2(try r.readUInt64("Event_Mask_Page_2"))
        case .writeLEHostSupport:
            return .writeLEHostSupport(leSupportedHost: try r.readUInt8("LE_Supported_Host"), unused: try r.readUInt8("Unused"))
        case .readLocalVersionInformation: return .readLocalVersionInformation
        case .readLocalSupportedCommands: return .readLocalSupportedCommands
        case .readLocalSupportedFeatures: return .readLocalSupportedFeatures
        case .readBufferSize: return .readBufferSize
        case .readBDADDR: return .readBDADDR
        case .readRSSI: return .readRSSI(handle: try r.hciReadHandle("Handle"))
        case .leSetEventMask: return .leSetEventMask(try r.readUInt64("LE_Event_Mask"))
        case .leReadBufferSize: return .leReadBufferSize
        case .leReadBufferSizeV2: return .leReadBufferSizeV2
        case .leReadLocalSupportedFeatures: return .leReadLocalSupportedFeatures
        case .leSetRandomAddress: return .leSetRandomAddress(try r.hciReadAddress("Random_Address", type: .random))
        case .leSetAdvertisingParameters:
            let intervalMin = try r.readUInt16("Advertising_Interval_Min")
            let intervalMax = try r.readUInt16("Advertising_Interval_Max")
            let type = LEAdvertisingType(try r.readUInt8("Advertising_Type"))
            let own = try r.hciReadAddressType("Own_Address_Type")
            let (peerType, peer) = try readTypedAddress(&r, "Peer_Address_Type", "Peer_Address")
            return .leSetAdvertisingParameters(LEAdvertisingParameters(
                intervalMin: intervalMin, intervalMax: intervalMax, advertisingType: type, ownAddressType: own,
                peerAddressType: peerType, peerAddress: peer,
                channelMap: try r.readUInt8("Advertising_Channel_Map"),
                filterPolicy: try r.readUInt8("Advertising_Filter_Policy")))
        case .leReadAdvertisingPhysicalChannelTxPower: return .leReadAdvertisingPhysicalChannelTxPower
        case .leSetAdvertisingData: return .leSetAdvertisingData(try readAdvertisingData(&r))
        case .leSetScanResponseData: return .leSetScanResponseData(try readAdvertisingData(&r))
        case .leSetAdvertisingEnable: return .leSetAdvertisingEnable(try readEnable(&r, "Advertising_Enable"))
        case .leSetScanParameters:
            return .leSetScanParameters(LEScanParameters(
                scanType: try r.readUInt8("LE_Scan_Type"), interval: try r.readUInt16("LE_Scan_Interval"),
                window: try r.readUInt16("LE_Scan_Window"), ownAddressType: try r.hciReadAddressType("Own_Address_Type"),
                filterPolicy: try r.readUInt8("Scanning_Filter_Policy")))
        case .leSetScanEnable:
            return .leSetScanEnable(enable: try readEnable(&r, "LE_Scan_Enable"),
                                    filterDuplicates: try readEnable(&r, "Filter_Duplicates"))
        case .leCreateConnection:
            let interval = try r.readUInt16("LE_Scan_Interval")
            let window = try r.readUInt16("LE_Scan_Window")
            let policy = try r.readUInt8("Initiator_Filter_Policy")
            let (peerType, peer) = try readTypedAddress(&r, "Peer_Address_Type", "Peer_Address")
            return .leCreateConnection(LECreateConnectionParameters(
                scanInterval: interval, scanWindow: window, initiatorFilterPolicy: policy,
                peerAddressType: peerType, peerAddress: peer, ownAddressType: try r.hciReadAddressType("Own_Address_Type"),
                connection: try LEConnectionParameters(from: &r)))
        case .leCreateConnectionCancel: return .leCreateConnectionCancel
        case .leReadFilterAcceptListSize: return .leReadFilterAcceptListSize
        case .leClearFilterAcceptList: return .leClearFilterAcceptList
        case .leAddDeviceToFilterAcceptList:
            let (type, address) = try readTypedAddress(&r, "Address_Type", "Address")
            return .leAddDeviceToFilterAcceptList(addressType: type, address: address)
        case .leRemoveDeviceFromFilterAcceptList:
            let (type, address) = try readTypedAddress(&r, "Address_Type", "Address")
            return .leRemoveDeviceFromFilterAcceptList(addressType: type, address: address)
        case .leConnectionUpdate:
            return .leConnectionUpdate(handle: try r.hciReadHandle(), parameters: try LEConnectionParameters(from: &r))
        case .leReadRemoteFeatures: return .leReadRemoteFeatures(handle: try r.hciReadHandle())
        case .leEncrypt: return .leEncrypt(key: try r.readBytes(16, "Key"), plaintext: try r.readBytes(16, "Plaintext_Data"))
        case .leRand: return .leRand
        case .leEnableEncryption:
            return .leEnableEncryption(
                handle: try r.hciReadHandle(), randomNumber: try r.readUInt64("Random_Number"),
                encryptedDiversifier: try r.readUInt16("Encrypted_Diversifier"),
                longTermKey: try r.readBytes(16, "Long_Term_Key"))
        case .leLongTermKeyRequestReply:
            return .leLongTermKeyRequestReply(handle: try r.hciReadHandle(), longTermKey: try r.readBytes(16, "Long_Term_Key"))
        case .leLongTermKeyRequestNegativeReply: return .leLongTermKeyRequestNegativeReply(handle: try r.hciReadHandle())
        case .leReadSupportedStates: return .leReadSupportedStates
        case .leRemoteConnectionParameterRequestReply:
            return .leRemoteConnectionParameterRequestReply(handle: try r.hciReadHandle(),
                                                            parameters: try LEConnectionParameters(from: &r))
        case .leRemoteConnectionParameterRequestNegativeReply:
            return .leRemoteConnectionParameterRequestNegativeReply(handle: try r.hciReadHandle(),
                                                                    reason: HCIStatus(try r.readUInt8("Reason")))
        case .leSetDataLength:
            return .leSetDataLength(handle: try r.hciReadHandle(), txOctets: try r.readUInt16("TX_Octets"),
                                    txTime: try r.readUInt16("TX_Time"))
        case .leReadSuggestedDefaultDataLength: return .leReadSuggestedDefaultDataLength
        case .leWriteSuggestedDefaultDataLength:
            return .leWriteSuggestedDefaultDataLength(txOctets: try r.readUInt16("Suggested_Max_TX_Octets"),
                                                      txTime: try r.readUInt16("Suggested_Max_TX_Time"))
        case .leReadLocalP256PublicKey: return .leReadLocalP256PublicKey
        case .leGenerateDHKey:
            return .leGenerateDHKey(x: try r.readBytes(32, "Key_X_Coordinate"), y: try r.readBytes(32, "Key_Y_Coordinate"))
        case .leAddDeviceToResolvingList:
            let (type, address) = try readTypedAddress(&r, "Peer_Identity_Address_Type", "Peer_Identity_Address")
            return .leAddDeviceToResolvingList(LEResolvingListEntry(
                peerIdentityAddressType: type, peerIdentityAddress: address,
                peerIRK: try r.readBytes(16, "Peer_IRK"), localIRK: try r.readBytes(16, "Local_IRK")))
        case .leRemoveDeviceFromResolvingList:
            let (type, address) = try readTypedAddress(&r, "Peer_Identity_Address_Type", "Peer_Identity_Address")
            return .leRemoveDeviceFromResolvingList(addressType: type, address: address)
        case .leClearResolvingList: return .leClearResolvingList
        case .leReadResolvingListSize: return .leReadResolvingListSize
        case .leReadPeerResolvableAddress:
            let (type, address) = try readTypedAddress(&r, "Peer_Identity_Address_Type", "Peer_Identity_Address")
            return .leReadPeerResolvableAddress(addressType: type, address: address)
        case .leReadLocalResolvableAddress:
            let (type, address) = try readTypedAddress(&r, "Peer_Identity_Address_Type", "Peer_Identity_Address")
            return .leReadLocalResolvableAddress(addressType: type, address: address)
        case .leSetPrivacyMode:
            let (type, address) = try readTypedAddress(&r, "Peer_Identity_Address_Type", "Peer_Identity_Address")
            return .leSetPrivacyMode(addressType: type, address: address, mode: try r.readUInt8("Privacy_Mode"))
        case .leSetAddressResolutionEnable:
            return .leSetAddressResolutionEnable(try readEnable(&r, "Address_Resolution_Enable"))
        case .leSetResolvablePrivateAddressTimeout:
            return .leSetResolvablePrivateAddressTimeout(try r.readUInt16("RPA_Timeout"))
        case .leReadMaximumDataLength: return .leReadMaximumDataLength
        case .leReadPHY: return .leReadPHY(handle: try r.hciReadHandle())
        case .leSetDefaultPHY:
            return .leSetDefaultPHY(allPHYs: try r.readUInt8("All_PHYs"), txPHYs: try r.readUInt8("TX_PHYs"),
                                    rxPHYs: try r.readUInt8("RX_PHYs"))
        case .leSetPHY:
            return .leSetPHY(handle: try r.hciReadHandle(), allPHYs: try r.readUInt8("All_PHYs"),
                             txPHYs: try r.readUInt8("TX_PHYs"), rxPHYs: try r.readUInt8("RX_PHYs"),
                             phyOptions: try r.readUInt16("PHY_Options"))
        default:
            return .unknown(opcode: opcode, parameters: r.readRemaining())
        }
    }
}
