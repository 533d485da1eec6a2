import BluetoothCore
import HCI
import LinkLayer

/// The extended advertising PDUs (Core 5.4 Vol 6 Part B §2.3.1, §2.3.4): ADV_EXT_IND on the primary advertising
/// channels points to an AUX_ADV_IND on a secondary channel, which AUX_CHAIN_INDs may follow; AUX_SCAN_REQ/RSP and
/// AUX_CONNECT_REQ/RSP are exchanged on the secondary channel.
public enum ExtendedAdvertisingPDU: String, Hashable, Sendable {
    case advExtInd = "ADV_EXT_IND"
    case auxAdvInd = "AUX_ADV_IND"
    case auxChainInd = "AUX_CHAIN_IND"
    case auxScanReq = "AUX_SCAN_REQ"
    case auxScanRsp = "AUX_SCAN_RSP"
    case auxConnectReq = "AUX_CONNECT_REQ"
    case auxConnectRsp = "AUX_CONNECT_RSP"
}

/// How advertising or scan response data is cut into the PDUs of an auxiliary chain (Core 5.4 Vol 6 Part B
/// §2.3.4): each PDU's payload is at most 255 octets, of which the Common Extended Advertising Payload Format takes
/// the extended header length and AdvMode octet, the header's flags octet and the fields present in that PDU.
enum AuxiliaryChain {
    /// The largest payload of an advertising physical channel PDU (§2.3).
    static let maximumPayload = 255

    /// The AdvData octets one `pdu` holds: 255 minus 2 (Extended Header Length and AdvMode, Extended Header Flags),
    /// AdvA (6, unless anonymous) and TargetA (6, directed) on AUX_ADV_IND and AUX_SCAN_RSP, ADI (2) on AUX_ADV_IND
    /// and AUX_CHAIN_IND, TxPower (1) on AUX_ADV_IND when included, and AuxPtr (3) when another PDU follows.
    static func capacity(of pdu: ExtendedAdvertisingPDU, properties: LEAdvertisingEventProperties, chained: Bool) -> Int {
        var header = 2 + (chained ? 3 : 0)
        switch pdu {
        case .auxAdvInd:
            header += (properties.contains(.anonymous) ? 0 : 6) + (properties.contains(.directed) ? 6 : 0) + 2
            header += properties.contains(.includeTxPower) ? 1 : 0
        case .auxScanRsp:
            header += 6
        case .auxChainInd:
            header += 2
        default:
            return 0
        }
        return maximumPayload - header
    }

    /// `data` cut into the AdvData of `first` (AUX_ADV_IND or AUX_SCAN_RSP) and the AUX_CHAIN_INDs after it, in
    /// order; empty data is one PDU without AdvData.
    static func fragments(_ data: [UInt8], first: ExtendedAdvertisingPDU, properties: LEAdvertisingEventProperties) -> [[UInt8]] {
        var fragments: [[UInt8]] = []
        var rest = data[...]
        var pdu = first
        repeat {
            let whole = capacity(of: pdu, properties: properties, chained: false)
            let take = rest.count <= whole ? rest.count : capacity(of: pdu, properties: properties, chained: true)
            fragments.append(Array(rest.prefix(take)))
            rest = rest.dropFirst(take)
            pdu = .auxChainInd
        } while !rest.isEmpty
        return fragments
    }

    /// The AUX PHY code of AuxPtr (§2.3.4.5): 0 LE 1M, 1 LE 2M, 2 LE Coded.
    static func auxPHYCode(_ phy: LEPhy) -> UInt8 {
        phy == .le2M ? 1 : phy == .leCoded ? 2 : 0
    }

    /// The payloads of an extended advertising event as the air sends them (§2.3.4; Table 2.12's fields): ADV_EXT_IND
    /// with ADI and AuxPtr; the first auxiliary PDU (`first`: AUX_ADV_IND with AdvA unless anonymous, TargetA when
    /// directed, ADI, TxPower when included; or AUX_SCAN_RSP with AdvA) and AUX_CHAIN_INDs with ADI, each with AuxPtr
    /// when another follows (AUX Offset: the PDU's air time plus T_MAFS, in 30 µs units), carrying `fragments` in
    /// order. ADV_EXT_IND only with `withIndication`.
    static func payloads(advMode: UInt8, address: BluetoothAddress?, target: BluetoothAddress?, adi: (did: UInt16, sid: UInt8),
                         txPower: Int8?, primaryPHY: LEPhy = .le1M, phy: LEPhy, channel: UInt8, fragments: [[UInt8]],
                         first: ExtendedAdvertisingPDU, withIndication: Bool) -> [ExtendedAdvertisingPayload] {
        /// AuxPtr to the next PDU on `phy`, after one of `octets` sent on `sentOn`.
        func pointer(after octets: Int, sentOn: LEPhy) -> ExtendedAdvertisingPayload.AuxPtr {
            let microseconds = AirTime.packet(pduOctets: octets, phy: sentOn).components.attoseconds / 1_000_000_000_000 + 300
            return ExtendedAdvertisingPayload.AuxPtr(channelIndex: channel, auxOffset: UInt16(clamping: microseconds / 30),
                                                     auxPHY: auxPHYCode(phy))
        }
        var payloads: [ExtendedAdvertisingPayload] = []
        for (index, fragment) in fragments.enumerated() {
            let last = index == fragments.count - 1
            var payload = ExtendedAdvertisingPayload(advMode: index == 0 && first == .auxAdvInd ? advMode : 0, advData: fragment)
            if index == 0 {
                payload.advA = address
                if first == .auxAdvInd {
                    payload.targetA = target
                    payload.adi = adi
                    payload.txPower = txPower
                }
            } else {
                payload.adi = adi
            }
            if !last {
                payload.auxPtr = pointer(after: 2 + 255, sentOn: phy)
            }
            payloads.append(payload)
        }
        guard withIndication else { return payloads }
        var indication = ExtendedAdvertisingPayload(advMode: advMode, adi: adi)
        indication.auxPtr = pointer(after: 2 + 1 + 1 + 2 + 3, sentOn: primaryPHY)
        return [indication] + payloads
    }
}
