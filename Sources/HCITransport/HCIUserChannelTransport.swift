import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemInterface

/// A real adapter through the Linux HCI user channel: a raw Bluetooth socket (AF_BLUETOOTH 31, BTPROTO_HCI 1) bound
/// to `sockaddr_hci { family 31, device index, channel HCI_CHANNEL_USER 1 }`, which gives this process exclusive
/// access to the controller, bypassing the kernel's own host stack. Each read and write carries exactly one HCI
/// packet with its H4 packet indicator first (Core 5.4 Vol 4 Part A §2 layout, without a byte stream).
///
/// Requirements: Linux with Bluetooth support, the CAP_NET_ADMIN capability (root, or
/// `setcap cap_net_admin+ep`), and the adapter down in the kernel (`hciconfig hci0 down` or
/// `btmgmt --index 0 power off`); otherwise opening fails with ``HCITransportError/Code/openFailed`` saying which.
public final class HCIUserChannelTransport: DescriptorBackedTransport {
    static let addressFamilyBluetooth: Int32 = 31
    static let protocolHCI: Int32 = 1
    static let channelUser: UInt16 = 1

    /// `struct sockaddr_hci` (linux/bluetooth/hci_sock.h).
    struct SocketAddressHCI {
        var family: UInt16
        var device: UInt16
        var channel: UInt16
    }

    let core: DescriptorTransportCore
    public let deviceIndex: UInt16

    /// Opens the user channel of adapter `hci<deviceIndex>`.
    public init(deviceIndex: UInt16) throws(HCITransportError) {
        let name = "hci\(deviceIndex)"
        #if os(Linux)
        let type = Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(Self.addressFamilyBluetooth, type, Self.protocolHCI)
        guard fd >= 0 else {
            let code = errno
            throw HCITransportError(.openFailed, "\(name): cannot create an HCI socket: \(Self.explain(code, name: name))")
        }
        let address = SocketAddressHCI(
            family: UInt16(Self.addressFamilyBluetooth), device: deviceIndex, channel: Self.channelUser)
        if let code = SocketAddress.bind(fd, address) {
            POSIX.closeDescriptor(fd)
            throw HCITransportError(
                .openFailed, "\(name): cannot bind the HCI user channel: \(Self.explain(code, name: name))")
        }
        core = try DescriptorTransportCore(fd: fd, name: name, isSocket: true, writeStyle: .socket, readMode: .packet)
        self.deviceIndex = deviceIndex
        #else
        throw HCITransportError(.openFailed, "\(name): the HCI user channel exists only on Linux")
        #endif
    }

    /// What an errno from `socket` or `bind` means for the user channel, with what to do about it. Every message
    /// ends with the requirements, so a user who hits any of them learns all of them.
    static func explain(_ code: Int32, name: String) -> String {
        let text = POSIX.errorText(code)
        let specific: String
        switch code {
        case EAFNOSUPPORT, EPROTONOSUPPORT:
            specific = "this kernel (or container) has no Bluetooth sockets (AF_BLUETOOTH); load the bluetooth "
                + "module or use another transport (virtual, tcp:HOST:PORT, serial:...)"
        case ENODEV:
            specific = "there is no adapter \(name) (list adapters with `hciconfig` or `btmgmt info`)"
        case EPERM, EACCES:
            specific = "permission denied: run as root or grant the program CAP_NET_ADMIN (`setcap cap_net_admin+ep`)"
        case EBUSY, EALREADY:
            specific = "\(name) is up or in use by the kernel's Bluetooth stack (bluetoothd powers adapters up); "
                + "take it down first (`btmgmt --index \(name.dropFirst(3)) power off` or `hciconfig \(name) down`), and "
                + "keep bluetoothd from powering it up again (AutoEnable=false in /etc/bluetooth/main.conf, or stop bluetoothd)"
        case 132:  // ERFKILL
            specific = "\(name) is blocked by rfkill (`rfkill unblock bluetooth`)"
        default:
            specific = "unexpected error"
        }
        return "\(text): \(specific). The HCI user channel needs Linux Bluetooth support, the CAP_NET_ADMIN "
            + "capability and the adapter down in the kernel (`hciconfig \(name) down`)"
    }
}
