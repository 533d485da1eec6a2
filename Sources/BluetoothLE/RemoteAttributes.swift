public import BluetoothCore
import ATT
public import GATT

/// A primary service found on a peer's GATT server (Core 5.4 Vol 3 Part G §4.4): its UUID and handle range.
public struct RemoteService: Hashable, Sendable, CustomStringConvertible {
    /// The service type.
    public var uuid: BluetoothUUID
    /// The handle of the service declaration.
    public var startHandle: UInt16
    /// The last handle of the service.
    public var endHandle: UInt16

    /// A service from a GATT client discovery result.
    public init(_ discovered: GATTDiscoveredService) {
        uuid = discovered.uuid
        startHandle = discovered.startHandle
        endHandle = discovered.endHandle
    }

    var discovered: GATTDiscoveredService {
        GATTDiscoveredService(range: ATTHandleRange(start: startHandle, end: endHandle), uuid: uuid)
    }

    public var description: String { "service \(uuid) [\(Dissection.hex16(startHandle))...\(Dissection.hex16(endHandle))]" }
}

/// A characteristic found on a peer's GATT server (Core 5.4 Vol 3 Part G §4.6, §3.3.1): properties and handles.
public struct RemoteCharacteristic: Hashable, Sendable, CustomStringConvertible {
    /// The characteristic type.
    public var uuid: BluetoothUUID
    /// The properties from the characteristic declaration.
    public var properties: GATTCharacteristicProperties
    /// The handle of the characteristic declaration.
    public var declarationHandle: UInt16
    /// The handle of the value: the one reads, writes and notifications use.
    public var valueHandle: UInt16
    /// The last handle of its definition (its last descriptor, or the value handle).
    public var endHandle: UInt16

    /// A characteristic from a GATT client discovery result.
    public init(_ discovered: GATTDiscoveredCharacteristic) {
        uuid = discovered.uuid
        properties = GATTCharacteristicProperties(rawValue: discovered.properties.rawValue)
        declarationHandle = discovered.declarationHandle
        valueHandle = discovered.valueHandle
        endHandle = discovered.endHandle
    }

    var discovered: GATTDiscoveredCharacteristic {
        GATTDiscoveredCharacteristic(
            declarationHandle: declarationHandle,
            properties: GATTDiscoveredCharacteristic.Properties(rawValue: properties.rawValue),
            valueHandle: valueHandle, uuid: uuid, endHandle: endHandle)
    }

    public var description: String { "characteristic \(uuid) value \(Dissection.hex16(valueHandle))" }
}

/// A descriptor found on a peer's GATT server (Core 5.4 Vol 3 Part G §4.7.1).
public struct RemoteDescriptor: Hashable, Sendable, CustomStringConvertible {
    /// The descriptor type.
    public var uuid: BluetoothUUID
    /// The descriptor's attribute handle.
    public var handle: UInt16

    /// A descriptor from a GATT client discovery result.
    public init(_ discovered: GATTDiscoveredDescriptor) {
        uuid = discovered.uuid
        handle = discovered.handle
    }

    public var description: String { "descriptor \(uuid) \(Dissection.hex16(handle))" }
}

/// How a value is written (Core 5.4 Vol 3 Part G §4.9).
public enum WriteType: Hashable, Sendable {
    /// Write Request (or prepared writes for a long value), acknowledged by the server (§4.9.3, §4.9.4).
    case withResponse
    /// Write Command, unacknowledged, paced by the connection's send queue (§4.9.1).
    case withoutResponse
}
