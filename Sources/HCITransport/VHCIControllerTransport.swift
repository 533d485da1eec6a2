import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import SystemInterface

/// The controller's end of a Linux virtual HCI device (`/dev/vhci`, drivers/bluetooth/hci_vhci.c): the kernel gets a
/// new adapter `hciN` whose "firmware" is this process. Every frame the kernel's host sends to hciN (commands, ACL
/// data) is read here, one H4 packet per read (indicator octet first, Core 5.4 Vol 4 Part A §2 layout), and every
/// frame written here (events, ACL data) is what hciN received from its controller.
///
/// This is the inverse of ``HCIUserChannelTransport``: there our host drives a kernel controller; here a controller
/// of ours (the air's ``VirtualController``, through `blue air --vhci`) serves the kernel's host, and with it
/// bluetoothd, bluetoothctl and every program on D-Bus.
///
/// Creation: after `open`, the driver waits for one vendor packet `FF <opcode>` (opcode 0x00: a primary controller)
/// and answers `FF <opcode> <index, 2 octets little endian>`; without it, it creates a default controller after one
/// second. The adapter disappears when the descriptor closes.
public final class VHCIControllerTransport: DescriptorBackedTransport {
    /// The adapter index the kernel gave (hci<index>).
    public let deviceIndex: UInt16
    let core: DescriptorTransportCore

    /// The HCI_VENDOR_PKT indicator and HCI_PRIMARY device type of the creation request.
    static let vendorPacket: UInt8 = 0xFF
    static let primaryController: UInt8 = 0x00

    /// Opens `path` (default `/dev/vhci`) and asks the kernel for a new primary controller; the answer must come
    /// within `timeout` milliseconds.
    public init(path: String = "/dev/vhci", timeout: Int32 = 3_000) throws(HCITransportError) {
        #if os(Linux)
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw HCITransportError(.openFailed, "vhci: cannot open \(path): \(Self.explain(code, path: path))")
        }
        let request: [UInt8] = [Self.vendorPacket, Self.primaryController]
        if let code = POSIX.writeAll(fd, request, style: .file) {
            POSIX.closeDescriptor(fd)
            throw HCITransportError(.openFailed, "vhci: cannot ask \(path) for a controller: \(POSIX.errorText(code))")
        }
        let index: UInt16
        do throws(HCITransportError) {
            index = try Self.readCreationAnswer(fd, timeout: timeout)
        } catch {
            POSIX.closeDescriptor(fd)
            throw error
        }
        deviceIndex = index
        core = try DescriptorTransportCore(
            fd: fd, name: "vhci:hci\(index)", isSocket: false, writeStyle: .file, readMode: .packet)
        #else
        throw HCITransportError(.openFailed, "vhci: virtual HCI devices exist only on Linux")
        #endif
    }

    /// Reads `FF 00 <index lo> <index hi>` within `timeout` milliseconds.
    static func readCreationAnswer(_ fd: Int32, timeout: Int32) throws(HCITransportError) -> UInt16 {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = monotonicMilliseconds() + Int64(timeout)
        while true {
            let remaining = Int32(clamping: max(0, deadline - monotonicMilliseconds()))
            let ready = poll(&descriptor, 1, remaining)
            if ready > 0 { break }
            if ready < 0, errno != EINTR {
                throw HCITransportError(.openFailed, "vhci: waiting for the kernel's answer failed: \(POSIX.lastErrorText)")
            }
            if ready == 0 {
                throw HCITransportError(.openFailed, "vhci: the kernel did not create a controller within \(timeout) ms")
            }
        }
        var answer = [UInt8](repeating: 0, count: 16)
        let count = answer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count >= 4, answer[0] == vendorPacket, answer[1] == primaryController else {
            let shown = answer.prefix(max(0, count)).map { String($0, radix: 16) }.joined(separator: " ")
            throw HCITransportError(
                .openFailed, "vhci: unexpected answer to the creation request (\(count < 0 ? POSIX.lastErrorText : shown))")
        }
        return UInt16(answer[2]) | UInt16(answer[3]) << 8
    }

    static func monotonicMilliseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    /// What an errno from opening /dev/vhci means, with what to do about it.
    static func explain(_ code: Int32, path: String) -> String {
        let text = POSIX.errorText(code)
        switch code {
        case ENOENT, ENODEV, ENXIO:
            return "\(text): this kernel has no virtual HCI driver loaded (`modprobe hci_vhci` as root; "
                + "containers need the device passed in)"
        case EACCES, EPERM:
            return "\(text): permission denied (root, or read-write access to \(path), e.g. a udev rule)"
        default:
            return text
        }
    }
}
