import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import DequeModule
import ATT
import GATT
import ServiceEngine
import StackLauncher
import Dispatch
import FoundationEssentials
import SystemInterface
import Logging
import SharedAir
#if canImport(Glibc)
import Glibc
#endif

/// One program's stack as the Bluetooth service keeps it: opened for the program, run by our host here, attached
/// to the program's connection while it runs and, for a program with a restore identifier, kept when the program
/// dies (detached), its links, subscriptions, advertising and GATT database still up.
///
/// Detached, the stack keeps answering (Core 5.4 Vol 3 Part F §3.4): a deferred read gets the last value the
/// program sent for that attribute (an update, or its answer to an earlier read), else *Unlikely Error*; a deferred
/// write is accepted. Everything the program would have heard (events, deferred writes, forwarded writes) is queued,
/// at most ``queueLimit`` messages, the oldest dropped and counted; a program that says hello with the same
/// identifier gets the welcome with the links as they are, then the queue in order, then the live stream.
///
/// State: one lock (``LockedValue``); the stack's events arrive on its loop, the program's calls on its
/// connection's reader thread. Sending only queues (``ServiceConnection/send(_:)``), so it happens under the lock,
/// which keeps the welcome, the queue and the live events in one order.
final class KeptStack: Sendable {
    /// The most messages queued for a program that is gone (the service's choice, 4096 by default).
    let queueLimit: Int

    private struct State {
        var client: ServiceConnection<ServiceRequest, ServiceMessage>?
        var queue: Deque<ServiceMessage> = []
        var dropped = 0
        var links: [UInt16: ServiceLink] = [:]
        var lastValues: [UInt16: [UInt8]] = [:]
        /// Deferred reads handed to the program and not answered yet, by request id: their attribute.
        var readsInFlight: [UInt64: UInt16] = [:]
        /// The program's own deferral, and the dynamic values of its database (deferred to it too).
        var programDeferral: Set<UInt16>?
        var dynamicHandles: Set<UInt16> = []
        var ended = false
        /// How to start the program again, and whether it was started since the last one left.
        var relaunch: ServiceRelaunch?
        var relaunched = false
        /// The clients' subscriptions, by connection and value handle; the database the program last gave.
        var subscriptions: [UInt16: [UInt16: GATTClientConfiguration]] = [:]
        var database: ServiceGATTDatabase?
        /// Service UUIDs learnt of peers (advertised, discovered), for the system's connections; bounded.
        var peerServices: [BluetoothAddress: Set<BluetoothUUID>] = [:]
        /// The program's advertising (its last start, nil once stopped), resumed here after a connection while
        /// the program is gone, as the program's own stack would.
        var advertising: ServiceOperation?
    }

    /// Called (on the stack's loop) when the stack's links or what it knows of their services change.
    let onSystemChange: @Sendable () -> Void

    let identifier: String?
    let opened: any OpenedStack
    var engine: any StackEngine { opened.engine }
    /// Where a relaunched program's output goes (nil: no relaunch).
    private let launchLog: String?
    private let state = LockedValue(State())
    private let logger = Logger(label: "opencorebluetooth.service")

    init(identifier: String?, opened: any OpenedStack, launchLog: String?, queueLimit: Int = 4096,
         onSystemChange: @escaping @Sendable () -> Void = {}) {
        self.identifier = identifier
        self.queueLimit = max(1, queueLimit)
        self.opened = opened
        self.launchLog = launchLog
        self.onSystemChange = onSystemChange
        opened.engine.addEventHandler { [weak self] event in self?.stackEvent(event) }
    }

    /// The relaunch the attached program registered (nil: none); a new registration replaces the old.
    func register(_ relaunch: ServiceRelaunch?) {
        state.withLock { $0.relaunch = relaunch }
    }

    /// Attaches `client`: sends the welcome (the links as they are), then what was queued, then events as they come.
    func attach(_ client: ServiceConnection<ServiceRequest, ServiceMessage>, reattached: Bool, systemLinks: [ServiceSystemLink]) {
        let engine = engine
        state.withLock { state in
            var welcome = ServiceWelcome(
                controller: opened.controllerInfo, exchangesMTUOnConnect: engine.exchangesMTUOnConnect,
                reportsPeerNames: engine.reportsPeerNames, knownPeers: engine.knownPeers(), reattached: reattached,
                links: state.links.values.sorted { $0.connection.handle < $1.connection.handle }, droppedEvents: state.dropped,
                subscriptions: state.subscriptions.flatMap { connection, values in
                    values.map { ServiceSubscription(connection: connection, valueHandle: $0.key, configuration: $0.value) }
                }.sorted { ($0.connection, $0.valueHandle) < ($1.connection, $1.valueHandle) },
                database: state.database)
            welcome.systemLinks = systemLinks
            client.send(.welcome(welcome))
            for message in state.queue { client.send(message) }
            state.queue.removeAll()
            state.dropped = 0
            state.client = client
            state.relaunched = false
        }
    }

    /// The program's connection ended without a goodbye: the stack stays, and what follows is queued.
    func detach(_ client: ServiceConnection<ServiceRequest, ServiceMessage>) {
        state.withLock { state in
            if state.client === client { state.client = nil }
        }
    }

    var isAttached: Bool { state.load().client != nil }

    /// Tells the attached program (if any) the system's links; not queued (a program taking the stack back gets
    /// them in its welcome).
    func tell(_ links: [ServiceSystemLink]) {
        state.withLock { state in _ = state.client?.send(.systemLinks(links)) }
    }

    /// Sends `message` to the program, or queues it while none is attached.
    private func deliver(_ message: ServiceMessage) {
        let relaunch = state.withLock { state -> ServiceRelaunch? in
            if let client = state.client, client.send(message) { return nil }
            state.queue.append(message)
            if state.queue.count > queueLimit {
                state.queue.removeFirst()
                state.dropped += 1
            }
            guard !state.relaunched, !state.ended, let relaunch = state.relaunch, Self.launchEvent(message) != nil else { return nil }
            state.relaunched = true
            return relaunch
        }
        if let relaunch { launch(relaunch, for: message) }
    }

    /// The event's name when iOS would relaunch a terminated app for it (Apple's "Core Bluetooth Background
    /// Processing for iOS Apps": connections, notifications, requests to the app's server), nil otherwise.
    static func launchEvent(_ message: ServiceMessage) -> String? {
        switch message {
        case .event(.connected): "connection"
        case .event(.disconnected): "disconnection"
        case .event(.gattNotification), .event(.gattIndication): "notification"
        case .event(.gattServer): "server"
        case .deferredRequest, .answeredRequest: "request"
        case .dynamicWrite: "write"
        default: nil
        }
    }

    /// Starts the program again (once until one takes the stack back); its output goes to the launch log.
    private func launch(_ relaunch: ServiceRelaunch, for message: ServiceMessage) {
        guard let executable = relaunch.arguments.first, let launchLog, let identifier else { return }
        var environment = relaunch.environment
        environment[relaunch.launchOptionVariable] = identifier
        environment["OCB_LAUNCH_EVENT"] = Self.launchEvent(message) ?? "event"
        do throws(AirHubError) {
            let pid = try AirHubLauncher.spawnDetached(executable: executable, arguments: Array(relaunch.arguments.dropFirst()),
                                                       environment: environment, log: launchLog)
            logger.info("relaunched \(identifier) for a \(environment["OCB_LAUNCH_EVENT"] ?? "") (pid \(pid))")
            // Reaped when it ends, so that no zombie stays behind the service.
            DetachedThread.spawn {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
            }
        } catch {
            logger.error("cannot relaunch \(identifier): \(error.reason)")
        }
    }

    /// The peers this stack is linked to, with the services known of them.
    var systemLinks: [ServiceSystemLink] {
        let state = state.load()
        return state.links.values.map { link in
            ServiceSystemLink(peer: link.connection.peer,
                              services: (state.peerServices[link.connection.peer] ?? []).sorted())
        }
    }

    /// Services learnt of `peer` (a discovery the program ran here).
    func learn(_ services: [BluetoothUUID], of handle: UInt16) {
        let changed = state.withLock { state -> Bool in
            guard let peer = state.links[handle]?.connection.peer else { return false }
            let before = state.peerServices[peer]?.count ?? 0
            state.peerServices[peer, default: []].formUnion(services)
            return state.peerServices[peer]?.count != before
        }
        if changed { onSystemChange() }
    }

    /// Keeps the program's advertising calls (``State/advertising``).
    func rememberAdvertising(_ operation: ServiceOperation) {
        switch operation {
        case .startAdvertising, .startAdvertisingContent: state.withLock { $0.advertising = operation }
        case .stopAdvertising: state.withLock { $0.advertising = nil }
        default: break
        }
    }

    private func stackEvent(_ event: HostEvent) {
        var systemChanged = false
        var advertiseAgain: ServiceOperation?
        defer {
            if systemChanged { onSystemChange() }
            // The controller stopped advertising for the connection; with the program gone the service resumes
            // it, as iOS keeps a terminated app's advertising (the program's backend does it while attached).
            if let advertiseAgain { run(advertiseAgain) { _ in } }
        }
        state.withLock { state in
            switch event {
            case .advertisingReport(let report) where !report.advertisingData.serviceUUIDs.isEmpty:
                if state.peerServices.count >= 4096, state.peerServices[report.address] == nil {
                    let linked = Set(state.links.values.map(\.connection.peer))
                    state.peerServices = state.peerServices.filter { linked.contains($0.key) }
                }
                state.peerServices[report.address, default: []].formUnion(report.advertisingData.serviceUUIDs)
            case .connected(let connection):
                systemChanged = true
                state.links[connection.handle] = ServiceLink(connection: connection, attMTU: 23)
                if connection.role == .peripheral, state.client == nil { advertiseAgain = state.advertising }
            case .connectionUpdated(let connection):
                state.links[connection.handle]?.connection = connection
            case .attMTUChanged(let handle, let mtu):
                state.links[handle]?.attMTU = mtu
            case .disconnected(let handle, _):
                systemChanged = state.links[handle] != nil
                state.links[handle] = nil
                state.subscriptions[handle] = nil
            case .gattServer(.subscriptionChanged(let connection, let valueHandle, let configuration)):
                state.subscriptions[connection.rawValue, default: [:]][valueHandle] = configuration.isEmpty ? nil : configuration
            default:
                break
            }
        }
        deliver(.event(event))
    }

    // MARK: The GATT server's calls into the program

    /// The deferral the program asked for: its requests go to the program, or are answered here while it is away.
    func setDeferral(handles: Set<UInt16>?) {
        let all = state.withLock { state -> Set<UInt16> in
            state.programDeferral = handles
            return (handles ?? []).union(state.dynamicHandles)
        }
        installDeferral(all)
    }

    /// The dynamic values of the program's new database, deferred to the program with its own deferral.
    func setDynamicHandles(_ handles: Set<UInt16>) {
        let all = state.withLock { state -> Set<UInt16> in
            state.dynamicHandles = handles
            return (state.programDeferral ?? []).union(handles)
        }
        installDeferral(all)
    }

    private func installDeferral(_ handles: Set<UInt16>) {
        guard !handles.isEmpty else { return engine.setGATTDeferral(nil) }
        engine.setGATTDeferral(GATTDeferral(handles: handles) { [weak self] request in self?.deferred(request) })
    }

    /// A request of the deferral (on the stack's loop, inside the server: answers hop).
    private func deferred(_ request: GATTPendingRequest) {
        let engine = engine
        let handle = request.connection.rawValue
        let answer = state.withLock { state -> Result<[UInt8], GATTAttributeError>? in
            if let client = state.client, client.send(.deferredRequest(request)) {
                if case .read(let attribute, _) = request.kind { state.readsInFlight[request.id] = attribute }
                return nil
            }
            switch request.kind {
            case .read(let attribute, let offset):
                guard let value = state.lastValues[attribute] else { return .failure(GATTAttributeError(.unlikelyError)) }
                return offset <= value.count ? .success(Array(value[offset...])) : .failure(GATTAttributeError(.invalidOffset))
            case .write(let attribute, let value):
                state.lastValues[attribute] = value
                state.queue.append(.answeredRequest(request))
                return .success([])
            case .executeWrite:
                state.queue.append(.answeredRequest(request))
                return .success([])
            }
        }
        if let answer {
            engine.eventLoop.execute { engine.respondToGATTRequest(connectionHandle: handle, id: request.id, result: answer) }
        }
    }

    /// A write of a dynamic value, accepted by the server: the program hears of it.
    func forwardedWrite(_ request: GATTWriteRequest) {
        deliver(.dynamicWrite(request))
    }

    /// The program's answer to a deferred request; a read's value is kept for answering while it is away.
    func respond(handle: UInt16, id: UInt64, _ answer: ServiceGATTAnswer) {
        state.withLock { state in
            if let attribute = state.readsInFlight.removeValue(forKey: id), case .value(let value) = answer {
                state.lastValues[attribute] = value
            }
        }
        engine.respondToGATTRequest(connectionHandle: handle, id: id, result: answer.result)
    }

    /// The database the program gave the server (what a program taking the stack back is told). A database
    /// equal to it is not installed again, so that the clients' subscriptions stay.
    func replaceDatabase(_ wire: ServiceGATTDatabase, changedRange: ATTHandleRange?, reply: @escaping @Sendable (ServiceOutcome) -> Void) {
        let database: GATTDatabase
        do throws(GATTDatabaseError) {
            database = try wire.database(forwardingWrites: { [weak self] request in self?.forwardedWrite(request) })
        } catch {
            return reply(.failed(HostError(.invalidDatabase, error.description)))
        }
        let same = state.withLock { state -> Bool in
            defer { state.database = wire }
            return state.database == wire
        }
        setDynamicHandles(Set(ServiceGATTDatabase.dynamicValues(of: database).keys))
        if same { return reply(.done) }
        engine.replaceGATTDatabase(database, changedRange: changedRange) { result in
            switch result {
            case .success: reply(.done)
            case .failure(let error): reply(.failed(error))
            }
        }
    }

    /// A value the program sent its subscribers: also the answer to reads while it is away.
    func remember(_ value: [UInt8], attribute: UInt16) {
        state.withLock { $0.lastValues[attribute] = value }
    }

    /// The stack's controller went away: the program hears it, then the connection and the stack end.
    func lost(_ reason: String) {
        let client = state.withLock { state -> ServiceConnection<ServiceRequest, ServiceMessage>? in
            defer { state.client = nil }
            return state.client
        }
        client?.send(.lost(reason))
        client?.finish()
        DetachedThread.spawn { [self] in end() }
    }

    /// Ends the stack (once): terminates each link (Remote User Terminated Connection, so that peers see it at
    /// once rather than after their supervision timeout), waits for that at most a second, and lets the engine go.
    /// Blocking: off the stack's loop.
    func end() {
        let (first, handles) = state.withLock { state -> (Bool, [UInt16]) in
            defer { state.ended = true; state.client = nil; state.queue.removeAll() }
            return (!state.ended, Array(state.links.keys))
        }
        guard first else { return }
        let group = DispatchGroup()
        for handle in handles {
            group.enter()
            engine.disconnect(connectionHandle: handle, reason: .remoteUserTerminatedConnection) { _ in group.leave() }
        }
        _ = group.wait(timeout: .now() + 1)
        opened.shutdown()
    }
}
