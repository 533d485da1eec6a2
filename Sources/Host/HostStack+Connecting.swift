public import BluetoothCore
import BluetoothRuntime
import HCI
public import BluetoothEngine

/// Connecting as central (Core 5.4 Vol 3 Part C §9.3.5–§9.3.6; Vol 4 Part E §7.8.12, §7.8.13): any number of
/// connects pending at once, one per peer, as iOS and Linux keep them.
///
/// The controller runs one initiation at a time (LE Create Connection, or its extended form). With one connect
/// pending it names the peer (initiator filter policy 0); with more, the host writes the oldest of them to the
/// Filter Accept List (§7.8.15–§7.8.17, as many as it holds) and initiates with filter policy 1, so the
/// controller connects to whichever is heard first (Vol 6 Part B §4.3.5). The list cannot change while an
/// initiation uses it, so a connect asked or ended meanwhile cancels the initiation (LE Create Connection Cancel)
/// and a new one starts with the new set once the controller has ended the old. A connect ends when its
/// connection is made, when it is cancelled or its own time limit passes, or when the controller fails the
/// initiation. A controller without a usable Filter Accept List (its size 0, or a command it cannot do, or
/// ``HostStack/acceptListAttempts`` passing refusals in a row) gets the connects one at a time, oldest first.
extension HostStack {
    /// A connect asked for (``connect(to:options:completion:)``) and not yet completed.
    struct ConnectRequest {
        let peer: BluetoothAddress
        let options: ConnectOptions
        let completion: (Result<Connection, HostError>) -> Void
        var deadline: StackInstant?
        /// Why the caller ended it (cancelled, or its time limit passed); it completes with this when the
        /// initiation that includes it is over, unless its connection was made first.
        var endReason: HostError?
        /// ``cancelConnect(to:completion:)`` completions waiting for the end.
        var cancels: [(Result<Void, HostError>) -> Void] = []
    }

    /// The controller's one initiation, to ``targets`` (one peer by address; more through the Filter Accept List).
    struct PendingConnect: CustomStringConvertible {
        let id: UInt64
        let targets: [BluetoothAddress]
        /// Only while the controller refused a cancel (Command Disallowed): the Connection Complete is due within a
        /// command timeout, after which the initiation is abandoned.
        var deadline: StackInstant?
        /// Why a cancel was sent (a connect ended, or the set of peers changed), nil when none.
        var cancelReason: HostError?
        /// The controller refused the cancel (Command Disallowed: the connection was being made).
        var cancelRefused = false
        /// What LE Create Connection was sent with, to send it again (``HostStack/connectRetryLimit``).
        let parameters: LECreateConnectionParameters
        /// LE Create Connection commands sent again after Connection Failed to be Established (0x3E).
        var retries = 0
        /// When the next attempt goes out; nil while an attempt is in the controller.
        var retryAt: StackInstant?
        /// The Filter Accept List is being written: nothing is in the controller to cancel yet.
        var programming = false

        var description: String {
            targets.count == 1 ? "\(targets[0])" : "any of \(targets.map(\.description).joined(separator: ", "))"
        }
    }

    /// The initiation's cancel when the peers it covers change; the connects themselves go on.
    static let initiationRestarted = HostError(.cancelled, "the initiation was restarted for another set of peers")

    /// Connects to `peer` as central. The completion comes with the connection (after ``HostEvent/connected(_:)``),
    /// or a failure: ``HostError/Code/cancelled`` after ``cancelConnect(to:completion:)``,
    /// ``HostError/Code/timedOut`` when `options.timeout` passed, ``HostError/Code/busy`` when a connect to `peer`
    /// is already pending. Connects to other peers may be pending at the same time; without a time limit a connect
    /// waits for its peer as long as it takes, as CoreBluetooth's.
    public func connect(to peer: BluetoothAddress, options: ConnectOptions = ConnectOptions(),
                        completion: @escaping @Sendable (Result<Connection, HostError>) -> Void) {
        onLoop { [self] in
            guard lifecycle == .ready else {
                return completion(.failure(HostError(.notReady, "the host stack is not running")))
            }
            guard !connectRequests.contains(where: { $0.peer == peer }) else {
                return completion(.failure(HostError(.busy, "a connect to \(peer) is already pending; cancel it first")))
            }
            connectRequests.append(ConnectRequest(peer: peer, options: options, completion: completion,
                                                  deadline: options.timeout.map { eventLoop.now + $0 }))
            armTimer()
            pumpConnects()
        }
    }

    /// Cancels the pending connect to `peer`: it completes with ``HostError/Code/cancelled``, and `completion`
    /// succeeds; if its connection was made first, the connect succeeds and `completion` fails.
    public func cancelConnect(to peer: BluetoothAddress, completion: (@Sendable (Result<Void, HostError>) -> Void)? = nil) {
        onLoop { [self] in
            endConnectRequest(peer, reason: HostError(.cancelled, "the connect to \(peer) was cancelled"), cancel: completion)
        }
    }

    /// How many times a connect is attempted again after Connection Failed to be Established (0x3E), and how long
    /// after the failure. The controller sent CONNECT_IND but heard nothing back in the first six connection events
    /// (Core 5.4 Vol 6 Part B §4.5.2): on a real radio a passing interference; BlueZ's emulator (btdev) also fails
    /// at once when the peer is not advertising at that instant, e.g. while it re-enables advertising after a
    /// disconnection. Android and iOS retry the same way; the connect's own time limit still bounds it all.
    public static let connectRetryLimit = 3
    public static let connectRetryDelay: Duration = .milliseconds(150)

    /// The Filter Accept List as the host last wrote it (tests, diagnostics; on the loop).
    package var filterAcceptList: [BluetoothAddress] { acceptList }

    // MARK: Requests

    /// The earliest time limit of the pending connects.
    var connectRequestsNextDeadline: StackInstant? {
        var earliest: StackInstant?
        for request in connectRequests {
            if let deadline = request.deadline, earliest.map({ deadline < $0 }) ?? true { earliest = deadline }
        }
        return earliest
    }

    func connectRequestsTimedOut(now: StackInstant) {
        for request in connectRequests {
            guard let deadline = request.deadline, deadline <= now else { continue }
            endConnectRequest(request.peer, reason: HostError(.timedOut, "connecting to \(request.peer) timed out"), cancel: nil)
        }
    }

    /// Ends the connect to `peer` with `reason`: at once when the controller is not initiating to it, else when its
    /// initiation is over (cancelled here).
    private func endConnectRequest(_ peer: BluetoothAddress, reason: HostError,
                                   cancel: (@Sendable (Result<Void, HostError>) -> Void)?) {
        guard let index = connectRequests.firstIndex(where: { $0.peer == peer }) else {
            cancel?(.failure(HostError(.invalidParameters, "no connect to \(peer) is pending")))
            return
        }
        if let cancel { connectRequests[index].cancels.append(cancel) }
        guard connectRequests[index].endReason == nil else { return }
        connectRequests[index].endReason = reason
        connectRequests[index].deadline = nil
        armTimer()
        guard let pending = pendingConnect, pending.targets.contains(peer) else {
            finish(connectRequests.remove(at: index), .failure(reason))
            return
        }
        // Its initiation ends first; a cancel already sent (or refused) ends it anyway.
        if pending.cancelReason == nil, !pending.cancelRefused {
            cancelPendingConnect(reason: pending.targets.count == 1 ? reason : Self.initiationRestarted)
        }
    }

    func finish(_ request: ConnectRequest, _ result: Result<Connection, HostError>) {
        request.completion(result)
        let cancelled: Result<Void, HostError> = switch result {
        case .success: .failure(HostError(.invalidParameters, "the connection to \(request.peer) was made first"))
        case .failure: .success(())
        }
        for cancel in request.cancels { cancel(cancelled) }
    }

    // MARK: Initiation

    /// The peers the controller should be initiating to: the oldest connects not ended, as many as the Filter Accept
    /// List holds (one when it cannot be used).
    private var initiationTargets: [BluetoothAddress] {
        var targets: [BluetoothAddress] = []
        let limit = max(1, acceptListSize ?? 1)
        for request in connectRequests where request.endReason == nil && targets.count < limit {
            targets.append(request.peer)
        }
        return targets
    }

    /// Starts the initiation the pending connects need, or cancels one that covers another set of peers.
    func pumpConnects() {
        guard lifecycle == .ready else { return }
        let waiting = connectRequests.lazy.filter { $0.endReason == nil }.count
        if waiting > 1, acceptListSize == nil {
            // Asked once, the first time two are pending (an initiation to one may run meanwhile).
            return readAcceptListSize()
        }
        if let pending = pendingConnect {
            if pending.cancelReason == nil, !pending.cancelRefused, pending.targets != initiationTargets {
                cancelPendingConnect(reason: Self.initiationRestarted)
            }
            return
        }
        guard waiting > 0 else { return }
        let targets = initiationTargets
        guard let first = connectRequests.first(where: { $0.peer == targets[0] }) else { return }
        nextOperationID &+= 1
        let id = nextOperationID
        let options = first.options
        let parameters: LECreateConnectionParameters
        if targets.count == 1 {
            // With controller privacy a bonded peer is named by its identity (0x02/0x03): the controller matches it
            // through its RPAs (§7.8.12).
            let peer = targets[0]
            var peerType = LEAddressType(peer.type)
            if info.usesControllerPrivacy, securityState.bonds[peer]?.peerIdentityResolvingKey != nil {
                peerType = peer.type == .public ? .publicIdentity : .randomIdentity
            }
            parameters = LECreateConnectionParameters(
                scanInterval: options.scanInterval, scanWindow: options.scanWindow, peerAddressType: peerType,
                peerAddress: peer, ownAddressType: info.ownAddressType, connection: options.parameters)
        } else {
            parameters = LECreateConnectionParameters(
                scanInterval: options.scanInterval, scanWindow: options.scanWindow, initiatorFilterPolicy: 1,
                peerAddressType: .public, peerAddress: .zero, ownAddressType: info.ownAddressType, connection: options.parameters)
        }
        pendingConnect = PendingConnect(id: id, targets: targets, parameters: parameters, programming: targets.count > 1)
        if targets.count > 1 {
            writeAcceptList(id: id)
        } else {
            sendCreateConnection(id: id, parameters)
        }
        armTimer()
    }

    /// LE Read Filter Accept List Size, then LE Clear Filter Accept List (its content is unknown until then).
    private func readAcceptListSize() {
        guard !readingAcceptListSize else { return }
        readingAcceptListSize = true
        command(.leReadFilterAcceptListSize) { [self] result in
            guard case .success(.leReadFilterAcceptListSize(.success, let size)) = result else {
                return acceptListReadFailed(result.map { answer in
                    if case .leReadFilterAcceptListSize(let status, _) = answer { .status(status) } else { .status(.unknownCommand) }
                })
            }
            guard size > 1 else { return acceptListRead(size: 0) }
            command(.leClearFilterAcceptList) { [self] result in
                guard case .success(.status(.success)) = result else { return acceptListReadFailed(result) }
                acceptList = []
                acceptListRead(size: Int(size))
            }
        }
    }

    private func acceptListRead(size: Int) {
        readingAcceptListSize = false
        acceptListSize = size
        pumpConnects()
    }

    /// Reading or clearing the list failed: given up when the controller cannot do it, else asked again a moment
    /// later (a busy controller's command timing out must not leave a never-appearing peer's connect in front of
    /// every other one for good).
    private func acceptListReadFailed(_ result: Result<HCIReturnParameters, HostError>) {
        guard !acceptListGivenUp(after: result) else { return acceptListRead(size: 0) }
        readingAcceptListSize = false
        eventLoop.schedule(after: Self.connectRetryDelay) { [weak self] in self?.pumpConnects() }
    }

    /// How many times in a row a passing refusal of the Filter Accept List is tried again before connects go one
    /// at a time.
    public static let acceptListAttempts = 5

    /// Counts a failed Filter Accept List command; true when the list is given up: the controller cannot do it
    /// (Unknown Command, Memory Capacity Exceeded, Unsupported Feature, Invalid Parameters), or
    /// ``acceptListAttempts`` passing refusals (Command Disallowed, no answer in time) came in a row.
    private func acceptListGivenUp(after result: Result<HCIReturnParameters, HostError>) -> Bool {
        let status: HCIStatus?
        switch result {
        case .success(.status(let answered)): status = answered
        case .success: status = nil
        case .failure(let error): status = error.code == .unsupported ? .unknownCommand : error.status
        }
        let permanent: [HCIStatus] = [.unknownCommand, .memoryCapacityExceeded, .unsupportedFeatureOrParameterValue,
                                      .invalidCommandParameters]
        acceptListFailures += 1
        guard let status, permanent.contains(status) else { return acceptListFailures >= Self.acceptListAttempts }
        return true
    }

    /// Makes the Filter Accept List hold exactly the initiation's targets, one command at a time (each next step
    /// decided from what the list holds now), then starts the initiation with filter policy 1.
    private func writeAcceptList(id: UInt64) {
        guard let pending = pendingConnect, pending.id == id, pending.programming else { return }
        let step: (HCICommand, BluetoothAddress, add: Bool)
        if let extra = acceptList.first(where: { !pending.targets.contains($0) }) {
            step = (.leRemoveDeviceFromFilterAcceptList(addressType: LEAddressType(extra.type), address: extra), extra, false)
        } else if let missing = pending.targets.first(where: { !acceptList.contains($0) }) {
            step = (.leAddDeviceToFilterAcceptList(addressType: LEAddressType(missing.type), address: missing), missing, true)
        } else {
            pendingConnect?.programming = false
            return sendCreateConnection(id: id, pending.parameters)
        }
        command(step.0) { [self] result in
            guard case .success(.status(.success)) = result else {
                if !acceptListGivenUp(after: result), pendingConnect?.id == id {
                    // Not now (in use, no answer in time): the same writing again a moment later.
                    pendingConnect?.retryAt = eventLoop.now + Self.connectRetryDelay
                    return armTimer()
                }
                // The controller cannot: connects go one at a time from here.
                acceptListSize = 0
                guard let current = pendingConnect, current.id == id else { return }
                pendingConnect = nil
                armTimer()
                var ended = current
                ended.cancelReason = Self.initiationRestarted
                return initiationEnded(ended, .failure(Self.initiationRestarted))
            }
            acceptListFailures = 0
            if step.add { acceptList.append(step.1) } else { acceptList.removeAll { $0 == step.1 } }
            writeAcceptList(id: id)
        }
    }

    private func sendCreateConnection(id: UInt64, _ parameters: LECreateConnectionParameters) {
        command(createConnectionCommand(parameters)) { [self] result in
            guard case .failure(let error) = result, let pending = pendingConnect, pending.id == id else { return }
            pendingConnect = nil
            armTimer()
            if pending.targets.count > 1, pending.cancelReason == nil {
                // The controller refused to initiate from its Filter Accept List: started again, or one at a time
                // from here when it cannot (``acceptListGivenUp(after:)``).
                if acceptListGivenUp(after: .failure(error)) { acceptListSize = 0 }
                var ended = pending
                ended.cancelReason = Self.initiationRestarted
                return initiationEnded(ended, .failure(Self.initiationRestarted))
            }
            initiationEnded(pending, .failure(error))
        }
    }

    func scheduleConnectRetry() {
        pendingConnect?.retries += 1
        pendingConnect?.retryAt = eventLoop.now + Self.connectRetryDelay
        stats.connectRetries &+= 1
        armTimer()
    }

    func retryConnect(_ pending: PendingConnect) {
        pendingConnect?.retryAt = nil
        if pending.programming {
            writeAcceptList(id: pending.id)
        } else {
            sendCreateConnection(id: pending.id, pending.parameters)
        }
        armTimer()
    }

    /// The controller refused a cancel and no Connection Complete came within a command timeout: the controller
    /// will not tell, so the initiation ends here.
    func connectTimedOut() {
        guard let pending = pendingConnect else { return }
        pendingConnect?.deadline = nil
        guard pending.cancelRefused else { return }
        abandonConnect(pending, reason: HostError(
            .unresponsiveController, "connecting to \(pending): the controller refused the cancel and never completed the connection"))
    }

    /// Ends an initiation the controller will not complete (its cancel failed), with `reason`; a late Connection
    /// Complete with Unknown Connection Identifier is swallowed.
    private func abandonConnect(_ pending: PendingConnect, reason: HostError) {
        pendingConnect = nil
        expectsCancelledConnectionComplete = true
        armTimer()
        initiationEnded(pending, .failure(reason))
    }

    /// Cancels the initiation (LE Create Connection Cancel, §7.8.13); it ends with `reason` once the controller
    /// confirms, or with its connection if that was made first.
    private func cancelPendingConnect(reason: HostError) {
        guard var pending = pendingConnect else { return }
        pending.cancelReason = reason
        if pending.retryAt != nil || pending.programming {
            // Between two attempts (``connectRetryLimit``), or still writing the list: nothing is in the controller.
            pendingConnect = nil
            armTimer()
            return initiationEnded(pending, .failure(reason))
        }
        pendingConnect?.cancelReason = reason
        pendingConnect?.deadline = nil
        armTimer()
        command(.leCreateConnectionCancel) { [self] result in
            guard let current = pendingConnect, current.id == pending.id else { return }
            switch result {
            case .success:
                // The controller now owes a Connection Complete with Unknown Connection Identifier; the initiation
                // is over already (some controllers never send that event).
                pendingConnect = nil
                expectsCancelledConnectionComplete = true
                armTimer()
                initiationEnded(current, .failure(reason))
            case .failure(let error) where error.status == .commandDisallowed:
                // The connection was made first: its Connection Complete decides, within a command timeout.
                pendingConnect?.cancelReason = nil
                pendingConnect?.cancelRefused = true
                pendingConnect?.deadline = eventLoop.now + pipe.timeout
                armTimer()
            case .failure:
                // No answer, no credit, another error: the controller did not take the cancel, and nothing says it
                // will ever complete the connect (found by the hostile-controller fuzz, seed 200230).
                abandonConnect(current, reason: reason)
            }
        }
    }

    /// The initiation is over (``pendingConnect`` is already cleared): its connection goes to the connect of that
    /// peer; a failure the host did not cause (no cancel of its own) fails every connect it covered; connects
    /// ended meanwhile complete with their reasons; then the next initiation starts.
    func initiationEnded(_ initiation: PendingConnect, _ result: Result<Connection, HostError>,
                         peerAirAddress: BluetoothAddress? = nil) {
        var finished: [(ConnectRequest, Result<Connection, HostError>)] = []
        switch result {
        case .success(let connection):
            // By the address the controller reported (the identity when it resolved one), or the one heard on air;
            // an initiation to one peer made its connection whatever address it reports.
            let index = connectRequests.firstIndex { $0.peer.value == connection.peer.value }
                ?? peerAirAddress.flatMap { air in connectRequests.firstIndex { $0.peer.value == air.value } }
                ?? (initiation.targets.count == 1 ? connectRequests.firstIndex { $0.peer == initiation.targets[0] } : nil)
            if let index {
                finished.append((connectRequests.remove(at: index), .success(connection)))
            } else {
                // Made for no connect (the peer matched no pending connect): not ours to keep.
                disconnect(connectionHandle: connection.handle, reason: .remoteUserTerminatedConnection)
            }
        case .failure(let error) where initiation.cancelReason == nil:
            for peer in initiation.targets {
                if let index = connectRequests.firstIndex(where: { $0.peer == peer }) {
                    finished.append((connectRequests.remove(at: index), .failure(error)))
                }
            }
        case .failure:
            break
        }
        while let index = connectRequests.firstIndex(where: { $0.endReason != nil }) {
            let request = connectRequests.remove(at: index)
            finished.append((request, .failure(request.endReason ?? Self.initiationRestarted)))
        }
        armTimer()
        for (request, result) in finished { finish(request, result) }
        pumpConnects()
    }
}
