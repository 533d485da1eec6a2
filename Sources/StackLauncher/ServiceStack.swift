public import BluetoothEngine
import BluetoothRuntime
import FoundationEssentials
import Logging
import HCITransport
public import ServiceEngine
import SharedAir
import SystemInterface
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A stack the per-user Bluetooth service runs for this program (`service[:TRANSPORT]`): the service engine
/// (ServiceEngine's `ServiceEngine`) as an ``OpenedStack``. Its loss is the end of the connection to the service
/// (the service stopped, or the stack's controller went away there).
public final class ServiceStack: OpenedStack, Sendable {
    public let serviceEngine: ServiceEngine
    public var engine: any StackEngine { serviceEngine }
    public let transportDescription: String
    public var controllerInfo: ControllerInfo { serviceEngine.controllerInfo }
    private let lossState = LockedValue<(loss: StackLoss?, handlers: [@Sendable (StackLoss) -> Void], shut: Bool)>((nil, [], false))

    init(engine: ServiceEngine, transportDescription: String) {
        self.serviceEngine = engine
        self.transportDescription = transportDescription
        engine.onEnd { [lossState] reason in
            let loss = StackLoss(code: .closedByPeer, transport: transportDescription, detail: reason)
            let handlers = lossState.withLock { state -> [@Sendable (StackLoss) -> Void] in
                guard !state.shut, state.loss == nil else { return [] }
                state.loss = loss
                defer { state.handlers = [] }
                return state.handlers
            }
            for handler in handlers { handler(loss) }
        }
    }

    public func onLoss(_ handler: @escaping @Sendable (StackLoss) -> Void) {
        let lost = lossState.withLock { state -> StackLoss? in
            if state.shut { return nil }
            if let loss = state.loss { return loss }
            state.handlers.append(handler)
            return nil
        }
        if let lost { handler(lost) }
    }

    public var loss: StackLoss? {
        let state = lossState.load()
        return state.shut ? nil : state.loss
    }

    /// Says goodbye: the service releases the stack (a clean exit by the program's choice).
    public func shutdown() {
        let first = lossState.withLock { state -> Bool in
            defer { state.shut = true; state.handlers = [] }
            return !state.shut
        }
        if first { serviceEngine.shutdown() }
    }
}

extension StackLauncher {
    /// Opens `transport` at the Bluetooth service (``StackLaunchOptions/serviceSocketPath``), starting `blue service`
    /// first when none runs there (``StackLaunchOptions/startsService``): `virtual` is sent as this program's air
    /// (``StackLaunchOptions/hubSocketPath``), so the service's stack meets the program's peers.
    static func openAtService(_ transport: HCITransportSpec, options: StackLaunchOptions) async throws(StackLaunchError) -> ServiceStack {
        let path = options.serviceSocketPath
        if options.snoopPath != nil {
            throw StackLaunchError(.notOffered, "service: a btsnoop capture of a stack the Bluetooth service runs is not offered yet "
                                   + "(capture the air instead: blue air --snoop DIR)")
        }
        try await ensureService(at: path, options: options)
        let stack: HCITransportSpec = transport == .virtual ? .air(path: options.hubSocketPath) : transport
        let program = (CommandLine.arguments.first.map { PathComponents.last(of: $0) }) ?? "program"
        let security = options.host.security
        let hello = ServiceHello(stack: stack.description, identifier: options.serviceIdentifier, program: program,
                                 relaunch: options.serviceIdentifier == nil ? nil : options.serviceRelaunch,
                                 host: ServiceHostSettings(preferredATTMTU: options.host.preferredATTMTU,
                                                           ioCapability: security.ioCapability, mitm: security.mitm))
        let engine: ServiceEngine
        do {
            engine = try await ServiceEngine.open(socketPath: path, hello: hello, timeout: options.startTimeout + .seconds(5))
        } catch {
            throw StackLaunchError(.unreachable, error.reason)
        }
        let note = engine.welcome.reattached ? ", taken back" : ""
        if engine.welcome.droppedEvents > 0 {
            Logger(label: LogLabel.launcher).notice(
                "the Bluetooth service dropped \(engine.welcome.droppedEvents) of the oldest events while this program was gone (its queue was full)")
        }
        return ServiceStack(engine: engine, transportDescription: "service:\(path) (\(stack)\(note))")
    }

    private static func ensureService(at path: String, options: StackLaunchOptions) async throws(StackLaunchError) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<Void, StackLaunchError>, Never>) in
            let started = DetachedThread.spawn(named: "service.ensure") {
                continuation.resume(returning: Self.ensureServiceBlocking(at: path, starts: options.startsService))
            }
            if !started {
                continuation.resume(returning: .failure(StackLaunchError(.unreachable, "no thread to reach the Bluetooth service on: \(POSIX.errorText(errno))")))
            }
        }
        try result.get()
    }

    private static func ensureServiceBlocking(at path: String, starts: Bool) -> Result<Void, StackLaunchError> {
        if serviceAnswers(at: path) { return .success(()) }
        guard starts else {
            return .failure(StackLaunchError(.unreachable, "no Bluetooth service at \(path) (start one with `blue service --socket \(path)`)"))
        }
        guard let executable = SharedAirHub.executable() else {
            return .failure(StackLaunchError(.unreachable, "no Bluetooth service at \(path), and no `blue` to start one "
                                             + "(set \(SharedAirHub.executableEnvironmentVariable) or put blue on PATH)"))
        }
        do throws(AirHubError) {
            try AirHubLauncher.ensureRunning(executable: executable, command: "service", socketPath: path, timeout: .seconds(10),
                                             isRunning: serviceAnswers(at:))
            return .success(())
        } catch {
            return .failure(StackLaunchError(.hubFailed, "no Bluetooth service at \(path), and none could be started: \(error.reason)"))
        }
    }

    /// Whether a service of this user accepts at `path`.
    static func serviceAnswers(at path: String) -> Bool {
        SocketOwnership.serverAnswers(at: path)
    }
}
