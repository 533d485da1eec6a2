public import BluetoothCore

/// A 128-bit value of the LE security toolbox: a key (TK, STK, LTK, IRK, CSRK, MacKey), a random number, a
/// confirm value or an AES block (Core 5.4 Vol 3 Part H §2.2).
///
/// It is a number: ``high`` holds the 64 most significant bits. The specification prints such values most
/// significant octet first (``msbFirst``, also the byte-string order AES works on); SMP, HCI and the link layer
/// carry them least significant octet first (``littleEndian``). Build from the order you hold and read the order
/// you need; never reverse by hand.
public struct Block128: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The 64 most significant bits.
    public var high: UInt64
    /// The 64 least significant bits.
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// From 16 octets, most significant first (as printed in the specification, and as AES takes keys and blocks).
    public init(msbFirst bytes: some Collection<UInt8>) throws(BluetoothCryptoError) {
        guard bytes.count == 16 else { throw .length("a 128-bit value", expected: 16, got: bytes.count) }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// From 16 octets, least significant first (wire order: SMP, HCI, LL).
    public init(littleEndian bytes: some Collection<UInt8>) throws(BluetoothCryptoError) {
        try self.init(msbFirst: Array(bytes.reversed()))
    }

    /// Reads 16 wire octets (least significant first) from a PDU.
    public init(from reader: inout ByteReader, _ field: String = "128-bit value") throws(DecodeError) {
        let bytes = try reader.readBytes(16, field)
        self.init(high: Self.bigEndianWord(bytes[8..<16].reversed()), low: Self.bigEndianWord(bytes[0..<8].reversed()))
    }

    /// A value below 2^64.
    public init(_ value: UInt64) {
        self.init(high: 0, low: value)
    }

    /// The 16 octets, most significant first.
    public var msbFirst: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }

    /// The 16 octets, least significant first.
    public var littleEndian: [UInt8] { msbFirst.reversed() }

    /// All zeros (the legacy Just Works TK, the `r` of f6 without OOB/passkey).
    public static let zero = Block128(high: 0, low: 0)

    /// Bitwise exclusive or.
    public static func ^ (lhs: Block128, rhs: Block128) -> Block128 {
        Block128(high: lhs.high ^ rhs.high, low: lhs.low ^ rhs.low)
    }

    /// The value in hexadecimal, most significant octet first, as the specification prints it.
    public var description: String { Hex.encode(msbFirst) }

    private static func bigEndianWord(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}
