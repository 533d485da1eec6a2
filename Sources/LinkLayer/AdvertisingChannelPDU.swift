public import BluetoothCore
public import HCI

/// Advertising physical channel PDUs as they go on the air (Core 5.4 Vol 6 Part B §2.3): the 16-bit header (PDU
/// Type, ChSel, TxAdd, RxAdd, Length) and the payload. The air builds them for its observer (traces, `blue air
/// --sniff`); the controllers exchange the same information as values.
public enum AdvertisingChannelPDU {
    /// The access address of every advertising physical channel PDU (§2.1.2).
    public static let accessAddress: UInt32 = 0x8E89_BED6
    /// CRC_INIT of the advertising physical channels (§3.1.1).
    public static let crcInit: UInt32 = 0x55_5555

    /// PDU Type values (§2.3, Table 2.3); the extended ones share 0b0011, 0b0101 and 0b0111 with legacy PDUs.
    public enum PDUType: UInt8, Sendable {
        case advInd = 0x0
        case advDirectInd = 0x1
        case advNonconnInd = 0x2
        case scanReq = 0x3
        case scanRsp = 0x4
        case connectInd = 0x5
        case advScanInd = 0x6
        case advExtInd = 0x7
        case auxConnectRsp = 0x8
    }

    /// Header and payload; TxAdd/RxAdd from the two addresses' types (nil: the bit is 0).
    public static func pdu(_ type: PDUType, tx: BluetoothAddress?, rx: BluetoothAddress?, payload: [UInt8]) -> [UInt8] {
        var first = type.rawValue
        if tx?.type == .random { first |= 0x40 }
        if rx?.type == .random { first |= 0x80 }
        return [first, UInt8(truncatingIfNeeded: payload.count)] + payload
    }

    /// ADV_IND, ADV_DIRECT_IND, ADV_NONCONN_IND or ADV_SCAN_IND (§2.3.1): AdvA then AdvData, or AdvA and TargetA.
    public static func legacyAdvertising(_ type: LEAdvertisingType, advertiser: BluetoothAddress, target: BluetoothAddress?,
                                         data: [UInt8]) -> [UInt8] {
        switch type {
        case .connectableUndirected: pdu(.advInd, tx: advertiser, rx: nil, payload: advertiser.littleEndianBytes + data)
        case .scannableUndirected: pdu(.advScanInd, tx: advertiser, rx: nil, payload: advertiser.littleEndianBytes + data)
        case .nonConnectableUndirected: pdu(.advNonconnInd, tx: advertiser, rx: nil, payload: advertiser.littleEndianBytes + data)
        default:
            pdu(.advDirectInd, tx: advertiser, rx: target,
                payload: advertiser.littleEndianBytes + (target ?? BluetoothAddress(0)).littleEndianBytes)
        }
    }

    /// SCAN_REQ or AUX_SCAN_REQ (§2.3.2.1): ScanA, AdvA.
    public static func scanRequest(scanner: BluetoothAddress, advertiser: BluetoothAddress) -> [UInt8] {
        pdu(.scanReq, tx: scanner, rx: advertiser, payload: scanner.littleEndianBytes + advertiser.littleEndianBytes)
    }

    /// SCAN_RSP (§2.3.2.2): AdvA, ScanRspData.
    public static func scanResponse(advertiser: BluetoothAddress, data: [UInt8]) -> [UInt8] {
        pdu(.scanRsp, tx: advertiser, rx: nil, payload: advertiser.littleEndianBytes + data)
    }

    /// ADV_EXT_IND, AUX_ADV_IND, AUX_SCAN_RSP, AUX_CHAIN_IND or AUX_CONNECT_RSP: the Common Extended Advertising
    /// Payload Format (§2.3.4), TxAdd/RxAdd from its AdvA and TargetA.
    public static func extended(_ payload: ExtendedAdvertisingPayload, connectResponse: Bool = false) -> [UInt8] {
        pdu(connectResponse ? .auxConnectRsp : .advExtInd, tx: payload.advA, rx: payload.targetA, payload: payload.encode())
    }

    /// LLData of CONNECT_IND and AUX_CONNECT_REQ (§2.3.3.1, 22 octets): the connection's access address, CRC_INIT,
    /// transmit window, interval, latency, timeout, channel map, hop increment and SCA.
    public struct LinkLayerData: Hashable, Sendable {
        public var accessAddress: UInt32
        public var crcInit: UInt32
        public var windowSize: UInt8 = 1
        public var windowOffset: UInt16 = 0
        public var interval: UInt16
        public var latency: UInt16
        public var timeout: UInt16
        /// ChM: bit n set when data channel n is used (37 bits).
        public var channelMap: UInt64 = 0x1F_FFFF_FFFF
        /// Hop increment of Channel Selection Algorithm #1 (5...16).
        public var hopIncrement: UInt8
        public var sleepClockAccuracy: UInt8 = 0

        public init(accessAddress: UInt32, crcInit: UInt32, interval: UInt16, latency: UInt16, timeout: UInt16, hopIncrement: UInt8) {
            self.accessAddress = accessAddress
            self.crcInit = crcInit
            self.interval = interval
            self.latency = latency
            self.timeout = timeout
            self.hopIncrement = hopIncrement
        }

        public func encode() -> [UInt8] {
            var w = ByteWriter()
            w.write(accessAddress)
            w.write([UInt8(crcInit & 0xFF), UInt8(crcInit >> 8 & 0xFF), UInt8(crcInit >> 16 & 0xFF)])
            w.write(windowSize)
            w.write(windowOffset)
            w.write(interval)
            w.write(latency)
            w.write(timeout)
            w.write((0..<5).map { UInt8(truncatingIfNeeded: channelMap >> (8 * $0)) })
            w.write(hopIncrement & 0x1F | sleepClockAccuracy << 5)
            return w.bytes
        }
    }

    /// CONNECT_IND or AUX_CONNECT_REQ (§2.3.3.1): InitA, AdvA, LLData.
    public static func connectIndication(initiator: BluetoothAddress, advertiser: BluetoothAddress, _ data: LinkLayerData) -> [UInt8] {
        pdu(.connectInd, tx: initiator, rx: advertiser, payload: initiator.littleEndianBytes + advertiser.littleEndianBytes + data.encode())
    }
}
