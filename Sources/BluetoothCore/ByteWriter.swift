/// Builds PDUs: appends octets and little-endian integers to a growing buffer (the encoding side of
/// ``ByteReader``).
public struct ByteWriter: Sendable {
    /// Everything written so far.
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 32) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public var count: Int { bytes.count }

    public mutating func write(_ value: UInt8) {
        bytes.append(value)
    }

    public mutating func write(_ value: Int8) {
        bytes.append(UInt8(bitPattern: value))
    }

    public mutating func write(_ values: some Sequence<UInt8>) {
        bytes.append(contentsOf: values)
    }

    /// Appends the low `byteCount` octets of `value`, least significant first.
    public mutating func writeLittleEndian<T: FixedWidthInteger>(_ value: T, byteCount: Int = MemoryLayout<T>.size) {
        var remainder = value
        for _ in 0..<byteCount {
            bytes.append(UInt8(truncatingIfNeeded: remainder))
            remainder = remainder >> 8
        }
    }

    /// Appends the low `byteCount` octets of `value`, most significant first.
    public mutating func writeBigEndian<T: FixedWidthInteger>(_ value: T, byteCount: Int = MemoryLayout<T>.size) {
        for index in stride(from: byteCount - 1, through: 0, by: -1) {
            bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index)))
        }
    }

    public mutating func write(_ value: UInt16) { writeLittleEndian(value) }
    public mutating func write(_ value: UInt32) { writeLittleEndian(value) }
    public mutating func write(_ value: UInt64) { writeLittleEndian(value) }
    public mutating func writeUInt24(_ value: UInt32) { writeLittleEndian(value, byteCount: 3) }

    /// Overwrites a little-endian UInt16 already written at `index` (length fields filled in afterwards).
    /// `index` must come from this writer's own ``count``; it is not peer input.
    public mutating func patch(_ value: UInt16, at index: Int) {
        guard index >= 0, index + 1 < bytes.count else { return }
        bytes[index] = UInt8(truncatingIfNeeded: value)
        bytes[index + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }
}
