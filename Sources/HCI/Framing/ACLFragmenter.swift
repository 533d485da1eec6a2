public import BluetoothCore

/// Splits an L2CAP PDU into HCI ACL Data packets no longer than the controller's buffer (Core 5.4 Vol 3 Part A
/// §7.2.1, Vol 4 Part E §5.4.2): the first packet carries Packet_Boundary_Flag 0b00 (first non-flushable, the LE
/// value) or 0b10 if asked, every following packet 0b01 (continuing).
///
/// The maximum data length comes from the controller (LE Read Buffer Size); a value outside 1...65535 is refused
/// by the initializer.
public struct ACLFragmenter: Hashable, Sendable {
    /// The largest Data_Total_Length of one packet (the controller's ACL data packet length).
    public let maximumDataLength: Int

    /// Throws ``DecodeError/Code/invalidValue`` unless `maximumDataLength` is in 1...65535.
    public init(maximumDataLength: Int) throws(DecodeError) {
        guard maximumDataLength >= 1, maximumDataLength <= Int(UInt16.max) else {
            throw DecodeError(.invalidValue, at: 0, "ACL maximum data length \(maximumDataLength) is outside 1...65535")
        }
        self.maximumDataLength = maximumDataLength
    }

    /// The packets carrying `pdu` (the whole L2CAP PDU, basic header included) on connection `handle`, in order.
    /// An empty PDU gives one empty start packet. Throws ``DecodeError/Code/invalidValue`` for a handle above
    /// 0x0EFF.
    public func fragment(
        _ pdu: some Collection<UInt8>, handle: UInt16, flushable: Bool = false
    ) throws(DecodeError) -> [HCIACLDataPacket] {
        let bytes = Array(pdu)
        var packets: [HCIACLDataPacket] = []
        packets.reserveCapacity(bytes.count / maximumDataLength + 1)
        var start = 0
        repeat {
            let end = min(bytes.count, start + maximumDataLength)
            let boundary: HCIACLDataPacket.PacketBoundary =
                start == 0 ? (flushable ? .firstFlushable : .firstNonFlushable) : .continuing
            packets.append(try HCIACLDataPacket(handle: handle, packetBoundary: boundary, data: Array(bytes[start..<end])))
            start = end
        } while start < bytes.count
        return packets
    }
}
