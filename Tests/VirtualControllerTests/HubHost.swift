import BluetoothCore
import BluetoothRuntime
import HCI
import HCITransport
import Testing
@testable import VirtualController

/// A host on the hub's UNIX socket: sends commands, records LE Connection Complete and Disconnection Complete.
final class HubHost: Sendable {
    let transport: SocketH4Transport
    private let frames = LockedValue<[H4Frame]>([])

    init(socket: String) throws {
        transport = try SocketH4Transport.connect(path: socket)
        try transport.start(onFrame: { [frames] frame in frames.withLock { $0.append(frame) } }, onClose: { _ in })
    }

    func send(_ command: HCICommand) {
        try? transport.send(H4Frame(type: .command, packet: command.encode()))
    }

    private var events: [HCIEvent] {
        frames.withLock { $0 }.filter { $0.type == .event }.compactMap { try? HCIEvent(decoding: $0.packet) }
    }

    var disconnections: [HCIStatus] {
        events.compactMap { event in
            if case .disconnectionComplete(.success, _, let reason) = event { return reason }
            return nil
        }
    }

    /// More successful connections than disconnections so far.
    var connected: Bool {
        let made = events.filter { event in
            if case .leMeta(.connectionComplete(let complete)) = event { return complete.status == .success }
            return false
        }.count
        return made > disconnections.count
    }

    func close() { transport.close() }

    /// Every frame received so far.
    var frameCount: Int { frames.withLock { $0.count } }
}

/// Waits (at most 20 s) until `condition` holds; records an issue naming the caller's line and throws when it does not.
func waitUntil(_ line: Int = #line, _ condition: @escaping @Sendable () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("the condition of line \(line) not met within 20 s")
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
