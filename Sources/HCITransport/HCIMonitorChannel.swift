import BluetoothCore
public import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SystemInterface

/// The Linux kernel's HCI monitor channel, as btmon reads it: a raw Bluetooth socket (AF_BLUETOOTH 31, BTPROTO_HCI 1)
/// bound to `sockaddr_hci { family 31, HCI_DEV_NONE, HCI_CHANNEL_MONITOR 2 }`, on which the kernel copies every HCI
/// packet of every controller it drives, both directions, and says when a controller appears or goes. Read only:
/// the controllers stay with their users (bluetoothd, a user channel). Needs CAP_NET_RAW (root, or
/// `setcap cap_net_raw+ep`).
///
/// Each read gives one packet: `struct hci_mon_hdr { le16 opcode; le16 index; le16 len }` and `len` octets
/// (linux/include/net/bluetooth/hci_mon.h); ``HCIMonitorPacket/init(decoding:)`` takes hostile bytes.
public final class HCIMonitorChannel: @unchecked Sendable {
    static let channelMonitor: UInt16 = 2
    static let deviceNone: UInt16 = 0xFFFF

    /// One monitor packet (``HCIMonitorPacket``, shared with btsnoop captures of datalink 2001).
    public typealias Packet = HCIMonitorPacket

    private let fd: Int32

    /// Opens the monitor channel; fails with a reason that says what is needed.
    public init() throws(HCITransportError) {
        #if os(Linux)
        let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(HCIUserChannelTransport.addressFamilyBluetooth, type, HCIUserChannelTransport.protocolHCI)
        guard fd >= 0 else {
            throw HCITransportError(.openFailed, "cannot create an HCI socket: \(Self.explain(errno))")
        }
        let address = HCIUserChannelTransport.SocketAddressHCI(
            family: UInt16(HCIUserChannelTransport.addressFamilyBluetooth), device: Self.deviceNone, channel: Self.channelMonitor)
        if let code = SocketAddress.bind(fd, address) {
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "cannot bind the HCI monitor channel: \(Self.explain(code))")
        }
        self.fd = fd
        #else
        throw HCITransportError(.openFailed, "the HCI monitor channel exists only on Linux")
        #endif
    }

    static func explain(_ code: Int32) -> String {
        let text = POSIX.errorText(code)
        switch code {
        case EAFNOSUPPORT: return "\(text): this kernel has no Bluetooth support (the bluetooth module)"
        case EPERM, EACCES: return "\(text): the monitor channel needs CAP_NET_RAW (run as root, or setcap cap_net_raw+ep)"
        default: return text
        }
    }

    /// Reads the next packet (blocking); nil once ``close()`` was called or the socket failed (`error` says why,
    /// nil after a close).
    public func next() -> (packet: Packet?, error: String?)? {
        var buffer = [UInt8](repeating: 0, count: 6 + 65_535)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? nil : (nil, errno == EBADF || errno == EINVAL ? nil : POSIX.errorText(errno)) }
            // A packet that does not decode is skipped: the kernel wrote it, a newer kernel may add fields.
            return (try? Packet(decoding: Array(buffer[..<count])), nil)
        }
    }

    /// Wakes a blocked ``next()`` and releases the socket.
    public func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    deinit {
        POSIX.closeDescriptor(fd)
    }
}
