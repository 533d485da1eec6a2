import BluetoothCore
import HCI
@testable import HCITransport
import Testing

/// The kernel's monitor channel packets (linux/include/net/bluetooth/hci_mon.h: opcode, index, length, payload),
/// decoded from bytes as the kernel writes them, and hostile ones refused.
struct HCIMonitorChannelTests {
    @Test("a new controller, a command, an event and ACL both ways decode; a truncated packet throws")
    func packetsDecode() throws {
        // HCI_MON_NEW_INDEX for hci1: type 0 (primary), bus 1 (virtual), address 00:AA:01:00:00:23, name "hci1".
        let newIndex = try HCIMonitorChannel.Packet(decoding: [0x00, 0x00, 0x01, 0x00, 0x10, 0x00,
                                                               0x00, 0x01, 0x23, 0x00, 0x00, 0x01, 0xAA, 0x00,
                                                               0x68, 0x63, 0x69, 0x31, 0x00, 0x00, 0x00, 0x00])
        #expect(newIndex.index == 1)
        #expect(newIndex.kind == .newIndex(type: 0, bus: 1, address: try BluetoothAddress(string: "00:AA:01:00:00:23"), name: "hci1"))
        // HCI_MON_COMMAND_PKT: Reset (0x0C03).
        let command = try HCIMonitorChannel.Packet(decoding: [0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x03, 0x0C, 0x00])
        #expect(command.kind == .frame(H4Frame(type: .command, packet: [0x03, 0x0C, 0x00]), fromController: false))
        // HCI_MON_EVENT_PKT: Command Complete for Reset.
        let event = try HCIMonitorChannel.Packet(decoding: [0x03, 0x00, 0x00, 0x00, 0x06, 0x00, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00])
        #expect(event.kind == .frame(H4Frame(type: .event, packet: [0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]), fromController: true))
        let aclOut = try HCIMonitorChannel.Packet(decoding: [0x04, 0x00, 0x00, 0x00, 0x02, 0x00, 0x40, 0x00])
        #expect(aclOut.kind == .frame(H4Frame(type: .aclData, packet: [0x40, 0x00]), fromController: false))
        let aclIn = try HCIMonitorChannel.Packet(decoding: [0x05, 0x00, 0x00, 0x00, 0x02, 0x00, 0x40, 0x20])
        #expect(aclIn.kind == .frame(H4Frame(type: .aclData, packet: [0x40, 0x20]), fromController: true))
        let note = try HCIMonitorChannel.Packet(decoding: [0x0C, 0x00, 0xFF, 0xFF, 0x03, 0x00, 0x68, 0x69, 0x00])
        #expect(note.index == 0xFFFF && note.kind == .note("hi"))
        // HCI_MON_USER_LOGGING from bluetoothd: priority 6, ident "bt" (3 octets with its NUL), message "up".
        let logging = try HCIMonitorChannel.Packet(decoding: [0x0D, 0x00, 0xFF, 0xFF, 0x08, 0x00, 0x06, 0x03, 0x62, 0x74, 0x00, 0x75, 0x70, 0x00])
        #expect(logging.kind == .note("bt: up"))
        #expect(throws: DecodeError.self) { try HCIMonitorChannel.Packet(decoding: [0x0D, 0x00, 0xFF, 0xFF, 0x02, 0x00, 0x06, 0x09]) }
        let open = try HCIMonitorChannel.Packet(decoding: [0x08, 0x00, 0x00, 0x00, 0x00, 0x00])
        #expect(open.kind == .other(8))
        // A length beyond the bytes, a header cut short, a NEW_INDEX too short for its fields.
        #expect(throws: DecodeError.self) { try HCIMonitorChannel.Packet(decoding: [0x02, 0x00, 0x00, 0x00, 0x05, 0x00, 0x03]) }
        #expect(throws: DecodeError.self) { try HCIMonitorChannel.Packet(decoding: [0x02, 0x00, 0x00]) }
        #expect(throws: DecodeError.self) { try HCIMonitorChannel.Packet(decoding: [0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x01]) }
    }

    @Test("every truncation and every byte flip of a packet decodes or throws, never traps")
    func hostileBytes() {
        let packet: [UInt8] = [0x00, 0x00, 0x01, 0x00, 0x10, 0x00, 0x00, 0x01, 0x23, 0x00, 0x00, 0x01, 0xAA, 0x00,
                               0x68, 0x63, 0x69, 0x31, 0x00, 0x00, 0x00, 0x00]
        for length in 0...packet.count { _ = try? HCIMonitorChannel.Packet(decoding: Array(packet.prefix(length))) }
        for index in packet.indices {
            for value: UInt8 in [0x00, 0x7F, 0xFF] {
                var bytes = packet
                bytes[index] = value
                _ = try? HCIMonitorChannel.Packet(decoding: bytes)
            }
        }
    }
}
