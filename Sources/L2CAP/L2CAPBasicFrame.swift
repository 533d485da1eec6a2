public import BluetoothCore

/// An L2CAP basic information frame (B-frame), Core 5.4 Vol 3 Part A §3.1: a little-endian 16-bit length of the
/// information payload, a little-endian 16-bit channel ID, then the payload.
///
/// On LE this frame carries ATT (CID 0x0004), signaling (0x0005), SMP (0x0006) and, on dynamic channels,
/// K-frame payloads (see ``L2CAPSDUReassembler``).
public struct L2CAPBasicFrame: Hashable, Sendable, Dissectable {
    /// The length of the basic L2CAP header.
    public static let headerLength = 4
    /// The largest payload the 16-bit length field can describe.
    public static let maximumPayloadLength = Int(UInt16.max)

    /// The destination channel.
    public var channelID: L2CAPChannelIdentifier
    /// The information payload.
    public private(set) var payload: [UInt8]

    /// Builds a frame. Throws `invalidLength` when the payload is longer than 65535 octets (the length field).
    public init(channelID: L2CAPChannelIdentifier, payload: [UInt8]) throws(DecodeError) {
        guard payload.count <= Self.maximumPayloadLength else {
            throw DecodeError(.invalidLength, at: 0, "an L2CAP payload has at most 65535 bytes, not \(payload.count)")
        }
        self.channelID = channelID
        self.payload = payload
    }

    /// Decodes one complete B-frame; the length field must equal the number of payload octets present.
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
        try reader.expectEnd("L2CAP basic frame")
    }

    /// Reads one B-frame (header plus exactly `length` payload octets) from `reader`.
    public init(from reader: inout ByteReader) throws(DecodeError) {
        let length = try reader.readUInt16("L2CAP length")
        channelID = L2CAPChannelIdentifier(try reader.readUInt16("L2CAP channel ID"))
        payload = try reader.readBytes(Int(length), "L2CAP payload")
    }

    /// Reads the payload length announced by a (possibly partial) frame header, or nil when fewer than 2 octets
    /// are present. Used by ACL reassembly to know when a frame is complete.
    public static func announcedPayloadLength(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= 2 else { return nil }
        let start = bytes.startIndex
        return Int(bytes[start]) | Int(bytes[start + 1]) << 8
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.headerLength + payload.count)
        writer.write(UInt16(truncatingIfNeeded: payload.count))
        writer.write(channelID.rawValue)
        writer.write(payload)
        return writer.bytes
    }

    public var dissection: Dissection {
        Dissection("L2CAP Basic Frame", nil, [
            Dissection("Length", "\(payload.count)"),
            Dissection("Channel ID", channelID.description),
            Dissection("Information Payload", Dissection.bytes(payload)),
        ])
    }
}
