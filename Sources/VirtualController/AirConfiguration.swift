/// The radio model of a ``VirtualAir``: log-distance path loss, receiver sensitivity, RSSI jitter, packet loss
/// and link-layer pacing. Defaults are those of a quiet room with BLE-class radios.
///
/// RSSI (dBm) = txPower − (referenceLoss + 10 · exponent · log10(distance / 1 m)), distances below 0.1 m count as
/// 0.1 m; plus a uniform jitter in ±``rssiJitter`` when set. A packet whose RSSI is below ``sensitivity`` (moved by
/// ``AirTime/sensitivityGain(_:)`` for the PHY it is sent on) is not heard; a heard packet is still lost with
/// probability ``packetLoss``.
///
/// Connection events come in two models. By default (``realRadioTiming`` false) an event's exchanges all happen
/// at its anchor, at most ``maximumExchangesPerEvent`` of them: radio time is free and the stack's own cost is
/// what a benchmark sees. With ``realRadioTiming`` each exchange takes the air time of its two packets on their
/// PHYs plus two T_IFS (``AirTime``), one after the other; the event goes on while both ends have more data and
/// another exchange as long as the last one fits before the next anchor (§4.5.1, §4.5.6), and the controllers
/// report completed packets after each exchange. Throughput and latency measured on the air's clock are then those
/// of a real link with the same PHY, data length, MTU and interval.
public struct AirConfiguration: Hashable, Sendable {
    /// Path loss at 1 m (dB).
    public var referenceLoss: Double
    /// Path-loss exponent (2 in free space, 2.5...4 indoors).
    public var pathLossExponent: Double
    /// Receiver sensitivity (dBm): weaker packets are not heard.
    public var sensitivity: Double
    /// Half-width of the uniform RSSI jitter (dB); 0 for none.
    public var rssiJitter: Double
    /// Probability (0...1) that a heard packet is lost anyway.
    public var packetLoss: Double
    /// The most PDU exchanges (central packet + peripheral answer) in one connection event when radio time is
    /// free; with ``realRadioTiming`` the interval bounds an event instead.
    public var maximumExchangesPerEvent: Int
    /// Whether packets take their air time (see the type's notes).
    public var realRadioTiming: Bool

    public init(referenceLoss: Double = 40, pathLossExponent: Double = 2.0, sensitivity: Double = -95,
                rssiJitter: Double = 0, packetLoss: Double = 0, maximumExchangesPerEvent: Int = 32,
                realRadioTiming: Bool = false) {
        self.realRadioTiming = realRadioTiming
        self.referenceLoss = referenceLoss
        self.pathLossExponent = pathLossExponent
        self.sensitivity = sensitivity
        self.rssiJitter = rssiJitter
        self.packetLoss = packetLoss
        self.maximumExchangesPerEvent = maximumExchangesPerEvent
    }
}

/// A device position on the air, in metres.
public struct AirPosition: Hashable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var z: Double

    public init(x: Double = 0, y: Double = 0, z: Double = 0) {
        self.x = x
        self.y = y
        self.z = z
    }

    public static let origin = AirPosition()

    /// The Euclidean distance in metres.
    public func distance(to other: AirPosition) -> Double {
        let dx = x - other.x, dy = y - other.y, dz = z - other.z
        return (dx * dx + dy * dy + dz * dz).squareRoot()
    }

    public var description: String { "(\(x), \(y), \(z)) m" }
}

/// The air's seeded random source (SplitMix64): the only randomness of the simulation, drawn on the air's loop in
/// a deterministic order, so one seed replays one run.
struct AirRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
}
