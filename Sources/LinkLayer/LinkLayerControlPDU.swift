public import BluetoothCore

/// A link-layer control PDU (LLID 0b11) of the procedures this controller runs (Core 5.4 Vol 6 Part B §2.4.2):
/// opcode octet then the CtrData of the spec's fixed length. Unknown opcodes decode to ``unknown(opcode:data:)``;
/// a known opcode with the wrong length throws (the receiver answers LL_UNKNOWN_RSP).
public enum LinkLayerControlPDU: Hashable, Sendable {
    /// §2.4.2.1: WinSize (1.25 ms), WinOffset (1.25 ms), Interval (1.25 ms), Latency, Timeout (10 ms), Instant.
    case connectionUpdateIndication(windowSize: UInt8, windowOffset: UInt16, interval: UInt16, latency: UInt16,
                                    timeout: UInt16, instant: UInt16)
    /// §2.4.2.3
    case terminateIndication(errorCode: UInt8)
    /// §2.4.2.4: Rand, EDIV, SKDm, IVm.
    case encryptionRequest(randomNumber: UInt64, encryptedDiversifier: UInt16, skdm: UInt64, ivm: UInt32)
    /// §2.4.2.5: SKDs, IVs.
    case encryptionResponse(skds: UInt64, ivs: UInt32)
    case startEncryptionRequest
    case startEncryptionResponse
    case unknownResponse(unknownType: UInt8)
    case featureRequest(features: UInt64)
    case featureResponse(features: UInt64)
    case pauseEncryptionRequest
    case pauseEncryptionResponse
    /// §2.4.2.13: VersNr, CompId, SubVersNr.
    case versionIndication(version: UInt8, companyIdentifier: UInt16, subversion: UInt16)
    case rejectIndication(errorCode: UInt8)
    case peripheralFeatureRequest(features: UInt64)
    case rejectExtendedIndication(rejectOpcode: UInt8, errorCode: UInt8)
    /// §2.4.2.21: MaxRxOctets, MaxRxTime, MaxTxOctets, MaxTxTime.
    case lengthRequest(LinkLayerLengths)
    case lengthResponse(LinkLayerLengths)
    /// §2.4.2.22: TX_PHYS, RX_PHYS bit fields (bit 0 1M, bit 1 2M, bit 2 Coded).
    case phyRequest(txPHYs: UInt8, rxPHYs: UInt8)
    case phyResponse(txPHYs: UInt8, rxPHYs: UInt8)
    /// §2.4.2.23: PHY_C_TO_P, PHY_P_TO_C (one bit each, 0 = unchanged), Instant.
    case phyUpdateIndication(centralToPeripheral: UInt8, peripheralToCentral: UInt8, instant: UInt16)
    case unknown(opcode: UInt8, data: [UInt8])

    /// The four lengths of LL_LENGTH_REQ / LL_LENGTH_RSP.
    public struct LinkLayerLengths: Hashable, Sendable {
        public var maxRxOctets: UInt16
        public var maxRxTime: UInt16
        public var maxTxOctets: UInt16
        public var maxTxTime: UInt16
        public init(maxRxOctets: UInt16, maxRxTime: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16) {
            self.maxRxOctets = maxRxOctets
            self.maxRxTime = maxRxTime
            self.maxTxOctets = maxTxOctets
            self.maxTxTime = maxTxTime
        }
    }

    public var opcode: UInt8 {
        switch self {
        case .connectionUpdateIndication: 0x00
        case .terminateIndication: 0x02
        case .encryptionRequest: 0x03
        case .encryptionResponse: 0x04
        case .startEncryptionRequest: 0x05
        case .startEncryptionResponse: 0x06
        case .unknownResponse: 0x07
        case .featureRequest: 0x08
        case .featureResponse: 0x09
        case .pauseEncryptionRequest: 0x0A
        case .pauseEncryptionResponse: 0x0B
        case .versionIndication: 0x0C
        case .rejectIndication: 0x0D
        case .peripheralFeatureRequest: 0x0E
        case .rejectExtendedIndication: 0x11
        case .lengthRequest: 0x14
        case .lengthResponse: 0x15
        case .phyRequest: 0x16
        case .phyResponse: 0x17
        case .phyUpdateIndication: 0x18
        case .unknown(let opcode, _): opcode
        }
    }

    /// CtrData lengths of the known opcodes (§2.4.2).
    static let dataLengths: [UInt8: Int] = [
        0x00: 11, 0x02: 1, 0x03: 22, 0x04: 12, 0x05: 0, 0x06: 0, 0x07: 1, 0x08: 8, 0x09: 8, 0x0A: 0, 0x0B: 0,
        0x0C: 5, 0x0D: 1, 0x0E: 8, 0x11: 2, 0x14: 8, 0x15: 8, 0x16: 2, 0x17: 2, 0x18: 4,
    ]

    /// Decodes a control PDU payload (opcode first).
    public init(decoding payload: [UInt8]) throws(DecodeError) {
        var r = ByteReader(payload)
        let opcode = try r.readUInt8("Opcode")
        guard let length = Self.dataLengths[opcode] else {
            self = .unknown(opcode: opcode, data: r.readRemaining())
            return
        }
        guard r.remaining == length else {
            throw r.error(.invalidLength, "LL control opcode \(Dissection.hex8(opcode)) has \(length) octets, not \(r.remaining)")
        }
        switch opcode {
        case 0x00:
            self = .connectionUpdateIndication(
                windowSize: try r.readUInt8("WinSize"), windowOffset: try r.readUInt16("WinOffset"),
                interval: try r.readUInt16("Interval"), latency: try r.readUInt16("Latency"),
                timeout: try r.readUInt16("Timeout"), instant: try r.readUInt16("Instant"))
        case 0x02: self = .terminateIndication(errorCode: try r.readUInt8("ErrorCode"))
        case 0x03:
            self = .encryptionRequest(randomNumber: try r.readUInt64("Rand"), encryptedDiversifier: try r.readUInt16("EDIV"),
                                      skdm: try r.readUInt64("SKDm"), ivm: try r.readUInt32("IVm"))
        case 0x04: self = .encryptionResponse(skds: try r.readUInt64("SKDs"), ivs: try r.readUInt32("IVs"))
        case 0x05: self = .startEncryptionRequest
        case 0x06: self = .startEncryptionResponse
        case 0x07: self = .unknownResponse(unknownType: try r.readUInt8("UnknownType"))
        case 0x08: self = .featureRequest(features: try r.readUInt64("FeatureSet"))
        case 0x09: self = .featureResponse(features: try r.readUInt64("FeatureSet"))
        case 0x0A: self = .pauseEncryptionRequest
        case 0x0B: self = .pauseEncryptionResponse
        case 0x0C:
            self = .versionIndication(version: try r.readUInt8("VersNr"), companyIdentifier: try r.readUInt16("CompId"),
                                      subversion: try r.readUInt16("SubVersNr"))
        case 0x0D: self = .rejectIndication(errorCode: try r.readUInt8("ErrorCode"))
        case 0x0E: self = .peripheralFeatureRequest(features: try r.readUInt64("FeatureSet"))
        case 0x11: self = .rejectExtendedIndication(rejectOpcode: try r.readUInt8("RejectOpcode"),
                                                    errorCode: try r.readUInt8("ErrorCode"))
        case 0x14, 0x15:
            let lengths = LinkLayerLengths(
                maxRxOctets: try r.readUInt16("MaxRxOctets"), maxRxTime: try r.readUInt16("MaxRxTime"),
                maxTxOctets: try r.readUInt16("MaxTxOctets"), maxTxTime: try r.readUInt16("MaxTxTime"))
            self = opcode == 0x14 ? .lengthRequest(lengths) : .lengthResponse(lengths)
        case 0x16: self = .phyRequest(txPHYs: try r.readUInt8("TX_PHYS"), rxPHYs: try r.readUInt8("RX_PHYS"))
        case 0x17: self = .phyResponse(txPHYs: try r.readUInt8("TX_PHYS"), rxPHYs: try r.readUInt8("RX_PHYS"))
        default:
            self = .phyUpdateIndication(centralToPeripheral: try r.readUInt8("PHY_C_TO_P"),
                                        peripheralToCentral: try r.readUInt8("PHY_P_TO_C"),
                                        instant: try r.readUInt16("Instant"))
        }
        try r.expectEnd("LL control PDU")
    }

    /// The payload: opcode then CtrData.
    public func encode() -> [UInt8] {
        var w = ByteWriter()
        w.write(opcode)
        switch self {
        case .connectionUpdateIndication(let size, let offset, let interval, let latency, let timeout, let instant):
            w.write(size)
            for value in [offset, interval, latency, timeout, instant] { w.write(value) }
        case .terminateIndication(let code), .rejectIndication(let code), .unknownResponse(let code):
            w.write(code)
        case .encryptionRequest(let rand, let ediv, let skdm, let ivm):
            w.write(rand)
            w.write(ediv)
            w.write(skdm)
            w.write(ivm)
        case .encryptionResponse(let skds, let ivs):
            w.write(skds)
            w.write(ivs)
        case .startEncryptionRequest, .startEncryptionResponse, .pauseEncryptionRequest, .pauseEncryptionResponse:
            break
        case .featureRequest(let f), .featureResponse(let f), .peripheralFeatureRequest(let f):
            w.write(f)
        case .versionIndication(let version, let company, let subversion):
            w.write(version)
            w.write(company)
            w.write(subversion)
        case .rejectExtendedIndication(let opcode, let code):
            w.write(opcode)
            w.write(code)
        case .lengthRequest(let l), .lengthResponse(let l):
            for value in [l.maxRxOctets, l.maxRxTime, l.maxTxOctets, l.maxTxTime] { w.write(value) }
        case .phyRequest(let tx, let rx), .phyResponse(let tx, let rx):
            w.write(tx)
            w.write(rx)
        case .phyUpdateIndication(let cToP, let pToC, let instant):
            w.write(cToP)
            w.write(pToC)
            w.write(instant)
        case .unknown(_, let data):
            w.write(data)
        }
        return w.bytes
    }
}

/// The 2-octet header of a data channel PDU (Core 5.4 Vol 6 Part B §2.4): LLID (bits 0-1), NESN (2), SN (3),
/// MD (4), then the payload length.
public struct LinkLayerDataHeader: Hashable, Sendable {
    /// 0b01: continuation of an L2CAP message or empty PDU; 0b10: start of an L2CAP message; 0b11: control.
    public var llid: UInt8
    public var nextExpectedSequence: UInt8
    public var sequence: UInt8
    public var moreData: Bool
    public var length: UInt8

    public static let continuation: UInt8 = 0b01
    public static let start: UInt8 = 0b10
    public static let control: UInt8 = 0b11

    public init(llid: UInt8, nextExpectedSequence: UInt8, sequence: UInt8, moreData: Bool, length: UInt8) {
        self.llid = llid & 0b11
        self.nextExpectedSequence = nextExpectedSequence & 1
        self.sequence = sequence & 1
        self.moreData = moreData
        self.length = length
    }

    public init(firstOctet: UInt8, length: UInt8) {
        self.init(llid: firstOctet & 0b11, nextExpectedSequence: (firstOctet >> 2) & 1, sequence: (firstOctet >> 3) & 1,
                  moreData: firstOctet & 0x10 != 0, length: length)
    }

    public var firstOctet: UInt8 {
        llid | nextExpectedSequence << 2 | sequence << 3 | (moreData ? 0x10 : 0)
    }
}
