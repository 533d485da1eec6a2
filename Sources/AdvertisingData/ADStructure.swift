public import BluetoothCore

/// One AD structure of advertising or scan response data, `[length][AD type][data]` (Core 5.4 Vol 3 Part C
/// §11), with its data decoded according to its AD type (Core Specification Supplement Part A §1).
///
/// Multi-octet values are little-endian on the air. Types this build does not parse, and (in lenient decoding)
/// structures whose contents are malformed, are `.unknown(type, data)` and re-encode byte for byte.
public enum ADStructure: Hashable, Sendable {
    /// Flags (CSS Part A §1.3).
    case flags(ADFlags)
    /// Incomplete (0x02) or Complete (0x03) List of 16-bit Service UUIDs (CSS Part A §1.1).
    case serviceUUIDs16([UInt16], complete: Bool)
    /// Incomplete (0x04) or Complete (0x05) List of 32-bit Service UUIDs.
    case serviceUUIDs32([UInt32], complete: Bool)
    /// Incomplete (0x06) or Complete (0x07) List of 128-bit Service UUIDs.
    case serviceUUIDs128([BluetoothUUID], complete: Bool)
    /// Shortened (0x08) or Complete (0x09) Local Name (CSS Part A §1.2).
    case localName(LocalName, complete: Bool)
    /// Tx Power Level in dBm (CSS Part A §1.5).
    case txPowerLevel(Int8)
    /// Class of Device (CSS Part A §1.6).
    case classOfDevice(ClassOfDevice)
    /// Peripheral Connection Interval Range (CSS Part A §1.9).
    case peripheralConnectionIntervalRange(ConnectionIntervalRange)
    /// List of 16-bit Service Solicitation UUIDs (CSS Part A §1.10).
    case serviceSolicitation16([UInt16])
    /// List of 32-bit Service Solicitation UUIDs.
    case serviceSolicitation32([UInt32])
    /// List of 128-bit Service Solicitation UUIDs.
    case serviceSolicitation128([BluetoothUUID])
    /// Service Data - 16-bit UUID (CSS Part A §1.11).
    case serviceData16(UInt16, data: [UInt8])
    /// Service Data - 32-bit UUID.
    case serviceData32(UInt32, data: [UInt8])
    /// Service Data - 128-bit UUID.
    case serviceData128(BluetoothUUID, data: [UInt8])
    /// Public Target Address list (CSS Part A §1.13).
    case publicTargetAddresses([BluetoothAddress])
    /// Random Target Address list (CSS Part A §1.14).
    case randomTargetAddresses([BluetoothAddress])
    /// Appearance (CSS Part A §1.12).
    case appearance(Appearance)
    /// Advertising Interval, units of 0.625 ms (CSS Part A §1.15).
    case advertisingInterval(UInt16)
    /// Advertising Interval - long, units of 0.625 ms, 3 or 4 octets (CSS Part A §1.15).
    case advertisingIntervalLong(UInt32)
    /// LE Bluetooth Device Address (CSS Part A §1.16): the address and its type.
    case leDeviceAddress(BluetoothAddress)
    /// LE Role (CSS Part A §1.17).
    case leRole(LERole)
    /// URI (CSS Part A §1.18).
    case uri(URIData)
    /// LE Supported Features (CSS Part A §1.19).
    case leSupportedFeatures(LESupportedFeatures)
    /// Encrypted Advertising Data (CSS Part A §1.23), kept raw (Randomizer, payload, MIC).
    case encryptedData([UInt8])
    /// Manufacturer Specific Data (CSS Part A §1.4): company identifier, then the company's octets.
    case manufacturerData(CompanyIdentifier, data: [UInt8])
    /// Any other AD type, or a malformed structure kept by lenient decoding.
    case unknown(ADType, [UInt8])

    /// The largest data part an AD structure can carry: the length octet counts the type octet too.
    public static let maximumDataLength = 254

    // MARK: Type and data

    /// The AD type octet this structure is sent with.
    public var type: ADType {
        switch self {
        case .flags: .flags
        case .serviceUUIDs16(_, let complete):
            complete ? .completeList16BitServiceUUIDs : .incompleteList16BitServiceUUIDs
        case .serviceUUIDs32(_, let complete):
            complete ? .completeList32BitServiceUUIDs : .incompleteList32BitServiceUUIDs
        case .serviceUUIDs128(_, let complete):
            complete ? .completeList128BitServiceUUIDs : .incompleteList128BitServiceUUIDs
        case .localName(_, let complete): complete ? .completeLocalName : .shortenedLocalName
        case .txPowerLevel: .txPowerLevel
        case .classOfDevice: .classOfDevice
        case .peripheralConnectionIntervalRange: .peripheralConnectionIntervalRange
        case .serviceSolicitation16: .listOf16BitServiceSolicitationUUIDs
        case .serviceSolicitation32: .listOf32BitServiceSolicitationUUIDs
        case .serviceSolicitation128: .listOf128BitServiceSolicitationUUIDs
        case .serviceData16: .serviceData16BitUUID
        case .serviceData32: .serviceData32BitUUID
        case .serviceData128: .serviceData128BitUUID
        case .publicTargetAddresses: .publicTargetAddress
        case .randomTargetAddresses: .randomTargetAddress
        case .appearance: .appearance
        case .advertisingInterval: .advertisingInterval
        case .advertisingIntervalLong: Self.advertisingIntervalLongType
        case .leDeviceAddress: .leBluetoothDeviceAddress
        case .leRole: .leRole
        case .uri: .uri
        case .leSupportedFeatures: .leSupportedFeatures
        case .encryptedData: .encryptedData
        case .manufacturerData: .manufacturerSpecificData
        case .unknown(let type, _): type
        }
    }

    /// The data part (everything after the AD type octet), as sent.
    public var data: [UInt8] {
        var writer = ByteWriter()
        switch self {
        case .flags(let flags): writer.write(flags.rawValue)
        case .serviceUUIDs16(let values, _), .serviceSolicitation16(let values):
            for value in values { writer.write(value) }
        case .serviceUUIDs32(let values, _), .serviceSolicitation32(let values):
            for value in values { writer.write(value) }
        case .serviceUUIDs128(let values, _), .serviceSolicitation128(let values):
            for value in values { writer.write(value.littleEndianBytes128) }
        case .localName(let name, _): writer.write(name.bytes)
        case .txPowerLevel(let power): writer.write(power)
        case .classOfDevice(let value): writer.writeUInt24(value.rawValue)
        case .peripheralConnectionIntervalRange(let range):
            writer.write(range.minimum)
            writer.write(range.maximum)
        case .serviceData16(let uuid, let data):
            writer.write(uuid)
            writer.write(data)
        case .serviceData32(let uuid, let data):
            writer.write(uuid)
            writer.write(data)
        case .serviceData128(let uuid, let data):
            writer.write(uuid.littleEndianBytes128)
            writer.write(data)
        case .publicTargetAddresses(let addresses), .randomTargetAddresses(let addresses):
            for address in addresses { writer.write(address.littleEndianBytes) }
        case .appearance(let appearance): writer.write(appearance.rawValue)
        case .advertisingInterval(let interval): writer.write(interval)
        case .advertisingIntervalLong(let interval):
            writer.writeLittleEndian(interval, byteCount: interval > 0xFF_FFFF ? 4 : 3)
        case .leDeviceAddress(let address):
            writer.write(address.littleEndianBytes)
            writer.write(address.type.rawValue)
        case .leRole(let role): writer.write(role.rawValue)
        case .uri(let uri): writer.write(uri.bytes)
        case .leSupportedFeatures(let features): writer.write(features.bytes)
        case .encryptedData(let bytes): writer.write(bytes)
        case .manufacturerData(let company, let data):
            writer.write(company.rawValue)
            writer.write(data)
        case .unknown(_, let bytes): writer.write(bytes)
        }
        return writer.bytes
    }

    /// The octets this structure occupies on the air: 2 + data length.
    public var encodedLength: Int { 2 + data.count }

    /// `[length][type][data]`. A data part longer than ``maximumDataLength`` cannot be framed: it is cut to
    /// 254 octets here (``AdvertisingData/validate(kind:)`` and the builder report it instead).
    public func encode() -> [UInt8] {
        let payload = data.prefix(Self.maximumDataLength)
        return [UInt8(truncatingIfNeeded: payload.count + 1), type.rawValue] + payload
    }

    // MARK: Decoding

    /// Decodes one complete AD structure `[length][type][data]` (nothing may follow it).
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        let length = try reader.readUInt8("AD structure length")
        guard length > 0 else {
            throw reader.error(.invalidLength, "AD structure length 0 (early termination), no structure")
        }
        let type = ADType(try reader.readUInt8("AD type"))
        var body = try reader.readSubReader(Int(length) - 1, "data of \(type)")
        try reader.expectEnd("AD structure")
        self = try Self(type: type, reading: &body)
    }

    /// Decodes the data part of an AD structure of type `type`. `baseOffset` is where the data starts in the
    /// caller's buffer, for error offsets.
    public init(type: ADType, data: [UInt8], baseOffset: Int = 0) throws(DecodeError) {
        var reader = ByteReader(data, baseOffset: baseOffset)
        self = try Self(type: type, reading: &reader)
    }

    /// Decodes from a reader that covers exactly the data part.
    init(type: ADType, reading reader: inout ByteReader) throws(DecodeError) {
        switch type {
        case .flags:
            let value = try reader.readUInt8("Flags")
            try reader.expectEnd("Flags")
            self = .flags(ADFlags(rawValue: value))
        case .incompleteList16BitServiceUUIDs, .completeList16BitServiceUUIDs:
            self = .serviceUUIDs16(
                try Self.readList16(&reader, "16-bit Service UUID"), complete: type == .completeList16BitServiceUUIDs)
        case .incompleteList32BitServiceUUIDs, .completeList32BitServiceUUIDs:
            self = .serviceUUIDs32(
                try Self.readList32(&reader, "32-bit Service UUID"), complete: type == .completeList32BitServiceUUIDs)
        case .incompleteList128BitServiceUUIDs, .completeList128BitServiceUUIDs:
            self = .serviceUUIDs128(
                try Self.readList128(&reader, "128-bit Service UUID"), complete: type == .completeList128BitServiceUUIDs)
        case .shortenedLocalName, .completeLocalName:
            self = .localName(LocalName(bytes: reader.readRemaining()), complete: type == .completeLocalName)
        case .txPowerLevel:
            let power = try reader.readInt8("Tx Power Level")
            try reader.expectEnd("Tx Power Level")
            self = .txPowerLevel(power)
        case .classOfDevice:
            let value = try reader.readUInt24("Class of Device")
            try reader.expectEnd("Class of Device")
            self = .classOfDevice(ClassOfDevice(rawValue: value))
        case .peripheralConnectionIntervalRange:
            let minimum = try reader.readUInt16("Connection Interval Min")
            let maximum = try reader.readUInt16("Connection Interval Max")
            try reader.expectEnd("Peripheral Connection Interval Range")
            self = .peripheralConnectionIntervalRange(ConnectionIntervalRange(minimum: minimum, maximum: maximum))
        case .listOf16BitServiceSolicitationUUIDs:
            self = .serviceSolicitation16(try Self.readList16(&reader, "16-bit Service Solicitation UUID"))
        case .listOf32BitServiceSolicitationUUIDs:
            self = .serviceSolicitation32(try Self.readList32(&reader, "32-bit Service Solicitation UUID"))
        case .listOf128BitServiceSolicitationUUIDs:
            self = .serviceSolicitation128(try Self.readList128(&reader, "128-bit Service Solicitation UUID"))
        case .serviceData16BitUUID:
            let uuid = try reader.readUInt16("Service Data 16-bit UUID")
            self = .serviceData16(uuid, data: reader.readRemaining())
        case .serviceData32BitUUID:
            let uuid = try reader.readUInt32("Service Data 32-bit UUID")
            self = .serviceData32(uuid, data: reader.readRemaining())
        case .serviceData128BitUUID:
            let bytes = try reader.readBytes(16, "Service Data 128-bit UUID")
            self = .serviceData128(try BluetoothUUID(littleEndianBytes: bytes), data: reader.readRemaining())
        case .publicTargetAddress:
            self = .publicTargetAddresses(try Self.readAddresses(&reader, type: .public, "Public Target Address"))
        case .randomTargetAddress:
            self = .randomTargetAddresses(try Self.readAddresses(&reader, type: .random, "Random Target Address"))
        case .appearance:
            let value = try reader.readUInt16("Appearance")
            try reader.expectEnd("Appearance")
            self = .appearance(Appearance(value))
        case .advertisingInterval:
            let value = try reader.readUInt16("Advertising Interval")
            try reader.expectEnd("Advertising Interval")
            self = .advertisingInterval(value)
        case Self.advertisingIntervalLongType:
            guard reader.remaining == 3 || reader.remaining == 4 else {
                throw reader.error(
                    .invalidLength, "Advertising Interval - long has 3 or 4 octets, not \(reader.remaining)")
            }
            self = .advertisingIntervalLong(
                try reader.readLittleEndian(UInt32.self, byteCount: reader.remaining, "Advertising Interval - long"))
        case .leBluetoothDeviceAddress:
            let bytes = try reader.readBytes(6, "LE Bluetooth Device Address")
            let typeOctet = try reader.readUInt8("address type")
            try reader.expectEnd("LE Bluetooth Device Address")
            self = .leDeviceAddress(
                try BluetoothAddress(littleEndianBytes: bytes, type: typeOctet & 0x01 == 0 ? .public : .random))
        case .leRole:
            let value = try reader.readUInt8("LE Role")
            try reader.expectEnd("LE Role")
            self = .leRole(LERole(value))
        case .uri:
            self = .uri(URIData(bytes: reader.readRemaining()))
        case .leSupportedFeatures:
            self = .leSupportedFeatures(LESupportedFeatures(bytes: reader.readRemaining()))
        case .encryptedData:
            self = .encryptedData(reader.readRemaining())
        case .manufacturerSpecificData:
            let company = try reader.readUInt16("Company Identifier")
            self = .manufacturerData(CompanyIdentifier(company), data: reader.readRemaining())
        default:
            self = .unknown(type, reader.readRemaining())
        }
    }

    private static func requireMultiple(_ reader: ByteReader, of size: Int, _ what: String) throws(DecodeError) {
        guard reader.remaining % size == 0 else {
            throw reader.error(
                .invalidLength, "a list of \(what)s needs a multiple of \(size) octets, not \(reader.remaining)")
        }
    }

    private static func readList16(_ reader: inout ByteReader, _ what: String) throws(DecodeError) -> [UInt16] {
        try requireMultiple(reader, of: 2, what)
        var values: [UInt16] = []
        while !reader.isAtEnd { values.append(try reader.readUInt16(what)) }
        return values
    }

    private static func readList32(_ reader: inout ByteReader, _ what: String) throws(DecodeError) -> [UInt32] {
        try requireMultiple(reader, of: 4, what)
        var values: [UInt32] = []
        while !reader.isAtEnd { values.append(try reader.readUInt32(what)) }
        return values
    }

    private static func readList128(_ reader: inout ByteReader, _ what: String) throws(DecodeError) -> [BluetoothUUID] {
        try requireMultiple(reader, of: 16, what)
        var values: [BluetoothUUID] = []
        while !reader.isAtEnd { values.append(try BluetoothUUID(littleEndianBytes: try reader.readBytes(16, what))) }
        return values
    }

    private static func readAddresses(
        _ reader: inout ByteReader, type: BluetoothAddress.AddressType, _ what: String
    ) throws(DecodeError) -> [BluetoothAddress] {
        try requireMultiple(reader, of: 6, what)
        var values: [BluetoothAddress] = []
        while !reader.isAtEnd {
            values.append(try BluetoothAddress(littleEndianBytes: try reader.readBytes(6, what), type: type))
        }
        return values
    }
}

extension ADStructure {
    /// Advertising Interval - long (0x2F); not (yet) a named constant of `ADType` in BluetoothCore.
    public static let advertisingIntervalLongType = ADType(0x2F)
}
