public import BluetoothCore

/// The parameters of the Find Information Response: a format and handle + UUID pairs, all of that format
/// (Core 5.4 Vol 3 Part F §3.4.3.2).
///
/// The format is kept as received, so a 128-bit pair whose UUID lies on the Bluetooth Base re-encodes as 128-bit.
public struct ATTFindInformationResponse: Hashable, Sendable {
    public let format: ATTUUIDFormat
    public let information: [ATTHandleUUID]

    /// Throws unless there is at least one pair and, in the 16-bit format, every UUID has a 16-bit form.
    public init(format: ATTUUIDFormat, information: [ATTHandleUUID]) throws(DecodeError) {
        guard !information.isEmpty else {
            throw DecodeError(.invalidLength, at: 0, "a Find Information Response carries at least one pair")
        }
        if format == .uuid16, let wide = information.first(where: { $0.uuid.uuid16 == nil }) {
            throw DecodeError(.invalidValue, at: 0, "UUID \(wide.uuid) has no 16-bit form (format 0x01)")
        }
        self.format = format
        self.information = information
    }

    /// Pairs in the 16-bit format when every UUID has a 16-bit form, else in the 128-bit format.
    public init(information: [ATTHandleUUID]) throws(DecodeError) {
        let format: ATTUUIDFormat = information.allSatisfy { $0.uuid.uuid16 != nil } ? .uuid16 : .uuid128
        try self.init(format: format, information: information)
    }

    /// The response a server sends for `candidates` (in handle order) with `mtu`: the format of the first pair,
    /// then as many following pairs of the same format as fit in ATT_MTU octets (§3.4.3.2). Nil when
    /// `candidates` is empty.
    public static func packing(_ candidates: some Sequence<ATTHandleUUID>, mtu: Int) -> ATTFindInformationResponse? {
        var chosen: [ATTHandleUUID] = []
        var format: ATTUUIDFormat? = nil
        let room = ATTMTU.clamped(mtu) - 2
        for candidate in candidates {
            let candidateFormat: ATTUUIDFormat = candidate.uuid.uuid16 != nil ? .uuid16 : .uuid128
            if format == nil { format = candidateFormat }
            guard candidateFormat == format, (chosen.count + 1) * candidateFormat.pairLength <= room else { break }
            chosen.append(candidate)
        }
        guard let format, !chosen.isEmpty else { return nil }
        return try? ATTFindInformationResponse(format: format, information: chosen)
    }

    static func decode(from reader: inout ByteReader) throws(DecodeError) -> ATTFindInformationResponse {
        let formatOctet = try reader.readUInt8("format")
        guard let format = ATTUUIDFormat(rawValue: formatOctet) else {
            throw DecodeError(.invalidValue, at: reader.offset - 1, "format \(Dissection.hex8(formatOctet)) is neither 0x01 (16-bit) nor 0x02 (128-bit)")
        }
        guard reader.remaining > 0, reader.remaining % format.pairLength == 0 else {
            throw reader.error(.invalidLength, "\(reader.remaining) octets of information data are not a whole number of \(format.pairLength)-octet pairs")
        }
        var information: [ATTHandleUUID] = []
        while !reader.isAtEnd {
            let handle = try reader.readUInt16("handle")
            let start = reader.offset
            let raw = try reader.readBytes(format == .uuid16 ? 2 : 16, "UUID")
            let uuid: BluetoothUUID
            do { uuid = try BluetoothUUID(littleEndianBytes: raw) } catch { throw error.shifted(by: start) }
            information.append(ATTHandleUUID(handle: handle, uuid: uuid))
        }
        return try ATTFindInformationResponse(format: format, information: information)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(format.rawValue)
        for pair in information {
            writer.write(pair.handle)
            if format == .uuid16 {
                writer.write(pair.uuid.littleEndianBytes(size: 2) ?? pair.uuid.littleEndianBytes128)
            } else {
                writer.write(pair.uuid.littleEndianBytes128)
            }
        }
    }
}

/// The parameters of the Read By Type Response: handle + value elements that all have the same length, given
/// once in the Length octet (Core 5.4 Vol 3 Part F §3.4.4.2).
public struct ATTReadByTypeResponse: Hashable, Sendable {
    public let elements: [ATTHandleValue]

    /// The Length octet: the size of each handle + value element.
    public var elementLength: Int { 2 + (elements.first?.value.count ?? 0) }

    /// Throws unless there is at least one element, every value has the same length, and that length is at most
    /// 253 (the element length must fit the Length octet).
    public init(elements: [ATTHandleValue]) throws(DecodeError) {
        guard let first = elements.first else {
            throw DecodeError(.invalidLength, at: 0, "a Read By Type Response carries at least one element")
        }
        guard first.value.count <= ATTMTU.maximumReadByTypeElementValue else {
            throw DecodeError(.invalidLength, at: 0, "a \(first.value.count)-octet value does not fit the length octet (253 at most)")
        }
        guard elements.allSatisfy({ $0.value.count == first.value.count }) else {
            throw DecodeError(.invalidLength, at: 0, "every element of a Read By Type Response has the same length")
        }
        self.elements = elements
    }

    /// The response a server builds from `candidates` (attributes of the requested type, in handle order) with
    /// `mtu` (§3.4.4.2): each value is cut to min(ATT_MTU − 4, 253) octets; the first fixes the element length,
    /// and the following ones are included while they have that same length and fit in ATT_MTU octets. Nil
    /// when `candidates` is empty.
    public static func packing(_ candidates: some Sequence<ATTHandleValue>, mtu: Int) -> ATTReadByTypeResponse? {
        let mtu = ATTMTU.clamped(mtu)
        let cap = ATTMTU.maximumReadByTypeElementValueLength(mtu: mtu)
        var chosen: [ATTHandleValue] = []
        var length = 0
        for candidate in candidates {
            let value = Array(candidate.value.prefix(cap))
            if chosen.isEmpty { length = value.count }
            guard value.count == length, 2 + (chosen.count + 1) * (2 + length) <= mtu else { break }
            chosen.append(ATTHandleValue(handle: candidate.handle, value: value))
        }
        return try? ATTReadByTypeResponse(elements: chosen)
    }

    static func decode(from reader: inout ByteReader) throws(DecodeError) -> ATTReadByTypeResponse {
        let length = Int(try reader.readUInt8("length"))
        guard length >= 2 else {
            throw DecodeError(.invalidLength, at: reader.offset - 1, "element length \(length) is smaller than a handle (2 octets)")
        }
        guard reader.remaining > 0, reader.remaining % length == 0 else {
            throw reader.error(.invalidLength, "\(reader.remaining) octets of attribute data are not a whole number of \(length)-octet elements")
        }
        var elements: [ATTHandleValue] = []
        while !reader.isAtEnd {
            let handle = try reader.readUInt16("attribute handle")
            let value = try reader.readBytes(length - 2, "attribute value")
            elements.append(ATTHandleValue(handle: handle, value: value))
        }
        return try ATTReadByTypeResponse(elements: elements)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(UInt8(truncatingIfNeeded: elementLength))
        for element in elements {
            writer.write(element.handle)
            writer.write(element.value)
        }
    }
}

/// The parameters of the Read By Group Type Response: handle + end group handle + value elements of the same
/// length, given once in the Length octet (Core 5.4 Vol 3 Part F §3.4.4.10).
public struct ATTReadByGroupTypeResponse: Hashable, Sendable {
    public let elements: [ATTAttributeGroupData]

    /// The Length octet: the size of each element.
    public var elementLength: Int { 4 + (elements.first?.value.count ?? 0) }

    /// Throws unless there is at least one element, every value has the same length, and that length is at most
    /// 251 (the element length must fit the Length octet).
    public init(elements: [ATTAttributeGroupData]) throws(DecodeError) {
        guard let first = elements.first else {
            throw DecodeError(.invalidLength, at: 0, "a Read By Group Type Response carries at least one element")
        }
        guard first.value.count <= ATTMTU.maximumReadByGroupTypeElementValue else {
            throw DecodeError(.invalidLength, at: 0, "a \(first.value.count)-octet value does not fit the length octet (251 at most)")
        }
        guard elements.allSatisfy({ $0.value.count == first.value.count }) else {
            throw DecodeError(.invalidLength, at: 0, "every element of a Read By Group Type Response has the same length")
        }
        self.elements = elements
    }

    /// The response a server builds from `candidates` (groups in handle order) with `mtu` (§3.4.4.10): values cut
    /// to min(ATT_MTU − 6, 251) octets; the first fixes the element length, and the following ones are included
    /// while they have that same length and fit in ATT_MTU octets. Nil when `candidates` is empty.
    public static func packing(_ candidates: some Sequence<ATTAttributeGroupData>, mtu: Int) -> ATTReadByGroupTypeResponse? {
        let mtu = ATTMTU.clamped(mtu)
        let cap = ATTMTU.maximumReadByGroupTypeElementValueLength(mtu: mtu)
        var chosen: [ATTAttributeGroupData] = []
        var length = 0
        for candidate in candidates {
            let value = Array(candidate.value.prefix(cap))
            if chosen.isEmpty { length = value.count }
            guard value.count == length, 2 + (chosen.count + 1) * (4 + length) <= mtu else { break }
            chosen.append(ATTAttributeGroupData(handle: candidate.handle, endGroupHandle: candidate.endGroupHandle, value: value))
        }
        return try? ATTReadByGroupTypeResponse(elements: chosen)
    }

    static func decode(from reader: inout ByteReader) throws(DecodeError) -> ATTReadByGroupTypeResponse {
        let length = Int(try reader.readUInt8("length"))
        guard length >= 4 else {
            throw DecodeError(.invalidLength, at: reader.offset - 1, "element length \(length) is smaller than two handles (4 octets)")
        }
        guard reader.remaining > 0, reader.remaining % length == 0 else {
            throw reader.error(.invalidLength, "\(reader.remaining) octets of attribute data are not a whole number of \(length)-octet elements")
        }
        var elements: [ATTAttributeGroupData] = []
        while !reader.isAtEnd {
            let handle = try reader.readUInt16("attribute handle")
            let end = try reader.readUInt16("end group handle")
            let value = try reader.readBytes(length - 4, "attribute value")
            elements.append(ATTAttributeGroupData(handle: handle, endGroupHandle: end, value: value))
        }
        return try ATTReadByGroupTypeResponse(elements: elements)
    }

    func write(to writer: inout ByteWriter) {
        writer.write(UInt8(truncatingIfNeeded: elementLength))
        for element in elements {
            writer.write(element.handle)
            writer.write(element.endGroupHandle)
            writer.write(element.value)
        }
    }
}

/// A Value Length + Value tuple of the Read Multiple Variable Response (Core 5.4 Vol 3 Part F §3.4.4.12,
/// Table 3.25). ``length`` is the length the server announced; ``value`` can be shorter in the last tuple of a
/// response cut at ATT_MTU − 1 octets (``isTruncated``).
public struct ATTLengthValue: Hashable, Sendable, Codable {
    /// The Value Length field.
    public let length: UInt16
    /// The value octets present in the PDU.
    public let value: [UInt8]

    /// A complete tuple; nil when the value is longer than 65535 octets.
    public init?(value: [UInt8]) {
        guard let length = UInt16(exactly: value.count) else { return nil }
        self.length = length
        self.value = value
    }

    /// A tuple whose value was cut: announces `length` but carries only `truncatedValue`; nil when the value is
    /// longer than `length`.
    public init?(length: UInt16, truncatedValue: [UInt8]) {
        guard truncatedValue.count <= Int(length) else { return nil }
        self.length = length
        self.value = truncatedValue
    }

    /// Whether fewer octets are present than the Value Length announces.
    public var isTruncated: Bool { value.count < Int(length) }
}

/// The parameters of the Read Multiple Variable Response: one Length Value tuple per requested handle
/// (Core 5.4 Vol 3 Part F §3.4.4.12).
///
/// Truncation: the server includes only the first ATT_MTU − 1 octets of the tuple list, so the value of the
/// final tuple may be shorter than its Value Length. Decoding accepts that (the last tuple then has
/// ``ATTLengthValue/isTruncated`` set, and the client reads the rest with Read Blob), but every other tuple must
/// be complete. A list cut inside a 2-octet Value Length field is rejected (`truncated`): ``packing(_:mtu:)``
/// never produces one, it leaves such a value out.
public struct ATTReadMultipleVariableResponse: Hashable, Sendable {
    public let tuples: [ATTLengthValue]

    /// Throws unless there is at least one tuple and only the last may be truncated.
    public init(tuples: [ATTLengthValue]) throws(DecodeError) {
        guard !tuples.isEmpty else {
            throw DecodeError(.invalidLength, at: 0, "a Read Multiple Variable Response carries at least one tuple")
        }
        guard !tuples.dropLast().contains(where: \.isTruncated) else {
            throw DecodeError(.invalidLength, at: 0, "only the last tuple of a Read Multiple Variable Response can be truncated")
        }
        self.tuples = tuples
    }

    /// The values present (the last possibly truncated).
    public var values: [[UInt8]] { tuples.map(\.value) }

    /// Whether the last value was cut by the MTU.
    public var isTruncated: Bool { tuples.last?.isTruncated ?? false }

    /// The response a server builds for `values` with `mtu`: complete tuples while they fit in ATT_MTU − 1
    /// octets, then the next value cut to the space left (when its length field fits). Values over 65535 octets
    /// are cut to 65535. Nil when nothing fits.
    public static func packing(_ values: some Sequence<[UInt8]>, mtu: Int) -> ATTReadMultipleVariableResponse? {
        var room = ATTMTU.clamped(mtu) - 1
        var tuples: [ATTLengthValue] = []
        for full in values {
            let value = Array(full.prefix(Int(UInt16.max)))
            guard room >= 2 else { break }
            room -= 2
            if value.count <= room, let tuple = ATTLengthValue(value: value) {
                tuples.append(tuple)
                room -= value.count
            } else {
                if let tuple = ATTLengthValue(length: UInt16(truncatingIfNeeded: value.count), truncatedValue: Array(value.prefix(room))) {
                    tuples.append(tuple)
                }
                break
            }
        }
        return try? ATTReadMultipleVariableResponse(tuples: tuples)
    }

    static func decode(from reader: inout ByteReader) throws(DecodeError) -> ATTReadMultipleVariableResponse {
        var tuples: [ATTLengthValue] = []
        while !reader.isAtEnd {
            let length = try reader.readUInt16("value length")
            if reader.remaining >= Int(length) {
                if let tuple = ATTLengthValue(value: try reader.readBytes(Int(length), "value")) { tuples.append(tuple) }
            } else if let tuple = ATTLengthValue(length: length, truncatedValue: reader.readRemaining()) {
                tuples.append(tuple)
            }
        }
        return try ATTReadMultipleVariableResponse(tuples: tuples)
    }

    func write(to writer: inout ByteWriter) {
        for tuple in tuples {
            writer.write(tuple.length)
            writer.write(tuple.value)
        }
    }
}

/// The parameters of the Multiple Handle Value Notification: at least two Handle + Value Length + Value tuples,
/// every length checked against the data (Core 5.4 Vol 3 Part F §3.4.7.4).
public struct ATTMultipleHandleValueNotification: Hashable, Sendable {
    public let tuples: [ATTHandleValue]

    /// Throws unless there are at least two tuples and every value is at most 65535 octets.
    public init(tuples: [ATTHandleValue]) throws(DecodeError) {
        guard tuples.count >= 2 else {
            throw DecodeError(.invalidLength, at: 0, "a Multiple Handle Value Notification carries at least two tuples")
        }
        guard tuples.allSatisfy({ $0.value.count <= Int(UInt16.max) }) else {
            throw DecodeError(.invalidLength, at: 0, "a value longer than 65535 octets does not fit its length field")
        }
        self.tuples = tuples
    }

    static func decode(from reader: inout ByteReader) throws(DecodeError) -> ATTMultipleHandleValueNotification {
        var tuples: [ATTHandleValue] = []
        while !reader.isAtEnd {
            let handle = try reader.readUInt16("attribute handle")
            let length = try reader.readUInt16("value length")
            let value = try reader.readBytes(Int(length), "attribute value")
            tuples.append(ATTHandleValue(handle: handle, value: value))
        }
        guard tuples.count >= 2 else {
            throw reader.error(.invalidLength, "a Multiple Handle Value Notification carries at least two tuples, found \(tuples.count)")
        }
        return try ATTMultipleHandleValueNotification(tuples: tuples)
    }

    func write(to writer: inout ByteWriter) {
        for tuple in tuples {
            writer.write(tuple.handle)
            writer.write(UInt16(truncatingIfNeeded: tuple.value.count))
            writer.write(tuple.value)
        }
    }
}
