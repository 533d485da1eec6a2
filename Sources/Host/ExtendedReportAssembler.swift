import BluetoothCore
import HCI

/// Joins the pieces of LE Extended Advertising Reports (Core 5.4 Vol 4 Part E §7.7.65.13): a controller cuts
/// advertising data longer than one event holds into reports with data status 0b01 "incomplete, more data to
/// come", ending with 0b00 "complete" or 0b10 "incomplete, truncated, no more to come". Pieces are joined per
/// advertiser, SID and kind (advertisement or scan response); a truncated advertisement is dropped (its last AD
/// structure would be cut), as is one that grows past 1,650 octets. At most ``capacity`` advertisements are being
/// joined at once (the oldest is dropped first), so a flood of unfinished chains costs bounded memory. Confined to
/// the host's loop.
struct ExtendedReportAssembler {
    private struct Key: Hashable {
        var address: BluetoothAddress
        var addressType: UInt8
        var sid: UInt8
        var scanResponse: Bool
    }

    /// What became of a piece.
    enum Outcome: Equatable {
        /// The whole advertisement: the last piece with all the data.
        case complete(LEExtendedAdvertisingReport)
        /// More pieces are to come.
        case pending
        /// The advertisement was truncated by the controller or grew past the limit: nothing to report.
        case dropped
    }

    static let capacity = 32
    static let maximumLength = 1650

    private var pending: [Key: [UInt8]] = [:]
    private var order: [Key] = []

    var pendingCount: Int { pending.count }

    mutating func reset() {
        pending = [:]
        order = []
    }

    mutating func add(_ report: LEExtendedAdvertisingReport) -> Outcome {
        let key = Key(address: report.address, addressType: report.addressType.rawValue, sid: report.advertisingSID,
                      scanResponse: report.eventType & 0x08 != 0)
        let status = (report.eventType >> 5) & 0b11
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

    private mutating func forget(_ key: Key) {
        guard pending.removeValue(forKey: key) != nil else { return }
        order.removeAll { $0 == key }
    }
}
