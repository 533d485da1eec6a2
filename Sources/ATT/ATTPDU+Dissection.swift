public import BluetoothCore

extension ATTPDU: Dissectable {
    /// The PDU field by field: the root label is the PDU name ("Read By Group Type Request"), children carry the
    /// specification's field names, UUIDs their SIG names, values their hex and, when every octet is printable
    /// ASCII, the text.
    public var dissection: Dissection {
        let name = opcode.name ?? opcode.description
        return Dissection(name, nil, fields)
    }

    private var fields: [Dissection] {
        switch self {
        case .errorResponse(let request, let handle, let error):
            return [
                Dissection("Request Opcode In Error", request.description),
                Dissection("Attribute Handle In Error", hex16(handle)),
                Dissection("Error Code", error.description),
            ]
        case .exchangeMTURequest(let mtu):
            return [Dissection("Client Rx MTU", "\(mtu)")]
        case .exchangeMTUResponse(let mtu):
            return [Dissection("Server Rx MTU", "\(mtu)")]
        case .findInformationRequest(let range):
            return Self.rangeFields(range)
        case .findInformationResponse(let response):
            return [Dissection("Format", response.format.description)] + response.information.map { pair in
                Dissection("Information", nil, [
                    Dissection("Handle", hex16(pair.handle)),
                    Dissection(response.format == .uuid16 ? "16-bit Bluetooth UUID" : "128-bit UUID", Dissection.uuid(pair.uuid)),
                ])
            }
        case .findByTypeValueRequest(let range, let type, let value):
            return Self.rangeFields(range) + [
                Dissection("Attribute Type", Dissection.uuid(BluetoothUUID(type))),
                Dissection("Attribute Value", Self.value(value)),
            ]
        case .findByTypeValueResponse(let list):
            return list.map { entry in
                Dissection("Handles Information", nil, [
                    Dissection("Found Attribute Handle", hex16(entry.foundAttributeHandle)),
                    Dissection("Group End Handle", hex16(entry.groupEndHandle)),
                ])
            }
        case .readByTypeRequest(let range, let type):
            return Self.rangeFields(range) + [Dissection("Attribute Type", Dissection.uuid(type))]
        case .readByTypeResponse(let response):
            return [Dissection("Length", "\(response.elementLength)")] + response.elements.map { element in
                Dissection("Attribute Data", nil, [
                    Dissection("Attribute Handle", hex16(element.handle)),
                    Dissection("Attribute Value", Self.value(element.value)),
                ])
            }
        case .readRequest(let handle):
            return [Dissection("Attribute Handle", hex16(handle))]
        case .readResponse(let value):
            return [Dissection("Attribute Value", Self.value(value))]
        case .readBlobRequest(let handle, let offset):
            return [Dissection("Attribute Handle", hex16(handle)), Dissection("Value Offset", "\(offset)")]
        case .readBlobResponse(let value):
            return [Dissection("Part Attribute Value", Self.value(value))]
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            return [Dissection("Set Of Handles", nil, handles.map { Dissection("Handle", hex16($0)) })]
        case .readMultipleResponse(let values):
            return [Dissection("Set Of Values", Self.value(values))]
        case .readByGroupTypeRequest(let range, let type):
            return Self.rangeFields(range) + [Dissection("Attribute Group Type", Dissection.uuid(type))]
        case .readByGroupTypeResponse(let response):
            return [Dissection("Length", "\(response.elementLength)")] + response.elements.map { element in
                Dissection("Attribute Data", nil, [
                    Dissection("Attribute Handle", hex16(element.handle)),
                    Dissection("End Group Handle", hex16(element.endGroupHandle)),
                    Dissection("Attribute Value", Self.groupValue(element.value)),
                ])
            }
        case .readMultipleVariableResponse(let response):
            return response.tuples.map { tuple in
                var children = [
                    Dissection("Value Length", "\(tuple.length)"),
                    Dissection("Attribute Value", Self.value(tuple.value)),
                ]
                if tuple.isTruncated {
                    children.append(Dissection("Truncated", "\(tuple.value.count) of \(tuple.length) octets present"))
                }
                return Dissection("Length Value Tuple", nil, children)
            }
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
             .handleValueNotification(let handle, let value), .handleValueIndication(let handle, let value):
            return [Dissection("Attribute Handle", hex16(handle)), Dissection("Attribute Value", Self.value(value))]
        case .signedWriteCommand(let handle, let value, let signature):
            return [
                Dissection("Attribute Handle", hex16(handle)),
                Dissection("Attribute Value", Self.value(value)),
                Dissection("Authentication Signature", Dissection.bytes(signature.bytes), [
                    Dissection("Sign Counter", "\(signature.signCounter)"),
                    Dissection("MAC", Dissection.bytes(signature.mac)),
                ]),
            ]
        case .prepareWriteRequest(let handle, let offset, let value), .prepareWriteResponse(let handle, let offset, let value):
            return [
                Dissection("Attribute Handle", hex16(handle)),
                Dissection("Value Offset", "\(offset)"),
                Dissection("Part Attribute Value", Self.value(value)),
            ]
        case .executeWriteRequest(let flags):
            return [Dissection("Flags", flags.description)]
        case .writeResponse, .executeWriteResponse, .handleValueConfirmation:
            return []
        case .multipleHandleValueNotification(let notification):
            return notification.tuples.map { tuple in
                Dissection("Handle Length Value Tuple", nil, [
                    Dissection("Attribute Handle", hex16(tuple.handle)),
                    Dissection("Value Length", "\(tuple.value.count)"),
                    Dissection("Attribute Value", Self.value(tuple.value)),
                ])
            }
        }
    }

    private static func rangeFields(_ range: ATTHandleRange) -> [Dissection] {
        [Dissection("Starting Handle", hex16(range.start)), Dissection("Ending Handle", hex16(range.end))]
    }

    /// Hex with the octet count, plus the text in quotes when every octet is printable ASCII.
    static func value(_ bytes: [UInt8]) -> String {
        let hex = Dissection.bytes(bytes)
        guard !bytes.isEmpty, bytes.allSatisfy({ (0x20...0x7E).contains($0) }) else { return hex }
        return hex + " \"" + String(decoding: bytes, as: UTF8.self) + "\""
    }

    /// A group value: for 2- and 16-octet values (GATT service UUIDs) the UUID with its SIG name, else ``value(_:)``.
    static func groupValue(_ bytes: [UInt8]) -> String {
        if bytes.count == 2 || bytes.count == 16, let uuid = try? BluetoothUUID(littleEndianBytes: bytes) {
            return Dissection.uuid(uuid)
        }
        return value(bytes)
    }
}
