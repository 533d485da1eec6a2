import BluetoothCore

/// Joins the pieces of LE Extended Advertising Reports (Core 5.4 Vol 4 Part E §7.7.65.13): a controller cuts
/// advertising data longer than one event holds into reports with data status 0b01 "incomplete, more data to
/// come", ending with 0b00 "complete" or 0b10 "incomplete, truncated, no more to come". Pieces are joined per
/// advertiser, SID and kind (advertisement or scan response); a truncated advertisement is dropped (its last AD
/// structure would be cut), as is one that grows past 1,650 octets. At most ``capacity`` advertisements are being
/// joined at once (the oldest is dropped first), so a flood of unfinished chains costs bounded memory. A plain value:
/// the host's scanner owns one, and so does a capture reader (``pendingLength(of:)`` tells it how much is held).
public struct ExtendedReportAssembler: Sendable {
    private struct Key: Hashable, Sendable {
        var address: BluetoothAddress
        var addressType: UInt8
        var sid: UInt8
        var scanResponse: Bool
    }

    /// What became of a piece.
    public enum Outcome: Equatable, Sendable {
        /// The whole advertisement: the last piece with all the data.
        case complete(LEExtendedAdvertisingReport)
        /// More pieces are to come.
        case pending
        /// The advertisement was truncated by the controller or grew past the limit: nothing to report.
        case dropped
    }

    public static let capacity = 32
    public static let maximumLength = 1650

    private var pending: [Key: [UInt8]] = [:]
    private var order: [Key] = []

    public init() {}

    public var pendingCount: Int { pending.count }

    public mutating func reset() {
        pending = [:]
        order = []
    }

    /// How many octets of the advertisement `report` continues are held so far (0 when it starts one).
    public func pendingLength(of report: LEExtendedAdvertisingReport) -> Int {
        pending[Self.key(of: report)]?.count ?? 0
    }

    /// Takes one report's piece.
    public mutating func add(_ report: LEExtendedAdvertisingReport) -> Outcome {
        let key = Self.key(of: report)
        let status = report.dataStatus
        let data = (pending[key] ?? []) + report.data
        guard data.count <= Self.maximumLength else {
            forget(key)
            return .dropped
        }
        switch status {
        case 0b00:
            forget(key)
            var whole = report
            whole.data = data
            return .complete(whole)
        case 0b01:
            if pending[key] == nil {
                if order.count >= Self.capacity { forget(order[0]) }
                order.append(key)
            }
            pending[key] = data
            return .pending
        default:
            forget(key)
            return .dropped
        }
    }

    private static func key(of report: LEExtendedAdvertisingReport) -> Key {
        Key(address: report.address, addressType: report.addressType.rawValue, sid: report.advertisingSID,
            scanResponse: report.eventType & 0x08 != 0)
    }

    private mutating func forget(_ key: Key) {
        guard pending.removeValue(forKey: key) != nil else { return }
        order.removeAll { $0 == key }
    }
}
