/// How far a simulated device is from the app, as Nordic's mock names it (`CBMProximity`): a distance on the
/// world's air, whose path loss model (Core 5.4 has none; DESIGN.md "The virtual controller and the air") turns it
/// into the RSSI the app reads, and out of range into silence.
public enum SimulatedProximity: Sendable, CaseIterable {
    /// 0.3 m: about −30 dBm.
    case immediate
    /// 2 m: about −46 dBm.
    case near
    /// 30 m: about −70 dBm.
    case far
    /// 10 km: nothing is heard; links time out.
    case outOfRange

    /// The distance from the app, in metres.
    public var distance: Double {
        switch self {
        case .immediate: 0.3
        case .near: 2
        case .far: 30
        case .outOfRange: 10_000
        }
    }
}
