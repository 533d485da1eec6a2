public import BluetoothCore

/// The "overflow area" in which iOS advertises the service UUIDs of an app in the background (Core Bluetooth
/// Programming Guide, "Core Bluetooth Background Processing for iOS Apps": the UUIDs leave the advertising packet
/// and only a central that scans for one of them explicitly discovers the peripheral): Manufacturer Specific Data
/// (Core Supplement Part A §1.4) of Apple (company 0x004C), type 0x01, then a 128-bit mask with one bit per
/// service UUID.
///
/// Apple does not document which bit a UUID sets; here it is FNV-1a (32-bit) of the UUID's 16 big-endian octets,
/// modulo 128, so our peripherals and centrals agree with each other, not with Apple devices. A mask says "maybe":
/// two UUIDs can share a bit, as on iOS (a central scanning for one may find a peripheral that offers the other).
public struct ServiceOverflowArea: Hashable, Sendable {
    /// Apple's company identifier, under which iOS puts the area.
    public static let company = CompanyIdentifier(0x004C)
    /// The first octet of the data after the company identifier.
    public static let type: UInt8 = 0x01

    /// 16 octets, bit `n` in octet `n / 8` (most significant bit first).
    public private(set) var mask: [UInt8]

    public init(serviceUUIDs: [BluetoothUUID]) {
        mask = [UInt8](repeating: 0, count: 16)
        for uuid in serviceUUIDs {
            let bit = Self.bit(for: uuid)
            mask[bit / 8] |= 0x80 >> UInt8(bit % 8)
        }
    }

    /// Reads the area from a Manufacturer Specific Data value (company identifier first, little-endian, as on the
    /// air); nil when it is anything else.
    public init?(manufacturerData bytes: [UInt8]) {
        guard bytes.count == 19, bytes[0] == 0x4C, bytes[1] == 0x00, bytes[2] == Self.type else { return nil }
        mask = Array(bytes[3...])
    }

    /// The Manufacturer Specific Data value: 4C 00 01 and the mask.
    public var manufacturerData: [UInt8] { [0x4C, 0x00, Self.type] + mask }

    /// The data after the company identifier (for ``ADStructure/manufacturerData(_:data:)``).
    public var dataAfterCompany: [UInt8] { [Self.type] + mask }

    /// Whether `uuid`'s bit is set.
    public func mayContain(_ uuid: BluetoothUUID) -> Bool {
        let bit = Self.bit(for: uuid)
        return mask[bit / 8] & (0x80 >> UInt8(bit % 8)) != 0
    }

    /// The bit of `uuid` (0...127).
    public static func bit(for uuid: BluetoothUUID) -> Int {
        var hash: UInt32 = 0x811C_9DC5
        for byte in uuid.bigEndianBytes {
            hash = (hash ^ UInt32(byte)) &* 0x0100_0193
        }
        return Int(hash % 128)
    }
}
