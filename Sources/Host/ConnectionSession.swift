import ATT
import BluetoothRuntime
import BluetoothCore
import DequeModule
import GATT
import L2CAP
import BluetoothEngine

/// The protocol state of one LE connection above HCI (Core 5.4 Vol 3 Part A L2CAP, Part F ATT, Part G GATT,
/// Part H SMP): the connection's ``L2CAPLink`` (fixed channels, signaling, credit-based channels), its table of
/// ATT bearers (``ATTBearerTable``: the one on the ATT fixed channel and the Enhanced ATT bearers, each with its
/// ``GATTClient``), its Security Manager, and the completions of the operations the owner started on them.
/// The connection's share of the stack-wide ``GATTServer`` lives in that server, keyed by the connection handle.
///
/// Kept in the host's connection table and mutated only on the host's event loop; the machines (values) are
/// sans-I/O and the host carries out their actions (`HostStack+Wiring.swift`). A class: every ACL packet and every
/// action checks `connections[handle]?.session` and changes one machine in place, and as a value each check
/// copied all of it (a quarter of the notification benchmark's time). Only the connection record holds it;
/// once the record leaves the table (disconnection) the session is closed and dropped.
final class ConnectionSession {
    typealias GATTCompletion = (Result<GATTProcedureResult, GATTClientError>) -> Void
    typealias ChannelOpenCompletion = (Result<L2CAPChannelInfo, HostError>) -> Void
    typealias ChannelCloseCompletion = (Result<Void, HostError>) -> Void
    typealias ChannelSendCompletion = (Result<Void, HostError>) -> Void
    typealias ParameterUpdateCompletion = (Result<Bool, HostError>) -> Void

    /// The connection's handle.
    let handle: UInt16
    /// Where the session reports that its deadlines may have moved.
    unowned let deadlines: SessionDeadlines
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Reported to ``deadlines`` and not asked again yet.
    var deadlineChanged = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// True while the connection is in the host's table: cleared the moment its record leaves it (Disconnection
    /// Complete, shutdown), so the actions still being carried out for the session stop without looking the
    /// connection up again by handle.
    var isOpen = true

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var link: L2CAPLink { didSet { noteDeadlineChange() } }
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The connection's ATT bearers: ``ATTBearerKey/fixed`` from the start, Enhanced ATT bearers as their channels
    /// open (`HostStack+EATT.swift`).
    var bearers: ATTBearerTable { didSet { noteDeadlineChange() } }
    /// Our own Exchange MTU Request on the fixed bearer (the only one that exchanges), when one is pending.
    var mtuExchangeRequest: ATTBearerRequestID?
    var mtuExchangeCompletion: ((Result<Int, HostError>) -> Void)?
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var channelOpens: [L2CAPChannelIdentifier: ChannelOpenCompletion] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var channelCloses: [L2CAPChannelIdentifier: [ChannelCloseCompletion]] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// SDUs sent on a credit-based channel whose K-frames still wait for the peer's credits: completed when the
    /// channel's queue drains (``L2CAPLinkAction/creditsAvailable(_:)``), failed when the channel or link ends.
    var channelSends: [L2CAPChannelIdentifier: [ChannelSendCompletion]] = [:]
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Our Connection Parameter Update Requests (Peripheral), oldest first.
    var parameterUpdates: Deque<ParameterUpdateCompletion> = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The owner found the send queue full; ``HostEvent/readyToSend(handle:)`` is due when it drains.
    var waitingForSendRoom = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The link's security as the GATT server checks it (encryption from Encryption Change; the rest from SMP).
    var security = GATTLinkSecurity.open
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Test hook: requests from the peer are dropped unanswered (to provoke the peer's ATT timeout).
    var ignoresATTRequests = false
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The connection's Security Manager (nil when security is disabled).
    var securityLink: SecurityLink? { didSet { noteDeadlineChange() } }

    /// Where automatic EATT stands on this connection (`HostStack+EATT.swift`).
    enum EnhancedATTProgress: Equatable {
        /// Not tried (the link was never encrypted, or EATT is off).
        case idle
        /// Reading the peer's Server Supported Features / writing Client Supported Features.
        case discovering
        /// Done: bearers requested (or the peer does not support EATT).
        case settled
    }

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// Where each ``GATTClientLane`` with procedures still running sends them, and how many are running. A lane
    /// leaves the table when its last procedure completes.
    var lanes: [GATTClientLane: (bearer: ATTBearerKey, running: Int)] = [:]

    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    var enhancedProgress = EnhancedATTProgress.idle
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// The local CIDs of our EATT channel requests still waiting for the peer's answer.
    var enhancedPending: Set<L2CAPChannelIdentifier> = []
    /// An `openEnhancedATTBearers` call waiting for its channels.
    struct EnhancedOpen {
        var requested: [L2CAPChannelIdentifier]
        var waiting: Set<L2CAPChannelIdentifier>
        /// Why the last refused channel failed.
        var failure: L2CAPChannelConnectFailure?
        var completion: ((Result<[L2CAPChannelIdentifier], HostError>) -> Void)?
    }
    var enhancedOpens: [EnhancedOpen] = []
    #if !DEBUG
    @exclusivity(unchecked)
    #endif
    /// `reconfigureEnhancedATT` completions, by the first channel of the request.
    var reconfigures: [L2CAPChannelIdentifier: (Result<Void, HostError>) -> Void] = [:]

    init(handle: UInt16, role: ConnectionRole, preferredMTU: Int, deadlines: SessionDeadlines) {
        self.handle = handle
        self.deadlines = deadlines
        link = L2CAPLink(role: role == .central ? .central : .peripheral)
        bearers = ATTBearerTable(fixed: SessionBearer(
            key: .fixed, isInitiator: false, bearer: ATTBearer(preferredMTU: preferredMTU), client: GATTClient(mtu: ATTMTU.leDefault)))
        noteDeadlineChange()
    }

    /// The earliest deadline of the link, the bearers and the Security Manager.
    var nextDeadline: StackInstant? {
        func earlier(_ one: StackInstant?, _ other: StackInstant?) -> StackInstant? {
            guard let one else { return other }
            guard let other else { return one }
            return min(one, other)
        }
        // The link is asked in place (its getter on the stored link copied it); the access would report a change
        // to ``deadlines``, but this is asked only by ``SessionDeadlines`` while the session's change is noted.
        let linkDeadline = inPlace(&link) { $0.nextDeadline }
        return earlier(earlier(linkDeadline, bearers.nextDeadline), securityLink?.smp.nextDeadline)
    }

    private func noteDeadlineChange() {
        guard !deadlineChanged else { return }
        deadlineChanged = true
        deadlines.noteChange(self)
    }

    /// Operations of the owner waiting for an answer on this connection.
    var pendingOperationCount: Int {
        bearers.reduce(0) { $0 + $1.completions.count } + enhancedOpens.count
            + reconfigures.count + (mtuExchangeCompletion == nil ? 0 : 1) + channelOpens.count + channelCloses.values.reduce(0) { $0 + $1.count }
            + channelSends.values.reduce(0) { $0 + $1.count } + parameterUpdates.count
            + (securityLink?.pendingCount ?? 0)
    }
}
