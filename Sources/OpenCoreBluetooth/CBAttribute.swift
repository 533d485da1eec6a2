public import Foundation
import BluetoothCore

/// A GATT attribute as CoreBluetooth models it (Core 5.4 Vol 3 Part G §3): services, characteristics and
/// descriptors of a remote peripheral (made by discovery) or of the local database (`CBMutable…`).
/// Remote objects are read and changed on the owning manager's queue.
open class CBAttribute: NSObject, @unchecked Sendable {
    let _uuid: CBUUID
    init(uuid: CBUUID) {
        _uuid = uuid
        super.init()
    }

    /// The attribute's type.
    public var uuid: CBUUID { _uuid }
}

/// A service (Core 5.4 Vol 3 Part G §3.1).
open class CBService: CBAttribute, @unchecked Sendable {
    /// The owning remote peripheral; nil for local services.
    public internal(set) weak var peripheral: CBPeripheral?
    var _isPrimary: Bool
    var _includedServices: [CBService]?
    var _characteristics: [CBCharacteristic]?
    /// Remote: the handle range from discovery.
    var remote: CBBackendService?

    init(uuid: CBUUID, isPrimary: Bool) {
        _isPrimary = isPrimary
        super.init(uuid: uuid)
    }

    /// Whether this is a primary service; false for a secondary service that is only reachable through inclusion.
    public var isPrimary: Bool { _isPrimary }
    /// The services this service includes; nil until `CBPeripheral.discoverIncludedServices(_:for:)` succeeds.
    public var includedServices: [CBService]? { _includedServices }
    /// The service's characteristics in handle order; nil until `CBPeripheral.discoverCharacteristics(_:for:)`
    /// succeeds.
    public var characteristics: [CBCharacteristic]? { _characteristics }

    public override var description: String {
        "<\(type(of: self)): \(CBManager.address(of: self)), isPrimary = \(isPrimary ? "YES" : "NO"), UUID = \(uuid)>"
    }
}

/// A service of the local database, to publish with `CBPeripheralManager.add(_:)`.
open class CBMutableService: CBService, @unchecked Sendable {
    /// The façade's id while published.
    var localID: Int?

    /// Creates a local service of type `UUID`, primary or secondary.
    public init(type UUID: CBUUID, primary isPrimary: Bool) {
        super.init(uuid: UUID, isPrimary: isPrimary)
    }

    /// The services this local service includes; they must be published before it.
    open override var includedServices: [CBService]? {
        get { _includedServices }
        set { _includedServices = newValue }
    }

    /// The characteristics of this local service.
    open override var characteristics: [CBCharacteristic]? {
        get { _characteristics }
        set { _characteristics = newValue }
    }
}

/// A characteristic (Core 5.4 Vol 3 Part G §3.3).
open class CBCharacteristic: CBAttribute, @unchecked Sendable {
    /// The service that contains this characteristic; nil once the service is released.
    public internal(set) weak var service: CBService?
    var _properties: CBCharacteristicProperties
    var _value: Data?
    var _descriptors: [CBDescriptor]?
    var _isNotifying = false
    var remote: CBBackendCharacteristic?

    init(uuid: CBUUID, properties: CBCharacteristicProperties, value: Data?) {
        _properties = properties
        _value = value
        super.init(uuid: uuid)
    }

    /// The characteristic's properties: how its value can be used and which descriptors it has.
    public var properties: CBCharacteristicProperties { _properties }
    /// The latest value read or notified (remote), or the cached value (local).
    public var value: Data? { _value }
    /// The characteristic's descriptors; for a remote characteristic, nil until
    /// `CBPeripheral.discoverDescriptors(for:)` succeeds.
    public var descriptors: [CBDescriptor]? { _descriptors }
    /// Remote: whether notifications or indications are enabled for this app. Local: whether any central is subscribed.
    public var isNotifying: Bool { _isNotifying }
    /// Whether the characteristic is broadcast (deprecated by Apple); always false here.
    @available(iOS, deprecated: 8.0)
    @available(macOS, deprecated: 10.13)
    public var isBroadcasted: Bool { false }

    public override var description: String {
        "<\(type(of: self)): \(CBManager.address(of: self)), UUID = \(uuid), properties = 0x\(String(properties.rawValue, radix: 16, uppercase: true)), value = \(value.map { "{length = \($0.count)}" } ?? "(null)"), notifying = \(isNotifying ? "YES" : "NO")>"
    }
}

/// A characteristic of the local database. With a non-nil `value` it is cached: the stack serves reads itself,
/// without `didReceiveRead`, and it must be read-only; with `value: nil` every read and write reaches the delegate.
open class CBMutableCharacteristic: CBCharacteristic, @unchecked Sendable {
    var _permissions: CBAttributePermissions
    var localID: Int?
    var _subscribedCentrals: [CBCentral] = []

    /// Creates a local characteristic. Pass `value: nil` for a dynamic value served through the delegate;
    /// a non-nil value is cached and then the properties must be read-only.
    public init(type UUID: CBUUID, properties: CBCharacteristicProperties, value: Data?, permissions: CBAttributePermissions) {
        _permissions = permissions
        super.init(uuid: UUID, properties: properties, value: value)
    }

    /// The read, write and encryption permissions of the characteristic's value.
    open var permissions: CBAttributePermissions {
        get { _permissions }
        set { _permissions = newValue }
    }

    /// The centrals subscribed to notifications or indications.
    public var subscribedCentrals: [CBCentral]? { _subscribedCentrals }

    /// The properties to publish with the characteristic.
    open override var properties: CBCharacteristicProperties {
        get { _properties }
        set { _properties = newValue }
    }

    open override var value: Data? {
        get { _value }
        set { _value = newValue }
    }

    /// The descriptors to publish with the characteristic: User Description and Presentation Format only.
    open override var descriptors: [CBDescriptor]? {
        get { _descriptors }
        set { _descriptors = newValue }
    }
}

/// A characteristic descriptor (Core 5.4 Vol 3 Part G §3.3.3). `value` is an `NSNumber` for Extended Properties,
/// CCCD and SCCD, a `String` for User Description, `Data` otherwise.
open class CBDescriptor: CBAttribute, @unchecked Sendable {
    /// The characteristic that contains this descriptor; nil once the characteristic is released.
    public internal(set) weak var characteristic: CBCharacteristic?
    var _value: Any?
    var remote: CBBackendDescriptor?

    init(uuid: CBUUID, value: Any?) {
        _value = value
        super.init(uuid: uuid)
    }

    /// The descriptor's value, of a type that depends on its UUID (see the type's overview); nil until read for a
    /// remote descriptor.
    public var value: Any? { _value }

    /// The app-facing value of descriptor bytes read from a peer (Core 5.4 Vol 3 Part G §3.3.3).
    static func decode(_ bytes: [UInt8], uuid: CBUUID) -> Any {
        switch uuid.bluetoothUUID.uuid16 {
        case 0x2900, 0x2902, 0x2903:
            let low = bytes.first.map(UInt16.init) ?? 0
            let high = bytes.count > 1 ? UInt16(bytes[1]) : 0
            return NSNumber(value: low | high << 8)
        case 0x2901:
            return String(decoding: bytes, as: UTF8.self)
        default:
            return Data(bytes)
        }
    }

    /// Bytes for a local descriptor value or a descriptor write: `String` as UTF-8, `Data` as is, `NSNumber` as a
    /// little-endian UInt16.
    static func encode(_ value: Any?) -> [UInt8]? {
        switch value {
        case let string as String: return Array(string.utf8)
        case let data as Data: return [UInt8](data)
        case let bytes as [UInt8]: return bytes
        case let number as NSNumber:
            let short = number.uint16Value
            return [UInt8(truncatingIfNeeded: short), UInt8(truncatingIfNeeded: short >> 8)]
        default: return nil
        }
    }
}

/// A descriptor of the local database: only User Description (0x2901) and Presentation Format (0x2904), as on
/// Apple platforms; the stack adds the CCCD and Extended Properties itself.
open class CBMutableDescriptor: CBDescriptor, @unchecked Sendable {
    /// Creates a local descriptor with a fixed value, e.g. a `String` for User Description (0x2901) or `Data` for
    /// Presentation Format (0x2904); other descriptor types make `CBPeripheralManager.add(_:)` fail.
    public init(type UUID: CBUUID, value: Any?) {
        super.init(uuid: UUID, value: value)
    }
}
