import BluetoothRuntime
import Host
import L2CAP
import StackLauncher
import BluetoothEngine

/// An LE credit-based channel (Core 5.4 Vol 3 Part A §4.22–§4.24, §10.1) of a host backend, as the façade's
/// `CBL2CAPChannel` sees it: received SDUs in order, `send` taking at most one SDU (the peer's MTU) per call.
///
/// Flow control: at most 8 SDUs handed to the loop and not yet sent to the controller (an SDU's completion waits
/// for the peer's credits to drain the channel's queue); after that, or while the connection's ACL send queue is
/// full (`isReadyToSend`), `send` takes nothing and `.canSend` follows when there is room. Events that
/// arrive before the façade calls `start` are kept and delivered first, on the stack's loop.
final class EngineL2CAPChannel: CBL2CAPChannelBackend, Sendable {
    static let inFlightLimit = 8

    struct Key: Hashable {
        var connection: UInt16
        var channel: L2CAPChannelIdentifier
    }

    private struct State {
        var sink: (@Sendable (CBL2CAPChannelBackendEvent) -> Void)?
        var started = false
        var buffered: [CBL2CAPChannelBackendEvent] = []
        var inFlight = 0
        var blocked = false
        var owesCanSend = false
        var closed = false
    }

    let psm: CBL2CAPPSM
    let peer: CBBackendPeer
    let key: Key
    private let remoteMTU: Int
    private let stack: any OpenedStack
    private let state = LockedValue(State())

    init(stack: any OpenedStack, connection: UInt16, info: L2CAPChannelInfo, peer: CBBackendPeer) {
        self.stack = stack
        self.psm = info.psm
        self.peer = peer
        key = Key(connection: connection, channel: info.localCID)
        remoteMTU = Int(info.remoteMTU)
    }

    func start(_ events: @escaping @Sendable (CBL2CAPChannelBackendEvent) -> Void) {
        state.withLock { $0.sink = events }
        stack.engine.eventLoop.execute { [self] in
            let (sink, buffered) = state.withLock { state -> ((@Sendable (CBL2CAPChannelBackendEvent) -> Void)?, [CBL2CAPChannelBackendEvent]) in
                state.started = true
                defer { state.buffered = [] }
                return (state.sink, state.buffered)
            }
            for event in buffered { sink?(event) }
        }
    }

    func send(_ bytes: [UInt8]) -> Int {
        let count = min(bytes.count, remoteMTU)
        guard count > 0 else { return 0 }
        let accepted = state.withLock { state -> Bool in
            guard !state.closed, !state.blocked, state.inFlight < Self.inFlightLimit else {
                if !state.closed { state.owesCanSend = true }
                return false
            }
            state.inFlight += 1
            return true
        }
        guard accepted else { return 0 }
        let host = stack.engine, key = self.key
        host.sendL2CAPSDU(connectionHandle: key.connection, channel: key.channel, Array(bytes.prefix(count))) { [self] _ in
            let ready = host.isReadyToSend(connectionHandle: key.connection)
            state.withLock { state in
                state.inFlight -= 1
                if !ready { state.blocked = true }
            }
            maybeCanSend()
        }
        return count
    }

    func close() {
        stack.engine.closeL2CAPChannel(connectionHandle: key.connection, channel: key.channel)
    }

    // MARK: From the backend, on the loop

    func deliver(_ event: CBL2CAPChannelBackendEvent) {
        let sink = state.withLock { state -> (@Sendable (CBL2CAPChannelBackendEvent) -> Void)? in
            if case .closed = event { state.closed = true }
            guard state.started else {
                state.buffered.append(event)
                return nil
            }
            return state.sink
        }
        sink?(event)
    }

    func connectionReady() {
        state.withLock { $0.blocked = false }
        maybeCanSend()
    }

    private func maybeCanSend() {
        let due = state.withLock { state -> Bool in
            guard state.owesCanSend, !state.blocked, !state.closed, state.inFlight < Self.inFlightLimit / 2 else { return false }
            state.owesCanSend = false
            return true
        }
        if due { deliver(.canSend) }
    }
}

/// The channels of one backend, by connection and local CID, and the routing of the host's L2CAP events.
final class EngineL2CAPChannels: Sendable {
    private let channels = LockedValue<[EngineL2CAPChannel.Key: EngineL2CAPChannel]>([:])

    func add(_ channel: EngineL2CAPChannel) {
        channels.withLock { $0[channel.key] = channel }
    }

    /// The channels open on `psm` (the server side's: a central's channels to a peer's PSM share its number).
    func open(onPSM psm: CBL2CAPPSM) -> [EngineL2CAPChannel] {
        channels.load().values.filter { $0.psm == psm }
    }

    /// Routes an L2CAP or readiness event; true when it was one.
    @discardableResult
    func handle(_ event: HostEvent) -> Bool {
        switch event {
        case .l2capSDU(let handle, let channel, let sdu):
            channels.load()[EngineL2CAPChannel.Key(connection: handle, channel: channel)]?.deliver(.received(sdu))
        case .l2capChannelClosed(let handle, let channel, _):
            let removed = channels.withLock { $0.removeValue(forKey: EngineL2CAPChannel.Key(connection: handle, channel: channel)) }
            removed?.deliver(.closed)
        case .l2capCreditsAvailable(let handle, let channel):
            channels.load()[EngineL2CAPChannel.Key(connection: handle, channel: channel)]?.connectionReady()
        case .readyToSend(let handle):
            for (key, channel) in channels.load() where key.connection == handle { channel.connectionReady() }
            return false
        default:
            return false
        }
        return true
    }
}
