import BluetoothRuntime
import FoundationEssentials
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SystemInterface

/// A characteristic's notifications handed to bluetoothd through AcquireNotify (BlueZ's
/// doc/org.bluez.GattCharacteristic.rst: the server returns a socket and an MTU; bluetoothd reads each value from it
/// and notifies or indicates it to the subscribed centrals). Our end is a non-blocking `SOCK_SEQPACKET` socket: a
/// value is one packet, and a full socket buffer is `updateValue`'s back-pressure (CoreBluetooth's false, then
/// `peripheralManagerIsReady(toUpdateSubscribers:)` when bluetoothd has read enough). bluetoothd closes its end when
/// the last central unsubscribes: the hang-up ends the subscription.
package final class BlueZNotifyPipe: Sendable {
    private struct State {
        var waitingForRoom = false
        var closed = false
    }

    package let characteristicID: Int
    /// The largest value bluetoothd sends in one notification (the MTU it asked for, minus the ATT header).
    package let maximumValueLength: Int
    private let fd: Int32
    private let wake: (read: Int32, write: Int32)
    private let state = LockedValue(State())

    /// A socket pair: our end kept, bluetoothd's returned (the caller sends it and closes its copy). Nil when the
    /// kernel refuses.
    package static func make(characteristicID: Int, mtu: Int) -> (pipe: BlueZNotifyPipe, remote: Int32)? {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else { return nil }
        guard let wake = POSIX.makeWakePipe() else {
            POSIX.closeDescriptor(ends[0])
            POSIX.closeDescriptor(ends[1])
            return nil
        }
        _ = fcntl(ends[0], F_SETFL, fcntl(ends[0], F_GETFL) | O_NONBLOCK)
        return (BlueZNotifyPipe(characteristicID: characteristicID, mtu: mtu, fd: ends[0], wake: wake), ends[1])
    }

    private init(characteristicID: Int, mtu: Int, fd: Int32, wake: (read: Int32, write: Int32)) {
        self.characteristicID = characteristicID
        maximumValueLength = max(20, mtu - 3)
        self.fd = fd
        self.wake = wake
    }

    deinit {
        POSIX.closeDescriptor(fd)
        POSIX.closeDescriptor(wake.read)
        POSIX.closeDescriptor(wake.write)
    }

    /// Watches the socket: `ready` when room came back after a refused send, `ended` once when bluetoothd closed
    /// its end (or ``close()`` was called).
    package func start(ready: @escaping @Sendable () -> Void, ended: @escaping @Sendable () -> Void) {
        DetachedThread.spawn(named: "OpenCoreBluetooth.bluez.notify") { [self] in
            defer { ended() }
            while !state.load().closed {
                let waiting = state.load().waitingForRoom
                var descriptors = [pollfd(fd: fd, events: waiting ? Int16(POLLOUT) : 0, revents: 0),
                                   pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
                let result = poll(&descriptors, 2, 200)
                if result < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if descriptors[1].revents != 0 { return }
                let events = descriptors[0].revents
                if events & Int16(POLLHUP | POLLERR) != 0 {
                    state.withLock { $0.closed = true }
                    return
                }
                if events & Int16(POLLOUT) != 0, state.withLock({ value in defer { value.waitingForRoom = false }; return value.waitingForRoom }) {
                    ready()
                }
            }
        }
    }

    /// Hands one value to bluetoothd (truncated to ``maximumValueLength``); false when the socket is full (nothing
    /// queued: the caller tries again when `ready` came) or closed.
    package func send(_ value: [UInt8]) -> Bool {
        guard !state.load().closed else { return false }
        let packet = Array(value.prefix(maximumValueLength))
        let written = packet.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if written >= 0 { return true }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS {
            state.withLock { $0.waitingForRoom = true }
        }
        return false
    }

    package func close() {
        guard !state.withLock({ value in defer { value.closed = true }; return value.closed }) else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }
}
