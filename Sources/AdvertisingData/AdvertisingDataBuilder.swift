/// Why an AD structure could not be added to advertising data (Core 5.4 Vol 3 Part C §11: 31 octets for legacy
/// advertising, 1650 for extended; one structure's length octet allows at most 254 data octets).
public struct AdvertisingDataBuildError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// The structure needs `needed` octets but only `remaining` are left.
        case doesNotFit(needed: Int, remaining: Int)
        /// The structure's data part is longer than 254 octets and cannot be framed by one length octet.
        case structureTooLong(dataLength: Int)
    }

    /// The structure that was refused.
    public var structure: ADStructure
    /// Why.
    public var reason: Reason
    /// The capacity of the data being built (31 or 1650).
    public var capacity: Int

    public init(structure: ADStructure, reason: Reason, capacity: Int) {
        self.structure = structure
        self.reason = reason
        self.capacity = capacity
    }

    public var description: String {
        switch reason {
        case .doesNotFit(let needed, let remaining):
            "\(structure.type) needs \(needed) octets but only \(remaining) of \(capacity) remain"
        case .structureTooLong(let dataLength):
            "\(structure.type) has \(dataLength) data octets; an AD structure carries at most 254"
        }
    }
}

/// Builds advertising or scan response data within its size budget, reporting which structure did not fit
/// (Core 5.4 Vol 3 Part C §11).
///
/// ```swift
/// var builder = AdvertisingDataBuilder()
/// try builder.append(.flags(.generalDiscoverableLEOnly))
/// try builder.append(.serviceUUIDs16([0x180D], complete: true))
/// try builder.appendLocalName("My Heart Rate Sensor")   // shortened if it does not fit
/// let bytes = builder.encode()
/// ```
public struct AdvertisingDataBuilder: Hashable, Sendable {
    /// Legacy (31 octets) or extended (1650).
    public let kind: AdvertisingData.Kind
    /// What was added so far.
    public private(set) var structures: [ADStructure] = []
    /// Octets used so far.
    public private(set) var usedLength = 0

    public init(kind: AdvertisingData.Kind = .legacy) {
        self.kind = kind
    }

    /// The capacity: 31 or 1650.
    public var capacity: Int { kind.maximumLength }
    /// Octets still free.
    public var remainingSpace: Int { capacity - usedLength }

    /// Whether `structure` would fit now.
    public func canAppend(_ structure: ADStructure) -> Bool {
        let dataLength = structure.data.count
        return dataLength <= ADStructure.maximumDataLength && dataLength + 2 <= remainingSpace
    }

    /// Adds a structure, or throws saying which one did not fit and why.
    public mutating func append(_ structure: ADStructure) throws(AdvertisingDataBuildError) {
        let dataLength = structure.data.count
        guard dataLength <= ADStructure.maximumDataLength else {
            throw AdvertisingDataBuildError(
                structure: structure, reason: .structureTooLong(dataLength: dataLength), capacity: capacity)
        }
        guard dataLength + 2 <= remainingSpace else {
            throw AdvertisingDataBuildError(
                structure: structure, reason: .doesNotFit(needed: dataLength + 2, remaining: remainingSpace),
                capacity: capacity)
        }
        structures.append(structure)
        usedLength += dataLength + 2
    }

    /// Adds the name as a Complete Local Name if it fits, otherwise as a Shortened Local Name cut (on a
    /// character boundary) to the space left. Throws if not even one character fits.
    public mutating func appendLocalName(_ name: String) throws(AdvertisingDataBuildError) {
        let complete = ADStructure.localName(LocalName(name), complete: true)
        if canAppend(complete) { return try append(complete) }
        let room = min(remainingSpace - 2, ADStructure.maximumDataLength)
        var shortened = ""
        for character in name {
            guard shortened.utf8.count + String(character).utf8.count <= room else { break }
            shortened.append(character)
        }
        guard !shortened.isEmpty else { return try append(complete) }
        try append(.localName(LocalName(shortened), complete: false))
    }

    /// The advertising data built so far.
    public var advertisingData: AdvertisingData { AdvertisingData(structures) }

    /// The octets built so far.
    public func encode() -> [UInt8] { advertisingData.encode() }
}
