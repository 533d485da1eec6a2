import BluetoothRuntime
import BluetoothCore
import BluetoothEngine
import Host
import FoundationEssentials
import Logging
import ServiceEngine
import SharedAir
import SystemInterface
public import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The per-user Bluetooth service (`blue service`): it owns the stacks of the programs that ask it to, as iOS's
/// bluetoothd owns its apps' Bluetooth. A program connects to its socket (`ServiceEngine`, the third engine on
/// the seam), says hello with the stack it wants and, if it has one, its restore identifier; the service opens the
/// stack (``KeptStack``), runs the program's calls on it and sends its events back.
///
/// When a program with a restore identifier ends without a goodbye (SIGKILL, a crash), its stack stays: links,
/// subscriptions, advertising and the GATT database go on, and the next program with that identifier gets it back.
/// A goodbye (a clean exit by the program's own choice) or no identifier ends the stack with the connection.
///
/// Trust: the socket lives in the shared air's private folder (mode 0700) and is mode 0600; a client of another
/// user is refused (SO_PEERCRED). A client that sends what is not a message, a message over
/// ``ServiceProtocol/maximumMessageLength``, or does not read what it is sent (more than the outbox's bound) is cut
/// off; its kept stack, if any, stays as after a crash.
///
/// State: the kept stacks by identifier, under one lock; each client's messages come on its connection's reader
/// thread; opening a stack is async (a task per hello).
public final class BluetoothService: Sendable {
    public let socketPath: String
    private let options: StackLaunchOptions
    private let listener: AirHubSideSocket
    private let kept = LockedValue<[String: KeptStack]>([:])
    private let anonymous = LockedValue<[ObjectIdentifier: KeptStack]>([:])
    private let logger = Logger(label: "opencorebluetooth.service")

    /// The most octets that may wait for one program that does not read (nil: ``ServiceConnection``'s default).
    private let outboxLimit: Int?
    /// Where a program with a restore identifier keeps its identity and bonds: one private folder per identifier.
    public let stateDirectory: String
    /// The most messages queued for a program that is gone, per stack (the oldest dropped and counted beyond).
    public let queueLimit: Int

    /// Listens at `socketPath` (its folder made private first); `options` open each program's stack; a program
    /// that leaves more than `outboxLimit` octets unread is cut off.
    ///
    /// A program with a restore identifier keeps its address, IRK and bonds from one stack to the next (its peers
    /// see the same device after the service restarts too): in `stateDirectory` (nil: `service/` beside the bonds of
    /// `FileBondStore/defaultDirectory()`), one folder per identifier.
    public init(socketPath: String, options: StackLaunchOptions = StackLaunchOptions(), outboxLimit: Int? = nil,
                stateDirectory: String? = nil, queueLimit: Int = 4096) throws(StackLaunchError) {
        self.outboxLimit = outboxLimit
        self.queueLimit = queueLimit
        self.stateDirectory = stateDirectory ?? FileBondStore.defaultDirectory() + "/service"
        do throws(AirHubError) {
            try AirHub.prepareSocketFolder(forSocket: socketPath)
            if SocketOwnership.serverAnswers(at: socketPath) {
                throw AirHubError(.alreadyRunning, "a Bluetooth service is already running on \(socketPath)")
            }
            listener = try AirHubSideSocket(path: socketPath, purpose: "Bluetooth service")
        } catch {
            throw StackLaunchError(.hubFailed, error.reason)
        }
        self.socketPath = socketPath
        self.options = options
    }

    /// Accepts programs until ``stop()``.
    public func start() {
        listener.acceptOnThread(named: "OpenCoreBluetooth.service.accept", refuse: { client, reason in
            guard var line = try? JSONEncoder().encode(ServiceMessage.refused(reason)) else { return }
            line.append(0x0A)
            _ = POSIX.writeAll(client, [UInt8](line), style: .socket)
        }, onClient: { [self] fd in
            accept(fd)
        })
    }

    /// Stops accepting and ends every stack.
    public func stop() {
        listener.close()
        let stacks = kept.withLock { kept in defer { kept = [:] }; return Array(kept.values) }
            + anonymous.withLock { stacks in defer { stacks = [:] }; return Array(stacks.values) }
        for stack in stacks { stack.end() }
    }

    /// The identifiers of the stacks kept now, and whether a program is attached to each.
    public var keptStacks: [String: Bool] {
        kept.load().mapValues(\.isAttached)
    }

    // MARK: One program

    private final class Session: Sendable {
        let connection: ServiceConnection<ServiceRequest, ServiceMessage>
        /// The stack once opened; whether the program said goodbye.
        let stack = LockedValue<KeptStack?>(nil)
        let hello = LockedValue<ServiceHello?>(nil)
        let leaving = LockedValue(false)
        let ended = LockedValue(false)

        init(connection: ServiceConnection<ServiceRequest, ServiceMessage>) {
            self.connection = connection
        }
    }

    private func accept(_ fd: Int32) {
        let connection = outboxLimit.map { ServiceConnection<ServiceRequest, ServiceMessage>(fd: fd, label: "OpenCoreBluetooth.service.client", outboxLimit: $0) }
            ?? ServiceConnection<ServiceRequest, ServiceMessage>(fd: fd, label: "OpenCoreBluetooth.service.client")
        let session = Session(connection: connection)
        connection.start(onMessage: { [self] request in
            received(request, in: session)
        }, onEnd: { [self] end in
            ended(session, end)
        })
    }

    private func received(_ request: ServiceRequest, in session: Session) {
        switch request {
        case .hello(let hello):
            guard session.hello.withLock({ old in defer { if old == nil { old = hello } }; return old == nil }) else {
                return refuse(session, "a second hello")
            }
            guard hello.version == ServiceProtocol.version else {
                return refuse(session, "protocol version \(hello.version); this service speaks \(ServiceProtocol.version)")
            }
            Task { await open(hello, for: session) }
        case .call(let id, let operation):
            guard let stack = session.stack.load() else { return refuse(session, "a call before the stack is open") }
            let connection = session.connection
            stack.run(operation) { outcome in
                if operation.expectsAnswer { connection.send(.result(id: id, outcome)) }
            }
        case .goodbye:
            session.leaving.store(true)
            session.connection.finish()
        }
    }

    private func refuse(_ session: Session, _ reason: String) {
        logger.notice("refused a program: \(reason)")
        session.connection.send(.refused(reason))
        session.connection.finish()
    }

    private func open(_ hello: ServiceHello, for session: Session) async {
        if let identifier = hello.identifier {
            let found = kept.withLock { kept -> (KeptStack?, Bool) in
                guard let stack = kept[identifier] else { return (nil, false) }
                return (stack, stack.isAttached)
            }
            if let stack = found.0 {
                if found.1 { return refuse(session, "\(identifier) is in use by a running program") }
                session.stack.store(stack)
                logger.info("\(hello.program) takes back \(identifier)")
                stack.register(hello.relaunch)
                stack.attach(session.connection, reattached: true, systemLinks: systemLinks())
                return
            }
        }
        let specification: StackSpecification
        do {
            specification = try StackSpecification(parsing: hello.stack)
        } catch {
            return refuse(session, error.reason)
        }
        if case .service = specification {
            return refuse(session, "\(hello.stack): the service runs stacks on transports, not on a service")
        }
        var options = options
        options.label = "OpenCoreBluetooth.service." + (hello.identifier ?? hello.program)
        if let host = hello.host {
            options.host.preferredATTMTU = min(max(host.preferredATTMTU, 23), 517)
            options.host.security.ioCapability = host.ioCapability
            options.host.security.mitm = host.mitm
        }
        var launchLog: String?
        if let identifier = hello.identifier {
            let directory = stateDirectory + "/" + IdentifierFileName.escaped(identifier)
            options.identity = .persistent(directory: directory)
            options.host.security.bondStore = FileBondStore(directory: directory)
            launchLog = directory + "/launch.log"
        }
        let opened: any OpenedStack
        do {
            // A program's air that does not run yet is started, as the program would have started it (where its
            // folder exists).
            if case .host(.air(let path)) = specification {
                _ = try await SharedAirHub.ensure(at: path, starter: options.hubStarter, inExistingDirectoryOnly: true)
            }
            opened = try await StackLauncher.open(specification: specification, options: options)
        } catch {
            return refuse(session, "cannot open \(hello.stack): \(error.reason)")
        }
        let stack = KeptStack(identifier: hello.identifier, opened: opened, launchLog: launchLog, queueLimit: queueLimit,
                              onSystemChange: { [weak self] in self?.systemLinksChanged() })
        stack.register(hello.relaunch)
        opened.onLoss { [weak self, weak stack] loss in
            guard let self, let stack else { return }
            self.forget(stack)
            stack.lost("\(loss)")
        }
        if let identifier = hello.identifier {
            let taken = kept.withLock { kept -> Bool in
                if kept[identifier] != nil { return true }
                kept[identifier] = stack
                return false
            }
            if taken {
                DetachedThread.spawn { stack.end() }
                return refuse(session, "\(identifier) is in use by a running program")
            }
        } else {
            anonymous.withLock { $0[ObjectIdentifier(session)] = stack }
        }
        session.stack.store(stack)
        logger.info("\(hello.program) opened \(hello.stack)\(hello.identifier.map { " as \($0)" } ?? "")")
        stack.attach(session.connection, reattached: false, systemLinks: systemLinks())
        // The program may have gone while the stack opened.
        if session.ended.load() { ended(session, .closed) }
    }

    /// Every stack the service runs.
    private var allStacks: [KeptStack] {
        Array(kept.load().values) + Array(anonymous.load().values)
    }

    /// Every link of every stack, one entry per peer with the union of what the stacks know of its services: the
    /// system's connections, as iOS's `retrieveConnectedPeripherals(withServices:)` sees them.
    private func systemLinks() -> [ServiceSystemLink] {
        var services: [BluetoothAddress: Set<BluetoothUUID>] = [:]
        for stack in allStacks {
            for link in stack.systemLinks { services[link.peer, default: []].formUnion(link.services) }
        }
        return services.map { ServiceSystemLink(peer: $0.key, services: $0.value.sorted()) }.sorted { $0.peer < $1.peer }
    }

    /// A stack's links (or what is known of them) changed: every program attached hears the system's links now.
    private func systemLinksChanged() {
        let links = systemLinks()
        for stack in allStacks { stack.tell(links) }
    }

    private func forget(_ stack: KeptStack) {
        if let identifier = stack.identifier {
            kept.withLock { kept in if kept[identifier] === stack { kept[identifier] = nil } }
        }
        anonymous.withLock { stacks in stacks = stacks.filter { $0.value !== stack } }
    }

    private func ended(_ session: Session, _ end: ServiceConnectionEnd) {
        session.ended.store(true)
        guard let stack = session.stack.load() else { return }
        if stack.identifier != nil, !session.leaving.load() {
            stack.detach(session.connection)
            logger.info("a program left \(stack.identifier ?? "") without a goodbye (\(end)): its stack stays")
            return
        }
        forget(stack)
        anonymous.withLock { $0[ObjectIdentifier(session)] = nil }
        DetachedThread.spawn { stack.end() }
    }
}
