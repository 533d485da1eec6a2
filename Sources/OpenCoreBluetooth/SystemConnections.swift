import BluetoothCore
import BluetoothRuntime
import Foundation

/// The connections of "the system" as iOS keeps them, for `registerForConnectionEvents(options:)` and
/// `retrieveConnectedPeripherals(withServices:)` (corebluetooth-api.md §2.2): on Apple platforms both look at every
/// link of the device, whichever app made it. Here the system is the managers made from one ``CBBackendProvider``
/// (the process's default one: every manager of the program): each manager's stack reports its links (a central
/// manager's to peripherals, a peripheral manager's from centrals), and each reports what it learnt of a peer's
/// services (advertised service UUIDs, including the overflow area and service data, and discovered services), so
/// that a peer is found by service before anyone discovered it.
///
/// Links of other processes on the air are not visible (each process has its own stacks, as each phone has), except
/// for a program on the Bluetooth service: there every program's links are the system's (``setServiceLinks(_:from:)``).
/// Thread-safe (one lock); the observers are called from the thread posting and hop to their own queues.
public final class SystemConnections: Sendable {
    /// An empty system: no links, nothing learnt.
    public init() {}

    private struct Observer {
        weak var manager: CBCentralManager?
    }

    private struct State {
        var links: [CBBackendPeer: Int] = [:]
        var services: [CBBackendPeer: Set<BluetoothUUID>] = [:]
        var observers: [ObjectIdentifier: Observer] = [:]
        /// The links of the Bluetooth service (every program's), as each manager on it last heard them.
        var serviceLinks: [ObjectIdentifier: Set<CBBackendPeer>] = [:]

        /// The peers linked to a stack of this process or of the Bluetooth service.
        var linkedPeers: Set<CBBackendPeer> {
            Set(links.keys).union(serviceLinks.values.joined())
        }
    }

    private let state = LockedValue(State())

    /// The most peers whose services are kept: past it, those of peers not connected are forgotten (a scan of a
    /// crowded place must not grow memory without bound).
    static let serviceMemoryLimit = 4096

    /// A manager that wants connection events (held weakly; a released manager stops receiving them).
    func observe(_ manager: CBCentralManager) {
        state.withLock { $0.observers[ObjectIdentifier(manager)] = Observer(manager: manager) }
    }

    /// Service UUIDs a peer offers (advertised or discovered).
    func learn(services: some Sequence<BluetoothUUID>, of peer: CBBackendPeer) {
        state.withLock { state in
            if state.services.count >= Self.serviceMemoryLimit, state.services[peer] == nil {
                state.services = state.services.filter { state.links[$0.key] != nil }
            }
            state.services[peer, default: []].formUnion(services)
        }
    }

    /// The service UUIDs known for `peer`.
    func services(of peer: CBBackendPeer) -> Set<BluetoothUUID> {
        state.withLock { $0.services[peer] ?? [] }
    }

    /// The peers some stack of this process (or of the Bluetooth service, for a program on it) is linked to, with
    /// their known services.
    func connectedPeers() -> [(peer: CBBackendPeer, services: Set<BluetoothUUID>)] {
        state.withLock { state in state.linkedPeers.map { ($0, state.services[$0] ?? []) } }
    }

    /// What a manager on the Bluetooth service heard of the service's links (every program's, with the services
    /// known of each peer; empty when it leaves the service): they count as the system's connections, and the
    /// observers hear of peers that appear or go.
    func setServiceLinks(_ links: [CBBackendPeer: Set<BluetoothUUID>], from source: ObjectIdentifier) {
        let (appeared, gone, observers, services) = state.withLock { state
            -> (Set<CBBackendPeer>, Set<CBBackendPeer>, [CBCentralManager], [CBBackendPeer: Set<BluetoothUUID>]) in
            let before = state.linkedPeers
            state.serviceLinks[source] = links.isEmpty ? nil : Set(links.keys)
            for (peer, known) in links where !known.isEmpty { state.services[peer, default: []].formUnion(known) }
            let after = state.linkedPeers
            state.observers = state.observers.filter { $0.value.manager != nil }
            return (after.subtracting(before), before.subtracting(after), state.observers.values.compactMap(\.manager), state.services)
        }
        for peer in appeared.sorted(by: { $0.address < $1.address }) {
            for manager in observers { manager.connectionEvent(.peerConnected, peer: peer, services: services[peer] ?? []) }
        }
        for peer in gone.sorted(by: { $0.address < $1.address }) {
            for manager in observers { manager.connectionEvent(.peerDisconnected, peer: peer, services: services[peer] ?? []) }
        }
    }

    /// A stack of this process linked to `peer` (`.peerConnected`) or lost its link (`.peerDisconnected`); the
    /// observers hear of the first link to a peer and of the last one ending.
    func post(_ event: CBConnectionEvent, peer: CBBackendPeer) {
        let (changed, observers, services) = state.withLock { state -> (Bool, [CBCentralManager], Set<BluetoothUUID>) in
            let wasLinked = state.linkedPeers.contains(peer)
            let before = state.links[peer] ?? 0
            let after = event == .peerConnected ? before + 1 : max(before - 1, 0)
            state.links[peer] = after == 0 ? nil : after
            state.observers = state.observers.filter { $0.value.manager != nil }
            let changed = wasLinked != state.linkedPeers.contains(peer)
            return (changed, state.observers.values.compactMap(\.manager), state.services[peer] ?? [])
        }
        guard changed else { return }
        for manager in observers { manager.connectionEvent(event, peer: peer, services: services) }
    }
}

/// What `registerForConnectionEvents(options:)` asked for (`CBConnectionEventMatchingOption`).
struct ConnectionEventMatching: Sendable, Hashable {
    /// Services the peer must offer one of (nil: any).
    var serviceUUIDs: Set<BluetoothUUID>?
    /// Peer identifiers (nil: any).
    var peripheralUUIDs: Set<UUID>?

    /// Reads the options: `serviceUUIDs` an array of `CBUUID` (Apple takes at most 4; more are kept), and
    /// `peripheralUUIDs` an array of `UUID` (or `NSUUID`). No option (or nil) matches every peer, as iOS does.
    init(options: [CBConnectionEventMatchingOption: Any]?) {
        if let services = options?[.serviceUUIDs] as? [CBUUID] { serviceUUIDs = Set(services.map(\.bluetoothUUID)) }
        if let identifiers = options?[.peripheralUUIDs] as? [UUID] {
            peripheralUUIDs = Set(identifiers)
        } else if let identifiers = options?[.peripheralUUIDs] as? [NSUUID] {
            peripheralUUIDs = Set(identifiers.map { $0 as UUID })
        }
    }

    /// A peer matches when no option narrows the events, or it is one of the identifiers, or it offers one of the
    /// services (either is enough when both are given).
    func matches(identifier: UUID, services: Set<BluetoothUUID>) -> Bool {
        if serviceUUIDs == nil, peripheralUUIDs == nil { return true }
        if let peripheralUUIDs, peripheralUUIDs.contains(identifier) { return true }
        if let serviceUUIDs, !serviceUUIDs.isDisjoint(with: services) { return true }
        return false
    }
}

/// One manager's links as posted to ``SystemConnections``: each is posted once when it starts and once when it
/// ends (also when the manager leaves `.poweredOn` or is released, which end its links without an event).
final class PostedLinks: Sendable {
    private let peers = LockedValue<Set<CBBackendPeer>>([])
    let system: SystemConnections

    init(system: SystemConnections) {
        self.system = system
    }

    func started(_ peer: CBBackendPeer) {
        if peers.withLock({ $0.insert(peer).inserted }) { system.post(.peerConnected, peer: peer) }
    }

    func ended(_ peer: CBBackendPeer) {
        if peers.withLock({ $0.remove(peer) != nil }) { system.post(.peerDisconnected, peer: peer) }
    }

    func allEnded() {
        let all = peers.withLock { peers in
            defer { peers = [] }
            return peers
        }
        for peer in all { system.post(.peerDisconnected, peer: peer) }
    }
}
