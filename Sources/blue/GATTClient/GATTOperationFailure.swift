/// Why a GATT operation failed, as the commands print it: "Read Not Permitted (0x02) (handle 0x0012)".
struct GATTOperationFailure: Error, Sendable, CustomStringConvertible {
    var description: String
}

/// What a subscription reports.
enum SubscriptionEvent: Sendable {
    case value([UInt8])
    /// The link ended (the reason as text).
    case disconnected(String)
    /// Subscribing failed.
    case failed(GATTOperationFailure)
}

