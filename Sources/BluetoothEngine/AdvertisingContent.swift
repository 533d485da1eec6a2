public import AdvertisingData
public import BluetoothCore

/// What a peripheral advertises, and how it becomes legacy advertising data and scan response (31 octets each;
/// Core 5.4 Vol 3 Part C §11, Core Specification Supplement Part A for the AD types).
///
/// Layout: the advertising data gets Flags (when discoverable), the service UUID lists, appearance, TX power,
/// service data and manufacturer data, in that order; the local name goes to the scan response when the
/// advertising type has one, otherwise to the advertising data. A structure that does not fit its packet moves to
/// the other one when there is a scan response; when it fits nowhere, building fails with an error naming the
/// structure and the space that was left.
public struct AdvertisingContent: Hashable, Sendable {
    /// One Service Data structure (16-, 32- or 128-bit UUID chosen by the UUID's size).
    public struct ServiceData: Hashable, Sendable, Codable {
        public var uuid: BluetoothUUID
        public var data: [UInt8]
        public init(uuid: BluetoothUUID, data: [UInt8]) {
            self.uuid = uuid
            self.data = data
        }
    }

    public var localName: String?
    public var serviceUUIDs: [BluetoothUUID]
    public var serviceData: [ServiceData]
    public var manufacturerData: (company: CompanyIdentifier, data: [UInt8])?
    public var txPowerLevel: Int8?
    public var appearance: Appearance?
    /// The Flags structure; nil for none (non-discoverable, or a beacon that wants the space).
    public var flags: ADFlags?

    public init(localName: String? = nil, serviceUUIDs: [BluetoothUUID] = [], serviceData: [ServiceData] = [],
                manufacturerData: (company: CompanyIdentifier, data: [UInt8])? = nil, txPowerLevel: Int8? = nil,
                appearance: Appearance? = nil, flags: ADFlags? = .generalDiscoverableLEOnly) {
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
        self.serviceData = serviceData
        self.manufacturerData = manufacturerData
        self.txPowerLevel = txPowerLevel
        self.appearance = appearance
        self.flags = flags
    }

    public static func == (lhs: AdvertisingContent, rhs: AdvertisingContent) -> Bool {
        lhs.localName == rhs.localName && lhs.serviceUUIDs == rhs.serviceUUIDs && lhs.serviceData == rhs.serviceData
            && lhs.manufacturerData?.company == rhs.manufacturerData?.company
            && lhs.manufacturerData?.data == rhs.manufacturerData?.data && lhs.txPowerLevel == rhs.txPowerLevel
            && lhs.appearance == rhs.appearance && lhs.flags == rhs.flags
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(localName)
        hasher.combine(serviceUUIDs)
        hasher.combine(serviceData)
        hasher.combine(manufacturerData?.company)
        hasher.combine(manufacturerData?.data)
        hasher.combine(txPowerLevel)
        hasher.combine(appearance)
        hasher.combine(flags)
    }

    /// The AD structures in layout order, the name last.
    var structures: (advertising: [ADStructure], name: ADStructure?) {
        var list: [ADStructure] = []
        if let flags { list.append(.flags(flags)) }
        var short: [UInt16] = [], medium: [UInt32] = [], long: [BluetoothUUID] = []
        var seen = Set<BluetoothUUID>()
        for uuid in serviceUUIDs where seen.insert(uuid).inserted {
            if let value = uuid.uuid16 { short.append(value) } else if let value = uuid.uuid32 { medium.append(value) } else { long.append(uuid) }
        }
        if !short.isEmpty { list.append(.serviceUUIDs16(short, complete: true)) }
        if !medium.isEmpty { list.append(.serviceUUIDs32(medium, complete: true)) }
        if !long.isEmpty { list.append(.serviceUUIDs128(long, complete: true)) }
        if let appearance { list.append(.appearance(appearance)) }
        if let txPowerLevel { list.append(.txPowerLevel(txPowerLevel)) }
        for entry in serviceData {
            if let value = entry.uuid.uuid16 {
                list.append(.serviceData16(value, data: entry.data))
            } else if let value = entry.uuid.uuid32 {
                list.append(.serviceData32(value, data: entry.data))
            } else {
                list.append(.serviceData128(entry.uuid, data: entry.data))
            }
        }
        if let manufacturerData { list.append(.manufacturerData(manufacturerData.company, data: manufacturerData.data)) }
        return (list, localName.map { .localName(LocalName($0), complete: true) })
    }

    /// Lays the content out in the advertising data and, when `hasScanResponse`, the scan response.
    /// - Throws: ``HostError/Code/advertisingDataTooLarge`` naming the first structure that fits nowhere.
    public func build(hasScanResponse: Bool) throws(HostError) -> (advertisingData: AdvertisingData, scanResponse: AdvertisingData) {
        var advertising = AdvertisingDataBuilder()
        var response = AdvertisingDataBuilder()
        let (list, name) = structures
        func place(_ structure: ADStructure, preferResponse: Bool) throws(HostError) {
            if preferResponse, hasScanResponse {
                if response.canAppend(structure) { return try append(structure, to: &response) }
                if advertising.canAppend(structure) { return try append(structure, to: &advertising) }
                try refuse(structure, (response, "scan response"), (advertising, "advertising data"))
            }
            if advertising.canAppend(structure) { return try append(structure, to: &advertising) }
            if hasScanResponse {
                if response.canAppend(structure) { return try append(structure, to: &response) }
                try refuse(structure, (advertising, "advertising data"), (response, "scan response"))
            }
            do {
                try advertising.append(structure)
            } catch {
                throw HostError(.advertisingDataTooLarge, "does not fit in the advertising data: \(error)")
            }
        }
        for structure in list { try place(structure, preferResponse: false) }
        if let name { try place(name, preferResponse: true) }
        return (advertising.advertisingData, response.advertisingData)
    }

    /// Lays the content out in one block of extended advertising data (Core 5.4 Vol 3 Part C §11 with the extended
    /// advertising PDUs of Vol 6 Part B §2.3.4): every structure in layout order, the name last, in at most
    /// `capacity` octets.
    /// - Throws: ``HostError/Code/advertisingDataTooLarge`` naming the first structure that does not fit.
    public func buildExtended(capacity: Int) throws(HostError) -> AdvertisingData {
        var builder = AdvertisingDataBuilder(kind: .extended)
        let (list, name) = structures
        var used = 0
        for structure in list + (name.map { [$0] } ?? []) {
            guard used + structure.encodedLength <= capacity else {
                throw HostError(.advertisingDataTooLarge,
                                "\(structure.type) needs \(structure.encodedLength) octets but only \(capacity - used) of \(capacity) remain")
            }
            try append(structure, to: &builder)
            used += structure.encodedLength
        }
        return builder.advertisingData
    }

    private func append(_ structure: ADStructure, to builder: inout AdvertisingDataBuilder) throws(HostError) {
        do {
            try builder.append(structure)
        } catch {
            throw HostError(.advertisingDataTooLarge, "\(error)")
        }
    }

    private func refuse(_ structure: ADStructure, _ first: (builder: AdvertisingDataBuilder, name: String),
                        _ second: (builder: AdvertisingDataBuilder, name: String)) throws(HostError) {
        let needed = structure.data.count + 2
        throw HostError(
            .advertisingDataTooLarge,
            "\(structure.type) needs \(needed) octets but only \(first.builder.remainingSpace) of 31 remain in the "
                + "\(first.name) and \(second.builder.remainingSpace) in the \(second.name)")
    }
}

/// Coded field by field (the manufacturer data as `company` and `manufacturerData`): the Bluetooth service's socket
/// carries it this way.
extension AdvertisingContent: Codable {
    private enum CodingKeys: String, CodingKey {
        case localName, serviceUUIDs, serviceData, company, manufacturerData, txPowerLevel, appearance, flags
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let company = try container.decodeIfPresent(CompanyIdentifier.self, forKey: .company)
        let data = try container.decodeIfPresent([UInt8].self, forKey: .manufacturerData)
        self.init(localName: try container.decodeIfPresent(String.self, forKey: .localName),
                  serviceUUIDs: try container.decode([BluetoothUUID].self, forKey: .serviceUUIDs),
                  serviceData: try container.decode([ServiceData].self, forKey: .serviceData),
                  manufacturerData: company.map { ($0, data ?? []) },
                  txPowerLevel: try container.decodeIfPresent(Int8.self, forKey: .txPowerLevel),
                  appearance: try container.decodeIfPresent(Appearance.self, forKey: .appearance),
                  flags: try container.decodeIfPresent(ADFlags.self, forKey: .flags))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(localName, forKey: .localName)
        try container.encode(serviceUUIDs, forKey: .serviceUUIDs)
        try container.encode(serviceData, forKey: .serviceData)
        try container.encodeIfPresent(manufacturerData?.company, forKey: .company)
        try container.encodeIfPresent(manufacturerData?.data, forKey: .manufacturerData)
        try container.encodeIfPresent(txPowerLevel, forKey: .txPowerLevel)
        try container.encodeIfPresent(appearance, forKey: .appearance)
        try container.encodeIfPresent(flags, forKey: .flags)
    }
}
