import BluetoothRuntime
import Logging
public import HCITransport
import Host
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SharedAir
import BluetoothEngine
import BlueZ

/// Opens a started ``HostStack`` on any transport named by `--hci` (DESIGN.md "Transports";
/// ``HCITransportSpec``): H4 over TCP, UNIX sockets and serial ports (Core 5.4 Vol 4 Part A §2), the Linux HCI
/// user channel, a virtual controller on an air hub (`air:PATH`), or `virtual`.
///
/// `virtual` is the shared air: the hub at ``StackLaunchOptions/hubSocketPath`` (`$OCB_AIR_SOCKET`, else the hub's
/// default path), started first when none runs there, as ``StackLaunchOptions/hubStarter`` says (``SharedAirHub``).
/// `in-process` is an air of its own in this process (the stack is alone on it; ``InProcessAir`` puts several
/// stacks on one).
///
/// Every failure is a ``StackLaunchError`` with one line saying what and where.
public enum StackLauncher {
    /// Parses `text` (``StackSpecification/init(parsing:)``) and opens our host on it; bluetoothd's stack (`bluez`)
    /// is not ours to open and throws ``StackLaunchError/Code/notOffered`` with ``BluetoothdLimitation/ourHost``'s line.
    public static func open(_ text: String, options: StackLaunchOptions = StackLaunchOptions()) async throws(StackLaunchError) -> LaunchedStack {
        switch try StackSpecification(parsing: text) {
        case .host(let spec):
            return try await open(spec: spec, options: options)
        case .bluez:
            throw StackLaunchError(.notOffered, BluetoothdLimitation.ourHost.message(hci: text))
        case .service:
            throw StackLaunchError(.notOffered, "\(text): the Bluetooth service runs this stack, not this program "
                                   + "(what needs the host itself, such as a btsnoop tap, runs on the stack's own transport)")
        }
    }

    /// Opens the stack `specification` names, on whichever engine runs it: bluetoothd's (``BluetoothdStack``) for
    /// `bluez[:hciN]` (``StackLaunchOptions`` do not apply: bluetoothd owns the adapter; a snoop path or anything in
    /// ``StackLaunchOptions/needingOurHost`` is refused), our host otherwise (``open(spec:options:)``).
    public static func open(specification: StackSpecification, options: StackLaunchOptions = StackLaunchOptions())
        async throws(StackLaunchError) -> any OpenedStack {
        switch specification {
        case .host(let spec):
            return try await open(spec: spec, options: options)
        case .bluez(let adapter):
            // What only our host does is refused here, in one place, before anything opens.
            let refused = (options.snoopPath == nil ? [] : [BluetoothdLimitation.snoop]) + options.needingOurHost
            if let first = refused.first { throw StackLaunchError(.notOffered, first.message(hci: specification.description)) }
            return try await BluetoothdStack.open(adapter: adapter)
        case .service(let transport):
            return try await openAtService(transport, options: options)
        }
    }

    /// Opens the transport, taps it when ``StackLaunchOptions/snoopPath`` is set, starts a ``HostStack`` on a
    /// new `DispatchEventLoop` and waits until the controller is initialised (at most
    /// ``StackLaunchOptions/startTimeout``).
    public static func open(spec: HCITransportSpec, options: StackLaunchOptions = StackLaunchOptions()) async throws(StackLaunchError) -> LaunchedStack {
        switch spec {
        case .virtual:
            let path = options.hubSocketPath
            let note = switch try await SharedAirHub.ensure(at: path, starter: options.hubStarter) {
            case .running: "shared air hub"
            case .started: "shared air hub, started"
            case .hostedHere: "shared air hub, hosted by this process"
            }
            return try await openHub(path: path, spec: .air(path: path), note: note, options: options)
        case .inProcess:
            let air = InProcessAir(label: options.label + ".air")
            return try await air.makeStack(options: options, position: nil, owned: true)
        case .air(let path):
            return try await openHub(path: path, spec: spec, note: "air hub", options: options)
        default:
            let transport: any HCITransport
            do {
                transport = try spec.open()
            } catch {
                throw StackLaunchError.opening(spec, error)
            }
            return try await launch(transport: transport, spec: spec, description: spec.description, options: options,
                                    ownedAir: nil)
        }
    }

    private static func openHub(path: String, spec: HCITransportSpec, note: String, options given: StackLaunchOptions)
        async throws(StackLaunchError) -> LaunchedStack {
        // A hub is a process of this machine, as slow to answer as the machine is busy (a hub just started by a
        // program, while the machine runs a test suite, took over 5 s to answer Reset): limits of seconds, not the
        // ones that detect a dead dongle.
        var options = given
        options.host.initialisationCommandTimeout = max(options.host.initialisationCommandTimeout, .seconds(20))
        options.host.commandTimeout = max(options.host.commandTimeout, .seconds(10))
        options.startTimeout = max(options.startTimeout, .seconds(30))
        do throws(AirHubError) {
            try AirHub.checkTrust(ofSocket: path)
        } catch {
            throw StackLaunchError(.unreachable, error.reason)
        }
        let transport: SocketH4Transport
        do {
            transport = try AirHub.connect(at: path)
        } catch {
            throw StackLaunchError(
                .unreachable,
                "no air hub at \(path) (start one with `blue air --socket \(path)`): \(error.reason)")
        }
        return try await launch(transport: transport, spec: spec, description: "air:\(path) (\(note))", options: options,
                                ownedAir: nil)
    }

    /// Taps, starts and waits for initialisation; closes everything on failure.
    static func launch(transport: any HCITransport, spec: HCITransportSpec, description: String,
                       options: StackLaunchOptions, ownedAir: InProcessAir?) async throws(StackLaunchError) -> LaunchedStack {
        var hostConfiguration = options.host
        if case .persistent(let directory) = options.identity {
            do {
                let identity = try LocalIdentityFile(directory: directory ?? FileBondStore.defaultDirectory()).loadOrCreate()
                identity.apply(to: &hostConfiguration)
            } catch {
                transport.close()
                ownedAir?.shutdown()
                throw StackLaunchError(.identityFailed, "the local identity: \(error)")
            }
        }
        var sink: BTSnoopFileSink?
        var wired: any HCITransport = transport
        if let path = options.snoopPath {
            do {
                let created = try BTSnoopFileSink(path: path)
                sink = created
                wired = SnoopingTransport(wrapping: transport, sink: created)
            } catch {
                transport.close()
                ownedAir?.shutdown()
                throw StackLaunchError(.snoopFailed, error.reason)
            }
        }
        // Outermost, so that the loss is known (and the capture written) before the host hears of it.
        let watch = LossWatchingTransport(wrapping: wired, spec: spec.description)
        let loop = DispatchEventLoop(label: options.label, sharedTime: options.sharedTime)
        // Every log line of the stack names it (a program may run several: `blue demo` runs two).
        let makeLogger = hostConfiguration.makeLogger
        let stackLabel = options.label
        hostConfiguration.makeLogger = { label in
            var logger = makeLogger(label)
            logger[metadataKey: "stack"] = "\(stackLabel)"
            return logger
        }
        let host = HostStack(transport: watch, eventLoop: loop, configuration: hostConfiguration)
        let result = await startHost(host, loop: loop, timeout: options.startTimeout)
        switch result {
        case .success(let info):
            return LaunchedStack(host: host, eventLoop: loop, spec: spec, transportDescription: description,
                                 controllerInfo: info, snoopSink: sink, ownedAir: ownedAir, watch: watch)
        case .failure(let error):
            host.shutdown()
            loop.sync {}
            sink?.close()
            ownedAir?.shutdown()
            throw StackLaunchError(.controllerFailed, "the controller on \(description) did not start: \(error.reason)")
        }
    }

    /// Starts the host; fails with ``HostError/Code/timedOut`` when initialisation takes longer than `timeout`.
    static func startHost(_ host: HostStack, loop: any EventLoop, timeout: Duration) async -> Result<ControllerInfo, HostError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<ControllerInfo, HostError>, Never>) in
            let once = LockedValue<CheckedContinuation<Result<ControllerInfo, HostError>, Never>?>(continuation)
            @Sendable func finish(_ result: Result<ControllerInfo, HostError>) {
                let pending = once.withLock { value in
                    defer { value = nil }
                    return value
                }
                pending?.resume(returning: result)
            }
            let timer = loop.schedule(after: timeout) {
                finish(.failure(HostError(.timedOut, "no answer within \(timeout)")))
            }
            host.start { result in
                timer.cancel()
                finish(result)
            }
        }
    }

    /// This program's executable (`/proc/self/exe`), for ``SharedAirHub/Starter/executable(_:)``.
    public static var currentExecutablePath: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if count > 0 {
            return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return CommandLine.arguments.first ?? "blue"
    }
}
