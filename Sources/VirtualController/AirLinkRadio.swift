import LinkLayer
/// What a sniffer sees of a connection on the air (Core 5.4 Vol 6 Part B §2.1.2, §3.1.1, §4.5.8.2): its access
/// address and CRC_INIT, sent in the CONNECT_IND, and the data channel of each connection event by Channel
/// Selection Algorithm #1 over all 37 data channels. Our air delivers packets without channels, so these only
/// label what the observer records (`blue air --sniff`); they come from the link's identifier, not from the air's
/// random generator, so recording changes nothing of a scenario's packets.
struct AirLinkRadio: Hashable, Sendable {
    let accessAddress: UInt32
    let crcInit: UInt32
    /// Hop increment, 5...16.
    let hopIncrement: UInt8
    /// unmappedChannel of the current connection event (lastUnmappedChannel before the first is 0).
    private(set) var channel: UInt8 = 0

    init(link identifier: Int) {
        var seed = UInt64(truncatingIfNeeded: identifier) &* 0x9E37_79B9_7F4A_7C15 ^ 0xD1B5_4A32_D192_ED03
        func next() -> UInt32 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt32(truncatingIfNeeded: seed >> 32)
        }
        var candidate = next()
        while !Self.isValidAccessAddress(candidate) { candidate = next() }
        accessAddress = candidate
        crcInit = next() & 0xFF_FFFF
        hopIncrement = UInt8(5 + next() % 12)
    }

    /// The next connection event's data channel (§4.5.8.2: unmapped = (last + hop) mod 37; every channel used).
    mutating func advance() {
        channel = UInt8((Int(channel) + Int(hopIncrement)) % 37)
    }

    /// The rules of §2.1.2 for a connection's access address: not the advertising one nor one bit from it, no run of
    /// more than six equal bits, at most 24 transitions, at least two transitions in the six most significant bits.
    static func isValidAccessAddress(_ address: UInt32) -> Bool {
        let advertising = AdvertisingChannelPDU.accessAddress
        guard address != advertising, (address ^ advertising).nonzeroBitCount != 1 else { return false }
        var run = 1, transitions = 0, topTransitions = 0
        for bit in 1..<32 {
            if (address >> bit & 1) == (address >> (bit - 1) & 1) {
                run += 1
                if run > 6 { return false }
            } else {
                run = 1
                transitions += 1
                if bit >= 27 { topTransitions += 1 }
            }
        }
        return transitions <= 24 && topTransitions >= 2
    }
}
