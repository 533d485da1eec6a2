public import BluetoothCore

/// One HCI packet as carried by the UART transport: the packet indicator and the packet itself (header and
/// parameters/data, without the indicator octet). Core 5.4 Vol 4 Part A §2.
///
/// The packet bytes are not interpreted here; the command, event and ACL codecs decode them.
public struct H4Frame: Hashable, Sendable, Codable {
    /// The packet indicator.
    public var type: HCIPacketType
    /// The HCI packet without the indicator octet.
    public var packet: [UInt8]

    public init(type: HCIPacketType, packet: [UInt8]) {
        self.type = type
        self.packet = packet
    }

    /// Decodes exactly one frame (indicator octet first). The type must be known and the header's length field
    /// must match the bytes exactly.
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
        try reader.expectEnd("HCI \(type.name ?? "packet")")
    }

    /// Reads one frame from `reader`, leaving it after the frame.
    public init(from reader: inout ByteReader) throws(DecodeError) {
        let typeOffset = reader.offset
        let type = HCIPacketType(try reader.readUInt8("HCI packet indicator"))
        guard let headerLength = type.headerLength else {
            throw DecodeError(.unknownType, at: typeOffset, "unknown HCI packet indicator \(Dissection.hex8(type.rawValue))")
        }
        let header = try reader.readBytes(headerLength, "\(type.name ?? "HCI packet") header")
        let length = type.payloadLength(header: header) ?? 0
        let payload = try reader.readBytes(length, "\(type.name ?? "HCI packet") parameters")
        self.type = type
        self.packet = header + payload
    }

    /// The frame as sent on the UART: the indicator octet, then the packet.
    public func encode() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(packet.count + 1)
        bytes.append(type.rawValue)
        bytes.append(contentsOf: packet)
        return bytes
    }
}

extension H4Frame: Dissectable {
    public var dissection: Dissection {
        Dissection("HCI UART Transport Packet", type.name, [
            Dissection("HCI Packet Indicator", type.description),
            Dissection("HCI Packet", Dissection.bytes(packet)),
        ])
    }
}
