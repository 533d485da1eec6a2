public import BluetoothCore
public import GATT

/// A program's GATT database as it travels to the Bluetooth service (Core 5.4 Vol 3 Part G §3): the steps that
/// built it (GATT's `GATTDatabaseStep`), with each value either stored (its octets) or dynamic. A dynamic value's
/// handlers stay in the program: the service defers its Read, Read Blob, Write and Execute Write requests to the
/// program (``dynamicValues(of:)``), forwards each Write Command of it (``ServiceMessage/dynamicWrite(_:)``), and
/// answers the procedures that cannot wait for a program inside its server (Read By Type, Read Multiple) with
/// *Read Not Permitted*.
public struct ServiceGATTDatabase: Sendable, Codable, Equatable {
    public enum Value: Sendable, Codable, Equatable {
        case stored([UInt8])
        case dynamic(readable: Bool, writable: Bool)

        init(_ value: GATTValue) {
            switch value {
            case .stored(let bytes): self = .stored(bytes)
            case .dynamic(let read, let write): self = .dynamic(readable: read != nil, writable: write != nil)
            }
        }

        func value(forwardingWrites forward: @escaping @Sendable (GATTWriteRequest) -> Void) -> GATTValue {
            switch self {
            case .stored(let bytes):
                return .stored(bytes)
            case .dynamic(let readable, let writable):
                let read: @Sendable (GATTReadRequest) -> Result<[UInt8], GATTAttributeError> = { _ in
                    .failure(GATTAttributeError(.readNotPermitted))
                }
                let write: @Sendable (GATTWriteRequest) -> ATTErrorCode? = { request in
                    forward(request)
                    return nil
                }
                return .dynamic(read: readable ? read : nil, write: writable ? write : nil)
            }
        }
    }

    public struct Descriptor: Sendable, Codable, Equatable {
        public var uuid: BluetoothUUID
        public var permissions: GATTPermissions
        public var value: Value
        public var maximumLength: Int
    }

    public struct Characteristic: Sendable, Codable, Equatable {
        public var uuid: BluetoothUUID
        public var properties: GATTCharacteristicProperties
        public var extendedProperties: GATTExtendedProperties
        public var permissions: GATTPermissions
        public var value: Value
        public var maximumLength: Int
        public var descriptors: [Descriptor]
        public var subscriptionSecurity: GATTSecurityRequirement
        public var addsClientConfiguration: Bool
    }

    public struct Service: Sendable, Codable, Equatable {
        public var uuid: BluetoothUUID
        public var isPrimary: Bool
        public var includes: [GATTServiceHandles]
        public var characteristics: [Characteristic]
    }

    public enum Step: Sendable, Codable, Equatable {
        case gapService(deviceName: String, appearance: UInt16)
        case gattService(serviceChanged: Bool, clientSupportedFeatures: Bool, serverSupportedFeatures: GATTServerSupportedFeatures)
        case service(Service)
    }

    public var steps: [Step]

    /// The wire form of `database` (what ``GATTDatabase/steps`` recorded).
    public init(_ database: GATTDatabase) {
        steps = database.steps.map { step in
            switch step {
            case .gapService(let name, let appearance): .gapService(deviceName: name, appearance: appearance)
            case .gattService(let changed, let client, let server):
                .gattService(serviceChanged: changed, clientSupportedFeatures: client, serverSupportedFeatures: server)
            case .service(let definition):
                .service(Service(uuid: definition.uuid, isPrimary: definition.isPrimary, includes: definition.includes,
                                 characteristics: definition.characteristics.map { characteristic in
                    Characteristic(uuid: characteristic.uuid, properties: characteristic.properties,
                                   extendedProperties: characteristic.extendedProperties, permissions: characteristic.permissions,
                                   value: Value(characteristic.value), maximumLength: characteristic.maximumLength,
                                   descriptors: characteristic.descriptors.map {
                                       Descriptor(uuid: $0.uuid, permissions: $0.permissions, value: Value($0.value),
                                                  maximumLength: $0.maximumLength)
                                   },
                                   subscriptionSecurity: characteristic.subscriptionSecurity,
                                   addsClientConfiguration: characteristic.addsClientConfiguration)
                }))
            }
        }
    }

    /// The database these steps build, each dynamic value's writes handed to `forward`. Throws what building
    /// throws (handles exhausted, an include of a service not there).
    public func database(forwardingWrites forward: @escaping @Sendable (GATTWriteRequest) -> Void) throws(GATTDatabaseError) -> GATTDatabase {
        try GATTDatabase(replaying: steps.map { step -> GATTDatabaseStep in
            switch step {
            case .gapService(let name, let appearance): return .gapService(deviceName: name, appearance: appearance)
            case .gattService(let changed, let client, let server):
                return .gattService(serviceChanged: changed, clientSupportedFeatures: client, serverSupportedFeatures: server)
            case .service(let service):
                return .service(GATTServiceDefinition(uuid: service.uuid, isPrimary: service.isPrimary, includes: service.includes,
                                                      characteristics: service.characteristics.map { characteristic in
                    var definition = GATTCharacteristicDefinition(
                        uuid: characteristic.uuid, properties: characteristic.properties,
                        extendedProperties: characteristic.extendedProperties, permissions: characteristic.permissions,
                        value: characteristic.value.value(forwardingWrites: forward), maximumLength: characteristic.maximumLength,
                        descriptors: characteristic.descriptors.map {
                            GATTDescriptorDefinition(uuid: $0.uuid, permissions: $0.permissions,
                                                     value: $0.value.value(forwardingWrites: forward), maximumLength: $0.maximumLength)
                        },
                        subscriptionSecurity: characteristic.subscriptionSecurity)
                    definition.addsClientConfiguration = characteristic.addsClientConfiguration
                    return definition
                }))
            }
        })
    }

    /// A dynamic characteristic value's handlers (what the program keeps and calls when the service asks).
    public struct DynamicValue: Sendable {
        public var read: (@Sendable (GATTReadRequest) -> Result<[UInt8], GATTAttributeError>)?
        public var write: (@Sendable (GATTWriteRequest) -> ATTErrorCode?)?
    }

    /// The handlers of `database`'s dynamic characteristic values, by value handle. The service defers the Read,
    /// Read Blob, Write and Execute Write requests of these handles to the program, which answers them with these
    /// (``ServiceEngine``); a Write Command reaches `write` as a forwarded write.
    public static func dynamicValues(of database: GATTDatabase) -> [UInt16: DynamicValue] {
        var values: [UInt16: DynamicValue] = [:]
        for (definition, handles) in zip(database.definitions, database.services) {
            for (characteristic, assigned) in zip(definition.characteristics, handles.characteristics) {
                if case .dynamic(let read, let write) = characteristic.value {
                    values[assigned.value] = DynamicValue(read: read, write: write)
                }
            }
        }
        return values
    }
}
