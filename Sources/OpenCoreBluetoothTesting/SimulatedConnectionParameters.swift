/// The connection parameters a simulated peripheral asks the app's central for once connected (L2CAP Connection
/// Parameter Update Request, Core 5.4 Vol 3 Part A §4.20; the Peripheral Preferred Connection Parameters of Vol 3
/// Part C §12.3), as accessories do to save power or to go faster, and as Linux does by itself
/// (``PeripheralSpec/Builder/requestingConnectionParameters(interval:latency:supervisionTimeout:)``).
public struct SimulatedConnectionParameters: Sendable, Hashable {
    /// The connection interval wanted (7.5 ms...4 s, in steps of 1.25 ms).
    public var interval: ClosedRange<Duration>
    /// The connection events the peripheral may skip (0...499).
    public var latency: Int
    /// The supervision timeout (100 ms...32 s, in steps of 10 ms).
    public var supervisionTimeout: Duration

    public init(interval: ClosedRange<Duration>, latency: Int = 0, supervisionTimeout: Duration = .seconds(4)) {
        self.interval = interval
        self.latency = latency
        self.supervisionTimeout = supervisionTimeout
    }

    /// A duration in units of `unit` microseconds, within `range`.
    static func units(_ duration: Duration, of unit: Int64, in range: ClosedRange<UInt16>) -> UInt16 {
        let microseconds = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return UInt16(clamping: min(max(microseconds / unit, Int64(range.lowerBound)), Int64(range.upperBound)))
    }

    /// An interval in 1.25 ms units as a duration.
    static func interval(units: UInt16) -> Duration { .microseconds(Int64(units) * 1250) }
}
