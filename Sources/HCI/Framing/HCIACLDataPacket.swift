public import BluetoothCore

/// An HCI ACL Data packet (Core 5.4 Vol 4 Part E §5.4.2): a 12-bit connection handle, the Packet_Boundary and
/// Broadcast flags, a 16-bit Data_Total_Length and the data (a fragment of an L2CAP PDU, Vol 3 Part A §7.2).
///
/// The handle is checked against the range the specification allows (0x0000...0x0EFF); ``encode()`` is total
/// for any value built through the initializers.
public struct HCIACLDataPacket: Hashable, Sendable {
    /// Connection_Handle, 0x0000...0x0EFF.
    public let handle: UInt16
    /// Packet_Boundary_Flag.
    public let packetBoundary: PacketBoundary
    /// Broadcast_Flag.
    public let broadcast: BroadcastFlag
    /// The data (at most 65535 octets).
    public let data: [UInt8]

    /// The highest valid connection handle (Vol 4 Part E §5.4.2: 0x0F00...0x0FFF are reserved).
    public static let maximumHandle: UInt16 = 0x0EFF
    /// The length of the header before the data.
    public static let headerLength = 4

    /// Packet_Boundary_Flag values (Vol 4 Part E §5.4.2). All four 2-bit values are defined.
    public enum PacketBoundary: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// 0b00: first non-automatically-flushable packet of a higher-layer message (the LE start value).
        case firstNonFlushable = 0b00
        /// 0b01: continuing fragment of a higher-layer message.
        case continuing = 0b01
        /// 0b10: first automatically-flushable packet of a higher-layer message (BR/EDR; LE controllers use it
        /// towards the host).
        case firstFlushable = 0b10
        /// 0b11: a complete L2CAP PDU, automatically flushable.
        case complete = 0b11

        /// Whether this flag starts a new higher-layer message.
        public var isStart: Bool { self != .continuing }

        public var name: String {
            switch self {
            case .firstNonFlushable: "First non-automatically-flushable packet"
            case .continuing: "Continuing fragment"
            case .firstFlushable: "First automatically flushable packet"
            case .complete: "Complete L2CAP PDU, automatically flushable"
            }
        }

        public var description: String { "\(name) (0b\(rawValue >> 1)\(rawValue & 1))" }

        /// The flag for the two bits `bits & 0b11`.
        public init(bits: UInt8) {
            switch bits & 0b11 {
            case 0b00: self = .firstNonFlushable
            case 0b01: self = .continuing
            case 0b10: self = .firstFlushable
            default: self = .complete
            }
        }
    }

    /// Broadcast_Flag values (Vol 4 Part E §5.4.2). 0b10 and 0b11 are reserved; they decode and print as such.
    public struct BroadcastFlag: OpenCode {
        public var rawValue: UInt8
        /// Keeps only the low two bits.
        public init(rawValue: UInt8) { self.rawValue = rawValue & 0b11 }
        public static let codeKind = "Broadcast_Flag"

        /// 0b00: point-to-point (the only value on LE).
        public static let pointToPoint = BroadcastFlag(rawValue: 0b00)
        /// 0b01: BR/EDR broadcast.
        public static let brEdrBroadcast = BroadcastFlag(rawValue: 0b01)

        public static let names: [UInt8: String] = [
            0b00: "Point-to-point",
            0b01: "BR/EDR broadcast",
        ]
    }

    /// Builds a packet; throws ``DecodeError/Code/invalidValue`` for a handle above 0x0EFF and
    /// ``DecodeError/Code/invalidLength`` for more than 65535 data octets.
    public init(
        handle: UInt16, packetBoundary: PacketBoundary, broadcast: BroadcastFlag = .pointToPoint, data: [UInt8]
    ) throws(DecodeError) {
        guard handle <= Self.maximumHandle else {
            throw DecodeError(.invalidValue, at: 0, "connection handle \(Dissection.hex16(handle)) is above 0x0EFF")
        }
        guard data.count <= Int(UInt16.max) else {
            throw DecodeError(.invalidLength, at: 2, "\(data.count) data octets do not fit Data_Total_Length")
        }
        self.handle = handle
        self.packetBoundary = packetBoundary
        self.broadcast = broadcast
        self.data = data
    }

    /// Decodes one packet (without the H4 indicator octet); Data_Total_Length must match the data exactly.
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
        try reader.expectEnd("HCI ACL Data packet")
    }

    /// Reads one packet from `reader` (header and exactly Data_Total_Length octets).
    public init(from reader: inout ByteReader) throws(DecodeError) {
        let handleOffset = reader.offset
        let handleAndFlags = try reader.readUInt16("Handle and flags")
        let handle = handleAndFlags & 0x0FFF
        guard handle <= Self.maximumHandle else {
            throw DecodeError(.invalidValue, at: handleOffset, "connection handle \(Dissection.hex16(handle)) is reserved (above 0x0EFF)")
        }
        let length = try reader.readUInt16("Data_Total_Length")
        let data = try reader.readBytes(Int(length), "Data")
        self.handle = handle
        self.packetBoundary = PacketBoundary(bits: UInt8(truncatingIfNeeded: handleAndFlags >> 12))
        self.broadcast = BroadcastFlag(rawValue: UInt8(truncatingIfNeeded: handleAndFlags >> 14))
        self.data = data
    }

    /// Decodes the packet carried by an H4 frame of type ``HCIPacketType/aclData``.
    public init(frame: H4Frame) throws(DecodeError) {
        guard frame.type == .aclData else {
            throw DecodeError(.unknownType, at: 0, "expected an HCI ACL Data packet, found \(frame.type)")
        }
        try self.init(decoding: frame.packet)
    }

    /// The first header field: handle in bits 0-11, PB in 12-13, BC in 14-15.
    public var handleAndFlags: UInt16 {
        (handle & 0x0FFF) | UInt16(packetBoundary.rawValue) << 12 | UInt16(broadcast.rawValue & 0b11) << 14
    }

    /// The packet without the H4 indicator.
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: data.count + Self.headerLength)
        writer.write(handleAndFlags)
        writer.write(UInt16(truncatingIfNeeded: data.count))
        writer.write(data)
        return writer.bytes
    }

    /// The packet as an H4 frame.
    public var frame: H4Frame { H4Frame(type: .aclData, packet: encode()) }
}

extension HCIACLDataPacket: Dissectable {
    public var dissection: Dissection {
        Dissection("HCI ACL Data Packet", nil, [
            Dissection("Handle", Dissection.hex16(handle)),
            Dissection("Packet_Boundary_Flag", packetBoundary.description),
            Dissection("Broadcast_Flag", broadcast.description),
            Dissection("Data_Total_Length", "\(data.count)"),
            Dissection("Data", Dissection.bytes(data)),
        ])
    }
}
