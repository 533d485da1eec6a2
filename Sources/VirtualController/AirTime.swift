public import HCI

/// How long a link-layer packet occupies the radio (Core 5.4 Vol 6 Part B §2.1 uncoded packet format, §2.2
/// coded packet format, §4.1.1 inter frame space), for the air's timed model (``AirConfiguration/realRadioTiming``).
///
/// - LE 1M: preamble 1 octet, access address 4, PDU (header 2 + payload + MIC 4 when sealed), CRC 3; 8 µs per octet.
/// - LE 2M: the same with a 2-octet preamble; 4 µs per octet.
/// - LE Coded (S=8, the coding this controller uses): preamble 80 µs, access address 256 µs, coding indicator
///   16 µs, TERM1 24 µs, then PDU and CRC at 64 µs per octet and TERM2 24 µs.
///
/// An empty PDU is 80 µs on 1M and 44 µs on 2M; a 251-octet payload 2,088 µs on 1M and 1,048 µs on 2M
/// (`../shared/reference/spec-vectors.md` §4.1).
public enum AirTime {
    /// T_IFS, between two consecutive packets on the same channel (§4.1.1).
    public static let interFrameSpace: Duration = .microseconds(150)

    /// The air time of a data channel PDU of `pduOctets` (header, payload and MIC) sent on `phy`.
    public static func packet(pduOctets: Int, phy: LEPhy) -> Duration {
        let octets = max(0, pduOctets)
        switch phy {
        case .le2M: return .microseconds((2 + 4 + octets + 3) * 4)
        case .leCoded: return .microseconds(80 + 256 + 16 + 24 + (octets + 3) * 64 + 24)
        default: return .microseconds((1 + 4 + octets + 3) * 8)
        }
    }

    /// One exchange of a connection event: the central's PDU, T_IFS, the peripheral's PDU, T_IFS (§4.5.1).
    public static func exchange(centralOctets: Int, centralPHY: LEPhy, peripheralOctets: Int, peripheralPHY: LEPhy) -> Duration {
        packet(pduOctets: centralOctets, phy: centralPHY) + interFrameSpace
            + packet(pduOctets: peripheralOctets, phy: peripheralPHY) + interFrameSpace
    }

    /// How much a receiver's sensitivity improves (negative: gets worse) on `phy`, in dB, against LE 1M. The
    /// specification's minimum sensitivities (Vol 6 Part A §4.5) are −70 dBm uncoded and −82 dBm for S=8: the
    /// Coded PHY's 12 dB are its point (about four times the range in free space); the 2M PHY's wider bandwidth
    /// costs real receivers about 3 dB.
    public static func sensitivityGain(_ phy: LEPhy) -> Double {
        switch phy {
        case .le2M: -3
        case .leCoded: 12
        default: 0
        }
    }
}
