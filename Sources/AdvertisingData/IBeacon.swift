public import BluetoothCore

/// An Apple iBeacon advertisement: Manufacturer Specific Data of company 0x004C (Apple) whose data starts with
/// type 0x02 and length 0x15, followed by the proximity UUID (16 octets), major and minor (big-endian) and the
/// measured power at 1 m (signed dBm). Layout from Apple's "Proximity Beacon Specification" R1.
public struct IBeacon: Hashable, Sendable {
    /// The proximity UUID, as printed ("41424344-4546-4748-4940-414243444546"); sent most significant first.
    public var proximityUUID: BluetoothUUID
    public var major: UInt16
    public var minor: UInt16
    /// The calibrated RSSI at 1 m, in dBm.
    public var measuredPower: Int8

    /// Apple's company identifier.
    public static let company = CompanyIdentifier.apple
    /// The two octets that mark an iBeacon inside Apple's manufacturer data: type 0x02, length 0x15 (21).
    public static let prefix: [UInt8] = [0x02, 0x15]

    public init(proximityUUID: BluetoothUUID, major: UInt16, minor: UInt16, measuredPower: Int8) {
        self.proximityUUID = proximityUUID
        self.major = major
        self.minor = minor
        self.measuredPower = measuredPower
    }

    /// Decodes the manufacturer data after the company identifier (23 octets: `02 15`, UUID, major, minor, power).
    public init(manufacturerData bytes: [UInt8], baseOffset: Int = 0) throws(DecodeError) {
        var reader = ByteReader(bytes, baseOffset: baseOffset)
        let type = try reader.readUInt8("iBeacon type")
        guard type == 0x02 else {
            throw DecodeError(.unknownType, at: baseOffset, "iBeacon type must be 0x02, not \(Dissection.hex8(type))")
        }
        let length = try reader.readUInt8("iBeacon length")
        guard length == 0x15 else {
            throw DecodeError(
                .invalidLength, at: baseOffset + 1, "iBeacon length must be 0x15 (21), not \(Dissection.hex8(length))")
        }
        guard let uuid = BluetoothUUID(bigEndianBytes: try reader.readBytes(16, "proximity UUID")) else {
            throw reader.error(.invalidLength, "proximity UUID")
        }
        let major = try reader.readBigEndian(UInt16.self, "major")
        let minor = try reader.readBigEndian(UInt16.self, "minor")
        let power = try reader.readInt8("measured power")
        try reader.expectEnd("iBeacon")
        self.init(proximityUUID: uuid, major: major, minor: minor, measuredPower: power)
    }

    /// Finds the iBeacon in advertising data: the first Apple manufacturer data structure must be one.
    public init(advertisement: AdvertisingData) throws(DecodeError) {
        guard let data = advertisement.allManufacturerData.first(where: { $0.company == Self.company })?.data else {
            throw DecodeError(.invalidValue, at: 0, "no Manufacturer Specific Data of Apple, Inc. (0x004C)")
        }
        try self.init(manufacturerData: data)
    }

    /// Whether manufacturer data of `company` looks like an iBeacon (company Apple, starts `02 15`, 23 octets).
    public static func matches(company: CompanyIdentifier, data: [UInt8]) -> Bool {
        company == Self.company && data.count == 23 && data.starts(with: prefix)
    }

    /// The manufacturer data after the company identifier.
    public var manufacturerData: [UInt8] {
        var writer = ByteWriter(capacity: 23)
        writer.write(Self.prefix)
        writer.write(proximityUUID.bigEndianBytes)
        writer.writeBigEndian(major)
        writer.writeBigEndian(minor)
        writer.write(measuredPower)
        return writer.bytes
    }

    /// The Manufacturer Specific Data AD structure.
    public var adStructure: ADStructure { .manufacturerData(Self.company, data: manufacturerData) }

    /// A complete iBeacon advertisement: Flags 0x06 and the manufacturer data (30 octets).
    public var advertisingData: AdvertisingData {
        AdvertisingData([.flags(.generalDiscoverableLEOnly), adStructure])
    }
}
