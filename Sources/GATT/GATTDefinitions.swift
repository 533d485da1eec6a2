public import ATT
public import BluetoothCore

/// The Characteristic Properties octet of a characteristic declaration (Core 5.4 Vol 3 Part G §3.3.1.1,
/// Table 3.5).
public struct GATTCharacteristicProperties: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let broadcast = GATTCharacteristicProperties(rawValue: 0x01)
    public static let read = GATTCharacteristicProperties(rawValue: 0x02)
    public static let writeWithoutResponse = GATTCharacteristicProperties(rawValue: 0x04)
    public static let write = GATTCharacteristicProperties(rawValue: 0x08)
    public static let notify = GATTCharacteristicProperties(rawValue: 0x10)
    public static let indicate = GATTCharacteristicProperties(rawValue: 0x20)
    public static let authenticatedSignedWrites = GATTCharacteristicProperties(rawValue: 0x40)
    /// Set automatically when the definition has extended properties.
    public static let extendedProperties = GATTCharacteristicProperties(rawValue: 0x80)
}

/// The Characteristic Extended Properties bit field (Core 5.4 Vol 3 Part G §3.3.3.1, Table 3.8).
public struct GATTExtendedProperties: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// Reliable Write (prepared writes with verification) allowed.
    public static let reliableWrite = GATTExtendedProperties(rawValue: 0x0001)
    /// The Characteristic User Description descriptor is writable.
    public static let writableAuxiliaries = GATTExtendedProperties(rawValue: 0x0002)
}

/// The Client Characteristic Configuration bits (Core 5.4 Vol 3 Part G §3.3.3.3, Table 3.11).
public struct GATTClientConfiguration: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let notification = GATTClientConfiguration(rawValue: 0x0001)
    public static let indication = GATTClientConfiguration(rawValue: 0x0002)
}

/// The Characteristic Presentation Format descriptor value (Core 5.4 Vol 3 Part G §3.3.3.5, Table 3.15):
/// 7 octets.
public struct GATTPresentationFormat: Hashable, Sendable {
    /// Format (Table 3.16 of the assigned numbers: 0x04 uint8, 0x06 uint16, 0x19 utf8s...).
    public var format: UInt8
    public var exponent: Int8
    /// Unit UUID (org.bluetooth.unit.*), e.g. 0x272F for degrees Celsius.
    public var unit: UInt16
    /// Name space (0x01: Bluetooth SIG).
    public var namespace: UInt8
    public var descriptionValue: UInt16

    public init(format: UInt8, exponent: Int8 = 0, unit: UInt16 = 0x2700, namespace: UInt8 = 0x01, descriptionValue: UInt16 = 0) {
        self.format = format
        self.exponent = exponent
        self.unit = unit
        self.namespace = namespace
        self.descriptionValue = descriptionValue
    }

    /// The 7 octets of the descriptor.
    public var bytes: [UInt8] {
        var writer = ByteWriter(capacity: 7)
        writer.write(format)
        writer.write(exponent)
        writer.write(unit)
        writer.write(namespace)
        writer.write(descriptionValue)
        return writer.bytes
    }
}

/// Identifies one connection (for example its HCI connection handle) to a ``GATTServer``.
public struct GATTConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    public var rawValue: UInt16
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static func < (lhs: GATTConnectionID, rhs: GATTConnectionID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "connection \(Dissection.hex16(rawValue))" }
}

/// One ATT bearer of a connection, Core 5.4 Vol 3 Part F §3.2.11: the unenhanced bearer on the ATT fixed channel
/// (CID 0x0004, ``unenhanced``) or an Enhanced ATT bearer, named by the local CID of its L2CAP channel (SPSM
/// 0x0027, enhanced credit based mode). The server keeps ATT_MTU and the deferred request per bearer; CCCDs,
/// Client Supported Features and the prepare queue stay per connection (per client).
public struct GATTBearerID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    public var rawValue: UInt16
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    /// The ATT fixed channel.
    public static let unenhanced = GATTBearerID(0x0004)
    public var isEnhanced: Bool { self != .unenhanced }
    public static func < (lhs: GATTBearerID, rhs: GATTBearerID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String {
        isEnhanced ? "EATT bearer \(Dissection.hex16(rawValue))" : "ATT bearer"
    }
}

/// The Server Supported Features characteristic's value (0x2B3A), Core 5.4 Vol 3 Part G §7.4.
public struct GATTServerSupportedFeatures: OptionSet, Hashable, Sendable, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bit 0: the server accepts Enhanced ATT bearers.
    public static let enhancedATT = GATTServerSupportedFeatures(rawValue: 0x01)
}

/// The Client Supported Features characteristic's value (0x2B29), Core 5.4 Vol 3 Part G §7.2 (first octet).
public struct GATTClientSupportedFeatures: OptionSet, Hashable, Sendable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bit 0: Robust Caching.
    public static let robustCaching = GATTClientSupportedFeatures(rawValue: 0x01)
    /// Bit 1: the client supports Enhanced ATT bearers.
    public static let enhancedATT = GATTClientSupportedFeatures(rawValue: 0x02)
    /// Bit 2: the client accepts Multiple Handle Value Notifications.
    public static let multipleHandleValueNotifications = GATTClientSupportedFeatures(rawValue: 0x04)
}

/// An ATT error a value handler answers (Core 5.4 Vol 3 Part F §3.4.1.1: application errors 0x80–0x9F,
/// *Insufficient Authorization*, *Invalid Offset*, *Value Not Allowed*...).
public struct GATTAttributeError: Error, Hashable, Sendable, CustomStringConvertible, Codable {
    public var code: ATTErrorCode
    public init(_ code: ATTErrorCode) { self.code = code }
    public var description: String { code.description }
}

/// A read of a dynamic attribute value (Core 5.4 Vol 3 Part F §3.4.4): the handler answers the value **from
/// ``offset``** (the server then cuts it to fit the response), or an ATT error (an application error 0x80–0x9F,
/// *Insufficient Authorization*, *Invalid Offset*...). ``answer(wholeValue:)`` does the offset arithmetic for a
/// handler that has the whole value at hand.
public struct GATTReadRequest: Hashable, Sendable {
    public var connection: GATTConnectionID
    public var handle: UInt16
    /// 0 for Read, Read By Type and Read Multiple; the Read Blob offset otherwise.
    public var offset: Int
    public var security: GATTLinkSecurity

    public init(connection: GATTConnectionID, handle: UInt16, offset: Int, security: GATTLinkSecurity) {
        self.connection = connection
        self.handle = handle
        self.offset = offset
        self.security = security
    }

    /// The part of `wholeValue` from ``offset``, or *Invalid Offset* when the offset is past its end.
    public func answer(wholeValue: [UInt8]) -> Result<[UInt8], GATTAttributeError> {
        guard offset <= wholeValue.count else { return .failure(GATTAttributeError(.invalidOffset)) }
        return .success(Array(wholeValue[offset...]))
    }
}

/// A write to a dynamic attribute value (Core 5.4 Vol 3 Part F §3.4.5, §3.4.6).
public struct GATTWriteRequest: Hashable, Sendable, Codable {
    public enum Kind: String, Hashable, Sendable, Codable {
        /// Write Request: an error is sent back to the client.
        case request
        /// Write Command: errors are dropped.
        case command
        /// Signed Write Command whose signature was verified (or sent on an encrypted link).
        case signedCommand
        /// Execute Write, first pass: check only, change nothing (all or nothing, §3.4.6.3).
        case preparedValidation
        /// Execute Write, second pass: every queued write was validated; apply.
        case prepared
    }

    public var connection: GATTConnectionID
    public var handle: UInt16
    public var offset: Int
    public var value: [UInt8]
    public var kind: Kind
    public var security: GATTLinkSecurity

    public init(connection: GATTConnectionID, handle: UInt16, offset: Int, value: [UInt8], kind: Kind, security: GATTLinkSecurity) {
        self.connection = connection
        self.handle = handle
        self.offset = offset
        self.value = value
        self.kind = kind
        self.security = security
    }
}

/// Where an attribute value comes from: fixed bytes kept by the server (writes replace them), or handlers the
/// application provides (Core 5.4 Vol 3 Part F §3.2.4).
public enum GATTValue: Sendable {
    /// A value the server stores; writes (when permitted) change it for every client.
    case stored([UInt8])
    /// A value computed by `read` and consumed by `write` (nil handlers: *Read/Write Not Permitted*).
    case dynamic(
        read: (@Sendable (GATTReadRequest) -> Result<[UInt8], GATTAttributeError>)?,
        write: (@Sendable (GATTWriteRequest) -> ATTErrorCode?)?
    )
}

/// A descriptor of a characteristic definition (Core 5.4 Vol 3 Part G §3.3.3).
public struct GATTDescriptorDefinition: Sendable {
    public var uuid: BluetoothUUID
    public var permissions: GATTPermissions
    public var value: GATTValue
    /// Longest value a write may leave (at most 512).
    public var maximumLength: Int

    public init(uuid: BluetoothUUID, permissions: GATTPermissions = .readOnly, value: GATTValue, maximumLength: Int = ATTMTU.maximumAttributeValueLength) {
        self.uuid = uuid
        self.permissions = permissions
        self.value = value
        self.maximumLength = min(max(maximumLength, 0), ATTMTU.maximumAttributeValueLength)
    }

    /// A Characteristic User Description (0x2901), UTF-8 (§3.3.3.2).
    public static func userDescription(_ text: String, writable: Bool = false) -> GATTDescriptorDefinition {
        GATTDescriptorDefinition(uuid: GATTUUID.characteristicUserDescription, permissions: writable ? .readWrite : .readOnly, value: .stored(Array(text.utf8)))
    }

    /// A Characteristic Presentation Format (0x2904, §3.3.3.5).
    public static func presentationFormat(_ format: GATTPresentationFormat) -> GATTDescriptorDefinition {
        GATTDescriptorDefinition(uuid: GATTUUID.characteristicPresentationFormat, value: .stored(format.bytes))
    }

    /// A Client Characteristic Configuration (0x2902, §3.3.3.3): one value per client, kept by the server. Added
    /// automatically to characteristics that notify or indicate; add it by hand only to place it elsewhere.
    public static var clientConfiguration: GATTDescriptorDefinition {
        GATTDescriptorDefinition(uuid: GATTUUID.clientCharacteristicConfiguration, permissions: .readWrite, value: .stored([0, 0]), maximumLength: 2)
    }
}

/// A characteristic to add to a service (Core 5.4 Vol 3 Part G §3.3): declaration, value and descriptors.
/// The Extended Properties descriptor and the CCCD (for notify/indicate) are added by the database, in that
/// order before the definition's descriptors.
public struct GATTCharacteristicDefinition: Sendable {
    public var uuid: BluetoothUUID
    public var properties: GATTCharacteristicProperties
    public var extendedProperties: GATTExtendedProperties
    /// Permissions of the value attribute.
    public var permissions: GATTPermissions
    public var value: GATTValue
    /// Longest value a write may leave (at most 512); longer: *Invalid Attribute Value Length*.
    public var maximumLength: Int
    public var descriptors: [GATTDescriptorDefinition]
    /// Security a client needs to write the CCCD (subscribe), if any.
    public var subscriptionSecurity: GATTSecurityRequirement
    /// Whether the database adds the CCCD of a characteristic that notifies or indicates and lists none itself
    /// (true). False builds what an Android app that forgets its `BluetoothGattDescriptor` 0x2902 serves: a
    /// characteristic no client can subscribe to.
    public var addsClientConfiguration: Bool = true

    public init(
        uuid: BluetoothUUID, properties: GATTCharacteristicProperties, extendedProperties: GATTExtendedProperties = [],
        permissions: GATTPermissions? = nil, value: GATTValue = .stored([]), maximumLength: Int = ATTMTU.maximumAttributeValueLength,
        descriptors: [GATTDescriptorDefinition] = [], subscriptionSecurity: GATTSecurityRequirement = .none
    ) {
        self.uuid = uuid
        self.properties = properties
        self.extendedProperties = extendedProperties
        let writable = !properties.isDisjoint(with: [.write, .writeWithoutResponse, .authenticatedSignedWrites]) || extendedProperties.contains(.reliableWrite)
        self.permissions = permissions ?? GATTPermissions(readable: properties.contains(.read), writable: writable)
        self.value = value
        self.maximumLength = min(max(maximumLength, 0), ATTMTU.maximumAttributeValueLength)
        self.descriptors = descriptors
        self.subscriptionSecurity = subscriptionSecurity
    }
}

/// A service to add to a database (Core 5.4 Vol 3 Part G §3.1, §3.2).
public struct GATTServiceDefinition: Sendable {
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    /// Services already in the database that this one includes (include declarations come first, §3.2).
    public var includes: [GATTServiceHandles]
    public var characteristics: [GATTCharacteristicDefinition]

    public init(uuid: BluetoothUUID, isPrimary: Bool = true, includes: [GATTServiceHandles] = [], characteristics: [GATTCharacteristicDefinition]) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.includes = includes
        self.characteristics = characteristics
    }
}

/// The handles a database gave a characteristic.
public struct GATTCharacteristicHandles: Hashable, Sendable, Codable {
    public var uuid: BluetoothUUID
    public var declaration: UInt16
    public var value: UInt16
    /// The CCCD, when the characteristic has one.
    public var clientConfiguration: UInt16?
    /// The other descriptors, in definition order (extended properties first when present).
    public var descriptors: [UInt16]

    public init(uuid: BluetoothUUID, declaration: UInt16, value: UInt16, clientConfiguration: UInt16? = nil, descriptors: [UInt16] = []) {
        self.uuid = uuid
        self.declaration = declaration
        self.value = value
        self.clientConfiguration = clientConfiguration
        self.descriptors = descriptors
    }
}

/// The handles a database gave a service.
public struct GATTServiceHandles: Hashable, Sendable, Codable {
    public var uuid: BluetoothUUID
    public var isPrimary: Bool
    public var start: UInt16
    public var end: UInt16
    public var characteristics: [GATTCharacteristicHandles]

    public init(uuid: BluetoothUUID, isPrimary: Bool, start: UInt16, end: UInt16, characteristics: [GATTCharacteristicHandles] = []) {
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.start = start
        self.end = end
        self.characteristics = characteristics
    }

    /// The handles of the characteristic `uuid` (the first one with that UUID).
    public func characteristic(_ uuid: BluetoothUUID) -> GATTCharacteristicHandles? {
        characteristics.first { $0.uuid == uuid }
    }
}

/// The attribute types and assigned UUIDs GATT uses (Core 5.4 Vol 3 Part G §3.4, Assigned Numbers §3.6–3.8).
public enum GATTUUID {
    public static let primaryService = BluetoothUUID(0x2800)
    public static let secondaryService = BluetoothUUID(0x2801)
    public static let include = BluetoothUUID(0x2802)
    public static let characteristic = BluetoothUUID(0x2803)
    public static let characteristicExtendedProperties = BluetoothUUID(0x2900)
    public static let characteristicUserDescription = BluetoothUUID(0x2901)
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
    public static let serverCharacteristicConfiguration = BluetoothUUID(0x2903)
    public static let characteristicPresentationFormat = BluetoothUUID(0x2904)
    public static let characteristicAggregateFormat = BluetoothUUID(0x2905)
    public static let genericAccessService = BluetoothUUID(0x1800)
    public static let genericAttributeService = BluetoothUUID(0x1801)
    public static let deviceName = BluetoothUUID(0x2A00)
    public static let appearance = BluetoothUUID(0x2A01)
    public static let serviceChanged = BluetoothUUID(0x2A05)
    public static let clientSupportedFeatures = BluetoothUUID(0x2B29)
    public static let databaseHash = BluetoothUUID(0x2B2A)
    public static let serverSupportedFeatures = BluetoothUUID(0x2B3A)
}
