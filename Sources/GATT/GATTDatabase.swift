import ATT
public import BluetoothCore

/// Why a definition cannot be added to a ``GATTDatabase``.
public struct GATTDatabaseError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable {
        /// Handles 0x0001–0xFFFF are used up.
        case handlesExhausted
        /// An included service is not in this database.
        case unknownIncludedService
        /// A stored value is longer than 512 octets or its maximum length.
        case valueTooLong
    }

    public var code: Code
    public var reason: String

    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code.rawValue): \(reason)" }
}

/// One attribute of the database (Core 5.4 Vol 3 Part F §3.2): handle, type, permissions and where the value
/// lives.
public struct GATTAttribute: Sendable {
    enum Storage: Sendable {
        /// Bytes held by the server (declarations and stored values).
        case bytes([UInt8])
        /// Handlers of the application.
        case dynamic(
            read: (@Sendable (GATTReadRequest) -> Result<[UInt8], GATTAttributeError>)?,
            write: (@Sendable (GATTWriteRequest) -> ATTErrorCode?)?
        )
        /// A CCCD: one value per connection, for the characteristic whose properties are given.
        case clientConfiguration(valueHandle: UInt16, properties: GATTCharacteristicProperties)
        /// Client Supported Features (0x2B29): one value per connection.
        case clientSupportedFeatures
    }

    public let handle: UInt16
    public let type: BluetoothUUID
    public let permissions: GATTPermissions
    var storage: Storage
    /// Longest value a write may leave.
    let maximumLength: Int
    /// Declarations and fixed-size descriptors: Read Blob answers *Attribute Not Long* when the whole value fits a
    /// Read Response (§3.4.4.5).
    let isFixedLength: Bool
    /// For service declarations: the last handle of the service.
    let groupEnd: UInt16?
    /// For characteristic values: whether the declaration allows Signed Write Command.
    let allowsSignedWrite: Bool

    /// The stored value, when the server holds it (nil for dynamic and per-connection values).
    public var storedValue: [UInt8]? {
        if case .bytes(let bytes) = storage { return bytes }
        return nil
    }
}

/// A GATT server's attribute database (Core 5.4 Vol 3 Part G §3): services (primary, secondary, with includes),
/// characteristics (declaration, value, descriptors) and the GAP and GATT services, with handles assigned
/// sequentially from 0x0001 in the order definitions are added.
///
/// Building: ``addGAPService(deviceName:appearance:)``, ``addGATTService(serviceChanged:clientSupportedFeatures:)``
/// then ``add(_:)`` for each service (secondary services before the services that include them). Each call
/// returns the handles it assigned. The database is a value: a ``GATTServer`` takes a copy and owns it.
public struct GATTDatabase: Sendable {
    /// Every attribute; `attributes[i].handle == i + 1`.
    public private(set) var attributes: [GATTAttribute] = []
    /// Every service added, in handle order.
    public private(set) var services: [GATTServiceHandles] = []
    /// The definition each service of ``services`` was added from (same order): what a server that keeps no
    /// attribute table of its own (bluetoothd's GATT application) publishes.
    public private(set) var definitions: [GATTServiceDefinition] = []
    /// The Service Changed characteristic, when the GATT service has one.
    public private(set) var serviceChanged: GATTCharacteristicHandles?
    /// How the database was built, one step per call (``GATTDatabaseStep``): replayed by ``init(replaying:)``, it
    /// builds the same database, with the same handles, elsewhere.
    public private(set) var steps: [GATTDatabaseStep] = []

    public init() {}

    /// The last handle used (0 when empty).
    public var lastHandle: UInt16 { UInt16(truncatingIfNeeded: attributes.count) }

    /// The attribute at `handle`.
    public func attribute(_ handle: UInt16) -> GATTAttribute? {
        let index = Int(handle) - 1
        guard index >= 0, index < attributes.count else { return nil }
        return attributes[index]
    }

    mutating func setStorage(_ storage: GATTAttribute.Storage, at handle: UInt16) {
        let index = Int(handle) - 1
        guard index >= 0, index < attributes.count else { return }
        attributes[index].storage = storage
    }

    /// The indices of attributes whose handles lie in `range` (clamped to the database).
    func indices(in range: ATTHandleRange) -> Range<Int> {
        let lower = max(Int(range.start), 1) - 1
        let upper = min(Int(range.end), attributes.count)
        guard lower < upper else { return 0..<0 }
        return lower..<upper
    }

    /// Adds the GAP service (0x1800) with Device Name (0x2A00) and Appearance (0x2A01), readable
    /// (Core 5.4 Vol 3 Part C §12).
    @discardableResult
    public mutating func addGAPService(deviceName: String, appearance: UInt16 = 0x0000) throws(GATTDatabaseError) -> GATTServiceHandles {
        var appearanceBytes = ByteWriter(capacity: 2)
        appearanceBytes.write(appearance)
        let handles = try add(GATTServiceDefinition(uuid: GATTUUID.genericAccessService, characteristics: [
            GATTCharacteristicDefinition(uuid: GATTUUID.deviceName, properties: .read, value: .stored(Array(deviceName.utf8.prefix(248)))),
            GATTCharacteristicDefinition(uuid: GATTUUID.appearance, properties: .read, value: .stored(appearanceBytes.bytes)),
        ]))
        steps[steps.count - 1] = .gapService(deviceName: deviceName, appearance: appearance)
        return handles
    }

    /// Adds the GATT service (0x1801): Service Changed (0x2A05, indicate, with its CCCD; value not readable)
    /// and, if asked, Client Supported Features (0x2B29, one value per client; bit 1 EATT, bit 2 Multiple Handle
    /// Value Notifications, §7.2) and Server Supported Features (0x2B3A, read-only, §7.4: bit 0 says the server
    /// accepts Enhanced ATT bearers) (Core 5.4 Vol 3 Part G §7). A server offering EATT must also offer Client
    /// Supported Features (§7.4), so `serverSupportedFeatures` with ``GATTServerSupportedFeatures/enhancedATT``
    /// adds it too. Database Hash is not offered (it needs AES-CMAC, which GATT does not depend on).
    @discardableResult
    public mutating func addGATTService(serviceChanged: Bool = true, clientSupportedFeatures: Bool = false,
                                        serverSupportedFeatures: GATTServerSupportedFeatures = []) throws(GATTDatabaseError) -> GATTServiceHandles {
        let clientSupportedFeatures = clientSupportedFeatures || serverSupportedFeatures.contains(.enhancedATT)
        var characteristics: [GATTCharacteristicDefinition] = []
        if serviceChanged {
            characteristics.append(GATTCharacteristicDefinition(
                uuid: GATTUUID.serviceChanged, properties: .indicate, permissions: GATTPermissions.none,
                value: .stored([0x01, 0x00, 0xFF, 0xFF])))
        }
        if clientSupportedFeatures {
            characteristics.append(GATTCharacteristicDefinition(
                uuid: GATTUUID.clientSupportedFeatures, properties: [.read, .write], value: .stored([0x00]), maximumLength: 1))
        }
        if !serverSupportedFeatures.isEmpty {
            characteristics.append(GATTCharacteristicDefinition(
                uuid: GATTUUID.serverSupportedFeatures, properties: .read, value: .stored([serverSupportedFeatures.rawValue])))
        }
        let handles = try add(GATTServiceDefinition(uuid: GATTUUID.genericAttributeService, characteristics: characteristics))
        if serviceChanged { self.serviceChanged = handles.characteristic(GATTUUID.serviceChanged) }
        if clientSupportedFeatures, let features = handles.characteristic(GATTUUID.clientSupportedFeatures) {
            setStorage(.clientSupportedFeatures, at: features.value)
        }
        steps[steps.count - 1] = .gattService(serviceChanged: serviceChanged, clientSupportedFeatures: clientSupportedFeatures,
                                              serverSupportedFeatures: serverSupportedFeatures)
        return handles
    }

    /// Adds a service and assigns its handles: the service declaration, include declarations, then for each
    /// characteristic its declaration, value, Extended Properties, CCCD (notify/indicate) and descriptors.
    @discardableResult
    public mutating func add(_ service: GATTServiceDefinition) throws(GATTDatabaseError) -> GATTServiceHandles {
        var pending: [GATTAttribute] = []
        var next = Int(lastHandle) + 1
        func take() throws(GATTDatabaseError) -> UInt16 {
            guard let handle = UInt16(exactly: next), handle != 0 else {
                throw GATTDatabaseError(.handlesExhausted, "service \(service.uuid) does not fit below handle 0xFFFF")
            }
            next += 1
            return handle
        }
        func attribute(_ handle: UInt16, _ type: BluetoothUUID, _ permissions: GATTPermissions, _ storage: GATTAttribute.Storage,
                       maximumLength: Int = ATTMTU.maximumAttributeValueLength, fixed: Bool = false, signed: Bool = false) -> GATTAttribute {
            GATTAttribute(handle: handle, type: type, permissions: permissions, storage: storage, maximumLength: maximumLength,
                          isFixedLength: fixed, groupEnd: nil, allowsSignedWrite: signed)
        }
        func storage(_ value: GATTValue, maximumLength: Int, owner: BluetoothUUID) throws(GATTDatabaseError) -> GATTAttribute.Storage {
            switch value {
            case .stored(let bytes):
                guard bytes.count <= maximumLength else {
                    throw GATTDatabaseError(.valueTooLong, "the value of \(owner) has \(bytes.count) octets, at most \(maximumLength)")
                }
                return .bytes(bytes)
            case .dynamic(let read, let write):
                return .dynamic(read: read, write: write)
            }
        }

        let serviceHandle = try take()
        for included in service.includes {
            let declaration = self.attribute(included.start)
            guard declaration?.type == (included.isPrimary ? GATTUUID.primaryService : GATTUUID.secondaryService),
                  declaration?.groupEnd == included.end else {
                throw GATTDatabaseError(.unknownIncludedService, "included service \(included.uuid) at \(Dissection.hex16(included.start)) is not in the database")
            }
            var value = ByteWriter(capacity: 6)
            value.write(included.start)
            value.write(included.end)
            if let short = included.uuid.littleEndianBytes(size: 2) { value.write(short) }
            pending.append(attribute(try take(), GATTUUID.include, .readOnly, .bytes(value.bytes), fixed: true))
        }
        var characteristics: [GATTCharacteristicHandles] = []
        for definition in service.characteristics {
            let declaration = try take()
            let valueHandle = try take()
            var properties = definition.properties
            if !definition.extendedProperties.isEmpty { properties.insert(.extendedProperties) }
            var declarationValue = ByteWriter(capacity: 19)
            declarationValue.write(properties.rawValue)
            declarationValue.write(valueHandle)
            declarationValue.write(definition.uuid.littleEndianBytes)
            pending.append(attribute(declaration, GATTUUID.characteristic, .readOnly, .bytes(declarationValue.bytes), fixed: true))
            pending.append(attribute(valueHandle, definition.uuid, definition.permissions,
                                     try storage(definition.value, maximumLength: definition.maximumLength, owner: definition.uuid),
                                     maximumLength: definition.maximumLength, signed: properties.contains(.authenticatedSignedWrites)))
            var handles = GATTCharacteristicHandles(uuid: definition.uuid, declaration: declaration, value: valueHandle, clientConfiguration: nil, descriptors: [])
            if !definition.extendedProperties.isEmpty {
                var bits = ByteWriter(capacity: 2)
                bits.write(definition.extendedProperties.rawValue)
                let handle = try take()
                pending.append(attribute(handle, GATTUUID.characteristicExtendedProperties, .readOnly, .bytes(bits.bytes), fixed: true))
                handles.descriptors.append(handle)
            }
            let wantsCCCD = !properties.isDisjoint(with: [.notify, .indicate])
            let explicitCCCD = definition.descriptors.contains { $0.uuid == GATTUUID.clientCharacteristicConfiguration }
            let cccdPermissions = GATTPermissions(readable: true, writable: true, write: definition.subscriptionSecurity)
            if wantsCCCD && !explicitCCCD && definition.addsClientConfiguration {
                let handle = try take()
                pending.append(attribute(handle, GATTUUID.clientCharacteristicConfiguration, cccdPermissions,
                                         .clientConfiguration(valueHandle: valueHandle, properties: properties), maximumLength: 2, fixed: true))
                handles.clientConfiguration = handle
            }
            for descriptor in definition.descriptors {
                let handle = try take()
                if descriptor.uuid == GATTUUID.clientCharacteristicConfiguration {
                    pending.append(attribute(handle, descriptor.uuid, cccdPermissions,
                                             .clientConfiguration(valueHandle: valueHandle, properties: properties), maximumLength: 2, fixed: true))
                    handles.clientConfiguration = handle
                    continue
                }
                let fixed = descriptor.uuid == GATTUUID.characteristicPresentationFormat
                pending.append(attribute(handle, descriptor.uuid, descriptor.permissions,
                                         try storage(descriptor.value, maximumLength: descriptor.maximumLength, owner: descriptor.uuid),
                                         maximumLength: descriptor.maximumLength, fixed: fixed))
                handles.descriptors.append(handle)
            }
            characteristics.append(handles)
        }
        let end = UInt16(truncatingIfNeeded: next - 1)
        let type = service.isPrimary ? GATTUUID.primaryService : GATTUUID.secondaryService
        let declaration = GATTAttribute(handle: serviceHandle, type: type, permissions: .readOnly, storage: .bytes(service.uuid.littleEndianBytes),
                                        maximumLength: 16, isFixedLength: true, groupEnd: end, allowsSignedWrite: false)
        attributes.append(declaration)
        attributes.append(contentsOf: pending)
        let handles = GATTServiceHandles(uuid: service.uuid, isPrimary: service.isPrimary, start: serviceHandle, end: end, characteristics: characteristics)
        services.append(handles)
        definitions.append(service)
        steps.append(.service(service))
        return handles
    }

    /// The service whose group contains `handle`.
    public func service(containing handle: UInt16) -> GATTServiceHandles? {
        services.first { $0.start <= handle && handle <= $0.end }
    }
}

/// One call that built a ``GATTDatabase``, as ``GATTDatabase/steps`` records it.
public enum GATTDatabaseStep: Sendable {
    /// ``GATTDatabase/addGAPService(deviceName:appearance:)``.
    case gapService(deviceName: String, appearance: UInt16)
    /// ``GATTDatabase/addGATTService(serviceChanged:clientSupportedFeatures:serverSupportedFeatures:)``.
    case gattService(serviceChanged: Bool, clientSupportedFeatures: Bool, serverSupportedFeatures: GATTServerSupportedFeatures)
    /// ``GATTDatabase/add(_:)``.
    case service(GATTServiceDefinition)
}

extension GATTDatabase {
    /// The database `steps` build, in order (the same handles as the database they were recorded from).
    public init(replaying steps: [GATTDatabaseStep]) throws(GATTDatabaseError) {
        self.init()
        for step in steps {
            switch step {
            case .gapService(let deviceName, let appearance):
                try addGAPService(deviceName: deviceName, appearance: appearance)
            case .gattService(let serviceChanged, let clientSupportedFeatures, let serverSupportedFeatures):
                try addGATTService(serviceChanged: serviceChanged, clientSupportedFeatures: clientSupportedFeatures,
                                   serverSupportedFeatures: serverSupportedFeatures)
            case .service(let definition):
                try add(definition)
            }
        }
    }
}
