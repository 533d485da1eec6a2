public import BluetoothCore

/// The Common Extended Advertising Payload Format (Core 5.4 Vol 6 Part B §2.3.4) of ADV_EXT_IND, AUX_ADV_IND,
/// AUX_SCAN_RSP and AUX_CHAIN_INDs: Extended Header Length (6 bits) and AdvMode (2 bits), then the extended header
/// (a flags octet and the fields it announces, in order: AdvA, TargetA, CTEInfo, ADI, AuxPtr, SyncInfo, TxPower,
/// ACAD), then AdvData. Decoding takes hostile bytes: a header longer than the payload, or fields longer than the
/// header, throw.
public struct ExtendedAdvertisingPayload: Hashable, Sendable {
    /// AdvMode: bit 0 connectable, bit 1 scannable (§2.3.4.1).
    public var advMode: UInt8
    public var advA: BluetoothAddress?
    public var targetA: BluetoothAddress?
    public var cteInfo: UInt8?
    /// ADI (§2.3.4.6): Advertising Data ID (12 bits) and Advertising Set ID (4 bits).
    public var adi: (did: UInt16, sid: UInt8)? {
        get { adiValue.map { ($0 & 0x0FFF, UInt8($0 >> 12)) } }
        set { adiValue = newValue.map { ($0.did & 0x0FFF) | UInt16($0.sid & 0x0F) << 12 } }
    }
    public var auxPtr: AuxPtr?
    /// SyncInfo (18 octets, §2.3.4.6), kept as bytes.
    public var syncInfo: [UInt8]?
    public var txPower: Int8?
    /// Additional Controller Advertising Data: what is left of the extended header.
    public var acad: [UInt8]
    public var advData: [UInt8]

    private var adiValue: UInt16?

    /// AuxPtr (§2.3.4.5): where the next auxiliary PDU is: Channel Index (6 bits), Clock Accuracy, Offset Units
    /// (0: 30 µs, 1: 300 µs), AUX Offset (13 bits), AUX PHY (0 LE 1M, 1 LE 2M, 2 LE Coded).
    public struct AuxPtr: Hashable, Sendable {
        public var channelIndex: UInt8
        public var clockAccuracy: UInt8
        public var offsetUnits: UInt8
        public var auxOffset: UInt16
        public var auxPHY: UInt8

        public init(channelIndex: UInt8, clockAccuracy: UInt8 = 0, offsetUnits: UInt8 = 0, auxOffset: UInt16, auxPHY: UInt8) {
            self.channelIndex = channelIndex
            self.clockAccuracy = clockAccuracy
            self.offsetUnits = offsetUnits
            self.auxOffset = auxOffset
            self.auxPHY = auxPHY
        }

        /// From the start of the PDU holding the pointer to the start of the one it points to.
        public var offset: Duration { .microseconds(Int(auxOffset) * (offsetUnits == 1 ? 300 : 30)) }

        var value: UInt32 {
            UInt32(channelIndex & 0x3F) | UInt32(clockAccuracy & 1) << 6 | UInt32(offsetUnits & 1) << 7
                | UInt32(auxOffset & 0x1FFF) << 8 | UInt32(auxPHY & 0x07) << 21
        }

        init(value: UInt32) {
            self.init(channelIndex: UInt8(value & 0x3F), clockAccuracy: UInt8(value >> 6 & 1), offsetUnits: UInt8(value >> 7 & 1),
                      auxOffset: UInt16(value >> 8 & 0x1FFF), auxPHY: UInt8(value >> 21 & 0x07))
        }
    }

    public init(advMode: UInt8 = 0, advA: BluetoothAddress? = nil, targetA: BluetoothAddress? = nil, cteInfo: UInt8? = nil,
                adi: (did: UInt16, sid: UInt8)? = nil, auxPtr: AuxPtr? = nil, syncInfo: [UInt8]? = nil, txPower: Int8? = nil,
                acad: [UInt8] = [], advData: [UInt8] = []) {
        self.advMode = advMode
        self.advA = advA
        self.targetA = targetA
        self.cteInfo = cteInfo
        self.auxPtr = auxPtr
        self.syncInfo = syncInfo
        self.txPower = txPower
        self.acad = acad
        self.advData = advData
        self.adi = adi
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.encode() == rhs.encode() }
    public func hash(into hasher: inout Hasher) { hasher.combine(encode()) }

    /// The extended header fields' flags octet (§2.3.4.1).
    var flags: UInt8 {
        (advA == nil ? 0 : 0x01) | (targetA == nil ? 0 : 0x02) | (cteInfo == nil ? 0 : 0x04) | (adiValue == nil ? 0 : 0x08)
            | (auxPtr == nil ? 0 : 0x10) | (syncInfo == nil ? 0 : 0x20) | (txPower == nil ? 0 : 0x40)
    }

    /// The payload bytes (the PDU header, with its type and length, is not included).
    public func encode() -> [UInt8] {
        var header = ByteWriter()
        let flags = self.flags
        if flags != 0 || !acad.isEmpty {
            header.write(flags)
            if let advA { header.write(advA.littleEndianBytes) }
            if let targetA { header.write(targetA.littleEndianBytes) }
            if let cteInfo { header.write(cteInfo) }
            if let adiValue { header.write(adiValue) }
            if let auxPtr { header.writeUInt24(auxPtr.value) }
            if let syncInfo { header.write(Array(syncInfo.prefix(18)) + [UInt8](repeating: 0, count: max(0, 18 - syncInfo.count))) }
            if let txPower { header.write(UInt8(bitPattern: txPower)) }
            header.write(acad)
        }
        let extended = Array(header.bytes.prefix(63))
        return [UInt8(extended.count) | (advMode & 0x03) << 6] + extended + advData
    }

    /// Decodes a payload (after the 2-octet PDU header); `txAddRandom` and `rxAddRandom` are the PDU header's TxAdd and
    /// RxAdd.
    public init(decoding bytes: [UInt8], txAddRandom: Bool = true, rxAddRandom: Bool = true) throws(DecodeError) {
        var reader = ByteReader(bytes)
        let first = try reader.readUInt8("Extended Header Length / AdvMode")
        let length = Int(first & 0x3F)
        advMode = first >> 6
        guard reader.remaining >= length else {
            throw reader.error(.invalidLength, "Extended Header Length \(length) but \(reader.remaining) octets follow")
        }
        var header = ByteReader(try reader.readBytes(length, "Extended Header"), baseOffset: 1)
        advA = nil; targetA = nil; cteInfo = nil; adiValue = nil; auxPtr = nil; syncInfo = nil; txPower = nil
        acad = []
        if length > 0 {
            let flags = try header.readUInt8("Extended Header Flags")
            if flags & 0x01 != 0 {
                advA = try BluetoothAddress(littleEndianBytes: try header.readBytes(6, "AdvA"), type: txAddRandom ? .random : .public)
            }
            if flags & 0x02 != 0 {
                targetA = try BluetoothAddress(littleEndianBytes: try header.readBytes(6, "TargetA"), type: rxAddRandom ? .random : .public)
            }
            if flags & 0x04 != 0 { cteInfo = try header.readUInt8("CTEInfo") }
            if flags & 0x08 != 0 { adiValue = try header.readUInt16("ADI") }
            if flags & 0x10 != 0 {
                let ptr = try header.readBytes(3, "AuxPtr")
                auxPtr = AuxPtr(value: UInt32(ptr[0]) | UInt32(ptr[1]) << 8 | UInt32(ptr[2]) << 16)
            }
            if flags & 0x20 != 0 { syncInfo = try header.readBytes(18, "SyncInfo") }
            if flags & 0x40 != 0 { txPower = Int8(bitPattern: try header.readUInt8("TxPower")) }
            acad = header.readRemaining()
        }
        advData = reader.readRemaining()
    }
}
