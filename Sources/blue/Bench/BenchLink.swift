import HCI
import VirtualController

/// The link a GATT benchmark ran on, and the most its data direction can carry on the air: back-to-back PDUs of
/// the value's L2CAP PDU (value + 3 octets of ATT header + 4 of L2CAP header, in fragments of the data length),
/// each answered by an empty PDU, T_IFS between all (Core 5.4 Vol 6 Part B §2.1, §4.1.1, §4.5.1;
/// `../shared/reference/spec-vectors.md` §4.2, the "ceiling" column). No event gaps, no retransmissions.
struct BenchLink {
    var phy: String
    var intervalMilliseconds: Double
    var realtime: Bool
    /// Bits of values per second of air at best, nil when not computed (acknowledged writes).
    var ceilingBitsPerSecond: Double?

    static func ceiling(valueSize: Int, dataLength: Int, phy: LEPhy) -> Double {
        var remaining = valueSize + 3 + 4
        var time = Duration.zero
        while remaining > 0 {
            let fragment = min(remaining, max(27, dataLength))
            time += AirTime.exchange(centralOctets: 2 + fragment, centralPHY: phy, peripheralOctets: 2, peripheralPHY: phy)
            remaining -= fragment
        }
        let seconds = Double(time.components.seconds) + Double(time.components.attoseconds) / 1e18
        return seconds > 0 ? Double(valueSize * 8) / seconds : 0
    }
}

extension BenchPHY {
    var hci: LEPhy {
        switch self {
        case .le1M: .le1M
        case .le2M: .le2M
        case .leCoded: .leCoded
        }
    }

    /// Its bit in LE Set PHY's TX_PHYS / RX_PHYS (Vol 4 Part E §7.8.49).
    var bit: UInt8 {
        switch self {
        case .le1M: 0x01
        case .le2M: 0x02
        case .leCoded: 0x04
        }
    }
}
