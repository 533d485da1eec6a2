import BluetoothRuntime
import Dispatch
import FoundationEssentials
import HCI
import HCITransport
import SystemInterface
import VirtualController
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The hub's monitor socket (`SOCKET.monitor`): every controller's HCI traffic, and each join and leave, for any
/// number of readers (`blue monitor`). The stream is a sequence of records, each the device number (2 octets,
/// little-endian) followed by one btsnoop record (btsnoop's own layout, datalink 1002: the data starts with the H4
/// indicator; the direction flag says host → controller "sent" or controller → host "received"). Device number 0
/// carries a note of the hub (UTF-8 text: "joined: dev1 ..."). The air never waits for a reader: each has a queue,
/// and one that falls ``backlogLimit`` records behind is disconnected. The stream carries keys (LE Long Term Key
/// Request Reply, pairing): a reader of another user (SO_PEERCRED) gets one note, "refused: ...", and is closed.
final class AirHubMonitor: Sendable {
    /// Records a reader may leave unread before it is dropped.
    static let backlogLimit = 4_096

    private final class Reader: Sendable {
        let fd: Int32
        let queue = DispatchQueue(label: "OpenCoreBluetooth.air-hub.monitor")
        let pending = LockedValue(0)
        let closed = LockedValue(false)

        init(fd: Int32) {
            self.fd = fd
        }

        func close() {
            guard closed.withLock({ value in defer { value = true }; return !value }) else { return }
            queue.async { [fd] in POSIX.closeDescriptor(fd) }
        }
    }

    var path: String { socket.path }
    private let socket: AirHubSideSocket
    private let readers = LockedValue<[Reader]>([])
    /// The notes a new reader gets first: the devices joined before it came ("joined: dev1 ... via blue serve").
    private let greeting: @Sendable () -> [String]

    private init(socket: AirHubSideSocket, greeting: @escaping @Sendable () -> [String]) {
        self.socket = socket
        self.greeting = greeting
    }

    /// Listens at `path` (a stale socket file there is replaced) and accepts readers on a thread of its own; each
    /// new reader first gets `greeting`'s notes.
    static func listen(at path: String, greeting: @escaping @Sendable () -> [String]) throws(AirHubError) -> AirHubMonitor {
        let monitor = AirHubMonitor(socket: try AirHubSideSocket(path: path, purpose: "monitor"), greeting: greeting)
        monitor.socket.acceptOnThread(named: "OpenCoreBluetooth.air-hub.monitor-accept", refuse: { client, reason in
            _ = POSIX.writeAll(client, [0, 0] + Self.noteRecord(reason, unixMicroseconds: POSIX.unixMicroseconds()).encode(), style: .socket)
        }) { [monitor] client in
            monitor.accept(client)
        }
        return monitor
    }

    private func accept(_ client: Int32) {
        let reader = Reader(fd: client)
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        for text in greeting() {
            let record = BTSnoopRecord(flags: BTSnoopFlags(rawValue: 0), timestamp: BTSnoop.timestamp(unixMicroseconds: now), data: Array(text.utf8))
            _ = POSIX.writeAll(client, [0, 0] + record.encode(), style: .socket)
        }
        readers.withLock { $0.append(reader) }
    }

    /// Whether anyone reads (so that the hub skips encoding when nobody does).
    var hasReaders: Bool { !readers.load().isEmpty }

    /// One frame of device `number`.
    func record(device number: Int, _ frame: H4Frame, direction: BTSnoopDirection, unixMicroseconds: Int64) {
        guard hasReaders else { return }
        let record = BTSnoopRecord(flags: BTSnoopFlags(type: frame.type, direction: direction),
                                   timestamp: BTSnoop.timestamp(unixMicroseconds: unixMicroseconds), data: frame.encode())
        send(device: number, record)
    }

    /// A note of the hub (a device joined or left).
    func note(_ text: String, unixMicroseconds: Int64) {
        guard hasReaders else { return }
        send(device: 0, Self.noteRecord(text, unixMicroseconds: unixMicroseconds))
    }

    /// A note of the hub as a record of device 0.
    static func noteRecord(_ text: String, unixMicroseconds: Int64) -> BTSnoopRecord {
        BTSnoopRecord(flags: BTSnoopFlags(rawValue: 0), timestamp: BTSnoop.timestamp(unixMicroseconds: unixMicroseconds), data: Array(text.utf8))
    }

    private func send(device number: Int, _ record: BTSnoopRecord) {
        let bytes = [UInt8(truncatingIfNeeded: number), UInt8(truncatingIfNeeded: number >> 8)] + record.encode()
        for reader in readers.load() {
            let behind = reader.pending.withLock { value -> Int in
                value += 1
                return value
            }
            guard behind <= Self.backlogLimit else {
                drop(reader)
                continue
            }
            reader.queue.async { [weak self] in
                reader.pending.withLock { $0 -= 1 }
                guard !reader.closed.load() else { return }
                if POSIX.writeAll(reader.fd, bytes, style: .socket) != nil { self?.drop(reader) }
            }
        }
    }

    private func drop(_ reader: Reader) {
        readers.withLock { $0.removeAll { $0 === reader } }
        reader.close()
    }

    /// Stops accepting, disconnects every reader and removes the socket file.
    func close() {
        socket.close()
        for reader in readers.withLock({ readers in defer { readers = [] }; return readers }) { reader.close() }
    }
}
