/// The link layer's CRC (Core 5.4 Vol 6 Part B §3.1.1): polynomial x^24 + x^10 + x^9 + x^6 + x^4 + x^3 + x + 1 over
/// the PDU, the register preset to CRC_INIT and fed each octet least significant bit first; the three octets go
/// on the air least significant first (as libbtbb and Wireshark check it).
public enum LinkLayerCRC {
    public static func compute(_ pdu: [UInt8], initial: UInt32) -> [UInt8] {
        var state: UInt32 = 0
        for bit in 0..<24 where initial >> bit & 1 == 1 { state |= 1 << (23 - bit) }
        for byte in pdu {
            var current = byte
            for _ in 0..<8 {
                let next = (state ^ UInt32(current)) & 1
                current >>= 1
                state >>= 1
                if next == 1 { state = (state | 1 << 23) ^ 0x5A_6000 }
            }
        }
        return [UInt8(state & 0xFF), UInt8(state >> 8 & 0xFF), UInt8(state >> 16 & 0xFF)]
    }
}
