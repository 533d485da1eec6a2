public import BluetoothCore

/// The parameters of HCI_LE_Set_Advertising_Parameters (Core 5.4 Vol 4 Part E §7.8.5). Intervals are in
/// 0.625 ms units.
public struct LEAdvertisingParameters: Hashable, Sendable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var advertisingType: LEAdvertisingType
    public var ownAddressType: LEAddressType
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    /// Bit 0: channel 37, bit 1: channel 38, bit 2: channel 39.
    public var channelMap: UInt8
    public var filterPolicy: UInt8

    public init(
        intervalMin: UInt16 = 0x0800, intervalMax: UInt16 = 0x0800, advertisingType: LEAdvertisingType = .connectableUndirected,
        ownAddressType: LEAddressType = .public, peerAddressType: LEAddressType = .public,
        peerAddress: BluetoothAddress = .zero, channelMap: UInt8 = 0x07, filterPolicy: UInt8 = 0x00
    ) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.advertisingType = advertisingType
        self.ownAddressType = ownAddressType
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.channelMap = channelMap
        self.filterPolicy = filterPolicy
    }
}

/// The parameters of HCI_LE_Set_Scan_Parameters (Core 5.4 Vol 4 Part E §7.8.10). Interval and window are in
/// 0.625 ms units.
public struct LEScanParameters: Hashable, Sendable {
    /// 0x00 passive, 0x01 active.
    public var scanType: UInt8
    public var interval: UInt16
    public var window: UInt16
    public var ownAddressType: LEAddressType
    public var filterPolicy: UInt8

    public init(scanType: UInt8 = 0x01, interval: UInt16 = 0x0010, window: UInt16 = 0x0010,
                ownAddressType: LEAddressType = .public, filterPolicy: UInt8 = 0x00) {
        self.scanType = scanType
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
    }
}

/// Connection parameters as HCI_LE_Connection_Update and HCI_LE_Remote_Connection_Parameter_Request_Reply carry
/// them (Core 5.4 Vol 4 Part E §7.8.18, §7.8.31): intervals in 1.25 ms, timeout in 10 ms, CE lengths in 0.625 ms.
public struct LEConnectionParameters: Hashable, Sendable, Codable {
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var maxLatency: UInt16
    public var supervisionTimeout: UInt16
    public var minCELength: UInt16
    public var maxCELength: UInt16

    public init(intervalMin: UInt16 = 0x0018, intervalMax: UInt16 = 0x0028, maxLatency: UInt16 = 0,
                supervisionTimeout: UInt16 = 0x01F4, minCELength: UInt16 = 0, maxCELength: UInt16 = 0) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.maxLatency = maxLatency
        self.supervisionTimeout = supervisionTimeout
        self.minCELength = minCELength
        self.maxCELength = maxCELength
    }

    init(from reader: inout ByteReader) throws(DecodeError) {
        intervalMin = try reader.readUInt16("Connection_Interval_Min")
        intervalMax = try reader.readUInt16("Connection_Interval_Max")
        maxLatency = try reader.readUInt16("Max_Latency")
        supervisionTimeout = try reader.readUInt16("Supervision_Timeout")
        minCELength = try reader.readUInt16("Min_CE_Length")
        maxCELength = try reader.readUInt16("Max_CE_Length")
    }

    func encode(into writer: inout ByteWriter) {
        for value in [intervalMin, intervalMax, maxLatency, supervisionTimeout, minCELength, maxCELength] {
            writer.write(value)
        }
    }

    var fields: [Dissection] {
        [
            HCIFieldText.connectionInterval("Connection_Interval_Min", intervalMin),
            HCIFieldText.connectionInterval("Connection_Interval_Max", intervalMax),
            HCIFieldText.latency("Max_Latency", maxLatency),
            HCIFieldText.supervisionTimeout("Supervision_Timeout", supervisionTimeout),
            HCIFieldText.advertisingInterval("Min_CE_Length", minCELength),
            HCIFieldText.advertisingInterval("Max_CE_Length", maxCELength),
        ]
    }
}

/// The parameters of HCI_LE_Create_Connection (Core 5.4 Vol 4 Part E §7.8.12).
public struct LECreateConnectionParameters: Hashable, Sendable {
    /// 0.625 ms units.
    public var scanInterval: UInt16
    /// 0.625 ms units.
    public var scanWindow: UInt16
    /// 0x00: use the peer address; 0x01: use the Filter Accept List.
    public var initiatorFilterPolicy: UInt8
    public var peerAddressType: LEAddressType
    public var peerAddress: BluetoothAddress
    public var ownAddressType: LEAddressType
    public var connection: LEConnectionParameters

    public init(scanInterval: UInt16 = 0x0060, scanWindow: UInt16 = 0x0060, initiatorFilterPolicy: UInt8 = 0,
                peerAddressType: LEAddressType, peerAddress: BluetoothAddress, ownAddressType: LEAddressType = .public,
                connection: LEConnectionParameters = LEConnectionParameters()) {
        self.scanInterval = scanInterval
        self.scanWindow = scanWindow
        self.initiatorFilterPolicy = initiatorFilterPolicy
        self.peerAddressType = peerAddressType
        self.peerAddress = peerAddress
        self.ownAddressType = ownAddressType
        self.connection = connection
    }

    /// Connects to `peer`, with its address type taken from the address.
    public init(peer: BluetoothAddress, ownAddressType: LEAddressType = .public,
                connection: LEConnectionParameters = LEConnectionParameters()) {
        self.init(peerAddressType: LEAddressType(peer.type), peerAddress: peer, ownAddressType: ownAddressType,
                  connection: connection)
    }
}

/// The parameters of HCI_Host_Buffer_Size (Core 5.4 Vol 4 Part E §7.3.39).
public struct HostBufferSize: Hashable, Sendable {
    public var aclDataPacketLength: UInt16
    public var synchronousDataPacketLength: UInt8
    public var totalNumACLDataPackets: UInt16
    public var totalNumSynchronousDataPackets: UInt16

    public init(aclDataPacketLength: UInt16, synchronousDataPacketLength: UInt8 = 0,
                totalNumACLDataPackets: UInt16, totalNumSynchronousDataPackets: UInt16 = 0) {
        self.aclDataPacketLength = aclDataPacketLength
        self.synchronousDataPacketLength = synchronousDataPacketLength
        self.totalNumACLDataPackets = totalNumACLDataPackets
        self.totalNumSynchronousDataPackets = totalNumSynchronousDataPackets
    }
}

/// The parameters of HCI_LE_Add_Device_To_Resolving_List (Core 5.4 Vol 4 Part E §7.8.38). IRKs are in HCI
/// (least significant octet first) order and always encode as 16 octets.
public struct LEResolvingListEntry: Hashable, Sendable {
    public var peerIdentityAddressType: LEAddressType
    public var peerIdentityAddress: BluetoothAddress
    public var peerIRK: [UInt8]
    public var localIRK: [UInt8]

    public init(peerIdentityAddressType: LEAddressType, peerIdentityAddress: BluetoothAddress,
                peerIRK: [UInt8], localIRK: [UInt8]) {
        self.peerIdentityAddressType = peerIdentityAddressType
        self.peerIdentityAddress = peerIdentityAddress
        self.peerIRK = peerIRK
        self.localIRK = localIRK
    }
}
