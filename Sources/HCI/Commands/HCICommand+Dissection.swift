public import BluetoothCore

extension HCICommand: Dissectable {
    /// "LE Set Advertising Parameters" with Opcode, Parameter_Total_Length and every parameter by its spec name.
    public var dissection: Dissection {
        let parameters = self.parameters
        let header = [
            Dissection("Opcode", "\(opcode.description) OGF \(Dissection.hex8(opcode.ogf)) OCF \(Dissection.hex16(opcode.ocf))"),
            Dissection("Parameter_Total_Length", "\(parameters.count)"),
        ]
        return Dissection(name, nil, header + fields)
    }

    private typealias F = HCIFieldText

    static let ownAddressTypeNames: [UInt8: String] = [
        0x00: "Public Device Address", 0x01: "Random Device Address",
        0x02: "Resolvable Private Address or public", 0x03: "Resolvable Private Address or random",
    ]
    static let advertisingFilterPolicyNames: [UInt8: String] = [
        0x00: "Process scan and connection requests from all devices",
        0x01: "Connection requests from all, scan requests from Filter Accept List only",
        0x02: "Scan requests from all, connection requests from Filter Accept List only",
        0x03: "Scan and connection requests from Filter Accept List only",
    ]
    static let scanningFilterPolicyNames: [UInt8: String] = [
        0x00: "Basic unfiltered", 0x01: "Basic filtered", 0x02: "Extended unfiltered", 0x03: "Extended filtered",
    ]

    static func channelMap(_ value: UInt8, _ label: String = "Advertising_Channel_Map") -> Dissection {
        let channels = [(0x01, "37"), (0x02, "38"), (0x04, "39")].filter { value & UInt8($0.0) != 0 }.map(\.1)
        return Dissection(label,
                          "\(Dissection.hex8(value)) (channels \(channels.isEmpty ? "none" : channels.joined(separator: ", ")))")
    }

    static func typedAddress(_ typeLabel: String, _ type: LEAddressType, _ label: String,
                                     _ address: BluetoothAddress) -> [Dissection] {
        [F.code(typeLabel, type), Dissection(label, address.string)]
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private var fields: [Dissection] {
        switch self {
        case .disconnect(let handle, let reason):
            return [F.handle(handle), F.status(reason, "Reason")]
        case .readRemoteVersionInformation(let handle), .leReadRemoteFeatures(let handle),
             .leLongTermKeyRequestNegativeReply(let handle), .leReadPHY(let handle):
            return [F.handle(handle)]
        case .readRSSI(let handle):
            return [F.handle(handle, "Handle")]
        case .setEventMask(let mask): return [F.hex64("Event_Mask", mask)]
        case .setEventMaskPage2(let mask): return [F.hex64("Event_Mask_Page_2", mask)]
        case .leSetEventMask(let mask): return [F.hex64("LE_Event_Mask", mask)]
        case .reset, .readLocalVersionInformation, .readLocalSupportedCommands, .readLocalSupportedFeatures,
             .readBufferSize, .readBDADDR, .leReadBufferSize, .leReadBufferSizeV2, .leReadLocalSupportedFeatures,
             .leReadAdvertisingPhysicalChannelTxPower, .leCreateConnectionCancel, .leReadFilterAcceptListSize,
             .leClearFilterAcceptList, .leRand, .leReadSupportedStates, .leReadSuggestedDefaultDataLength,
             .leReadLocalP256PublicKey, .leClearResolvingList, .leReadMaximumDataLength, .leReadResolvingListSize:
            return []
        case .readTransmitPowerLevel(let handle, let type):
            return [F.handle(handle), F.named("Type", type, [0x00: "Current", 0x01: "Maximum"])]
        case .setControllerToHostFlowControl(let value):
            return [F.named("Flow_Control_Enable", value, [0x00: "Off", 0x01: "ACL on, synchronous off",
                                                           0x02: "ACL off, synchronous on", 0x03: "ACL and synchronous on"])]
        case .hostBufferSize(let size):
            return [
                F.decimal("Host_ACL_Data_Packet_Length", size.aclDataPacketLength),
                F.decimal("Host_Synchronous_Data_Packet_Length", size.synchronousDataPacketLength),
                F.decimal("Host_Total_Num_ACL_Data_Packets", size.totalNumACLDataPackets),
                F.decimal("Host_Total_Num_Synchronous_Data_Packets", size.totalNumSynchronousDataPackets),
            ]
        case .writeLEHostSupport(let supported, let unused):
            return [F.enable("LE_Supported_Host", supported), F.hex8("Unused", unused)]
        case .leSetRandomAddress(let address):
            return [Dissection("Random_Address", address.description)]
        case .leSetAdvertisingParameters(let p):
            return [
                F.advertisingInterval("Advertising_Interval_Min", p.intervalMin),
                F.advertisingInterval("Advertising_Interval_Max", p.intervalMax),
                F.code("Advertising_Type", p.advertisingType),
                F.named("Own_Address_Type", p.ownAddressType.rawValue, Self.ownAddressTypeNames),
            ] + Self.typedAddress("Peer_Address_Type", p.peerAddressType, "Peer_Address", p.peerAddress) + [
                Self.channelMap(p.channelMap),
                F.named("Advertising_Filter_Policy", p.filterPolicy, Self.advertisingFilterPolicyNames),
            ]
        case .leSetAdvertisingData(let data):
            return [F.decimal("Advertising_Data_Length", data.count), F.bytes("Advertising_Data", data)]
        case .leSetScanResponseData(let data):
            return [F.decimal("Scan_Response_Data_Length", data.count), F.bytes("Scan_Response_Data", data)]
        case .leSetAdvertisingEnable(let enable):
            return [F.enable("Advertising_Enable", enable ? 1 : 0)]
        case .leSetScanParameters(let p):
            return [
                F.named("LE_Scan_Type", p.scanType, [0x00: "Passive", 0x01: "Active"]),
                F.advertisingInterval("LE_Scan_Interval", p.interval),
                F.advertisingInterval("LE_Scan_Window", p.window),
                F.named("Own_Address_Type", p.ownAddressType.rawValue, Self.ownAddressTypeNames),
                F.named("Scanning_Filter_Policy", p.filterPolicy, Self.scanningFilterPolicyNames),
            ]
        case .leSetScanEnable(let enable, let filterDuplicates):
            return [F.enable("LE_Scan_Enable", enable ? 1 : 0), F.enable("Filter_Duplicates", filterDuplicates ? 1 : 0)]
        case .leCreateConnection(let p):
            return [
                F.advertisingInterval("LE_Scan_Interval", p.scanInterval),
                F.advertisingInterval("LE_Scan_Window", p.scanWindow),
                F.named("Initiator_Filter_Policy", p.initiatorFilterPolicy,
                        [0x00: "Use Peer_Address", 0x01: "Use the Filter Accept List"]),
            ] + Self.typedAddress("Peer_Address_Type", p.peerAddressType, "Peer_Address", p.peerAddress) + [
                F.named("Own_Address_Type", p.ownAddressType.rawValue, Self.ownAddressTypeNames),
            ] + p.connection.fields
        case .leAddDeviceToFilterAcceptList(let type, let address),
             .leRemoveDeviceFromFilterAcceptList(let type, let address):
            return Self.typedAddress("Address_Type", type, "Address", address)
        case .leRemoveDeviceFromResolvingList(let type, let address),
             .leReadPeerResolvableAddress(let type, let address), .leReadLocalResolvableAddress(let type, let address):
            return Self.typedAddress("Peer_Identity_Address_Type", type, "Peer_Identity_Address", address)
        case .leSetPrivacyMode(let type, let address, let mode):
            return Self.typedAddress("Peer_Identity_Address_Type", type, "Peer_Identity_Address", address)
                + [F.named("Privacy_Mode", mode, [0x00: "Network privacy mode", 0x01: "Device privacy mode"])]
        case .leConnectionUpdate(let handle, let parameters),
             .leRemoteConnectionParameterRequestReply(let handle, let parameters):
            return [F.handle(handle)] + parameters.fields
        case .leEncrypt(let key, let plaintext):
            return [F.bytes("Key", key), F.bytes("Plaintext_Data", plaintext)]
        case .leEnableEncryption(let handle, let random, let ediv, let ltk):
            return [F.handle(handle), F.hex64("Random_Number", random), F.hex16("Encrypted_Diversifier", ediv),
                    F.bytes("Long_Term_Key", ltk)]
        case .leLongTermKeyRequestReply(let handle, let ltk):
            return [F.handle(handle), F.bytes("Long_Term_Key", ltk)]
        case .leRemoteConnectionParameterRequestNegativeReply(let handle, let reason):
            return [F.handle(handle), F.status(reason, "Reason")]
        case .leSetDataLength(let handle, let octets, let time):
            return [F.handle(handle), F.octets("TX_Octets", octets), F.txTime("TX_Time", time)]
        case .leWriteSuggestedDefaultDataLength(let octets, let time):
            return [F.octets("Suggested_Max_TX_Octets", octets), F.txTime("Suggested_Max_TX_Time", time)]
        case .leGenerateDHKey(let x, let y):
            return [F.bytes("Key_X_Coordinate", x), F.bytes("Key_Y_Coordinate", y)]
        case .leAddDeviceToResolvingList(let entry):
            return Self.typedAddress("Peer_Identity_Address_Type", entry.peerIdentityAddressType,
                                     "Peer_Identity_Address", entry.peerIdentityAddress)
                + [F.bytes("Peer_IRK", entry.peerIRK), F.bytes("Local_IRK", entry.localIRK)]
        case .leSetAddressResolutionEnable(let enable):
            return [F.enable("Address_Resolution_Enable", enable ? 1 : 0)]
        case .leSetResolvablePrivateAddressTimeout(let timeout):
            return [Dissection("RPA_Timeout", "\(Dissection.hex16(timeout)) (\(timeout) s)")]
        case .leSetDefaultPHY(let all, let tx, let rx):
            return [F.hex8("All_PHYs", all), F.phyMask("TX_PHYs", tx), F.phyMask("RX_PHYs", rx)]
        case .leSetPHY(let handle, let all, let tx, let rx, let options):
            return [F.handle(handle), F.hex8("All_PHYs", all), F.phyMask("TX_PHYs", tx), F.phyMask("RX_PHYs", rx),
                    F.named("PHY_Options", UInt8(truncatingIfNeeded: options),
                            [0x00: "No preferred coding", 0x01: "Prefers S=2", 0x02: "Prefers S=8"])]
        case .extended(let command):
            return command.fields
        case .unknown(_, let parameters):
            return [F.bytes("Parameters", parameters)]
        }
    }
}

extension HCIExtendedCommand: Dissectable {
    /// The command's dissection, as ``HCICommand/dissection`` shows it.
    public var dissection: Dissection { HCICommand.extended(self).dissection }

    private typealias F = HCIFieldText

    private static func enable(_ label: String, _ value: Bool) -> Dissection { F.enable(label, value ? 1 : 0) }

    private static func data(_ d: LEExtendedAdvertisingData, _ field: String) -> [Dissection] {
        [
            F.hex8("Advertising_Handle", d.advertisingHandle),
            F.code("Operation", d.operation),
            F.named("Fragment_Preference", d.fragmentPreference,
                    [0x00: "The controller may fragment", 0x01: "The controller should not fragment"]),
            F.decimal("\(field)_Length", min(d.data.count, LEExtendedAdvertisingData.maximumFragmentLength)),
            F.bytes(field, Array(d.data.prefix(LEExtendedAdvertisingData.maximumFragmentLength))),
        ]
    }

    private static let phyBitNames: [UInt8: String] = [0x01: "LE 1M", 0x02: "LE 2M", 0x04: "LE Coded"]

    // swiftlint:disable:next function_body_length
    var fields: [Dissection] {
        switch self {
        case .leSetAdvertisingSetRandomAddress(let handle, let address):
            return [F.hex8("Advertising_Handle", handle), F.address("Random_Address", address)]
        case .leSetExtendedAdvertisingParameters(let p):
            return [
                F.hex8("Advertising_Handle", p.advertisingHandle),
                Dissection("Advertising_Event_Properties", p.eventProperties.description),
                F.interval24("Primary_Advertising_Interval_Min", p.primaryIntervalMin),
                F.interval24("Primary_Advertising_Interval_Max", p.primaryIntervalMax),
                HCICommand.channelMap(p.primaryChannelMap, "Primary_Advertising_Channel_Map"),
                F.named("Own_Address_Type", p.ownAddressType.rawValue, HCICommand.ownAddressTypeNames),
            ] + HCICommand.typedAddress("Peer_Address_Type", p.peerAddressType, "Peer_Address", p.peerAddress) + [
                F.named("Advertising_Filter_Policy", p.filterPolicy, HCICommand.advertisingFilterPolicyNames),
                Dissection("Advertising_TX_Power", p.txPower == LEExtendedAdvertisingParameters.noTxPowerPreference
                    ? "127 (no preference)" : "\(p.txPower) dBm"),
                F.code("Primary_Advertising_PHY", p.primaryPHY),
                F.decimal("Secondary_Advertising_Max_Skip", p.secondaryMaxSkip),
                F.code("Secondary_Advertising_PHY", p.secondaryPHY),
                F.hex8("Advertising_SID", p.sid),
                Self.enable("Scan_Request_Notification_Enable", p.scanRequestNotificationEnable),
            ]
        case .leSetExtendedAdvertisingData(let d):
            return Self.data(d, "Advertising_Data")
        case .leSetExtendedScanResponseData(let d):
            return Self.data(d, "Scan_Response_Data")
        case .leSetExtendedAdvertisingEnable(let enable, let sets):
            let sets = sets.prefix(Self.maximumNumberOfSets)
            return [Self.enable("Enable", enable), F.decimal("Num_Sets", sets.count)] + sets.enumerated().map { index, set in
                Dissection("Set[\(index)]", nil, [
                    F.hex8("Advertising_Handle", set.advertisingHandle),
                    Dissection("Duration", set.duration == 0 ? "0x0000 (until disabled)"
                        : "\(Dissection.hex16(set.duration)) (\(Int(set.duration) * 10) ms)"),
                    Dissection("Max_Extended_Advertising_Events", set.maxExtendedAdvertisingEvents == 0
                        ? "0 (no maximum)" : "\(set.maxExtendedAdvertisingEvents)"),
                ])
            }
        case .leReadMaximumAdvertisingDataLength, .leReadNumberOfSupportedAdvertisingSets, .leClearAdvertisingSets:
            return []
        case .leRemoveAdvertisingSet(let handle):
            return [F.hex8("Advertising_Handle", handle)]
        case .leSetExtendedScanParameters(let p):
            return [
                F.named("Own_Address_Type", p.ownAddressType.rawValue, HCICommand.ownAddressTypeNames),
                F.named("Scanning_Filter_Policy", p.filterPolicy, HCICommand.scanningFilterPolicyNames),
                F.phyMask("Scanning_PHYs", p.scanningPHYs),
            ] + p.blocks.map { bit, block in
                Dissection(Self.phyBitNames[bit] ?? Dissection.hex8(bit), nil, [
                    F.named("Scan_Type", block.scanType, [0x00: "Passive", 0x01: "Active"]),
                    F.advertisingInterval("Scan_Interval", block.interval),
                    F.advertisingInterval("Scan_Window", block.window),
                ])
            }
        case .leSetExtendedScanEnable(let enable, let filterDuplicates, let duration, let period):
            return [
                Self.enable("Enable", enable),
                F.named("Filter_Duplicates", filterDuplicates,
                        [0x00: "Disabled", 0x01: "Enabled", 0x02: "Enabled, reset for each scan period"]),
                Dissection("Duration", duration == 0 ? "0x0000 (until disabled)"
                    : "\(Dissection.hex16(duration)) (\(Int(duration) * 10) ms)"),
                Dissection("Period", period == 0 ? "0x0000 (continuous)"
                    : "\(Dissection.hex16(period)) (\(Int(period) * 1280) ms)"),
            ]
        case .leExtendedCreateConnection(let p):
            return [
                F.named("Initiator_Filter_Policy", p.initiatorFilterPolicy,
                        [0x00: "Use Peer_Address", 0x01: "Use the Filter Accept List"]),
                F.named("Own_Address_Type", p.ownAddressType.rawValue, HCICommand.ownAddressTypeNames),
            ] + HCICommand.typedAddress("Peer_Address_Type", p.peerAddressType, "Peer_Address", p.peerAddress) + [
                F.phyMask("Initiating_PHYs", p.initiatingPHYs),
            ] + p.blocks.map { bit, block in
                Dissection(Self.phyBitNames[bit] ?? Dissection.hex8(bit), nil, [
                    F.advertisingInterval("Scan_Interval", block.scanInterval),
                    F.advertisingInterval("Scan_Window", block.scanWindow),
                ] + block.connection.fields)
            }
        }
    }
}
