import BluetoothCore
import BluetoothEngine
import BluetoothRuntime
import Dispatch
import FoundationEssentials
import SystemInterface
import L2CAP
import StackLauncher
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One LE credit-based channel (Core 5.4 Vol 3 Part A §4.22–§4.24) pumped to and from the process's standard input
/// and output, for `blue l2cap listen|connect`.
///
/// Who runs what: the engine's events arrive on its loop; SDUs received are written to standard output in order by
/// one serial queue (so a slow reader of the pipe never blocks the stack's loop); standard input is read by one
/// thread, one read (at most the peer's MTU) per SDU, each send awaited before the next read: the send completes
/// once the SDU's K-frames went to the controller (`HostStack.sendL2CAPSDU`), so the peer's credits pace the
/// reading and at most one SDU waits in the host.
final class L2CAPPipe: Sendable {
    /// What the command waits for.
    enum Event: Sendable {
        /// The listener's channel opened (a peer asked for it on the PSM); the peer's address when it was seen.
        case opened(handle: UInt16, L2CAPChannelInfo, peer: BluetoothAddress?)
        /// A central connected to the listener and went away without opening a channel.
        case peerLeftWithoutChannel
        /// Everything standard input gave was sent.
        case inputEnded
        /// The channel closed (either side); every SDU received before was written out.
        case closed(String)
        /// The link ended under the channel.
        case linkLost(String)
        /// Sending or reading standard input failed.
        case failed(String)
        /// SIGINT or SIGTERM.
        case interrupted
    }

    struct Totals: Sendable {
        var sentBytes = 0
        var sentSDUs = 0
        var receivedBytes = 0
        var receivedSDUs = 0
    }

    private struct State: Sendable {
        var handle: UInt16?
        var channel: L2CAPChannelInfo?
        var totals = Totals()
        /// The peers of the links seen connect (a listener names the one its channel came from).
        var peers: [UInt16: BluetoothAddress] = [:]
    }

    let stack: any OpenedStack
    /// The PSM a listener accepts channels on (nil for the connecting side).
    let listeningPSM: UInt16?
    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let state = LockedValue(State())
    private let output = DispatchQueue(label: "blue.l2cap.output")
    private let subscription = LockedValue<StackEventSubscription?>(nil)
    private let signals = LockedValue<SignalWatcher?>(nil)

    init(stack: any OpenedStack, listeningPSM: UInt16?) {
        self.stack = stack
        self.listeningPSM = listeningPSM
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        let subscription = stack.addEventHandler { [weak self] event in self?.handle(event) }
        self.subscription.store(subscription)
        signals.store(SignalWatcher { [weak self] _ in self?.continuation.yield(.interrupted) })
    }

    /// Stops watching the engine and the signals.
    func stop() {
        subscription.withLock { $0?.cancel() }
        signals.withLock { $0?.cancel() }
        continuation.finish()
    }

    var totals: Totals { state.load().totals }

    /// Takes the channel as the pipe's (on the engine's loop, before any of its SDUs arrive: in the open's
    /// completion, or from the opened event).
    func adopt(handle: UInt16, _ info: L2CAPChannelInfo) {
        state.withLock { state in
            state.handle = handle
            state.channel = info
        }
    }

    /// The adopted channel and its link's handle.
    private var adopted: (handle: UInt16, info: L2CAPChannelInfo)? {
        state.withLock { state in state.handle.flatMap { handle in state.channel.map { (handle, $0) } } }
    }

    /// Ends the wait with a failure (a time limit passed).
    func fail(_ reason: String) {
        continuation.yield(.failed(reason))
    }

    /// Waits until every SDU received so far was written to standard output.
    func flushOutput() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in output.async { done.resume() } }
    }

    // MARK: The engine's events, on its loop

    private func handle(_ event: HostEvent) {
        let adopted = state.load()
        switch event {
        case .l2capChannelOpened(let handle, let info):
            guard let psm = listeningPSM, info.psm == psm, !info.isInitiator else { return }
            if adopted.channel == nil {
                adopt(handle: handle, info)
                continuation.yield(.opened(handle: handle, info, peer: adopted.peers[handle]))
            } else {
                // One channel at a time, as `nc -l` takes one connection.
                stack.engine.closeL2CAPChannel(connectionHandle: handle, channel: info.localCID)
            }
        case .l2capSDU(let handle, let channel, let sdu):
            guard handle == adopted.handle, channel == adopted.channel?.localCID else { return }
            state.withLock { state in
                state.totals.receivedBytes += sdu.count
                state.totals.receivedSDUs += 1
            }
            output.async {
                if DescriptorWriter.writeAll(1, bytes: sdu) == EPIPE { CommandRun.end(.outputClosed) }
            }
        case .l2capChannelClosed(let handle, let channel, let reason):
            guard handle == adopted.handle, channel == adopted.channel?.localCID else { return }
            let continuation = continuation
            output.async { continuation.yield(.closed("\(reason)")) }
        case .connected(let connection):
            state.withLock { $0.peers[connection.handle] = connection.peer }
        case .disconnected(let handle, let reason):
            state.withLock { _ = $0.peers.removeValue(forKey: handle) }
            if handle == adopted.handle {
                let continuation = continuation
                output.async { continuation.yield(.linkLost("\(reason)")) }
            } else if listeningPSM != nil, adopted.channel == nil {
                continuation.yield(.peerLeftWithoutChannel)
            }
        default:
            break
        }
    }

    // MARK: Standard input

    /// Starts the thread that sends standard input on the adopted channel.
    func startInput() {
        guard let (handle, info) = adopted else { return }
        let engine = stack.engine, continuation = continuation
        let chunk = max(1, min(Int(info.remoteMTU), 65_536))
        DetachedThread.spawn(named: "blue.l2cap.input") { [self] in
            var buffer = [UInt8](repeating: 0, count: chunk)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, chunk) }
                if count < 0, errno == EINTR { continue }
                if count < 0 {
                    continuation.yield(.failed("cannot read standard input: \(String(cString: strerror(errno)))"))
                    return
                }
                if count == 0 {
                    continuation.yield(.inputEnded)
                    return
                }
                let sdu = Array(buffer[0..<count])
                let sent = LockedValue<Result<Void, HostError>?>(nil)
                let done = DispatchSemaphore(value: 0)
                engine.sendL2CAPSDU(connectionHandle: handle, channel: info.localCID, sdu) { result in
                    sent.store(result)
                    done.signal()
                }
                done.wait()
                if case .failure(let error)? = sent.load() {
                    continuation.yield(.failed("cannot send: \(error.reason)"))
                    return
                }
                state.withLock { state in
                    state.totals.sentBytes += count
                    state.totals.sentSDUs += 1
                }
            }
        }
    }

    /// One line on the channel for `--verbose`: its PSM, CIDs, MTUs and MPSs.
    static func describe(_ info: L2CAPChannelInfo) -> String {
        "PSM \(Dissection.hex16(info.psm)), CID \(Dissection.hex16(info.localCID.rawValue)) ↔ "
            + "\(Dissection.hex16(info.remoteCID.rawValue)), MTU \(info.localMTU) here and \(info.remoteMTU) there, "
            + "MPS \(info.localMPS) here and \(info.remoteMPS) there"
    }
}

extension L2CAPPipe {
    /// Pumps the adopted channel until it ends: standard input to the peer, the peer to standard output. Returns
    /// when the channel closed (the peer closed it, or standard input ended and everything was sent, unless
    /// `stay`) or on SIGINT/SIGTERM (the channel is closed first); throws when the link is lost or sending fails.
    ///
    /// `events` is the one iterator of ``events`` the command uses throughout (a listener waited on it for its channel).
    func pump(_ events: inout AsyncStream<Event>.Iterator, peer: String, options: L2CAPPipeOptions, command: String)
        async throws(CLIFailure) {
        guard let (handle, info) = adopted else { throw CLIFailure(.failed, "no channel to pump") }
        if options.verbose { Console.error("\(command): channel open with \(peer): \(Self.describe(info))") }
        startInput()
        var outcome = "closed by the peer"
        loop: while let event = await events.next() {
            switch event {
            case .inputEnded where options.stay || totals.sentSDUs == 0:
                // A side given nothing to send (standard input /dev/null) only receives.
                if options.verbose { Console.error("\(command): end of input; receiving until \(peer) closes the channel") }
            case .inputEnded, .interrupted:
                outcome = { if case .interrupted = event { "closed on a signal" } else { "closed at the end of input" } }()
                _ = await stack.awaitCompletion { (done: @escaping @Sendable (Result<Void, HostError>) -> Void) in
                    stack.engine.closeL2CAPChannel(connectionHandle: handle, channel: info.localCID, completion: done)
                }
                break loop
            case .closed(let reason):
                if options.verbose { outcome = "closed by the peer (\(reason))" }
                break loop
            case .linkLost(let reason):
                await flushOutput()
                throw CLIFailure(.failed, "the link to \(peer) was lost: \(reason)")
            case .failed(let reason):
                await flushOutput()
                throw CLIFailure(.failed, reason)
            case .opened, .peerLeftWithoutChannel:
                continue
            }
        }
        await flushOutput()
        if options.verbose {
            let totals = totals
            Console.error("\(command): sent \(totals.sentBytes) bytes in \(totals.sentSDUs) SDUs, received "
                          + "\(totals.receivedBytes) bytes in \(totals.receivedSDUs) SDUs; the channel \(outcome)")
        }
    }
}
