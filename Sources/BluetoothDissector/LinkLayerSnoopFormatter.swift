import AdvertisingData
public import BluetoothCore
import HCI
public import LinkLayer

/// `blue snoop show` for link-layer captures (`blue air --sniff`, or a sniffer's pcap of LINKTYPE 256/251): each
/// advertising PDU with its addresses, AdvData and LLData; each data PDU with its LL control procedure or, for
/// L2CAP, what the HCI capture reader (``CaptureDecoder``) makes of it: a connection's data PDUs are its ACL
/// fragments (LLID 0b10 starts an L2CAP PDU, 0b01 continues it; Core 5.4 Vol 6 Part B §2.4), so L2CAP, ATT,
/// SMP and the credit-based channels decode as in an HCI capture, central to peripheral as "sent". Empty data PDUs
/// are counted, not shown, unless asked for.
public struct LinkLayerSnoopFormatter {
    private var decoder = CaptureDecoder()
    /// A handle per access address, for the decoder's reassembly and channel state.
    private var handles: [UInt32: UInt16] = [:]
    private var firstTimestamp: Int64?
    /// AdvData of auxiliary chains not finished yet, by where their next PDU goes (channel index) and ADI.
    private var chains: [ChainKey: [UInt8]] = [:]

    private struct ChainKey: Hashable {
        var channel: UInt8
        var sid: UInt8?
        var did: UInt16?
    }
    /// Whether empty data PDUs are shown (they are counted either way).
    public var showEmpty = false
    /// The empty data PDUs read so far.
    public private(set) var emptyPDUs = 0

    public init() {}

    static let controlNames: [UInt8: String] = [
        0x00: "LL_CONNECTION_UPDATE_IND", 0x01: "LL_CHANNEL_MAP_IND", 0x02: "LL_TERMINATE_IND", 0x03: "LL_ENC_REQ",
        0x04: "LL_ENC_RSP", 0x05: "LL_START_ENC_REQ", 0x06: "LL_START_ENC_RSP", 0x07: "LL_UNKNOWN_RSP",
        0x08: "LL_FEATURE_REQ", 0x09: "LL_FEATURE_RSP", 0x0A: "LL_PAUSE_ENC_REQ", 0x0B: "LL_PAUSE_ENC_RSP",
        0x0C: "LL_VERSION_IND", 0x0D: "LL_REJECT_IND", 0x0E: "LL_PERIPHERAL_FEATURE_REQ", 0x0F: "LL_CONNECTION_PARAM_REQ",
        0x10: "LL_CONNECTION_PARAM_RSP", 0x11: "LL_REJECT_EXT_IND", 0x12: "LL_PING_REQ", 0x13: "LL_PING_RSP",
        0x14: "LL_LENGTH_REQ", 0x15: "LL_LENGTH_RSP", 0x16: "LL_PHY_REQ", 0x17: "LL_PHY_RSP", 0x18: "LL_PHY_UPDATE_IND",
        0x19: "LL_MIN_USED_CHANNELS_IND",
    ]

    /// The packet's dissection, or nil for an empty data PDU that is not to be shown.
    public mutating func dissection(of packet: LinkLayerCapturedPacket) -> Dissection? {
        packet.isAdvertising ? advertising(packet) : data(packet)
    }

    /// The text of one packet: summary line (channel, PHY, what it is) and indented fields.
    public mutating func format(_ packet: LinkLayerCapturedPacket, number: Int) -> String? {
        guard let node = dissection(of: packet) else { return nil }
        let start = firstTimestamp ?? packet.unixMicroseconds
        firstTimestamp = start
        let elapsed = max(0, packet.unixMicroseconds - start)
        let micros = String(elapsed % 1_000_000)
        let time = "\(elapsed / 1_000_000).\(String(repeating: "0", count: max(0, 6 - micros.count)))\(micros)"
        let arrow = packet.pduType == 3 ? ">" : packet.pduType == 2 ? "<" : "="
        let summary = "\(arrow) \(Self.where(packet)) \(node.label)\(node.value.map { ": \($0)" } ?? "")"
        let padding = String(repeating: " ", count: max(1, 72 - summary.count))
        return (["\(summary)\(padding)#\(number) \(time)"] + node.children.map { $0.renderText(indent: 4) }).joined(separator: "\n")
    }

    /// One JSON object per packet.
    public mutating func json(_ packet: LinkLayerCapturedPacket, number: Int) -> String? {
        guard let node = dissection(of: packet) else { return nil }
        var text = "{\"number\":\(number),\"unixMicroseconds\":\(packet.unixMicroseconds)"
        if let channel = packet.rfChannel { text += ",\"rfChannel\":\(channel)" }
        text += ",\"phy\":\(Dissection.jsonString(LEPhy.names[packet.phy.rawValue] ?? "?"))"
        text += ",\"accessAddress\":\(Dissection.jsonString(Self.hex32(packet.accessAddress)))"
        if let type = packet.pduType, type >= 2 { text += ",\"direction\":\"\(type == 2 ? "central" : "peripheral")\"" }
        if packet.decrypted { text += ",\"decrypted\":true" }
        return text + ",\"pdu\":" + Dissection.jsonString(Hex.encode(packet.pdu)) + ",\"dissection\":" + node.renderJSON() + "}"
    }

    static func hex32(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return "0x" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// "ch37 1M" (the channel index from the RF channel), or the PHY alone.
    static func `where`(_ packet: LinkLayerCapturedPacket) -> String {
        let phy = packet.phy == .le2M ? "2M" : packet.phy == .leCoded ? "Coded" : "1M"
        guard let rf = packet.rfChannel else { return phy }
        return "ch\(channelIndex(rf)) \(phy)"
    }

    // MARK: Advertising physical channel PDUs (§2.3)

    mutating func advertising(_ packet: LinkLayerCapturedPacket) -> Dissection {
        let header = packet.pdu[0], payload = Array(packet.pdu.dropFirst(2))
        let type = header & 0x0F, txRandom = header & 0x40 != 0, rxRandom = header & 0x80 != 0
        let auxiliary = packet.pduType == 1
        func address(_ at: Int, random: Bool) -> String? {
            guard payload.count >= at + 6, let address = try? BluetoothAddress(littleEndianBytes: payload[at..<(at + 6)],
                                                                               type: random ? .random : .public) else { return nil }
            return "\(address.string) (\(address.type))"
        }
        func malformed(_ name: String) -> Dissection {
            Dissection(name, "malformed", [Dissection("Payload", Dissection.bytes(payload))])
        }
        switch type {
        case 0x0, 0x2, 0x4, 0x6:
            let name = [0x0: "ADV_IND", 0x2: "ADV_NONCONN_IND", 0x4: "SCAN_RSP", 0x6: "ADV_SCAN_IND"][type] ?? "?"
            guard let advertiser = address(0, random: txRandom) else { return malformed(name) }
            return Dissection(name, advertiser, [Self.advertisingData(Array(payload.dropFirst(6)), title: type == 0x4 ? "Scan Response Data" : "Advertising Data")])
        case 0x1:
            guard let advertiser = address(0, random: txRandom), let target = address(6, random: rxRandom) else { return malformed("ADV_DIRECT_IND") }
            return Dissection("ADV_DIRECT_IND", advertiser, [Dissection("Target", target)])
        case 0x3:
            let name = auxiliary ? "AUX_SCAN_REQ" : "SCAN_REQ"
            guard let scanner = address(0, random: txRandom), let advertiser = address(6, random: rxRandom) else { return malformed(name) }
            return Dissection(name, "\(scanner) → \(advertiser)")
        case 0x5:
            let name = auxiliary ? "AUX_CONNECT_REQ" : "CONNECT_IND"
            guard payload.count == 34, let initiator = address(0, random: txRandom), let advertiser = address(6, random: rxRandom) else {
                return malformed(name)
            }
            return Dissection(name, "\(initiator) → \(advertiser)", [Self.linkLayerData(Array(payload[12...]))])
        case 0x7, 0x8:
            guard let extended = try? ExtendedAdvertisingPayload(decoding: payload, txAddRandom: txRandom, rxAddRandom: rxRandom) else {
                return malformed(type == 0x8 ? "AUX_CONNECT_RSP" : auxiliary ? "AUX_ADV_IND" : "ADV_EXT_IND")
            }
            // AUX_SCAN_RSP carries AdvA without an ADI (optional there), AUX_ADV_IND both, AUX_CHAIN_IND no AdvA.
            let name = type == 0x8 ? "AUX_CONNECT_RSP" : !auxiliary ? "ADV_EXT_IND" : extended.advA == nil ? "AUX_CHAIN_IND"
                : extended.adi == nil ? "AUX_SCAN_RSP" : "AUX_ADV_IND"
            var fields = Self.extendedFields(extended)
            if !extended.advData.isEmpty || extended.auxPtr != nil, auxiliary, type == 0x7 {
                fields.removeAll { $0.label == "AdvData" }
                fields += joinChain(extended, channel: packet.rfChannel.map(Self.channelIndex), first: extended.advA != nil)
            }
            return Dissection(name, extended.advA.map { "\($0.string) (\($0.type))" }, fields)
        default:
            return Dissection("Advertising PDU", "type \(Dissection.hex8(type))", [Dissection("Payload", Dissection.bytes(payload))])
        }
    }

    /// An auxiliary PDU's AdvData in its chain (Core 5.4 Vol 6 Part B §2.3.4.9: the data goes on in the PDU its
    /// AuxPtr points to): a fragment while the chain goes on, the whole data decoded at its last PDU. Unlike
    /// Wireshark 4.0, which reads each fragment on its own.
    private mutating func joinChain(_ payload: ExtendedAdvertisingPayload, channel: UInt8?, first: Bool) -> [Dissection] {
        let adi = payload.adi
        var joined = payload.advData, pieces = 1
        // The PDU before carried the same ADI, or none (AUX_SCAN_RSP may go without).
        if !first, let channel, let earlier = chains.removeValue(forKey: ChainKey(channel: channel, sid: adi?.sid, did: adi?.did))
            ?? chains.removeValue(forKey: ChainKey(channel: channel)) {
            joined = earlier + joined
            pieces = 2
        }
        if let pointer = payload.auxPtr {
            if chains.count >= 64 { chains.removeAll() }
            chains[ChainKey(channel: pointer.channelIndex, sid: adi?.sid, did: adi?.did)] = joined
            return [Dissection("AdvData", "\(payload.advData.count) octets, the chain goes on (\(joined.count) so far)")]
        }
        guard pieces > 1 else { return joined.isEmpty ? [] : [Self.advertisingData(joined, title: "AdvData")] }
        var node = Self.advertisingData(joined, title: "AdvData")
        node.value = "\(joined.count) octets, joined from the chain"
        return [node]
    }

    static func channelIndex(_ rf: UInt8) -> UInt8 {
        switch rf {
        case 0: 37
        case 12: 38
        case 39: 39
        case 1...11: rf - 1
        default: rf - 2
        }
    }

    static func advertisingData(_ bytes: [UInt8], title: String) -> Dissection {
        if bytes.isEmpty { return Dissection(title, "(empty)") }
        guard let data = try? AdvertisingData(decoding: bytes, kind: bytes.count > 31 ? .extended : .legacy, lenient: true) else {
            return Dissection(title, "malformed", [Dissection("Data", Dissection.bytes(bytes))])
        }
        return Dissection(title, "\(bytes.count) octets", data.dissection.children)
    }

    static func linkLayerData(_ b: [UInt8]) -> Dissection {
        let u16 = { (at: Int) in UInt16(b[at]) | UInt16(b[at + 1]) << 8 }
        let accessAddress = UInt32(b[0]) | UInt32(b[1]) << 8 | UInt32(b[2]) << 16 | UInt32(b[3]) << 24
        return Dissection("LLData", nil, [
            Dissection("Access Address", hex32(accessAddress)),
            Dissection("CRC Init", Dissection.bytes(Array(b[4..<7]))),
            Dissection("Interval", "\(u16(10)) (\(Double(u16(10)) * 1.25) ms)"),
            Dissection("Latency", "\(u16(12))"),
            Dissection("Timeout", "\(u16(14)) (\(Int(u16(14)) * 10) ms)"),
            Dissection("Channel Map", Dissection.bytes(Array(b[16..<21]))),
            Dissection("Hop", "\(b[21] & 0x1F)"),
        ])
    }

    static func extendedFields(_ payload: ExtendedAdvertisingPayload) -> [Dissection] {
        var fields: [Dissection] = [Dissection("AdvMode", ["non-connectable, non-scannable", "connectable", "scannable", "reserved"][Int(payload.advMode & 3)])]
        if let target = payload.targetA { fields.append(Dissection("TargetA", "\(target.string) (\(target.type))")) }
        if let adi = payload.adi { fields.append(Dissection("ADI", "SID \(adi.sid), DID \(Dissection.hex16(adi.did))")) }
        if let pointer = payload.auxPtr {
            let phy = ["1M", "2M", "Coded"][min(2, Int(pointer.auxPHY))]
            fields.append(Dissection("AuxPtr", "ch\(pointer.channelIndex) \(phy) in \(pointer.offset.components.attoseconds / 1_000_000_000_000) µs"))
        }
        if let power = payload.txPower { fields.append(Dissection("TxPower", "\(power) dBm")) }
        if !payload.advData.isEmpty { fields.append(advertisingData(payload.advData, title: "AdvData")) }
        return fields
    }

    // MARK: Data physical channel PDUs (§2.4)

    private mutating func data(_ packet: LinkLayerCapturedPacket) -> Dissection? {
        let header = LinkLayerDataHeader(firstOctet: packet.pdu[0], length: packet.pdu[1])
        var payload = Array(packet.pdu.dropFirst(2))
        if packet.decrypted { payload = Array(payload.dropLast(min(4, payload.count))) }
        let flags = "SN \(header.sequence) NESN \(header.nextExpectedSequence)\(header.moreData ? " MD" : "")\(packet.decrypted ? ", decrypted" : "")"
        switch header.llid {
        case LinkLayerDataHeader.control:
            guard let pdu = try? LinkLayerControlPDU(decoding: payload) else {
                return Dissection("LL control", "malformed", [Dissection("Payload", Dissection.bytes(payload)), Dissection("Header", flags)])
            }
            let name = Self.controlNames[pdu.opcode] ?? "LL control \(Dissection.hex8(pdu.opcode))"
            let fields = payload.count > 1 ? [Dissection("CtrData", Dissection.bytes(Array(payload.dropFirst())))] : []
            return Dissection(name, Self.summary(of: pdu), fields + [Dissection("Header", flags)])
        case let llid where !payload.isEmpty && (llid == LinkLayerDataHeader.start || llid == LinkLayerDataHeader.continuation):
            let handle = self.handle(packet.accessAddress)
            let boundary: HCIACLDataPacket.PacketBoundary = header.llid == LinkLayerDataHeader.start ? .firstNonFlushable : .continuing
            guard let acl = try? HCIACLDataPacket(handle: handle, packetBoundary: boundary, data: payload),
                  let node = try? decoder.dissection(of: H4Frame(type: .aclData, packet: acl.encode()),
                                                     direction: packet.pduType == 3 ? .received : .sent) else {
                return Dissection("LL data", "\(payload.count) octets", [Dissection("Payload", Dissection.bytes(payload))])
            }
            // The decoder's L2CAP and reassembly nodes; the ACL header fields are the LL header's here.
            let l2cap = node.children.filter { !["Handle", "Packet_Boundary_Flag", "Broadcast_Flag", "Data_Total_Length", "Data"].contains($0.label) }
            // Named after what it carries (the protocol PDU the L2CAP frame holds), else L2CAP.
            let inner = l2cap.first?.children.last.map(\.label).flatMap { ["Length", "Channel ID", "Information Payload"].contains($0) ? nil : $0 }
            let part = header.llid == LinkLayerDataHeader.start ? "" : ", continuation"
            return Dissection(inner ?? "L2CAP", "\(payload.count) octets\(part)", l2cap + [Dissection("Header", flags)])
        default:
            emptyPDUs += 1
            return showEmpty ? Dissection("Empty PDU", flags) : nil
        }
    }

    /// The summary of an LL control PDU, in the spec's terms (Core 5.4 Vol 6 Part B §2.4.2).
    static func summary(of pdu: LinkLayerControlPDU) -> String? {
        func phys(_ bits: UInt8) -> String {
            let names = [(0x01, "1M"), (0x02, "2M"), (0x04, "Coded")].filter { bits & UInt8($0.0) != 0 }.map(\.1)
            return names.isEmpty ? "none" : names.joined(separator: "+")
        }
        switch pdu {
        case .connectionUpdateIndication(_, _, let interval, let latency, let timeout, let instant):
            return "interval \(Double(interval) * 1.25) ms, latency \(latency), timeout \(Int(timeout) * 10) ms at event \(instant)"
        case .terminateIndication(let code), .rejectIndication(let code):
            return HCIStatus(code).description
        case .rejectExtendedIndication(let opcode, let code):
            return "\(controlNames[opcode] ?? Dissection.hex8(opcode)): \(HCIStatus(code).description)"
        case .unknownResponse(let type):
            return controlNames[type] ?? Dissection.hex8(type)
        case .versionIndication(let version, let company, let subversion):
            return "version \(Dissection.hex8(version)), company \(Dissection.hex16(company)), subversion \(Dissection.hex16(subversion))"
        case .featureRequest(let features), .featureResponse(let features), .peripheralFeatureRequest(let features):
            return "features \(Dissection.hex16(UInt16(truncatingIfNeeded: features)))\(features > 0xFFFF ? "+" : "")"
        case .lengthRequest(let l), .lengthResponse(let l):
            return "RX \(l.maxRxOctets) octets/\(l.maxRxTime) µs, TX \(l.maxTxOctets) octets/\(l.maxTxTime) µs"
        case .phyRequest(let tx, let rx), .phyResponse(let tx, let rx):
            return "TX \(phys(tx)), RX \(phys(rx))"
        case .phyUpdateIndication(let cToP, let pToC, let instant):
            return cToP == 0 && pToC == 0 ? "no change" : "C→P \(cToP == 0 ? "unchanged" : phys(cToP)), P→C \(pToC == 0 ? "unchanged" : phys(pToC)) at event \(instant)"
        default:
            return nil
        }
    }

    private mutating func handle(_ accessAddress: UInt32) -> UInt16 {
        if let handle = handles[accessAddress] { return handle }
        let handle = UInt16(handles.count % 0x0EFF)
        handles[accessAddress] = handle
        return handle
    }
}
