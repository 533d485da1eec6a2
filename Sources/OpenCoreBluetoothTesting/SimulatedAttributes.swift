public import Foundation
public import OpenCoreBluetooth

/// A service of a simulated peripheral (Core 5.4 Vol 3 Part G §3.1), declared in a test, as Nordic's mock declares
/// a `CBMServiceMock`.
public struct SimulatedService: Sendable {
    public var uuid: String
    public var isPrimary: Bool
    public var characteristics: [SimulatedCharacteristic]

    public init(_ uuid: CBUUID, primary: Bool = true, characteristics: [SimulatedCharacteristic]) {
        self.uuid = uuid.uuidString
        self.isPrimary = primary
        self.characteristics = characteristics
    }

    public var cbUUID: CBUUID { CBUUID(string: uuid) }
}

/// A characteristic of a simulated service (Vol 3 Part G §3.3): its properties, who may read and write it, its
/// value (what reads answer until the delegate says otherwise, and what writes replace) and its descriptors. A
/// characteristic that notifies or indicates gets its CCCD (0x2902) by itself.
public struct SimulatedCharacteristic: Sendable {
    public var uuid: String
    public var properties: CBCharacteristicProperties
    /// `.readEncryptionRequired` / `.writeEncryptionRequired` make the app pair first, as on a real accessory.
    public var permissions: CBAttributePermissions
    public var value: Data
    public var descriptors: [SimulatedDescriptor]

    /// `permissions` default: readable when it can be read, writeable when it can be written.
    public init(_ uuid: CBUUID, properties: CBCharacteristicProperties, permissions: CBAttributePermissions? = nil,
                value: Data = Data(), descriptors: [SimulatedDescriptor] = []) {
        self.uuid = uuid.uuidString
        self.properties = properties
        var defaults: CBAttributePermissions = []
        if properties.contains(.read) { defaults.insert(.readable) }
        if !properties.isDisjoint(with: [.write, .writeWithoutResponse]) { defaults.insert(.writeable) }
        self.permissions = permissions ?? defaults
        self.value = value
        self.descriptors = descriptors
    }

    public var cbUUID: CBUUID { CBUUID(string: uuid) }
}

/// A descriptor with a fixed value (Vol 3 Part G §3.3.3): a user description (0x2901), a presentation format...
public struct SimulatedDescriptor: Sendable {
    public var uuid: String
    public var value: Data

    public init(_ uuid: CBUUID, value: Data) {
        self.uuid = uuid.uuidString
        self.value = value
    }
}
