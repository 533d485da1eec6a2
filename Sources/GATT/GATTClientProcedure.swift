public import ATT
public import BluetoothCore

/// Identifies one procedure enqueued on a ``GATTClient``; its ``GATTClientAction/complete(_:_:)`` action carries
/// the same identifier. Identifiers increase in enqueue order and are never reused by one client.
public struct GATTOperationID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static func < (lhs: GATTOperationID, rhs: GATTOperationID) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { "op#\(rawValue)" }
}

/// One GATT client procedure (Core 5.4 Vol 3 Part G §4.4–§4.12), as enqueued on a ``GATTClient``.
///
/// Each case names the sub-procedure of the specification it runs and, in its comment, the exact ATT exchange.
public enum GATTProcedure: Hashable, Sendable, Codable {
    /// §4.4.1 Discover All Primary Services: Read By Group Type Requests (type 0x2800) from 0x0001 to 0xFFFF,
    /// continuing after the last group's end handle, until *Attribute Not Found* or a group ending at 0xFFFF.
    case discoverAllPrimaryServices
    /// §4.4.2 Discover Primary Service by Service UUID: Find By Type Value Requests (type 0x2800, value the UUID
    /// in its 2- or 16-octet form) from 0x0001 to 0xFFFF, continuing after the last group end.
    case discoverPrimaryServices(uuid: BluetoothUUID)
    /// §4.5.1 Find Included Services: Read By Type Requests (type 0x2802) over the service's range; a 128-bit
    /// included service's UUID is read with a Read Request of its service declaration.
    case findIncludedServices(range: ATTHandleRange)
    /// §4.6.1 Discover All Characteristics of a Service: Read By Type Requests (type 0x2803) over the service's
    /// range, continuing after the last declaration handle. End handles are derived from the next declaration.
    case discoverAllCharacteristics(range: ATTHandleRange)
    /// §4.6.2 Discover Characteristics by UUID: as §4.6.1, keeping the characteristics of `uuid`.
    case discoverCharacteristics(range: ATTHandleRange, uuid: BluetoothUUID)
    /// §4.7.1 Discover All Characteristic Descriptors: Find Information Requests over `range` (value handle + 1
    /// to the characteristic's end handle); an empty range completes with no descriptor and no request.
    case discoverAllDescriptors(range: ATTHandleRange)
    /// §4.8.1 Read Characteristic Value: one Read Request.
    case readCharacteristicValue(handle: UInt16)
    /// §4.8.2 Read Using Characteristic UUID: one Read By Type Request; the handle + value pairs of the response
    /// (values are cut by the server at min(ATT_MTU − 4, 253) octets; read the rest with a long read).
    case readUsingCharacteristicUUID(uuid: BluetoothUUID, range: ATTHandleRange)
    /// §4.8.3 Read Long Characteristic Values: a Read Request, then Read Blob Requests at growing offsets while
    /// each part fills ATT_MTU − 1 octets; *Attribute Not Long* / *Invalid Offset* at the end finish it.
    case readLongCharacteristicValue(handle: UInt16)
    /// §4.8.4 Read Multiple Characteristic Values: one Read Multiple Request (2 handles at least); the values
    /// come back concatenated.
    case readMultipleCharacteristicValues(handles: [UInt16])
    /// §4.8.5 Read Multiple Variable Length Characteristic Values: one Read Multiple Variable Request.
    case readMultipleVariableCharacteristicValues(handles: [UInt16])
    /// §4.9.1 Write Without Response: one Write Command (value at most ATT_MTU − 3 octets).
    case writeWithoutResponse(handle: UInt16, value: [UInt8])
    /// §4.9.2 Signed Write Without Response: one Signed Write Command (value at most ATT_MTU − 15 octets),
    /// signed by the client's ``GATTClient/signer``.
    case signedWriteWithoutResponse(handle: UInt16, value: [UInt8])
    /// §4.9.3 Write Characteristic Value: one Write Request (value at most ATT_MTU − 3 octets).
    case writeCharacteristicValue(handle: UInt16, value: [UInt8])
    /// §4.9.4 Write Long Characteristic Values: Prepare Write Requests of ATT_MTU − 5 octets at growing offsets,
    /// each echo verified, then Execute Write (0x01). A wrong echo or a refused part sends Execute Write (0x00).
    case writeLongCharacteristicValue(handle: UInt16, value: [UInt8])
    /// §4.9.5 Reliable Writes: every value as Prepare Write Requests (split at ATT_MTU − 5 octets), each echo
    /// verified, then Execute Write (0x01); a wrong echo or a refused part cancels them all (0x00).
    case reliableWrite([GATTReliableWriteItem])
    /// §4.10/§4.11 via §4.12.3: enable notifications and/or indications by writing the Client Characteristic
    /// Configuration descriptor with a Write Request (0x0001, 0x0002 or 0x0003).
    case subscribe(cccdHandle: UInt16, configuration: ClientConfiguration)
    /// Writes 0x0000 to the Client Characteristic Configuration descriptor.
    case unsubscribe(cccdHandle: UInt16)
    /// §4.12.1 Read Characteristic Descriptors: one Read Request.
    case readDescriptor(handle: UInt16)
    /// §4.12.2 Read Long Characteristic Descriptors: as §4.8.3.
    case readLongDescriptor(handle: UInt16)
    /// §4.12.3 Write Characteristic Descriptors: one Write Request.
    case writeDescriptor(handle: UInt16, value: [UInt8])
    /// §4.12.4 Write Long Characteristic Descriptors: as §4.9.4.
    case writeLongDescriptor(handle: UInt16, value: [UInt8])

    /// §4.5.1 over a discovered service's range.
    public static func findIncludedServices(of service: GATTDiscoveredService) -> GATTProcedure {
        .findIncludedServices(range: service.range)
    }

    /// §4.6.1 over a discovered service's range.
    public static func discoverAllCharacteristics(of service: GATTDiscoveredService) -> GATTProcedure {
        .discoverAllCharacteristics(range: service.range)
    }

    /// §4.7.1 for a discovered characteristic: from its value handle + 1 to its end handle.
    public static func discoverAllDescriptors(of characteristic: GATTDiscoveredCharacteristic) -> GATTProcedure {
        .discoverAllDescriptors(range: characteristic.descriptorRange)
    }

    /// The value of a Client Characteristic Configuration descriptor (Core 5.4 Vol 3 Part G §3.3.3.3, Table 3.11).
    public struct ClientConfiguration: OptionSet, Hashable, Sendable, Codable {
        public var rawValue: UInt16
        public init(rawValue: UInt16) { self.rawValue = rawValue }
        /// Bit 0: notifications enabled.
        public static let notifications = ClientConfiguration(rawValue: 0x0001)
        /// Bit 1: indications enabled.
        public static let indications = ClientConfiguration(rawValue: 0x0002)

        /// The two octets written to the descriptor (little-endian).
        public var bytes: [UInt8] { [UInt8(truncatingIfNeeded: rawValue), UInt8(truncatingIfNeeded: rawValue >> 8)] }
    }
}

/// One value of a reliable write (Core 5.4 Vol 3 Part G §4.9.5): an attribute handle and the whole value to write.
public struct GATTReliableWriteItem: Hashable, Sendable, Codable {
    public var handle: UInt16
    public var value: [UInt8]
    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// A service found by primary service discovery (Core 5.4 Vol 3 Part G §4.4): the handle of its declaration,
/// the end of its group and its UUID.
public struct GATTDiscoveredService: Hashable, Sendable, Codable {
    public var range: ATTHandleRange
    public var uuid: BluetoothUUID
    public init(range: ATTHandleRange, uuid: BluetoothUUID) {
        self.range = range
        self.uuid = uuid
    }
    /// The service declaration's handle.
    public var startHandle: UInt16 { range.start }
    /// The last handle of the service's group.
    public var endHandle: UInt16 { range.end }
}

/// An include declaration found by §4.5.1 (Core 5.4 Vol 3 Part G §3.2): where it is, and the service it names.
public struct GATTDiscoveredIncludedService: Hashable, Sendable, Codable {
    /// The include declaration's own handle.
    public var declarationHandle: UInt16
    /// The included service: its range and UUID.
    public var service: GATTDiscoveredService
    public init(declarationHandle: UInt16, service: GATTDiscoveredService) {
        self.declarationHandle = declarationHandle
        self.service = service
    }
}

/// A characteristic found by §4.6 (Core 5.4 Vol 3 Part G §3.3.1): declaration handle, properties, value handle,
/// UUID, and the end handle derived from the next declaration (or the service's end).
public struct GATTDiscoveredCharacteristic: Hashable, Sendable, Codable {
    public var declarationHandle: UInt16
    public var properties: Properties
    public var valueHandle: UInt16
    public var uuid: BluetoothUUID
    /// The last handle of the characteristic's definition (its last descriptor, or the value handle).
    public var endHandle: UInt16

    public init(declarationHandle: UInt16, properties: Properties, valueHandle: UInt16, uuid: BluetoothUUID, endHandle: UInt16) {
        self.declarationHandle = declarationHandle
        self.properties = properties
        self.valueHandle = valueHandle
        self.uuid = uuid
        self.endHandle = endHandle
    }

    /// The handles that may hold descriptors: value handle + 1 to the end handle. Not ``ATTHandleRange/isValid``
    /// (no descriptor possible) when the value handle is the end handle.
    public var descriptorRange: ATTHandleRange { ATTHandleRange(start: valueHandle &+ 1, end: endHandle) }

    /// The Characteristic Properties bit field (Core 5.4 Vol 3 Part G §3.3.1.1, Table 3.5).
    public struct Properties: OptionSet, Hashable, Sendable, Codable {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let broadcast = Properties(rawValue: 0x01)
        public static let read = Properties(rawValue: 0x02)
        public static let writeWithoutResponse = Properties(rawValue: 0x04)
        public static let write = Properties(rawValue: 0x08)
        public static let notify = Properties(rawValue: 0x10)
        public static let indicate = Properties(rawValue: 0x20)
        public static let authenticatedSignedWrites = Properties(rawValue: 0x40)
        public static let extendedProperties = Properties(rawValue: 0x80)
    }
}

/// A descriptor found by §4.7.1: its handle and type.
public struct GATTDiscoveredDescriptor: Hashable, Sendable, Codable {
    public var handle: UInt16
    public var uuid: BluetoothUUID
    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// What a successful procedure returns (Core 5.4 Vol 3 Part G §4).
public enum GATTProcedureResult: Hashable, Sendable, Codable {
    /// §4.4 primary service discovery, in handle order.
    case services([GATTDiscoveredService])
    /// §4.5.1, in declaration order.
    case includedServices([GATTDiscoveredIncludedService])
    /// §4.6, in handle order.
    case characteristics([GATTDiscoveredCharacteristic])
    /// §4.7.1, in handle order.
    case descriptors([GATTDiscoveredDescriptor])
    /// A read value (§4.8.1, §4.8.3, §4.12.1, §4.12.2) or the concatenated values of §4.8.4.
    case value([UInt8])
    /// §4.8.2: the handle + value pairs of the Read By Type Response.
    case handleValues([ATTHandleValue])
    /// §4.8.5: one tuple per value; the last may be cut by the MTU (``ATTLengthValue/isTruncated``).
    case lengthValues([ATTLengthValue])
    /// A write of any kind was sent (commands) or acknowledged (requests).
    case written
}

/// What a ``GATTClient`` asks its owner to do.
public enum GATTClientAction: Hashable, Sendable {
    /// Send this request on the ATT bearer and feed its response (or Error Response) back with
    /// ``GATTClient/receive(response:)``. At most one is outstanding.
    case sendRequest(ATTPDU)
    /// Send this command (Write Command, Signed Write Command); nothing answers it.
    case sendCommand(ATTPDU)
    /// A procedure finished.
    case complete(GATTOperationID, Result<GATTProcedureResult, GATTClientError>)
    /// A Handle Value Notification arrived (also one per tuple of a Multiple Handle Value Notification).
    case notification(handle: UInt16, value: [UInt8])
    /// A Handle Value Indication arrived; the owner sends the Handle Value Confirmation through the bearer.
    case indication(handle: UInt16, value: [UInt8])
}
