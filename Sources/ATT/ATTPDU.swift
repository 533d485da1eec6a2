public import BluetoothCore

/// An Attribute Protocol PDU: one case per PDU of Core 5.4 Vol 3 Part F §3.4, decoded from and encoded to the
/// payload of one L2CAP basic frame on the ATT channel.
///
/// Decoding (``init(decoding:)``) first checks the opcode against ``ATTOpcodeTable`` (an unknown opcode throws
/// `DecodeError.unknownType`) and the PDU's length against the table's rule (`invalidLength`), then reads the
/// fields; every malformed input throws ``DecodeError``, never traps.
///
/// Handles: handle 0x0000 and inverted ranges **decode** (so the server can answer *Invalid Handle* with the
/// offending handle, as the specification asks, rather than *Invalid PDU*); ``validate()`` reports them.
/// UUIDs: 2- and 16-octet attribute types decode to ``BluetoothUUID``; a 16-octet UUID on the Bluetooth Base
/// re-encodes in its 16-bit form (ATT treats both forms as the same UUID).
public enum ATTPDU: Hashable, Sendable {
    /// §3.4.1.1: a request failed.
    case errorResponse(requestOpcode: ATTOpcode, handle: UInt16, error: ATTErrorCode)
    /// §3.4.2.1
    case exchangeMTURequest(clientRxMTU: UInt16)
    /// §3.4.2.2
    case exchangeMTUResponse(serverRxMTU: UInt16)
    /// §3.4.3.1
    case findInformationRequest(ATTHandleRange)
    /// §3.4.3.2
    case findInformationResponse(ATTFindInformationResponse)
    /// §3.4.3.3: the attribute type is a 16-bit UUID.
    case findByTypeValueRequest(range: ATTHandleRange, attributeType: UInt16, value: [UInt8])
    /// §3.4.3.4: at least one entry.
    case findByTypeValueResponse([ATTHandlesInformation])
    /// §3.4.4.1
    case readByTypeRequest(range: ATTHandleRange, attributeType: BluetoothUUID)
    /// §3.4.4.2
    case readByTypeResponse(ATTReadByTypeResponse)
    /// §3.4.4.3
    case readRequest(handle: UInt16)
    /// §3.4.4.4
    case readResponse(value: [UInt8])
    /// §3.4.4.5
    case readBlobRequest(handle: UInt16, offset: UInt16)
    /// §3.4.4.6
    case readBlobResponse(partValue: [UInt8])
    /// §3.4.4.7: at least two handles.
    case readMultipleRequest(handles: [UInt16])
    /// §3.4.4.8: the values concatenated, as the client cannot split them without knowing their lengths.
    case readMultipleResponse(values: [UInt8])
    /// §3.4.4.9
    case readByGroupTypeRequest(range: ATTHandleRange, groupType: BluetoothUUID)
    /// §3.4.4.10
    case readByGroupTypeResponse(ATTReadByGroupTypeResponse)
    /// §3.4.4.11: at least two handles.
    case readMultipleVariableRequest(handles: [UInt16])
    /// §3.4.4.12
    case readMultipleVariableResponse(ATTReadMultipleVariableResponse)
    /// §3.4.5.1
    case writeRequest(handle: UInt16, value: [UInt8])
    /// §3.4.5.2
    case writeResponse
    /// §3.4.5.3
    case writeCommand(handle: UInt16, value: [UInt8])
    /// §3.4.5.4: the signature is the last 12 octets.
    case signedWriteCommand(handle: UInt16, value: [UInt8], signature: ATTAuthenticationSignature)
    /// §3.4.6.1
    case prepareWriteRequest(handle: UInt16, offset: UInt16, partValue: [UInt8])
    /// §3.4.6.2
    case prepareWriteResponse(handle: UInt16, offset: UInt16, partValue: [UInt8])
    /// §3.4.6.3
    case executeWriteRequest(flags: ATTExecuteWriteFlags)
    /// §3.4.6.4
    case executeWriteResponse
    /// §3.4.7.1
    case handleValueNotification(handle: UInt16, value: [UInt8])
    /// §3.4.7.2
    case handleValueIndication(handle: UInt16, value: [UInt8])
    /// §3.4.7.3
    case handleValueConfirmation
    /// §3.4.7.4
    case multipleHandleValueNotification(ATTMultipleHandleValueNotification)

    /// The opcode of the PDU.
    public var opcode: ATTOpcode {
        switch self {
        case .errorResponse: return .errorResponse
        case .exchangeMTURequest: return .exchangeMTURequest
        case .exchangeMTUResponse: return .exchangeMTUResponse
        case .findInformationRequest: return .findInformationRequest
        case .findInformationResponse: return .findInformationResponse
        case .findByTypeValueRequest: return .findByTypeValueRequest
        case .findByTypeValueResponse: return .findByTypeValueResponse
        case .readByTypeRequest: return .readByTypeRequest
        case .readByTypeResponse: return .readByTypeResponse
        case .readRequest: return .readRequest
        case .readResponse: return .readResponse
        case .readBlobRequest: return .readBlobRequest
        case .readBlobResponse: return .readBlobResponse
        case .readMultipleRequest: return .readMultipleRequest
        case .readMultipleResponse: return .readMultipleResponse
        case .readByGroupTypeRequest: return .readByGroupTypeRequest
        case .readByGroupTypeResponse: return .readByGroupTypeResponse
        case .readMultipleVariableRequest: return .readMultipleVariableRequest
        case .readMultipleVariableResponse: return .readMultipleVariableResponse
        case .writeRequest: return .writeRequest
        case .writeResponse: return .writeResponse
        case .writeCommand: return .writeCommand
        case .signedWriteCommand: return .signedWriteCommand
        case .prepareWriteRequest: return .prepareWriteRequest
        case .prepareWriteResponse: return .prepareWriteResponse
        case .executeWriteRequest: return .executeWriteRequest
        case .executeWriteResponse: return .executeWriteResponse
        case .handleValueNotification: return .handleValueNotification
        case .handleValueIndication: return .handleValueIndication
        case .handleValueConfirmation: return .handleValueConfirmation
        case .multipleHandleValueNotification: return .multipleHandleValueNotification
        }
    }

    /// The PDU's kind (request, response, command...), from the opcode table.
    public var kind: ATTPDUKind { opcode.kind ?? .command }

    /// Decodes one ATT PDU (the whole L2CAP payload).
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        try self.init(decoding: bytes[...])
    }

    /// Decodes one ATT PDU from a slice (offsets in errors count from the slice's start).
    public init(decoding bytes: ArraySlice<UInt8>) throws(DecodeError) {
        var reader = ByteReader(bytes)
        let opcode = ATTOpcode(rawValue: try reader.readUInt8("opcode"))
        guard let info = ATTOpcodeTable.info(for: opcode) else {
            throw DecodeError(.unknownType, at: 0, "ATT opcode \(opcode.hexValue) is not defined")
        }
        guard info.lengthRule.accepts(bytes.count) else {
            let code: DecodeError.Code = bytes.count < info.lengthRule.minimumLength ? .truncated : .invalidLength
            // Truncated: the data ran out at its end; too long: the first octet past the shortest valid PDU.
            let offset = code == .truncated ? bytes.count : info.lengthRule.minimumLength
            throw DecodeError(code, at: offset, "\(info.name) has \(info.lengthRule), not \(bytes.count)")
        }
        self = try Self.decodeParameters(opcode, &reader)
        try reader.expectEnd(info.name)
    }

    private static func decodeParameters(_ opcode: ATTOpcode, _ reader: inout ByteReader) throws(DecodeError) -> ATTPDU {
        switch opcode {
        case .errorResponse:
            let request = ATTOpcode(rawValue: try reader.readUInt8("request opcode in error"))
            let handle = try reader.readUInt16("attribute handle in error")
            return .errorResponse(requestOpcode: request, handle: handle, error: ATTErrorCode(try reader.readUInt8("error code")))
        case .exchangeMTURequest:
            return .exchangeMTURequest(clientRxMTU: try reader.readUInt16("client Rx MTU"))
        case .exchangeMTUResponse:
            return .exchangeMTUResponse(serverRxMTU: try reader.readUInt16("server Rx MTU"))
        case .findInformationRequest:
            return .findInformationRequest(try readRange(&reader))
        case .findInformationResponse:
            return .findInformationResponse(try ATTFindInformationResponse.decode(from: &reader))
        case .findByTypeValueRequest:
            let range = try readRange(&reader)
            let type = try reader.readUInt16("attribute type")
            return .findByTypeValueRequest(range: range, attributeType: type, value: reader.readRemaining())
        case .findByTypeValueResponse:
            var list: [ATTHandlesInformation] = []
            while !reader.isAtEnd {
                let found = try reader.readUInt16("found attribute handle")
                let end = try reader.readUInt16("group end handle")
                list.append(ATTHandlesInformation(foundAttributeHandle: found, groupEndHandle: end))
            }
            return .findByTypeValueResponse(list)
        case .readByTypeRequest:
            let range = try readRange(&reader)
            return .readByTypeRequest(range: range, attributeType: try readUUID(&reader, "attribute type"))
        case .readByTypeResponse:
            return .readByTypeResponse(try ATTReadByTypeResponse.decode(from: &reader))
        case .readRequest:
            return .readRequest(handle: try reader.readUInt16("attribute handle"))
        case .readResponse:
            return .readResponse(value: reader.readRemaining())
        case .readBlobRequest:
            let handle = try reader.readUInt16("attribute handle")
            return .readBlobRequest(handle: handle, offset: try reader.readUInt16("value offset"))
        case .readBlobResponse:
            return .readBlobResponse(partValue: reader.readRemaining())
        case .readMultipleRequest:
            return .readMultipleRequest(handles: try readHandles(&reader))
        case .readMultipleResponse:
            return .readMultipleResponse(values: reader.readRemaining())
        case .readByGroupTypeRequest:
            let range = try readRange(&reader)
            return .readByGroupTypeRequest(range: range, groupType: try readUUID(&reader, "attribute group type"))
        case .readByGroupTypeResponse:
            return .readByGroupTypeResponse(try ATTReadByGroupTypeResponse.decode(from: &reader))
        case .readMultipleVariableRequest:
            return .readMultipleVariableRequest(handles: try readHandles(&reader))
        case .readMultipleVariableResponse:
            return .readMultipleVariableResponse(try ATTReadMultipleVariableResponse.decode(from: &reader))
        case .writeRequest:
            let handle = try reader.readUInt16("attribute handle")
            return .writeRequest(handle: handle, value: reader.readRemaining())
        case .writeResponse:
            return .writeResponse
        case .writeCommand:
            let handle = try reader.readUInt16("attribute handle")
            return .writeCommand(handle: handle, value: reader.readRemaining())
        case .signedWriteCommand:
            let handle = try reader.readUInt16("attribute handle")
            let valueLength = reader.remaining - 12
            let value = try reader.readBytes(valueLength, "attribute value")
            let signatureBytes = try reader.readBytes(12, "authentication signature")
            guard let signature = ATTAuthenticationSignature(bytes: signatureBytes) else {
                throw reader.error(.invalidLength, "the authentication signature has 12 octets")
            }
            return .signedWriteCommand(handle: handle, value: value, signature: signature)
        case .prepareWriteRequest:
            let handle = try reader.readUInt16("attribute handle")
            let offset = try reader.readUInt16("value offset")
            return .prepareWriteRequest(handle: handle, offset: offset, partValue: reader.readRemaining())
        case .prepareWriteResponse:
            let handle = try reader.readUInt16("attribute handle")
            let offset = try reader.readUInt16("value offset")
            return .prepareWriteResponse(handle: handle, offset: offset, partValue: reader.readRemaining())
        case .executeWriteRequest:
            let raw = try reader.readUInt8("flags")
            guard let flags = ATTExecuteWriteFlags(rawValue: raw) else {
                throw DecodeError(.invalidValue, at: reader.offset - 1, "execute write flags \(Dissection.hex8(raw)) are neither 0x00 (cancel) nor 0x01 (write)")
            }
            return .executeWriteRequest(flags: flags)
        case .executeWriteResponse:
            return .executeWriteResponse
        case .handleValueNotification:
            let handle = try reader.readUInt16("attribute handle")
            return .handleValueNotification(handle: handle, value: reader.readRemaining())
        case .handleValueIndication:
            let handle = try reader.readUInt16("attribute handle")
            return .handleValueIndication(handle: handle, value: reader.readRemaining())
        case .handleValueConfirmation:
            return .handleValueConfirmation
        case .multipleHandleValueNotification:
            return .multipleHandleValueNotification(try ATTMultipleHandleValueNotification.decode(from: &reader))
        default:
            throw DecodeError(.unknownType, at: 0, "ATT opcode \(opcode.hexValue) has no decoder")
        }
    }

    private static func readRange(_ reader: inout ByteReader) throws(DecodeError) -> ATTHandleRange {
        let start = try reader.readUInt16("starting handle")
        return ATTHandleRange(start: start, end: try reader.readUInt16("ending handle"))
    }

    private static func readUUID(_ reader: inout ByteReader, _ field: String) throws(DecodeError) -> BluetoothUUID {
        let start = reader.offset
        let raw = reader.readRemaining()
        guard raw.count == 2 || raw.count == 16 else {
            throw DecodeError(.invalidLength, at: start, "\(field) is a 2- or 16-octet UUID, not \(raw.count) octets")
        }
        do { return try BluetoothUUID(littleEndianBytes: raw) } catch { throw error.shifted(by: start) }
    }

    private static func readHandles(_ reader: inout ByteReader) throws(DecodeError) -> [UInt16] {
        var handles: [UInt16] = []
        while !reader.isAtEnd { handles.append(try reader.readUInt16("attribute handle")) }
        guard handles.count >= 2 else {
            throw reader.error(.invalidLength, "a set of handles has at least two handles, found \(handles.count)")
        }
        return handles
    }

    /// The PDU's bytes. Total: every value built through the public API encodes (see ``validate()`` for the
    /// rules a value can still break, such as a Read Multiple Request with fewer than two handles).
    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: encodedCapacity)
        writer.write(opcode.rawValue)
        switch self {
        case .errorResponse(let request, let handle, let error):
            writer.write(request.rawValue)
            writer.write(handle)
            writer.write(error.rawValue)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            writer.write(mtu)
        case .findInformationRequest(let range):
            Self.write(range, to: &writer)
        case .findInformationResponse(let response):
            response.write(to: &writer)
        case .findByTypeValueRequest(let range, let type, let value):
            Self.write(range, to: &writer)
            writer.write(type)
            writer.write(value)
        case .findByTypeValueResponse(let list):
            for entry in list {
                writer.write(entry.foundAttributeHandle)
                writer.write(entry.groupEndHandle)
            }
        case .readByTypeRequest(let range, let uuid), .readByGroupTypeRequest(let range, let uuid):
            Self.write(range, to: &writer)
            writer.write(uuid.littleEndianBytes)
        case .readByTypeResponse(let response):
            response.write(to: &writer)
        case .readRequest(let handle):
            writer.write(handle)
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            writer.write(value)
        case .readBlobRequest(let handle, let offset):
            writer.write(handle)
            writer.write(offset)
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            for handle in handles { writer.write(handle) }
        case .readByGroupTypeResponse(let response):
            response.write(to: &writer)
        case .readMultipleVariableResponse(let response):
            response.write(to: &writer)
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
             .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            writer.write(handle)
            writer.write(value)
        case .signedWriteCommand(let handle, let value, let signature):
            writer.write(handle)
            writer.write(value)
            writer.write(signature.bytes)
        case .prepareWriteRequest(let handle, let offset, let value), .prepareWriteResponse(let handle, let offset, let value):
            writer.write(handle)
            writer.write(offset)
            writer.write(value)
        case .executeWriteRequest(let flags):
            writer.write(flags.rawValue)
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            break
        case .multipleHandleValueNotification(let notification):
            notification.write(to: &writer)
        }
        return writer.bytes
    }

    /// Room for the encoded PDU: exact for the PDUs that carry a value (a notification of 244 octets written into
    /// 32 grew the array once per PDU, issue 31 item 3), 32 octets for the rest (their lists grow when longer).
    private var encodedCapacity: Int {
        switch self {
        case .readResponse(let value), .readBlobResponse(let value), .readMultipleResponse(let value):
            1 + value.count
        case .writeRequest(_, let value), .writeCommand(_, let value),
             .handleValueNotification(_, let value), .handleValueIndication(_, let value):
            3 + value.count
        case .signedWriteCommand(_, let value, _):
            3 + value.count + 12
        case .prepareWriteRequest(_, _, let value), .prepareWriteResponse(_, _, let value):
            5 + value.count
        default:
            32
        }
    }

    private static func write(_ range: ATTHandleRange, to writer: inout ByteWriter) {
        writer.write(range.start)
        writer.write(range.end)
    }
}
