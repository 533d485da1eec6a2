public import BluetoothCore
public import BluetoothRuntime
import HCI
public import HCITransport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CMallocStatistics
import SystemInterface
public import VirtualController

/// The air hub behind `blue air` (DESIGN.md "The virtual controller and the air", issue 3 item 4): one
/// ``VirtualAir`` shared by every host that joins it. Each connection to the hub's UNIX socket (default
/// ``defaultSocketPath``) or to one of its TCP ports becomes a new ``VirtualController`` on that air, and the joining
/// host speaks plain HCI over H4 (Core 5.4 Vol 4 Part A §2) on that connection, so `air:PATH` is an ordinary UNIX
/// H4 transport and Bumble joins with `tcp-client:127.0.0.1:PORT`.
///
/// - The controller is created when the host sends its first packet (a probe that connects and leaves without
///   speaking, such as ``isRunning(at:)``, creates nothing). Device n gets the public address
///   `0A:1B:00:00:00:nn` (from the join counter) and a place on a 4-wide grid ``AirHubConfiguration/spacing``
///   metres apart, so runs are reproducible.
/// - Frames to a host go through a bounded queue (``AirHubConfiguration/hostQueueLimit``) written by a thread of
///   its own, so the air's loop never blocks on a socket; a host that stops reading until the queue overflows is
///   disconnected (a ``AirHubEvent/warning(_:)``, then ``AirHubEvent/left(_:reason:)``) instead of stalling the air.
/// - When the host's socket closes the controller powers off (its peers see a supervision timeout, reason 0x08)
///   and leaves the air (``VirtualAir/detach(_:)``): a long-running hub holds only the devices present.
/// - With a snoop directory, each controller's HCI traffic goes to `devN-PROGRAM.btsnoop` there (PROGRAM: the
///   connecting process's command, "blue-serve", from the socket's peer credentials; `devN.btsnoop` when unknown;
///   host → controller recorded as *sent*, controller → host as *received*, as btsnoop defines them).
/// - Beside a UNIX socket, `SOCKET.monitor` streams every controller's traffic and each join and leave to readers
///   (`blue monitor`; ``AirHubMonitor``), each with a bounded queue so that a slow reader is dropped, never waited for;
///   `SOCKET.control` takes faults on demand (`blue fault`; ``AirHubControl``, ``AirHubFault``, ``apply(_:completion:)``):
///   packet loss, links dropped, radios off and on, devices moved out of range and back.
/// - ``onEvent`` reports joins, leaves, connections (read from the LE Connection Complete / Disconnection Complete /
///   Encryption Change events each controller sends), and traffic summaries every
///   ``AirHubConfiguration/statisticsInterval`` and at ``stop()``.
///
/// State: the air and its controllers live on ``eventLoop``; the hub's own tables are lock-protected and touched
/// from the listeners' accept threads, the transports' reader threads and the loop. ``onEvent`` is called from any
/// of those, never concurrently with itself.
public final class AirHub: @unchecked Sendable {
    /// The shared air.
    public let air: VirtualAir
    public let configuration: AirHubConfiguration
    public var eventLoop: any EventLoop { air.eventLoop }

    private let handler = LockedValue<(@Sendable (AirHubEvent) -> Void)?>(nil)
    private let eventLock = LockedValue(())
    let state = LockedValue(HubState())
    /// The link-layer capture (``AirHubConfiguration/sniffPath``), from start to stop.
    private let sniffer = LockedValue<LinkLayerSniffer?>(nil)
    /// The recording `--record` asked for (also the air's step recorder): the hub closes it when it stops.
    let recording = LockedValue<AirRecorder?>(nil)
    /// Who else wants every packet on the air (the console's link-layer captures), on the air's loop.
    let airPacketTap = LockedValue<(@Sendable (AirPacket) -> Void)?>(nil)

    /// Where events go (see the type's notes on threads). Set it before ``start()``.
    public var onEvent: (@Sendable (AirHubEvent) -> Void)? {
        get { handler.load() }
        set { handler.store(newValue) }
    }

    /// A hub on `eventLoop` (a `DispatchEventLoop` in production, a `ManualEventLoop` in tests).
    public init(configuration: AirHubConfiguration, eventLoop: any EventLoop) {
        self.configuration = configuration
        self.air = VirtualAir(eventLoop: eventLoop, seed: configuration.seed, configuration: configuration.air)
        let state = state, sniffer = sniffer, airPacketTap = airPacketTap
        air.observer = { packet in
            sniffer.load()?.write(packet)
            airPacketTap.load()?(packet)
            state.withLock { state in
                switch packet.kind {
                case .advertising, .extendedAdvertising(.advExtInd), .extendedAdvertising(.auxAdvInd),
                     .extendedAdvertising(.auxChainInd): state.airCounts.advertisingPackets &+= 1
                case .extendedAdvertising(.auxScanReq), .extendedAdvertising(.auxScanRsp): state.airCounts.scanPackets &+= 1
                case .extendedAdvertising(.auxConnectReq), .extendedAdvertising(.auxConnectRsp): state.airCounts.connectRequests &+= 1
                case .scanRequest, .scanResponse: state.airCounts.scanPackets &+= 1
                case .connectRequest: state.airCounts.connectRequests &+= 1
                case .data: state.airCounts.dataPackets &+= 1
                }
                guard state.viewed else { return }
                switch packet.kind {
                case .data(let link, _): state.linkTraffic[link, default: AirHubView.Traffic()].add(octets: packet.bytes.count)
                case .advertising, .extendedAdvertising(.advExtInd): state.advertisingPackets[packet.sender, default: 0] &+= 1
                default: break
                }
            }
        }
    }

    // MARK: Default path and probe

    /// `$XDG_RUNTIME_DIR/opencorebluetooth/air.sock` when XDG_RUNTIME_DIR is set (and not empty), else
    /// `/tmp/opencorebluetooth-<uid>/air.sock`. ``start()`` creates the folder (mode 0700) if needed, and the hub
    /// and its clients refuse it unless it is private (``defaultSocketFolders``).
    public static var defaultSocketPath: String {
        if let folder = runtimeSocketFolder { return folder + "/air.sock" }
        return temporarySocketFolder + "/air.sock"
    }

    /// The folders of the default socket, now and without XDG_RUNTIME_DIR: `$XDG_RUNTIME_DIR/opencorebluetooth` (when
    /// set) and `/tmp/opencorebluetooth-<uid>`. A socket in one of them gets the private rule (a directory, not a
    /// symbolic link, of this user, mode 0700: ``PrivateDirectory``); any other folder is one the user chose and gets
    /// the chosen rule (this user's or root's, not writable by others unless sticky).
    public static var defaultSocketFolders: [String] {
        [runtimeSocketFolder, temporarySocketFolder].compactMap { $0 }
    }

    private static var runtimeSocketFolder: String? {
        guard let value = getenv("XDG_RUNTIME_DIR"), case let directory = String(cString: value), !directory.isEmpty else { return nil }
        return directory + "/opencorebluetooth"
    }

    private static var temporarySocketFolder: String { "/tmp/opencorebluetooth-\(getuid())" }

    /// Whether a hub of this user (or root) accepts connections at `path` (connects and leaves at once without
    /// sending anything, which a hub does not count as a join). False too when the socket or its folder is not
    /// trusted (``checkTrust(ofSocket:)``).
    public static func isRunning(at path: String = AirHub.defaultSocketPath) -> Bool {
        guard let transport = try? connect(at: path) else { return false }
        transport.close()
        return true
    }

    /// Opens a host-side connection to the hub at `path` (not started): a new controller on its air. Refuses, with
    /// ``HCITransportError/Code/openFailed`` and one line, a socket or folder that is not trusted
    /// (``checkTrust(ofSocket:)``) and a hub that runs as another user (SO_PEERCRED).
    public static func connect(at path: String = AirHub.defaultSocketPath) throws(HCITransportError) -> SocketH4Transport {
        do throws(AirHubError) {
            try checkTrust(ofSocket: path)
        } catch {
            throw HCITransportError(.openFailed, error.reason)
        }
        return try SocketH4Transport.connect(path: path, serverOfThisUserOnly: true)
    }

    /// What a client checks before connecting to the hub socket `path` (or one beside it: `.control`, `.monitor`):
    /// its folder by the rule of ``defaultSocketFolders`` and the socket file itself (a socket, not a symbolic link,
    /// of this user or root). A folder or socket that does not exist passes (connecting then says nothing listens).
    /// Throws ``AirHubError/Code/untrusted`` with one line.
    public static func checkTrust(ofSocket path: String) throws(AirHubError) {
        let folder = folder(ofSocket: path)
        var info = stat()
        if lstat(folder, &info) != 0, errno == ENOENT { return }
        do throws(PrivatePathError) {
            if defaultSocketFolders.contains(folder) {
                try PrivateDirectory.checkPrivate(folder)
            } else {
                try PrivateDirectory.checkChosen(folder)
            }
            try SocketOwnership.checkFile(path)
        } catch {
            throw untrusted(error, folder: folder)
        }
    }

    /// What the hub does with the folder of its socket `path` before listening: creates it 0700 when missing, then
    /// checks it by the rule of ``defaultSocketFolders``. Throws ``AirHubError/Code/untrusted`` with one line (or
    /// ``AirHubError/Code/listenFailed`` when it cannot be created).
    public static func prepareSocketFolder(forSocket path: String) throws(AirHubError) {
        let folder = folder(ofSocket: path)
        do throws(PrivatePathError) {
            var info = stat()
            if defaultSocketFolders.contains(folder) || (lstat(folder, &info) != 0 && errno == ENOENT) {
                try PrivateDirectory.ensure(folder)
            } else {
                try PrivateDirectory.checkChosen(folder)
            }
        } catch {
            if error.code == .cannotCreate { throw AirHubError(.listenFailed, error.reason) }
            throw untrusted(error, folder: folder)
        }
    }

    /// "/tmp/x" for "/tmp/x/air.sock"; "." for "air.sock", "/" for "/air.sock".
    static func folder(ofSocket path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    private static func untrusted(_ error: PrivatePathError, folder: String) -> AirHubError {
        let advice = defaultSocketFolders.contains(folder) && error.code != .cannotInspect
            ? " (the shared air's default folder: remove it if it is not yours, or set XDG_RUNTIME_DIR or OCB_AIR_SOCKET to a folder of your own)"
            : ""
        return AirHubError(.untrusted, "refusing the air hub socket's folder or file: \(error.reason)\(advice)")
    }

    // MARK: Start and stop

    /// Creates the snoop directory, listens on the socket and the TCP ports, and starts the statistics timer.
    /// Throws ``AirHubError/Code/alreadyRunning`` at once when another hub accepts on the socket path.
    public func start() throws(AirHubError) {
        let refused: AirHubError? = state.withLock { state in
            guard state.phase == .created else { return AirHubError(.invalidState, "the hub was already started") }
            state.phase = .starting
            return nil
        }
        if let refused { throw refused }
        do throws(AirHubError) {
            if let directory = configuration.snoopDirectory { try Self.makeSnoopDirectory(directory) }
            if let path = configuration.recordPath {
                let recorder = try AirRecorder(path: path, seed: configuration.seed, configuration: configuration.air)
                recording.store(recorder)
                air.recorder = recorder
            }
            if let path = configuration.sniffPath { sniffer.store(try LinkLayerSniffer(path: path)) }
            // The monitor and control sockets exist before a host can join (a host may speak as soon as the UNIX
            // listener accepts): each device's traffic reaches the monitor from its first frame. Both are
            // conveniences: a hub without them still runs.
            var monitor: AirHubMonitor?
            var control: AirHubControl?
            if let path = configuration.socketPath {
                try prepareUNIX(path)
                monitor = try? AirHubMonitor.listen(at: path + ".monitor") { [weak self] in
                    self?.state.withLock { $0.joined.values.map(\.device) }.sorted { $0.number < $1.number }
                        .map { AirHubEvent.joined($0).text } ?? []
                }
                control = try? AirHubControl.listen(at: path + ".control") { [weak self] fault, completion in
                    guard let self else { return completion(.failure(AirHubError(.invalidState, "the hub stopped"))) }
                    self.apply(fault, completion: completion)
                }
                let sideSockets = (monitor, control)
                state.withLock { state in
                    state.monitor = sideSockets.0
                    state.control = sideSockets.1
                }
            }
            var listeners: [H4Listener] = []
            do throws(AirHubError) {
                if let path = configuration.socketPath {
                    listeners.append(try listenUNIX(path))
                }
                for endpoint in configuration.tcpEndpoints {
                    listeners.append(try listenTCP(endpoint))
                }
            } catch {
                for listener in listeners { listener.close() }
                monitor?.close()
                control?.close()
                throw error
            }
            let stopped = state.withLock { state in
                state.listeners = listeners
                let stopped = state.phase == .stopped
                if !stopped { state.phase = .running }
                return stopped
            }
            if stopped {
                for listener in listeners { listener.close() }
                monitor?.close()
                control?.close()
                throw AirHubError(.invalidState, "the hub was stopped while starting")
            }
            for listener in listeners { emit(.listening(listener.name)) }
            if let interval = configuration.statisticsInterval { armStatistics(interval) }
        } catch {
            state.withLock { $0.phase = .stopped }
            sniffer.load()?.finish()
            throw error
        }
    }

    /// The endpoints the hub listens on ("unix:PATH", "tcp:127.0.0.1:PORT"), in configuration order.
    public var endpoints: [String] { state.withLock { $0.listeners.map(\.name) } }

    /// The TCP ports bound (the kernel's choice for port 0), in configuration order.
    public var tcpPorts: [UInt16] { state.withLock { $0.listeners.compactMap(\.port) } }

    /// Stops accepting, disconnects every host (their controllers power off), closes the captures, removes the
    /// socket file and emits ``AirHubEvent/stopped(_:)``. Idempotent; returns the final statistics.
    @discardableResult
    public func stop() -> AirHubStatistics {
        let taken = state.withLock { state -> (listeners: [H4Listener], members: [Member], timer: ScheduledJob?, monitor: AirHubMonitor?,
                                               control: AirHubControl?)? in
            guard state.phase != .stopped else { return nil }
            state.phase = .stopped
            defer {
                state.listeners = []
                state.pending = [:]
                state.statisticsTimer = nil
                state.monitor = nil
                state.control = nil
            }
            return (state.listeners, Array(state.pending.values), state.statisticsTimer, state.monitor, state.control)
        }
        guard let taken else { return statistics }
        taken.timer?.cancel()
        taken.control?.close()
        for listener in taken.listeners { listener.close() }
        defer { taken.monitor?.close() }
        for member in taken.members.sorted(by: { (a: Member, b: Member) in a.serial < b.serial }) {
            leave(member, reason: "hub stopped")
            member.transport.close()
        }
        finishRecording()
        let final = statistics
        emit(.stopped(final))
        return final
    }

    /// Closes the recording after the steps the devices' leaving queued on the loop (at most 2 s of waiting).
    /// Both end in one job on the loop, so that no step of the air falls between them (a replay of the recording
    /// then sniffs exactly what the live air did).
    private func finishRecording() {
        guard recording.load() != nil || sniffer.load() != nil else { return }
        let failures = LockedValue<[String]?>(nil)
        let finish: @Sendable () -> Void = { [recording, sniffer] in
            failures.store([recording.load()?.finish(), sniffer.load()?.finish()].compactMap { $0 })
        }
        if eventLoop.inEventLoop {
            finish()
        } else {
            eventLoop.execute(finish)
            let deadline = ContinuousClock.now + .seconds(2)
            while failures.load() == nil, ContinuousClock.now < deadline { usleep(1000) }
            // A loop that did not get to it within the bound: closed from here (both are thread-safe).
            if failures.load() == nil { finish() }
        }
        for failure in failures.load() ?? [] { emit(.warning(failure)) }
    }

    /// The devices on the air now, in join order.
    public var devices: [AirHubDevice] {
        state.withLock { state in state.joined.values.map(\.device).sorted { $0.number < $1.number } }
    }

    /// A snapshot of devices, connections and traffic.
    public var statistics: AirHubStatistics {
        var statistics = state.withLock { state in
            var statistics = state.airCounts
            statistics.devices = state.joined.count
            statistics.devicesJoined = state.nextNumber - 1
            statistics.connectionsMade = state.connectionsMade
            statistics.connections = state.joined.values.reduce(0) { total, joined in
                total + joined.connections.values.filter { $0.role == .central }.count
            }
            var traffic = state.pastTraffic
            for joined in state.joined.values { traffic.add(joined.traffic) }
            statistics.traffic = traffic
            return statistics
        }
        let heap = ocb_heap_bytes_in_use()
        statistics.heapBytesInUse = heap > 0 ? Int(heap) : nil
        return statistics
    }

    /// The controller of device `number` while it is on the air (to move it, power it off...).
    public func controller(ofDevice number: Int) -> VirtualController? {
        state.withLock { $0.joined[number]?.controller }
    }

    // MARK: Joining

    /// Adds a host connection coming from elsewhere (an in-process transport, a socket the caller accepted):
    /// the hub starts it and the host joins like one from a listener. `origin` names where it came from.
    public func adopt(_ transport: any HCITransport, origin: String, fileLabel: String? = nil) {
        let member = state.withLock { state -> Member? in
            guard state.phase == .running || state.phase == .starting else { return nil }
            state.nextSerial += 1
            let member = Member(serial: state.nextSerial, transport: transport, origin: origin, fileLabel: fileLabel,
                                queueLimit: configuration.hostQueueLimit)
            state.pending[member.serial] = member
            return member
        }
        guard let member else {
            transport.close()
            return
        }
        do {
            try transport.start(
                onFrame: { [weak self] frame in self?.frameFromHost(frame, member: member) },
                onClose: { [weak self] error in
                    self?.leave(member, reason: error.map { "host closed: \($0.reason)" } ?? "closed")
                })
        } catch {
            leave(member, reason: "could not start the transport: \(error.reason)")
        }
    }

    /// Makes the socket's folder safe (``prepareSocketFolder(forSocket:)``) and refuses when another hub accepts
    /// there (before this hub touches the side sockets of that path).
    private func prepareUNIX(_ path: String) throws(AirHubError) {
        try Self.prepareSocketFolder(forSocket: path)
        if Self.isRunning(at: path) {
            throw AirHubError(.alreadyRunning, "another blue air is already running on \(path)")
        }
    }

    private func listenUNIX(_ path: String) throws(AirHubError) -> H4Listener {
        try prepareUNIX(path)
        do {
            return try H4Listener.listen(unixPath: path) { [weak self] transport in
                self?.adopt(transport, origin: transport.peerProcess.map { "\($0)" } ?? "unix:\(path)",
                            fileLabel: transport.peerProcess?.slug)
            }
        } catch {
            if Self.isRunning(at: path) {
                throw AirHubError(.alreadyRunning, "another blue air is already running on \(path)")
            }
            throw AirHubError(.listenFailed, error.reason)
        }
    }

    private func listenTCP(_ endpoint: AirHubTCPEndpoint) throws(AirHubError) -> H4Listener {
        do {
            let name = LockedValue("tcp:\(endpoint)")
            let listener = try H4Listener.listen(tcpHost: endpoint.host, port: endpoint.port) { [weak self] transport in
                self?.adopt(transport, origin: name.withLock { $0 })
            }
            name.withLock { $0 = listener.name }
            return listener
        } catch {
            throw AirHubError(.listenFailed, error.reason)
        }
    }

    /// Creates the snoop folder (mode 0700: the captures carry keys, and each is created 0600) when missing; refuses a
    /// path that is not a folder.
    private static func makeSnoopDirectory(_ path: String) throws(AirHubError) {
        var info = stat()
        if stat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw AirHubError(.snoopFailed, "\(path) exists and is not a directory")
            }
            return
        }
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            let reason = String(cString: strerror(errno))
            throw AirHubError(.snoopFailed, "cannot create \(path): \(reason)")
        }
    }

    /// Every frame from a host; the first one creates the controller.
    private func frameFromHost(_ frame: H4Frame, member: Member) {
        guard let joined = controllerFor(member) else { return }
        let now = SnoopingTransport.realTimeClock()
        joined.sink?.record(frame, direction: .sent, unixMicroseconds: now)
        let randomAddress = Self.randomAddressSet(by: frame)
        // The monitor comes with the state lock this frame takes anyway: no lock of its own per frame.
        let (monitor, tap) = state.withLock { state -> (AirHubMonitor?, AirHubFrameTap?) in
            guard state.joined[joined.device.number] != nil else { return (nil, nil) }
            switch frame.type {
            case .command: state.joined[joined.device.number]?.traffic.commands &+= 1
            case .aclData: state.joined[joined.device.number]?.traffic.aclToController &+= 1
            default: break
            }
            state.joined[joined.device.number]?.traffic.octets &+= frame.packet.count &+ 1
            if let randomAddress { state.joined[joined.device.number]?.randomAddress = randomAddress }
            return (state.monitor, state.frameTap)
        }
        monitor?.record(device: joined.device.number, frame, direction: .sent, unixMicroseconds: now)
        tap?(joined.device.number, frame, .sent, now)
        joined.controller.receiveFromHost(frame)
    }

    private func controllerFor(_ member: Member) -> Joined? {
        if let joined = member.joined.withLock({ $0 }) { return joined }
        let created = state.withLock { state -> Joined? in
            // `.starting` too: a host may speak as soon as the UNIX listener accepts, before the monitor and control
            // sockets exist; dropping its first frame (HCI_Reset) left it waiting for an answer (a flaky test under
            // load: "did not answer Reset within 20 s").
            guard state.phase == .running || state.phase == .starting, state.pending[member.serial] != nil else { return nil }
            let number = state.nextNumber
            state.nextNumber += 1
            let device = AirHubDevice(
                number: number, address: Self.address(forDevice: number),
                position: Self.position(forDevice: number, spacing: configuration.spacing),
                origin: member.origin,
                snoopPath: configuration.snoopDirectory.map { "\($0)/dev\(number)" + (member.fileLabel.map { "-\($0)" } ?? "") + ".btsnoop" },
            name: member.fileLabel)
            let joined = Joined(device: device, controller: VirtualController(air: air, address: device.address,
                                                                              position: device.position))
            state.joined[number] = joined
            return joined
        }
        guard var joined = created else { return nil }
        if let path = joined.device.snoopPath {
            do {
                joined.sink = try BTSnoopFileSink(path: path)
            } catch {
                joined.device.snoopPath = nil
                emit(.warning("dev\(joined.device.number): \(error.reason)"))
            }
            let final = joined
            state.withLock { $0.joined[final.device.number] = final }
        }
        let final = joined
        member.joined.withLock { $0 = final }
        let sink = joined.sink
        let number = joined.device.number
        let outbox = member.outbox
        // The monitor is set when the hub starts, before any device joins: taken once here, not per frame.
        let monitor = self.monitor
        joined.controller.toHost = { [weak self, weak member] frame in
            let now = SnoopingTransport.realTimeClock()
            sink?.record(frame, direction: .received, unixMicroseconds: now)
            monitor?.record(device: number, frame, direction: .received, unixMicroseconds: now)
            self?.frameToHost(frame, device: number)?(number, frame, .received, now)
            guard outbox.offer(frame) == .overflow, let self, let member else { return }
            self.emit(.warning("dev\(number): the host does not read its connection (more than \(outbox.limit) frames waiting); disconnected"))
            self.leave(member, reason: "host not reading")
            member.transport.close()
        }
        emit(.joined(joined.device))
        return joined
    }

    /// Counts a frame to a host and reports connections from its events (on the air's loop); returns the frame tap.
    private func frameToHost(_ frame: H4Frame, device number: Int) -> AirHubFrameTap? {
        var report: AirHubEvent?
        var tap: AirHubFrameTap?
        let event: HCIEvent? = frame.type == .event && Self.isReported(frame.packet)
            ? (try? HCIEvent(decoding: frame.packet)) : nil
        state.withLock { state in
            guard state.joined[number] != nil else { return }
            tap = state.frameTap
            switch frame.type {
            case .event: state.joined[number]?.traffic.events &+= 1
            case .aclData: state.joined[number]?.traffic.aclToHost &+= 1
            default: break
            }
            state.joined[number]?.traffic.octets &+= frame.packet.count &+ 1
            guard let event else { return }
            switch event {
            case .leMeta(.connectionComplete(let complete)):
                report = state.connected(number, complete)
            case .leMeta(.enhancedConnectionComplete(let enhanced)), .leMeta(.enhancedConnectionCompleteV2(let enhanced, _, _)):
                report = state.connected(number, enhanced.connection)
            case .disconnectionComplete(let status, let handle, let reason):
                guard status == .success, state.joined[number]?.connections.removeValue(forKey: handle) != nil else { return }
                report = .disconnected(device: number, handle: handle, reason: reason)
            case .encryptionChange(let status, let handle, let enabled), .encryptionChangeV2(let status, let handle, let enabled, _):
                report = .encryptionChanged(device: number, handle: handle, status: status, enabled: enabled != 0)
            default:
                break
            }
        }
        if let report { emit(report) }
        return tap
    }

    /// Disconnection Complete, Encryption Change (v1, v2), LE (Enhanced) Connection Complete.
    private static func isReported(_ packet: [UInt8]) -> Bool {
        guard let code = packet.first else { return false }
        switch code {
        case 0x05, 0x08, 0x59: return true
        case 0x3E: return packet.count > 2 && (packet[2] == 0x01 || packet[2] == 0x0A || packet[2] == 0x29)
        default: return false
        }
    }

    /// The address of HCI_LE_Set_Random_Address (opcode 0x2005), to name peers in connection reports.
    private static func randomAddressSet(by frame: H4Frame) -> BluetoothAddress? {
        let packet = frame.packet
        guard frame.type == .command, packet.count == 9, packet[0] == 0x05, packet[1] == 0x20, packet[2] == 6 else {
            return nil
        }
        return try? BluetoothAddress(littleEndianBytes: packet[3...], type: .random)
    }

    /// Powers the member's controller off and forgets it (idempotent).
    private func leave(_ member: Member, reason: String) {
        let gone = state.withLock { state -> Joined? in
            state.pending[member.serial] = nil
            guard let joined = member.joined.withLock({ $0 }),
                  let removed = state.joined.removeValue(forKey: joined.device.number) else { return nil }
            state.pastTraffic.add(removed.traffic)
            return removed
        }
        guard let gone else { return }
        gone.controller.toHost = nil
        member.outbox.close()
        air.detach(gone.controller)
        gone.sink?.close()
        emit(.left(gone.device, reason: reason))
    }

    // MARK: Statistics and events

    private func armStatistics(_ interval: Duration) {
        let job = eventLoop.schedule(after: interval) { [weak self] in
            guard let self, self.state.withLock({ $0.phase == .running }) else { return }
            self.emit(.statistics(self.statistics))
            self.armStatistics(interval)
        }
        let keep = state.withLock { state in
            guard state.phase == .running else { return false }
            state.statisticsTimer = job
            return true
        }
        if !keep { job.cancel() }
    }

    /// The monitor socket's readers, if the hub has one.
    private var monitor: AirHubMonitor? { state.withLock { $0.monitor } }

    func emit(_ event: AirHubEvent) {
        switch event {
        case .joined, .left: monitor?.note(event.text, unixMicroseconds: SnoopingTransport.realTimeClock())
        default: break
        }
        guard let handler = onEvent else { return }
        eventLock.whileLocked { handler(event) }
    }

    /// `0A:1B:00:00:00:00` + n: the public address of device n.
    public static func address(forDevice number: Int) -> BluetoothAddress {
        BluetoothAddress(0x0A1B_0000_0000 | (UInt64(truncatingIfNeeded: number) & 0xFFFF_FFFF), type: .public)
    }

    /// Device n (from 1) on a 4-wide grid, `spacing` metres between neighbours.
    public static func position(forDevice number: Int, spacing: Double) -> AirPosition {
        let index = max(0, number - 1)
        return AirPosition(x: Double(index % 4) * spacing, y: Double(index / 4) * spacing)
    }
}

/// A host connection the hub accepted: its transport and, once the host spoke, its controller.
final class Member: Sendable {
    let serial: Int
    let transport: any HCITransport
    let origin: String
    /// What names the member's snoop file after the device number ("blue-serve"), when known.
    let fileLabel: String?
    let joined = LockedValue<Joined?>(nil)
    /// Frames to the host: the air's loop never blocks on a host's socket.
    let outbox: AirHubOutbox

    init(serial: Int, transport: any HCITransport, origin: String, fileLabel: String?, queueLimit: Int) {
        self.serial = serial
        self.transport = transport
        self.origin = origin
        self.fileLabel = fileLabel
        self.outbox = AirHubOutbox(transport: transport, limit: queueLimit, label: "OpenCoreBluetooth.air-hub.host\(serial)")
    }
}

/// A device on the air: its controller, capture, traffic and live connections.
struct Joined: Sendable {
    var device: AirHubDevice
    let controller: VirtualController
    var sink: BTSnoopFileSink?
    var traffic = AirHubTraffic()
    var randomAddress: BluetoothAddress?
    var connections: [UInt16: (role: LERole, peer: BluetoothAddress)] = [:]

    init(device: AirHubDevice, controller: VirtualController) {
        self.device = device
        self.controller = controller
    }
}

struct HubState {
    enum Phase { case created, starting, running, stopped }
    var phase = Phase.created
    var listeners: [H4Listener] = []
    /// `SOCKET.monitor`: the traffic for `blue monitor` (``AirHubMonitor``).
    var monitor: AirHubMonitor?
    /// `SOCKET.control`: faults on demand for `blue fault` (``AirHubControl``).
    var control: AirHubControl?
    var pending: [Int: Member] = [:]
    var joined: [Int: Joined] = [:]
    var nextSerial = 0
    var nextNumber = 1
    var connectionsMade = 0
    var pastTraffic = AirHubTraffic()
    var airCounts = AirHubStatistics()
    var statisticsTimer: ScheduledJob?
    /// Sees every HCI frame between a host and its controller (``AirHub/setFrameTap(_:)``).
    var frameTap: AirHubFrameTap?
    /// Whether a view of the air was asked for (``AirHub/view(completion:)``): only then are the counters below kept.
    var viewed = false
    /// Data channel packets and octets per link on the air, for views.
    var linkTraffic: [Int: AirHubView.Traffic] = [:]
    /// Advertising events' packets (ADV_* and ADV_EXT_IND) per sender address, for views.
    var advertisingPackets: [BluetoothAddress: Int] = [:]

    mutating func connected(_ number: Int, _ complete: LEConnectionComplete) -> AirHubEvent? {
        guard complete.status == .success else { return nil }
        joined[number]?.connections[complete.handle] = (complete.role, complete.peerAddress)
        if complete.role == .central { connectionsMade &+= 1 }
        let peer = complete.peerAddress
        let peerDevice = joined.values.first { other in
            other.device.number != number
                && (peer.type == .public ? other.device.address.value == peer.value : other.randomAddress == peer)
        }?.device.number
        return .connected(device: number, handle: complete.handle,
                          role: complete.role == .central ? "central" : "peripheral", peer: peer, peerDevice: peerDevice)
    }
}
