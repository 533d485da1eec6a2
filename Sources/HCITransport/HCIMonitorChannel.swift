public import BluetoothCore
public import HCI
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The Linux kernel's HCI monitor channel, as btmon reads it: a raw Bluetooth socket (AF_BLUETOOTH 31, BTPROTO_HCI 1)
/// bound to `sockaddr_hci { family 31, HCI_DEV_NONE, HCI_CHANNEL_MONITOR 2 }`, on which the kernel copies every HCI
/// packet of every controller it drives, both directions, and says when a controller appears or goes. Read only:
/// the controllers stay with their users (bluetoothd, a user channel). Needs CAP_NET_RAW (root, or
/// `setcap cap_net_raw+ep`).
///
/// Each read gives one packet: `struct hci_mon_hdr { le16 opcode; le16 index; le16 len }` and `len` octets
/// (linux/include/net/bluetooth/hci_mon.h); ``Packet/init(decoding:)`` takes hostile bytes.
public final class HCIMonitorChannel: @unchecked Sendable {
    static let channelMonitor: UInt16 = 2
    static let deviceNone: UInt16 = 0xFFFF

    /// One monitor packet.
    public struct Packet: Hashable, Sendable {
        /// HCI_MON_* opcodes the monitor understands (others are kept as ``Kind/other(_:)``).
        public enum Kind: Hashable, Sendable {
            /// A controller appeared: its type, bus, address and name (HCI_MON_NEW_INDEX, 0).
            case newIndex(type: UInt8, bus: UInt8, address: BluetoothAddress, name: String)
            /// A controller went away (HCI_MON_DEL_INDEX, 1).
            case deleteIndex
            /// An HCI packet with its H4 type, and whether the controller sent it (commands 2, events 3, ACL 4/5,
            /// SCO 6/7, ISO 18/19).
            case frame(H4Frame, fromController: Bool)
            /// A line of text from the kernel (HCI_MON_SYSTEM_NOTE 12) or a program (HCI_MON_USER_LOGGING 13: "ident: message").
            case note(String)
            /// Any other opcode (open/close index, index info, vendor diagnostics, control channel traffic).
            case other(UInt16)
        }

        /// The controller's index (hciN), 0xFFFF for packets about no controller.
        public var index: UInt16
        public var kind: Kind

        /// Decodes one packet as read from the socket.
        public init(decoding bytes: [UInt8]) throws(DecodeError) {
            var reader = ByteReader(bytes[...])
            let opcode = try reader.readLittleEndian(UInt16.self, "opcode")
            index = try reader.readLittleEndian(UInt16.self, "index")
            let length = Int(try reader.readLittleEndian(UInt16.self, "length"))
            let payload = try reader.readBytes(length, "payload")
            func frame(_ type: HCIPacketType, _ fromController: Bool) -> Kind { .frame(H4Frame(type: type, packet: payload), fromController: fromController) }
            switch opcode {
            case 0:
                var fields = ByteReader(payload[...])
                let type = try fields.readUInt8("type")
                let bus = try fields.readUInt8("bus")
                let address = try BluetoothAddress(littleEndianBytes: try fields.readBytes(6, "address"), type: .public)
                let name = try fields.readBytes(8, "name")
                kind = .newIndex(type: type, bus: bus, address: address,
                                 name: String(decoding: name.prefix { $0 != 0 }, as: UTF8.self))
            case 1: kind = .deleteIndex
            case 2: kind = frame(.command, false)
            case 3: kind = frame(.event, true)
            case 4: kind = frame(.aclData, false)
            case 5: kind = frame(.aclData, true)
            case 6: kind = frame(.synchronousData, false)
            case 7: kind = frame(.synchronousData, true)
            case 18: kind = frame(HCIPacketType(0x05), false)
            case 19: kind = frame(HCIPacketType(0x05), true)
            case 12: kind = .note(HCIMonitorChannel.text(payload[...]))
            case 13:
                // struct hci_mon_user_logging { u8 priority; u8 ident_len; } then the ident, then the message.
                var fields = ByteReader(payload[...])
                _ = try fields.readUInt8("priority")
                let identLength = Int(try fields.readUInt8("ident length"))
                let ident = HCIMonitorChannel.text(try fields.readBytes(identLength, "ident")[...])
                kind = .note((ident.isEmpty ? "" : ident + ": ") + HCIMonitorChannel.text(fields.readRemaining()[...]))
            default: kind = .other(opcode)
            }
        }
    }

    private let fd: Int32

    /// The text of a NUL-terminated field (up to its first NUL, or all of it).
    static func text(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
    }

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
