public import OpenCoreBluetooth

/// How a simulated peripheral answers one request of the app (Core 5.4 Vol 3 Part F §3.4: a response, an Error
/// Response, or none), as the test decides: the value (or success), an ATT error, after a delay, never (the app's
/// request then meets ATT's 30-second transaction timeout, §3.3.3, and the link ends), or by dropping the link.
///
/// Users of Nordic's CoreBluetooth mock return a `Result` from their spec's delegate; ``result(_:)`` takes one.
public enum SimulatedResponse<Value: Sendable>: Sendable {
    /// Answered with the value (a read) or success (a write, a subscription).
    case success(Value)
    /// Answered with an ATT error code: `CBATTError.Code` values, or the application's own 0x80–0x9F.
    case attError(UInt8)
    /// Not answered at all: the app's request times out after 30 s, and its link with it.
    case never
    /// The peripheral drops the link instead of answering (the app sees `didDisconnectPeripheral` with an error).
    case disconnect
    /// `response`, after `delay`.
    indirect case delayed(Duration, SimulatedResponse<Value>)

    /// An ATT error answer (`.error(.insufficientAuthentication)`).
    public static func error(_ code: CBATTError.Code) -> SimulatedResponse { .attError(UInt8(truncatingIfNeeded: code.rawValue)) }

    /// A `Result` as Nordic's `CBMPeripheralSpecDelegate` methods return it: success, or the error's ATT code
    /// (a `CBATTError`'s, else Unlikely Error 0x0E).
    public static func result(_ result: Result<Value, any Error>) -> SimulatedResponse {
        switch result {
        case .success(let value): return .success(value)
        case .failure(let error): return .attError((error as? CBATTError)?.attErrorCode ?? 0x0E)
        }
    }

    /// This answer, `delay` later.
    public func after(_ delay: Duration) -> SimulatedResponse { .delayed(delay, self) }
}
