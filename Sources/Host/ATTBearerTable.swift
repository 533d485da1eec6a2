import ATT
import BluetoothCore
import GATT
import L2CAP

/// Names one ATT bearer of a connection (Core 5.4 Vol 3 Part F §3.2.11): the one on the ATT fixed channel, or an
/// Enhanced ATT bearer by the local CID of its L2CAP channel. The key also says how the bearer's PDUs travel:
/// whole L2CAP PDUs on CID 0x0004 (`L2CAPLink.sendFixed`) or SDUs of an enhanced credit-based channel
/// (`L2CAPLink.send(sdu:on:)`). Ordered: the fixed bearer first, then by CID.
enum ATTBearerKey: Comparable {
    /// The unenhanced bearer on the ATT fixed channel (CID 0x0004), there for the connection's whole life.
    case fixed
    /// An Enhanced ATT bearer on the L2CAP channel of this local CID (SPSM 0x0027).
    case enhanced(L2CAPChannelIdentifier)

    /// The bearer as the GATT server names it (the local CID; 0x0004 for the fixed one).
    init(_ bearer: GATTBearerID) {
        self = bearer.isEnhanced ? .enhanced(L2CAPChannelIdentifier(bearer.rawValue)) : .fixed
    }

    /// The bearer as the GATT server names it.
    var gattBearer: GATTBearerID {
        switch self {
        case .fixed: .unenhanced
        case .enhanced(let cid): GATTBearerID(cid.rawValue)
        }
    }
}

/// One ATT bearer of a connection: its ATT machine, the GATT client running on it, the bearer requests that
/// client has in flight (their answers go to it through the bridge) and the completions of its procedures.
struct SessionBearer {
    let key: ATTBearerKey
    /// Whether we opened the bearer's channel: our client's procedures run on the fixed bearer and on the
    /// Enhanced ATT bearers we opened; the peer's client uses the ones it opened, where our server's notifications
    /// go (`GATTServer.openBearer(notifications:)`). False for the fixed bearer, which nobody opens.
    let isInitiator: Bool
    var bearer: ATTBearer
    var client: GATTClient
    /// Bearer requests enqueued for ``client``.
    var requests: Set<ATTBearerRequestID> = []
    var completions: [GATTOperationID: ConnectionSession.GATTCompletion] = [:]
}

/// The ATT bearers of one connection, in key order: the fixed bearer (always there while the session lives),
/// then the Enhanced ATT bearers by CID. A handful at most, so a lookup is a short search of an array (no hashing
/// on the per-packet path), iteration is in a stable order, and ``modify(_:_:)`` changes an entry in place.
struct ATTBearerTable: RandomAccessCollection {
    private var entries: [SessionBearer]

    init(fixed: SessionBearer) {
        entries = [fixed]
    }

    var startIndex: Int { entries.startIndex }
    var endIndex: Int { entries.endIndex }
    subscript(position: Int) -> SessionBearer { entries[position] }

    /// The entry of `key` (a copy; ``modify(_:_:)`` changes it).
    subscript(key: ATTBearerKey) -> SessionBearer? {
        firstIndex(of: key).map { entries[$0] }
    }

    func contains(_ key: ATTBearerKey) -> Bool {
        firstIndex(of: key) != nil
    }

    /// The keys, in order (a snapshot to walk while the table changes).
    var keys: [ATTBearerKey] { entries.map(\.key) }

    /// Runs `body` on the entry of `key` in place; nil when there is none.
    mutating func modify<R, E: Error>(_ key: ATTBearerKey, _ body: (inout SessionBearer) throws(E) -> R) throws(E) -> R? {
        guard let index = firstIndex(of: key) else { return nil }
        return try body(&entries[index])
    }

    /// Adds `entry` in key order (replacing an entry of the same key).
    mutating func insert(_ entry: SessionBearer) {
        if let index = firstIndex(of: entry.key) {
            entries[index] = entry
        } else {
            entries.insert(entry, at: entries.firstIndex { $0.key > entry.key } ?? entries.endIndex)
        }
    }

    /// Removes the entry of `key`.
    @discardableResult
    mutating func remove(_ key: ATTBearerKey) -> SessionBearer? {
        firstIndex(of: key).map { entries.remove(at: $0) }
    }

    /// The earliest deadline of the bearers.
    var nextDeadline: StackInstant? {
        var earliest: StackInstant?
        for index in entries.indices {
            if let deadline = entries[index].bearer.nextDeadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }

    /// A search reading only the keys in place (no entry is copied).
    private func firstIndex(of key: ATTBearerKey) -> Int? {
        for index in entries.indices where entries[index].key == key { return index }
        return nil
    }
}
