public import BluetoothCore

/// The local version as HCI_Read_Local_Version_Information returns it (Core 5.4 Vol 4 Part E §7.4.1) and as the
/// Read Remote Version Information Complete event carries part of it.
public struct HCILocalVersionInformation: Hashable, Sendable, Codable {
    /// HCI version (Assigned Numbers "Core Specification Versions": 0x0D = 5.4).
    public var hciVersion: UInt8
    public var hciSubversion: UInt16
    public var lmpVersion: UInt8
    public var companyIdentifier: CompanyIdentifier
    public var lmpSubversion: UInt16

    public init(hciVersion: UInt8, hciSubversion: UInt16, lmpVersion: UInt8,
                companyIdentifier: CompanyIdentifier, lmpSubversion: UInt16) {
        self.hciVersion = hciVersion
        self.hciSubversion = hciSubversion
        self.lmpVersion = lmpVersion
        self.companyIdentifier = companyIdentifier
        self.lmpSubversion = lmpSubversion
    }

    /// The Core Specification version the HCI version number names ("Bluetooth Core 5.4"), else "version 0xNN"
    /// (Assigned Numbers §2.1).
    public var hciVersionName: String {
        Self.versionNames[hciVersion] ?? "version 0x\(String(hciVersion, radix: 16, uppercase: true))"
    }

    static let versionNames: [UInt8: String] = [
        0x00: "Bluetooth Core 1.0b", 0x01: "Bluetooth Core 1.1", 0x02: "Bluetooth Core 1.2",
        0x03: "Bluetooth Core 2.0 + EDR", 0x04: "Bluetooth Core 2.1 + EDR", 0x05: "Bluetooth Core 3.0 + HS",
        0x06: "Bluetooth Core 4.0", 0x07: "Bluetooth Core 4.1", 0x08: "Bluetooth Core 4.2",
        0x09: "Bluetooth Core 5.0", 0x0A: "Bluetooth Core 5.1", 0x0B: "Bluetooth Core 5.2",
        0x0C: "Bluetooth Core 5.3", 0x0D: "Bluetooth Core 5.4", 0x0E: "Bluetooth Core 6.0",
    ]
}

/// The Return_Parameters of a Command Complete event (Core 5.4 Vol 4 Part E §7.7.14), typed by the opcode of the
/// command they answer, per the command's definition in §7.
///
/// A controller may answer any command with only a non-success status (e.g. *Unknown HCI Command*): that decodes
/// as ``status(_:)``. Opcodes without a codec (or answered by Command Status) keep their bytes in ``raw(_:)``.
/// Fixed-size byte fields encode to their spec size (zero-padded or truncated).
public enum HCIReturnParameters: Hashable, Sendable {
    /// Commands whose only return parameter is Status (Reset, Set Event Mask, LE Set ...), or an error status.
    case status(HCIStatus)
    /// Status and Connection_Handle: LE Long Term Key Request (Negative) Reply, LE Remote Connection Parameter
    /// Request (Negative) Reply, LE Set Data Length.
    case statusAndHandle(status: HCIStatus, handle: UInt16)
    case readTransmitPowerLevel(status: HCIStatus, handle: UInt16, txPowerLevel: Int8)
    case readLocalVersionInformation(status: HCIStatus, version: HCILocalVersionInformation)
    /// The 64-octet Supported_Commands bit mask.
    case readLocalSupportedCommands(status: HCIStatus, commands: [UInt8])
    case readLocalSupportedFeatures(status: HCIStatus, features: UInt64)
    case readBufferSize(status: HCIStatus, aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8,
                        totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16)
    case readBDADDR(status: HCIStatus, address: BluetoothAddress)
    case readRSSI(status: HCIStatus, handle: UInt16, rssi: Int8)
    case leReadBufferSize(status: HCIStatus, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8)
    case leReadBufferSizeV2(status: HCIStatus, leACLDataPacketLength: UInt16, totalNumLEACLDataPackets: UInt8,
                            isoDataPacketLength: UInt16, totalNumISODataPackets: UInt8)
    case leReadLocalSupportedFeatures(status: HCIStatus, features: UInt64)
    case leReadAdvertisingPhysicalChannelTxPower(status: HCIStatus, txPowerLevel: Int8)
    case leReadFilterAcceptListSize(status: HCIStatus, size: UInt8)
    /// LE Read Resolving List Size (§7.8.41).
    case leReadResolvingListSize(status: HCIStatus, size: UInt8)
    /// LE Read Peer / Local Resolvable Address (§7.8.42, §7.8.43): a resolvable private address.
    case leReadPeerResolvableAddress(status: HCIStatus, address: BluetoothAddress)
    case leReadLocalResolvableAddress(status: HCIStatus, address: BluetoothAddress)
    /// The 16-octet Encrypted_Data, least significant octet first.
    case leEncrypt(status: HCIStatus, encryptedData: [UInt8])
    /// The 8-octet Random_Number as a little-endian integer.
    case leRand(status: HCIStatus, randomNumber: UInt64)
    case leReadSupportedStates(status: HCIStatus, states: UInt64)
    case leReadSuggestedDefaultDataLength(status: HCIStatus, txOctets: UInt16, txTime: UInt16)
    case leReadMaximumDataLength(status: HCIStatus, maxTxOctets: UInt16, maxTxTime: UInt16,
                                 maxRxOctets: UInt16, maxRxTime: UInt16)
    case leReadPHY(status: HCIStatus, handle: UInt16, txPHY: LEPhy, rxPHY: LEPhy)
    /// LE Set Extended Advertising Parameters (§7.8.53): the TX power the controller chose, in dBm.
    case leSetExtendedAdvertisingParameters(status: HCIStatus, selectedTxPower: Int8)
    /// LE Read Maximum Advertising Data Length (§7.8.57): the most advertising or scan response data one set takes.
    case leReadMaximumAdvertisingDataLength(status: HCIStatus, maximumLength: UInt16)
    /// LE Read Number of Supported Advertising Sets (§7.8.58).
    case leReadNumberOfSupportedAdvertisingSets(status: HCIStatus, count: UInt8)
    /// Return parameters of an opcode without a codec here.
    case raw([UInt8])

    /// The Status octet (the first return parameter of every command), if there is one.
    public var status: HCIStatus? {
        switch self {
        case .status(let s): s
        case .statusAndHandle(let s, _), .readTransmitPowerLevel(let s, _, _), .readLocalVersionInformation(let s, _),
             .readLocalSupportedCommands(let s, _), .readLocalSupportedFeatures(let s, _),
             .readBufferSize(let s, _, _, _, _), .readBDADDR(let s, _), .readRSSI(let s, _, _),
             .leReadBufferSize(let s, _, _), .leReadBufferSizeV2(let s, _, _, _, _),
             .leReadLocalSupportedFeatures(let s, _), .leReadAdvertisingPhysicalChannelTxPower(let s, _),
             .leReadFilterAcceptListSize(let s, _), .leEncrypt(let s, _), .leRand(let s, _),
             .leReadResolvingListSize(let s, _), .leReadPeerResolvableAddress(let s, _), .leReadLocalResolvableAddress(let s, _),
             .leReadSupportedStates(let s, _), .leReadSuggestedDefaultDataLength(let s, _, _),
             .leReadMaximumDataLength(let s, _, _, _, _), .leReadPHY(let s, _, _, _),
             .leSetExtendedAdvertisingParameters(let s, _), .leReadMaximumAdvertisingDataLength(let s, _),
             .leReadNumberOfSupportedAdvertisingSets(let s, _):
            s
        case .raw(let bytes): bytes.first.map { HCIStatus($0) }
        }
    }

    /// Decodes the return parameters of the command `opcode`. Offsets in errors are relative to `baseOffset`.
    public init(opcode: HCIOpcode, bytes: [UInt8], baseOffset: Int = 0) throws(DecodeError) {
        guard let info = HCICommand.table[opcode] else {
            self = .raw(bytes)
            return
        }
        var r = ByteReader(bytes, baseOffset: baseOffset)
        guard let expected = info.returnParametersLength else {
            // Answered by Command Status; a Command Complete here carries at most an error status.
            self = bytes.count == 1 ? .status(HCIStatus(bytes[0])) : .raw(bytes)
            return
        }
        let status = try r.hciReadStatus()
        if bytes.count == 1, expected == 1 || status != .success {
            self = .status(status)
            return
        }
        guard bytes.count == expected else {
            throw DecodeError(.invalidLength, at: baseOffset,
                              "\(info.name) returns \(expected) octets, not \(bytes.count)")
        }
        let ok = status == .success
        switch opcode {
        case .leLongTermKeyRequestReply, .leLongTermKeyRequestNegativeReply, .leRemoteConnectionParameterRequestReply,
             .leRemoteConnectionParameterRequestNegativeReply, .leSetDataLength:
            self = .statusAndHandle(status: status, handle: try r.hciReadHandle(validate: ok))
        case .readTransmitPowerLevel:
            self = .readTransmitPowerLevel(status: status, handle: try r.hciReadHandle(validate: ok),
                                           txPowerLevel: try r.readInt8("TX_Power_Level"))
        case .readLocalVersionInformation:
            self = .readLocalVersionInformation(status: status, version: HCILocalVersionInformation(
                hciVersion: try r.readUInt8("HCI_Version"), hciSubversion: try r.readUInt16("HCI_Subversion"),
                lmpVersion: try r.readUInt8("LMP_Version"),
                companyIdentifier: CompanyIdentifier(try r.readUInt16("Company_Identifier")),
                lmpSubversion: try r.readUInt16("LMP_Subversion")))
        case .readLocalSupportedCommands:
            self = .readLocalSupportedCommands(status: status, commands: try r.readBytes(64, "Supported_Commands"))
        case .readLocalSupportedFeatures:
            self = .readLocalSupportedFeatures(status: status, features: try r.readUInt64("LMP_Features"))
        case .readBufferSize:
            self = .readBufferSize(
                status: status, aclDataPacketLength: try r.readUInt16("ACL_Data_Packet_Length"),
                synchronousDataPacketLength: try r.readUInt8("Synchronous_Data_Packet_Length"),
                totalNumACLDataPackets: try r.readUInt16("Total_Num_ACL_Data_Packets"),
                totalNumSynchronousDataPackets: try r.readUInt16("Total_Num_Synchronous_Data_Packets"))
        case .readBDADDR:
            self = .readBDADDR(status: status, address: try r.hciReadAddress("BD_ADDR", type: .public))
        case .readRSSI:
            self = .readRSSI(status: status, handle: try r.hciReadHandle("Handle", validate: ok), rssi: try r.readInt8("RSSI"))
        case .leReadBufferSize:
            self = .leReadBufferSize(status: status, leACLDataPacketLength: try r.readUInt16("LE_ACL_Data_Packet_Length"),
                                     totalNumLEACLDataPackets: try r.readUInt8("Total_Num_LE_ACL_Data_Packets"))
        case .leReadBufferSizeV2:
            self = .leReadBufferSizeV2(
                status: status, leACLDataPacketLength: try r.readUInt16("LE_ACL_Data_Packet_Length"),
                totalNumLEACLDataPackets: try r.readUInt8("Total_Num_LE_ACL_Data_Packets"),
                isoDataPacketLength: try r.readUInt16("ISO_Data_Packet_Length"),
                totalNumISODataPackets: try r.readUInt8("Total_Num_ISO_Data_Packets"))
        case .leReadLocalSupportedFeatures:
            self = .leReadLocalSupportedFeatures(status: status, features: try r.readUInt64("LE_Features"))
        case .leReadAdvertisingPhysicalChannelTxPower:
            self = .leReadAdvertisingPhysicalChannelTxPower(status: status, txPowerLevel: try r.readInt8("TX_Power_Level"))
        case .leReadFilterAcceptListSize:
            self = .leReadFilterAcceptListSize(status: status, size: try r.readUInt8("Filter_Accept_List_Size"))
        case .leReadResolvingListSize:
            self = .leReadResolvingListSize(status: status, size: try r.readUInt8("Resolving_List_Size"))
        case .leReadPeerResolvableAddress:
            self = .leReadPeerResolvableAddress(status: status, address: try r.hciReadAddress("Peer_Resolvable_Address", type: .random))
        case .leReadLocalResolvableAddress:
            self = .leReadLocalResolvableAddress(status: status, address: try r.hciReadAddress("Local_Resolvable_Address", type: .random))
        case .leEncrypt:
            self = .leEncrypt(status: status, encryptedData: try r.readBytes(16, "Encrypted_Data"))
        case .leRand:
            self = .leRand(status: status, randomNumber: try r.readUInt64("Random_Number"))
        case .leReadSupportedStates:
            self = .leReadSupportedStates(status: status, states: try r.readUInt64("LE_States"))
        case .leReadSuggestedDefaultDataLength:
            self = .leReadSuggestedDefaultDataLength(status: status, txOctets: try r.readUInt16("Suggested_Max_TX_Octets"),
                                                     txTime: try r.readUInt16("Suggested_Max_TX_Time"))
        case .leReadMaximumDataLength:
            self = .leReadMaximumDataLength(
                status: status, maxTxOctets: try r.readUInt16("Supported_Max_TX_Octets"),
                maxTxTime: try r.readUInt16("Supported_Max_TX_Time"), maxRxOctets: try r.readUInt16("Supported_Max_RX_Octets"),
                maxRxTime: try r.readUInt16("Supported_Max_RX_Time"))
        case .leReadPHY:
            self = .leReadPHY(status: status, handle: try r.hciReadHandle(validate: ok),
                              txPHY: LEPhy(try r.readUInt8("TX_PHY")), rxPHY: LEPhy(try r.readUInt8("RX_PHY")))
        case .leSetExtendedAdvertisingParameters:
            self = .leSetExtendedAdvertisingParameters(status: status, selectedTxPower: try r.readInt8("Selected_TX_Power"))
        case .leReadMaximumAdvertisingDataLength:
            self = .leReadMaximumAdvertisingDataLength(status: status,
                                                       maximumLength: try r.readUInt16("Max_Advertising_Data_Length"))
        case .leReadNumberOfSupportedAdvertisingSets:
            self = .leReadNumberOfSupportedAdvertisingSets(status: status,
                                                           count: try r.readUInt8("Num_Supported_Advertising_Sets"))
        default:
            // Every other table command returns Status only (expected == 1, handled above).
            self = .raw(bytes)
        }
        try r.expectEnd("\(info.name) return parameters")
    }

    /// The return parameter octets.
    public func encode() -> [UInt8] {
        var w = ByteWriter()
        switch self {
        case .status(let s):
            w.write(s.rawValue)
        case .statusAndHandle(let s, let handle):
            w.write(s.rawValue)
            w.hciWriteHandle(handle)
        case .readTransmitPowerLevel(let s, let handle, let level):
            w.write(s.rawValue)
            w.hciWriteHandle(handle)
            w.write(level)
        case .readLocalVersionInformation(let s, let v):
            w.write(s.rawValue)
            w.write(v.hciVersion)
            w.write(v.hciSubversion)
            w.write(v.lmpVersion)
            w.write(v.companyIdentifier.rawValue)
            w.write(v.lmpSubversion)
        case .readLocalSupportedCommands(let s, let commands):
            w.write(s.rawValue)
            w.hciWriteFixed(commands, count: 64)
        case .readLocalSupportedFeatures(let s, let features), .leReadLocalSupportedFeatures(let s, let features),
             .leReadSupportedStates(let s, let features), .leRand(let s, let features):
            w.write(s.rawValue)
            w.write(features)
        case .readBufferSize(let s, let aclLength, let syncLength, let aclCount, let syncCount):
            w.write(s.rawValue)
            w.write(aclLength)
            w.write(syncLength)
            w.write(aclCount)
            w.write(syncCount)
        case .readBDADDR(let s, let address):
            w.write(s.rawValue)
            w.hciWrite(address)
        case .readRSSI(let s, let handle, let rssi):
            w.write(s.rawValue)
            w.hciWriteHandle(handle)
            w.write(rssi)
        case .leReadBufferSize(let s, let length, let count):
            w.write(s.rawValue)
            w.write(length)
            w.write(count)
        case .leReadBufferSizeV2(let s, let length, let count, let isoLength, let isoCount):
            w.write(s.rawValue)
            w.write(length)
            w.write(count)
            w.write(isoLength)
            w.write(isoCount)
        case .leReadAdvertisingPhysicalChannelTxPower(let s, let level):
            w.write(s.rawValue)
            w.write(level)
        case .leReadFilterAcceptListSize(let s, let size), .leReadResolvingListSize(let s, let size):
            w.write(s.rawValue)
            w.write(size)
        case .leReadPeerResolvableAddress(let s, let address), .leReadLocalResolvableAddress(let s, let address):
            w.write(s.rawValue)
            w.hciWrite(address)
        case .leEncrypt(let s, let data):
            w.write(s.rawValue)
            w.hciWriteFixed(data, count: 16)
        case .leReadSuggestedDefaultDataLength(let s, let octets, let time):
            w.write(s.rawValue)
            w.write(octets)
            w.write(time)
        case .leReadMaximumDataLength(let s, let txOctets, let txTime, let rxOctets, let rxTime):
            w.write(s.rawValue)
            for value in [txOctets, txTime, rxOctets, rxTime] { w.write(value) }
        case .leReadPHY(let s, let handle, let tx, let rx):
            w.write(s.rawValue)
            w.hciWriteHandle(handle)
            w.write(tx.rawValue)
            w.write(rx.rawValue)
        case .leSetExtendedAdvertisingParameters(let s, let power):
            w.write(s.rawValue)
            w.write(power)
        case .leReadMaximumAdvertisingDataLength(let s, let length):
            w.write(s.rawValue)
            w.write(length)
        case .leReadNumberOfSupportedAdvertisingSets(let s, let count):
            w.write(s.rawValue)
            w.write(count)
        case .raw(let bytes):
            w.write(bytes)
        }
        return w.bytes
    }

    private typealias F = HCIFieldText

    /// The return parameters as fields with spec names (children of a Command Complete dissection).
    public var fields: [Dissection] {
        switch self {
        case .status(let s): return [F.status(s)]
        case .statusAndHandle(let s, let handle): return [F.status(s), F.handle(handle)]
        case .readTransmitPowerLevel(let s, let handle, let level):
            return [F.status(s), F.handle(handle), F.dbm("TX_Power_Level", level)]
        case .readLocalVersionInformation(let s, let v):
            return [
                F.status(s),
                F.named("HCI_Version", v.hciVersion, HCILocalVersionInformation.versionNames),
                F.hex16("HCI_Subversion", v.hciSubversion),
                F.named("LMP_Version", v.lmpVersion, HCILocalVersionInformation.versionNames),
                F.code("Company_Identifier", v.companyIdentifier),
                F.hex16("LMP_Subversion", v.lmpSubversion),
            ]
        case .readLocalSupportedCommands(let s, let commands):
            return [F.status(s), F.bytes("Supported_Commands", commands)]
        case .readLocalSupportedFeatures(let s, let features):
            return [F.status(s), F.hex64("LMP_Features", features)]
        case .readBufferSize(let s, let aclLength, let syncLength, let aclCount, let syncCount):
            return [F.status(s), F.decimal("ACL_Data_Packet_Length", aclLength),
                    F.decimal("Synchronous_Data_Packet_Length", syncLength),
                    F.decimal("Total_Num_ACL_Data_Packets", aclCount),
                    F.decimal("Total_Num_Synchronous_Data_Packets", syncCount)]
        case .readBDADDR(let s, let address): return [F.status(s), Dissection("BD_ADDR", address.string)]
        case .readRSSI(let s, let handle, let rssi):
            return [F.status(s), F.handle(handle, "Handle"), F.dbm("RSSI", rssi)]
        case .leReadBufferSize(let s, let length, let count):
            return [F.status(s), F.decimal("LE_ACL_Data_Packet_Length", length),
                    F.decimal("Total_Num_LE_ACL_Data_Packets", count)]
        case .leReadBufferSizeV2(let s, let length, let count, let isoLength, let isoCount):
            return [F.status(s), F.decimal("LE_ACL_Data_Packet_Length", length),
                    F.decimal("Total_Num_LE_ACL_Data_Packets", count), F.decimal("ISO_Data_Packet_Length", isoLength),
                    F.decimal("Total_Num_ISO_Data_Packets", isoCount)]
        case .leReadLocalSupportedFeatures(let s, let features):
            return [F.status(s), F.hex64("LE_Features", features)]
        case .leReadAdvertisingPhysicalChannelTxPower(let s, let level):
            return [F.status(s), F.dbm("TX_Power_Level", level)]
        case .leReadFilterAcceptListSize(let s, let size):
            return [F.status(s), F.decimal("Filter_Accept_List_Size", size)]
        case .leReadResolvingListSize(let s, let size):
            return [F.status(s), F.decimal("Resolving_List_Size", size)]
        case .leReadPeerResolvableAddress(let s, let address):
            return [F.status(s), Dissection("Peer_Resolvable_Address", address.string)]
        case .leReadLocalResolvableAddress(let s, let address):
            return [F.status(s), Dissection("Local_Resolvable_Address", address.string)]
        case .leEncrypt(let s, let data): return [F.status(s), F.bytes("Encrypted_Data", data)]
        case .leRand(let s, let random): return [F.status(s), F.hex64("Random_Number", random)]
        case .leReadSupportedStates(let s, let states): return [F.status(s), F.hex64("LE_States", states)]
        case .leReadSuggestedDefaultDataLength(let s, let octets, let time):
            return [F.status(s), F.octets("Suggested_Max_TX_Octets", octets), F.txTime("Suggested_Max_TX_Time", time)]
        case .leReadMaximumDataLength(let s, let txOctets, let txTime, let rxOctets, let rxTime):
            return [F.status(s), F.octets("Supported_Max_TX_Octets", txOctets), F.txTime("Supported_Max_TX_Time", txTime),
                    F.octets("Supported_Max_RX_Octets", rxOctets), F.txTime("Supported_Max_RX_Time", rxTime)]
        case .leReadPHY(let s, let handle, let tx, let rx):
            return [F.status(s), F.handle(handle), F.code("TX_PHY", tx), F.code("RX_PHY", rx)]
        case .leSetExtendedAdvertisingParameters(let s, let power):
            return [F.status(s), F.dbm("Selected_TX_Power", power)]
        case .leReadMaximumAdvertisingDataLength(let s, let length):
            return [F.status(s), F.octets("Max_Advertising_Data_Length", length)]
        case .leReadNumberOfSupportedAdvertisingSets(let s, let count):
            return [F.status(s), F.decimal("Num_Supported_Advertising_Sets", count)]
        case .raw(let bytes):
            return bytes.isEmpty ? [] : [F.bytes("Return_Parameters", bytes)]
        }
    }
}
