public import BluetoothCore

/// A Starting Handle / Ending Handle pair, as carried by the Find Information, Find By Type Value, Read By Type
/// and Read By Group Type requests (Core 5.4 Vol 3 Part F §3.4.3.1, §3.4.3.3, §3.4.4.1, §3.4.4.9).
///
/// Any pair decodes. A server must answer a range whose starting handle is 0x0000 or greater than its ending
/// handle with an Error Response *Invalid Handle* naming the starting handle: check ``isValid`` (or call
/// ``ATTPDU/validate()``, which does it for every request).
public struct ATTHandleRange: Hashable, Sendable, CustomStringConvertible, Codable {
    public var start: UInt16
    public var end: UInt16

    public init(start: UInt16, end: UInt16) {
        self.start = start
        self.end = end
    }

    /// Every handle: 0x0001–0xFFFF.
    public static let all = ATTHandleRange(start: 0x0001, end: 0xFFFF)

    /// Whether the server may process the range: start nonzero and not above end.
    public var isValid: Bool { start != 0 && start <= end }

    /// Whether `handle` lies in the range (inclusive).
    public func contains(_ handle: UInt16) -> Bool { start <= handle && handle <= end }

    public var description: String { "\(hex16(start))–\(hex16(end))" }
}

/// One entry of the Find By Type Value Response's Handles Information List: the handle of the attribute found
/// and the end of its group (Core 5.4 Vol 3 Part F §3.4.3.4, Table 3.11).
public struct ATTHandlesInformation: Hashable, Sendable {
    public var foundAttributeHandle: UInt16
    public var groupEndHandle: UInt16

    public init(foundAttributeHandle: UInt16, groupEndHandle: UInt16) {
        self.foundAttributeHandle = foundAttributeHandle
        self.groupEndHandle = groupEndHandle
    }
}

/// A handle and an attribute value: a Read By Type Response element (Core 5.4 Vol 3 Part F §3.4.4.2) or a
/// Multiple Handle Value Notification tuple (§3.4.7.4).
public struct ATTHandleValue: Hashable, Sendable, Codable {
    public var handle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.value = value
    }
}

/// A handle and an attribute type: one entry of the Find Information Response (Core 5.4 Vol 3 Part F §3.4.3.2).
public struct ATTHandleUUID: Hashable, Sendable {
    public var handle: UInt16
    public var uuid: BluetoothUUID

    public init(handle: UInt16, uuid: BluetoothUUID) {
        self.handle = handle
        self.uuid = uuid
    }
}

/// One element of the Read By Group Type Response: attribute handle, end group handle and value (for GATT, the
/// service UUID) (Core 5.4 Vol 3 Part F §3.4.4.10).
public struct ATTAttributeGroupData: Hashable, Sendable {
    public var handle: UInt16
    public var endGroupHandle: UInt16
    public var value: [UInt8]

    public init(handle: UInt16, endGroupHandle: UInt16, value: [UInt8]) {
        self.handle = handle
        self.endGroupHandle = endGroupHandle
        self.value = value
    }
}

/// The Flags of the Execute Write Request (Core 5.4 Vol 3 Part F §3.4.6.3, Table 3.34). Other values are
/// reserved and fail to decode (the server answers *Invalid PDU*).
public enum ATTExecuteWriteFlags: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Cancel all prepared writes.
    case cancel = 0x00
    /// Immediately write all pending prepared values.
    case write = 0x01

    public var description: String {
        switch self {
        case .cancel: return "Cancel all prepared writes (0x00)"
        case .write: return "Immediately write all pending prepared values (0x01)"
        }
    }
}

/// The Format octet of the Find Information Response (Core 5.4 Vol 3 Part F §3.4.3.2, Table 3.8).
public enum ATTUUIDFormat: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Handles with 16-bit Bluetooth UUIDs.
    case uuid16 = 0x01
    /// Handles with 128-bit UUIDs.
    case uuid128 = 0x02

    /// The octets of one handle + UUID pair.
    public var pairLength: Int { self == .uuid16 ? 4 : 18 }

    public var description: String {
        switch self {
        case .uuid16: return "16-bit UUIDs (0x01)"
        case .uuid128: return "128-bit UUIDs (0x02)"
        }
    }
}

/// The Authentication Signature ending a Signed Write Command: SignCounter (4 octets) then the 64-bit MAC, as
/// computed in Core 5.4 Vol 3 Part H §2.4.5 (Vol 3 Part F §3.4.5.4, Table 3.28).
public struct ATTAuthenticationSignature: Hashable, Sendable {
    /// The 12 octets in wire order.
    public let bytes: [UInt8]

    /// The signature from its 12 octets in wire order, or nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 12 else { return nil }
        self.bytes = bytes
    }

    /// The signature from a sign counter and the 8 MAC octets (wire order), or nil unless there are 8.
    public init?(signCounter: UInt32, mac: [UInt8]) {
        guard mac.count == 8 else { return nil }
        var writer = ByteWriter(capacity: 12)
        writer.write(signCounter)
        writer.write(mac)
        self.bytes = writer.bytes
    }

    /// The SignCounter (little-endian in the first 4 octets).
    public var signCounter: UInt32 {
        var value: UInt32 = 0
        for (index, byte) in bytes.prefix(4).enumerated() { value |= UInt32(byte) << (8 * index) }
        return value
    }

    /// The 8 MAC octets in wire order.
    public var mac: [UInt8] { Array(bytes.dropFirst(4)) }
}

func hex16(_ value: UInt16) -> String { Dissection.hex16(value) }
