public import BluetoothCore

/// Advertising data or scan response data: the ordered AD structures of the significant part (Core 5.4 Vol 3
/// Part C §11; the data types are in the Core Specification Supplement Part A §1).
///
/// Decoding is strict about framing: a length octet running past the end throws ``DecodeError``; a zero length
/// octet ends the significant part (the rest, normally zero padding, is ignored); inputs longer than the cap of
/// the ``Kind`` the caller names (31 octets legacy, 1650 extended) are rejected. See `DesignNote.swift`.
public struct AdvertisingData: Hashable, Sendable {
    /// Legacy advertising PDUs carry at most 31 octets; extended advertising up to 1650 (Vol 4 Part E §7.8.54).
    public enum Kind: Hashable, Sendable, CaseIterable {
        case legacy
        case extended

        /// 31 or 1650.
        public var maximumLength: Int {
            switch self {
            case .legacy: 31
            case .extended: 1650
            }
        }
    }

    /// The AD structures, in order.
    public var structures: [ADStructure]

    public init(_ structures: [ADStructure] = []) {
        self.structures = structures
    }

    /// Decodes advertising or scan response data.
    /// - Parameters:
    ///   - kind: the cap on the input length (legacy 31, extended 1650).
    ///   - lenient: keep structures whose contents do not parse as `.unknown(type, data)` instead of throwing.
    ///     Framing errors throw either way.
    public init(decoding bytes: [UInt8], kind: Kind = .legacy, lenient: Bool = false) throws(DecodeError) {
        guard bytes.count <= kind.maximumLength else {
            throw DecodeError(
                .invalidLength, at: kind.maximumLength,
                "\(kind == .legacy ? "legacy" : "extended") advertising data has at most \(kind.maximumLength) octets, not \(bytes.count)")
        }
        var reader = ByteReader(bytes)
        var structures: [ADStructure] = []
        while !reader.isAtEnd {
            let start = reader.offset
            let length = try reader.readUInt8("AD structure length")
            if length == 0 { break }  // early termination: the significant part ends here
            let type = ADType(try reader.readUInt8("AD type"))
            var body = try reader.readSubReader(Int(length) - 1, "data of AD structure at offset \(start) (\(type))")
            let dataStart = body
            do {
                structures.append(try ADStructure(type: type, reading: &body))
            } catch {
                guard lenient else { throw error }
                var raw = dataStart
                structures.append(.unknown(type, raw.readRemaining()))
            }
        }
        self.structures = structures
    }

    /// The significant part: every structure as `[length][type][data]`, without padding.
    public func encode() -> [UInt8] {
        structures.flatMap { $0.encode() }
    }

    /// The number of octets ``encode()`` produces.
    public var encodedLength: Int { structures.reduce(0) { $0 + $1.encodedLength } }

    /// Throws when a structure cannot be framed (data over 254 octets) or the whole does not fit `kind`.
    public func validate(kind: Kind = .legacy) throws(AdvertisingDataBuildError) {
        var builder = AdvertisingDataBuilder(kind: kind)
        for structure in structures { try builder.append(structure) }
    }
}

// MARK: - What a scanner needs

extension AdvertisingData {
    /// The Flags, if present.
    public var flags: ADFlags? {
        for case .flags(let flags) in structures { return flags }
        return nil
    }

    /// The local name: the Complete Local Name if present, else the Shortened one (invalid UTF-8 shown with
    /// replacement characters).
    public var localName: String? {
        localNameValue?.displayString
    }

    /// The local name's octets and kind, complete preferred.
    public var localNameValue: LocalName? {
        var shortened: LocalName? = nil
        for case .localName(let name, let complete) in structures {
            if complete { return name }
            if shortened == nil { shortened = name }
        }
        return shortened
    }

    /// Whether the name in ``localName`` is the complete one.
    public var isLocalNameComplete: Bool {
        structures.contains { if case .localName(_, true) = $0 { true } else { false } }
    }

    /// Every advertised service UUID (16-, 32- and 128-bit lists, complete or not), in order, without duplicates.
    public var serviceUUIDs: [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        for structure in structures {
            switch structure {
            case .serviceUUIDs16(let values, _): out += values.map { BluetoothUUID($0) }
            case .serviceUUIDs32(let values, _): out += values.map { BluetoothUUID(uuid32: $0) }
            case .serviceUUIDs128(let values, _): out += values
            default: break
            }
        }
        return out.uniqued()
    }

    /// Whether some service UUID list is marked incomplete (CoreBluetooth's "overflow" hint).
    public var hasIncompleteServiceList: Bool {
        structures.contains {
            switch $0 {
            case .serviceUUIDs16(_, false), .serviceUUIDs32(_, false), .serviceUUIDs128(_, false): true
            default: false
            }
        }
    }

    /// Every solicited service UUID (16-, 32- and 128-bit lists), in order, without duplicates.
    public var solicitedServiceUUIDs: [BluetoothUUID] {
        var out: [BluetoothUUID] = []
        for structure in structures {
            switch structure {
            case .serviceSolicitation16(let values): out += values.map { BluetoothUUID($0) }
            case .serviceSolicitation32(let values): out += values.map { BluetoothUUID(uuid32: $0) }
            case .serviceSolicitation128(let values): out += values
            default: break
            }
        }
        return out.uniqued()
    }

    /// Service data by service UUID (16-, 32- and 128-bit forms; equal UUIDs in different sizes meet, the first
    /// structure wins).
    public var serviceData: [BluetoothUUID: [UInt8]] {
        var out: [BluetoothUUID: [UInt8]] = [:]
        for structure in structures {
            let entry: (BluetoothUUID, [UInt8])?
            switch structure {
            case .serviceData16(let uuid, let data): entry = (BluetoothUUID(uuid), data)
            case .serviceData32(let uuid, let data): entry = (BluetoothUUID(uuid32: uuid), data)
            case .serviceData128(let uuid, let data): entry = (uuid, data)
            default: entry = nil
            }
            if let (uuid, data) = entry, out[uuid] == nil { out[uuid] = data }
        }
        return out
    }

    /// The first Manufacturer Specific Data structure: company and the octets after the company identifier.
    public var manufacturerData: (company: CompanyIdentifier, data: [UInt8])? {
        for case .manufacturerData(let company, let data) in structures { return (company, data) }
        return nil
    }

    /// The first Manufacturer Specific Data structure as CoreBluetooth hands it out
    /// (`CBAdvertisementDataManufacturerDataKey`): the company identifier (little-endian) followed by the data.
    public var manufacturerDataBytes: [UInt8]? {
        guard let (company, data) = manufacturerData else { return nil }
        return [UInt8(truncatingIfNeeded: company.rawValue), UInt8(truncatingIfNeeded: company.rawValue >> 8)] + data
    }

    /// Every Manufacturer Specific Data structure, in order.
    public var allManufacturerData: [(company: CompanyIdentifier, data: [UInt8])] {
        var out: [(company: CompanyIdentifier, data: [UInt8])] = []
        for case .manufacturerData(let company, let data) in structures { out.append((company, data)) }
        return out
    }

    /// The Tx Power Level in dBm.
    public var txPowerLevel: Int8? {
        for case .txPowerLevel(let power) in structures { return power }
        return nil
    }

    /// The Appearance.
    public var appearance: Appearance? {
        for case .appearance(let appearance) in structures { return appearance }
        return nil
    }

    /// Whether the Flags say LE Limited or LE General Discoverable Mode (independent of the PDU type, which alone
    /// says whether the advertiser is connectable).
    public var isDiscoverable: Bool {
        guard let flags else { return false }
        return !flags.isDisjoint(with: [.leLimitedDiscoverable, .leGeneralDiscoverable])
    }

    /// The structures of one AD type.
    public func structures(ofType type: ADType) -> [ADStructure] {
        structures.filter { $0.type == type }
    }
}

extension Array where Element: Hashable {
    func uniqued() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}

/// Coded as its octets (what travels over the air), read back leniently up to the extended cap: the Bluetooth
/// service's socket carries it this way.
extension AdvertisingData: Codable {
    public init(from decoder: any Decoder) throws {
        let bytes = try decoder.singleValueContainer().decode([UInt8].self)
        do {
            self = try AdvertisingData(decoding: bytes, kind: .extended, lenient: true)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(encode())
    }
}
