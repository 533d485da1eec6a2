public import BluetoothCore

/// A Google Eddystone frame: the Service Data of the 16-bit UUID 0xFEAA, whose first octet is the frame type
/// (UID 0x00, URL 0x10, TLM 0x20, EID 0x30). Layouts from the Eddystone protocol specification
/// (github.com/google/eddystone); multi-octet fields are big-endian. The advertisement must also list 0xFEAA in
/// its 16-bit service UUIDs (``init(advertisement:)`` checks it).
public enum EddystoneFrame: Hashable, Sendable {
    case uid(EddystoneUID)
    case url(EddystoneURL)
    case tlm(EddystoneTLM)
    case eid(EddystoneEID)

    /// The Eddystone service UUID, 0xFEAA.
    public static let serviceUUID: UInt16 = 0xFEAA

    /// The frame type octet.
    public var frameType: UInt8 {
        switch self {
        case .uid: 0x00
        case .url: 0x10
        case .tlm: 0x20
        case .eid: 0x30
        }
    }

    /// "Eddystone-UID" and so on.
    public var name: String {
        switch self {
        case .uid: "Eddystone-UID"
        case .url: "Eddystone-URL"
        case .tlm(.encrypted): "Eddystone-eTLM"
        case .tlm: "Eddystone-TLM"
        case .eid: "Eddystone-EID"
        }
    }

    /// Decodes the service data after the 0xFEAA UUID.
    public init(serviceData bytes: [UInt8], baseOffset: Int = 0) throws(DecodeError) {
        var reader = ByteReader(bytes, baseOffset: baseOffset)
        let frameType = try reader.readUInt8("Eddystone frame type")
        switch frameType {
        case 0x00:
            let power = try reader.readInt8("Ranging Data")
            let namespace = try reader.readBytes(10, "Namespace")
            let instance = try reader.readBytes(6, "Instance")
            var reserved: [UInt8]? = nil
            if !reader.isAtEnd { reserved = try reader.readBytes(2, "RFU") }
            try reader.expectEnd("Eddystone-UID frame")
            self = .uid(EddystoneUID(txPower: power, namespace: namespace, instance: instance, reserved: reserved))
        case 0x10:
            let power = try reader.readInt8("TX Power")
            let scheme = try reader.readUInt8("URL Scheme")
            guard EddystoneURL.schemePrefixes[scheme] != nil else {
                throw DecodeError(.invalidValue, at: reader.offset - 1, "unknown Eddystone URL scheme \(Dissection.hex8(scheme))")
            }
            let encoded = reader.readRemaining()
            guard encoded.count <= EddystoneURL.maximumEncodedLength else {
                throw DecodeError(.invalidLength, at: reader.offset, "an encoded Eddystone URL has at most 17 octets, not \(encoded.count)")
            }
            for (index, octet) in encoded.enumerated() where !EddystoneURL.isValidEncodedOctet(octet) {
                throw DecodeError(.invalidValue, at: reader.offset - encoded.count + index,
                                  "reserved octet \(Dissection.hex8(octet)) in Eddystone URL")
            }
            self = .url(EddystoneURL(txPower: power, schemeCode: scheme, encodedURL: encoded))
        case 0x20:
            let version = try reader.readUInt8("TLM version")
            switch version {
            case 0x00:
                let battery = try reader.readBigEndian(UInt16.self, "VBATT")
                let temperature = Int16(bitPattern: try reader.readBigEndian(UInt16.self, "TEMP"))
                let advertisements = try reader.readBigEndian(UInt32.self, "ADV_CNT")
                let uptime = try reader.readBigEndian(UInt32.self, "SEC_CNT")
                try reader.expectEnd("Eddystone-TLM frame")
                self = .tlm(.plain(EddystoneTLM.Plain(
                    batteryMillivolts: battery, temperature: temperature, advertisementCount: advertisements,
                    uptimeDeciseconds: uptime)))
            case 0x01:
                let ciphertext = try reader.readBytes(12, "Encrypted TLM")
                let salt = try reader.readBigEndian(UInt16.self, "Salt")
                let mic = try reader.readBigEndian(UInt16.self, "Message Integrity Check")
                try reader.expectEnd("Eddystone-eTLM frame")
                self = .tlm(.encrypted(EddystoneTLM.Encrypted(ciphertext: ciphertext, salt: salt, integrityCheck: mic)))
            default:
                throw DecodeError(.unknownType, at: reader.offset - 1, "unknown Eddystone-TLM version \(Dissection.hex8(version))")
            }
        case 0x30:
            let power = try reader.readInt8("Ranging Data")
            let identifier = try reader.readBytes(8, "Ephemeral Identifier")
            try reader.expectEnd("Eddystone-EID frame")
            self = .eid(EddystoneEID(txPower: power, identifier: identifier))
        default:
            throw DecodeError(.unknownType, at: baseOffset, "unknown Eddystone frame type \(Dissection.hex8(frameType))")
        }
    }

    /// Finds the Eddystone frame in advertising data: the 16-bit service UUID lists must contain 0xFEAA and
    /// there must be Service Data for 0xFEAA.
    public init(advertisement: AdvertisingData) throws(DecodeError) {
        var listed = false
        for case .serviceUUIDs16(let uuids, _) in advertisement.structures where uuids.contains(Self.serviceUUID) {
            listed = true
        }
        guard listed else {
            throw DecodeError(.invalidValue, at: 0, "an Eddystone advertisement lists 0xFEAA in its 16-bit service UUIDs")
        }
        for case .serviceData16(Self.serviceUUID, let data) in advertisement.structures {
            try self.init(serviceData: data)
            return
        }
        throw DecodeError(.invalidValue, at: 0, "no Service Data for 0xFEAA")
    }

    /// The service data after the UUID.
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: 20)
        writer.write(frameType)
        switch self {
        case .uid(let uid):
            writer.write(uid.txPower)
            writer.write(uid.namespace)
            writer.write(uid.instance)
            if let reserved = uid.reserved { writer.write(reserved) }
        case .url(let url):
            writer.write(url.txPower)
            writer.write(url.schemeCode)
            writer.write(url.encodedURL)
        case .tlm(.plain(let tlm)):
            writer.write(UInt8(0x00))
            writer.writeBigEndian(tlm.batteryMillivolts)
            writer.writeBigEndian(UInt16(bitPattern: tlm.temperature))
            writer.writeBigEndian(tlm.advertisementCount)
            writer.writeBigEndian(tlm.uptimeDeciseconds)
        case .tlm(.encrypted(let etlm)):
            writer.write(UInt8(0x01))
            writer.write(etlm.ciphertext)
            writer.writeBigEndian(etlm.salt)
            writer.writeBigEndian(etlm.integrityCheck)
        case .eid(let eid):
            writer.write(eid.txPower)
            writer.write(eid.identifier)
        }
        return writer.bytes
    }

    /// The Service Data AD structure.
    public var adStructure: ADStructure { .serviceData16(Self.serviceUUID, data: encode()) }

    /// A complete advertisement: Flags 0x06, Complete List of 16-bit UUIDs [0xFEAA], the service data.
    public var advertisingData: AdvertisingData {
        AdvertisingData([
            .flags(.generalDiscoverableLEOnly), .serviceUUIDs16([Self.serviceUUID], complete: true), adStructure,
        ])
    }
}

/// Eddystone-UID (frame 0x00): a 10-octet namespace and 6-octet instance; the two RFU octets are optional on
/// the air (and kept when present).
public struct EddystoneUID: Hashable, Sendable {
    /// Calibrated TX power at 0 m, dBm.
    public var txPower: Int8
    /// 10 octets. Always 10 when decoded; the initializer pads or cuts to 10.
    public private(set) var namespace: [UInt8]
    /// 6 octets. Always 6 when decoded; the initializer pads or cuts to 6.
    public private(set) var instance: [UInt8]
    /// The two reserved octets, when sent (should be zero).
    public var reserved: [UInt8]?

    public init(txPower: Int8, namespace: [UInt8], instance: [UInt8], reserved: [UInt8]? = [0, 0]) {
        self.txPower = txPower
        self.namespace = Self.fit(namespace, 10)
        self.instance = Self.fit(instance, 6)
        self.reserved = reserved.map { Self.fit($0, 2) }
    }

    private static func fit(_ bytes: [UInt8], _ count: Int) -> [UInt8] {
        Array(bytes.prefix(count)) + [UInt8](repeating: 0, count: max(0, count - bytes.count))
    }
}

/// Errors building an Eddystone-URL from text.
public enum EddystoneURLError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The URL does not start with http://, https://, http://www. or https://www.
    case unsupportedScheme(String)
    /// After compression the URL needs more than 17 octets.
    case tooLong(encodedLength: Int)
    /// The URL contains a character Eddystone cannot carry (outside printable ASCII 0x21...0x7E).
    case invalidCharacter(Character)

    public var description: String {
        switch self {
        case .unsupportedScheme(let url): "\"\(url)\" does not start with http://, https://, http://www. or https://www."
        case .tooLong(let length): "the encoded URL needs \(length) octets; Eddystone-URL carries at most 17"
        case .invalidCharacter(let character): "'\(character)' cannot be carried in an Eddystone-URL"
        }
    }
}

/// Eddystone-URL (frame 0x10): a compressed URL, a scheme prefix code and up to 17 octets in which 0x00...0x0D
/// stand for ".com/", ".org/" ... ".gov". The encoded octets are kept as sent.
public struct EddystoneURL: Hashable, Sendable {
    /// Calibrated TX power at 0 m, dBm.
    public var txPower: Int8
    /// 0x00 "http://www.", 0x01 "https://www.", 0x02 "http://", 0x03 "https://".
    public private(set) var schemeCode: UInt8
    /// The compressed rest of the URL.
    public private(set) var encodedURL: [UInt8]

    public static let maximumEncodedLength = 17

    public static let schemePrefixes: [UInt8: String] = [
        0x00: "http://www.", 0x01: "https://www.", 0x02: "http://", 0x03: "https://",
    ]

    public static let expansions: [String] = [
        ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
        ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov",
    ]

    init(txPower: Int8, schemeCode: UInt8, encodedURL: [UInt8]) {
        self.txPower = txPower
        self.schemeCode = schemeCode
        self.encodedURL = encodedURL
    }

    /// Compresses a URL: the longest matching scheme prefix, then at each position the longest expansion.
    public init(txPower: Int8, url: String) throws(EddystoneURLError) {
        guard let (code, prefix) = Self.schemePrefixes.filter({ url.hasPrefix($0.value) })
            .max(by: { $0.value.count < $1.value.count })
        else { throw .unsupportedScheme(url) }
        var rest = Substring(url.dropFirst(prefix.count))
        var encoded: [UInt8] = []
        while let first = rest.first {
            if let (index, expansion) = Self.expansions.enumerated()
                .filter({ rest.hasPrefix($0.element) }).max(by: { $0.element.count < $1.element.count }) {
                encoded.append(UInt8(index))
                rest = rest.dropFirst(expansion.count)
                continue
            }
            guard let ascii = first.asciiValue, Self.isValidEncodedOctet(ascii), ascii > 0x0D else {
                throw .invalidCharacter(first)
            }
            encoded.append(ascii)
            rest = rest.dropFirst()
        }
        guard encoded.count <= Self.maximumEncodedLength else { throw .tooLong(encodedLength: encoded.count) }
        self.init(txPower: txPower, schemeCode: code, encodedURL: encoded)
    }

    static func isValidEncodedOctet(_ octet: UInt8) -> Bool {
        octet <= 0x0D || (octet >= 0x21 && octet <= 0x7E)
    }

    /// The full URL: "https://github.com/citruz".
    public var url: String {
        var out = Self.schemePrefixes[schemeCode] ?? ""
        for octet in encodedURL {
            if Int(octet) < Self.expansions.count {
                out += Self.expansions[Int(octet)]
            } else {
                out.unicodeScalars.append(Unicode.Scalar(octet))
            }
        }
        return out
    }
}

/// Eddystone-TLM (frame 0x20): telemetry, version 0 in the clear or version 1 encrypted (eTLM).
public enum EddystoneTLM: Hashable, Sendable {
    case plain(Plain)
    case encrypted(Encrypted)

    /// Version 0.
    public struct Plain: Hashable, Sendable {
        /// Battery voltage, mV (0: not battery powered).
        public var batteryMillivolts: UInt16
        /// Beacon temperature, signed 8.8 fixed point °C (0x8000: not supported).
        public var temperature: Int16
        /// Advertising PDUs sent since power-on.
        public var advertisementCount: UInt32
        /// Time since power-on, 0.1 s units.
        public var uptimeDeciseconds: UInt32

        public init(batteryMillivolts: UInt16, temperature: Int16, advertisementCount: UInt32, uptimeDeciseconds: UInt32) {
            self.batteryMillivolts = batteryMillivolts
            self.temperature = temperature
            self.advertisementCount = advertisementCount
            self.uptimeDeciseconds = uptimeDeciseconds
        }

        /// The temperature in °C, nil for 0x8000 ("not supported").
        public var temperatureCelsius: Double? {
            temperature == Int16.min ? nil : Double(temperature) / 256
        }

        /// "19.0 °C" (exact: 8.8 fixed point has at most 8 binary digits, printed to 1/256).
        public var temperatureText: String {
            guard let celsius = temperatureCelsius else { return "not supported (0x8000)" }
            return "\(celsius) °C"
        }
    }

    /// Version 1: encrypted TLM, salt and message integrity check.
    public struct Encrypted: Hashable, Sendable {
        /// 12 octets.
        public var ciphertext: [UInt8]
        public var salt: UInt16
        public var integrityCheck: UInt16

        public init(ciphertext: [UInt8], salt: UInt16, integrityCheck: UInt16) {
            self.ciphertext = Array(ciphertext.prefix(12)) + [UInt8](repeating: 0, count: max(0, 12 - ciphertext.count))
            self.salt = salt
            self.integrityCheck = integrityCheck
        }
    }
}

/// Eddystone-EID (frame 0x30): an 8-octet ephemeral identifier.
public struct EddystoneEID: Hashable, Sendable {
    /// Calibrated TX power at 0 m, dBm.
    public var txPower: Int8
    /// 8 octets. Always 8 when decoded; the initializer pads or cuts to 8.
    public private(set) var identifier: [UInt8]

    public init(txPower: Int8, identifier: [UInt8]) {
        self.txPower = txPower
        self.identifier = Array(identifier.prefix(8)) + [UInt8](repeating: 0, count: max(0, 8 - identifier.count))
    }
}
