public import BluetoothCore

/// The header of an L2CAP signaling command, Core 5.4 Vol 3 Part A §4 (Figure 4.3): code, identifier and the
/// little-endian length of the data field.
///
/// The Host decodes the header alone when a full decode fails, to answer with a Command Reject carrying the same
/// identifier.
public struct L2CAPSignalingHeader: Hashable, Sendable {
    public static let length = 4

    public var code: L2CAPSignalingCode
    /// Matches responses to requests; 0x00 is never used by a conforming sender.
    public var identifier: UInt8
    /// The length of the data field that follows.
    public var length: UInt16

    public init(code: L2CAPSignalingCode, identifier: UInt8, length: UInt16) {
        self.code = code
        self.identifier = identifier
        self.length = length
    }

    /// Reads the 4 header octets (whatever follows is not examined).
    public init(from reader: inout ByteReader) throws(DecodeError) {
        code = L2CAPSignalingCode(try reader.readUInt8("signaling code"))
        identifier = try reader.readUInt8("signaling identifier")
        length = try reader.readUInt16("signaling length")
    }

    /// Reads the header at the start of a C-frame payload.
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
    }

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: Self.length)
        writer.write(code.rawValue)
        writer.write(identifier)
        writer.write(length)
        return writer.bytes
    }
}
