import ATT
import BluetoothCore

/// Read Characteristic Value / Descriptor (Core 5.4 Vol 3 Part G §4.8.1, §4.12.1): one Read Request; and the long
/// forms (§4.8.3, §4.12.2): a Read Request, then Read Blob Requests at the offset of the octets read so far while
/// every part fills ATT_MTU − 1 octets. A short (or empty) part ends the value; so do *Attribute Not Long* and
/// *Invalid Offset* answering a Read Blob, as a server may when the value ends exactly at the offset. Offsets
/// are 16-bit: a value growing past 65535 octets is an invalid response.
struct GATTClientRead: GATTClientProcedureMachine {
    let handle: UInt16
    let long: Bool
    var value: [UInt8] = []
    var readingBlob = false

    init(handle: UInt16, long: Bool) {
        self.handle = handle
        self.long = long
    }

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard handle != 0 else { return .fail(.invalidParameter("handle 0x0000 is reserved")) }
        return .request(.readRequest(handle: handle))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        let part: [UInt8]
        switch response {
        case .readResponse(let received) where !readingBlob: part = received
        case .readBlobResponse(let received) where readingBlob: part = received
        default: return unexpected(response)
        }
        value += part
        guard long, part.count >= ATTMTU.maximumReadResponseValueLength(mtu: context.mtu) else {
            return .finish(.success(.value(value)))
        }
        guard let offset = UInt16(exactly: value.count) else {
            return .invalid("a long value grew past 65535 octets")
        }
        readingBlob = true
        return .request(.readBlobRequest(handle: handle, offset: offset))
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        if readingBlob, code == .attributeNotLong || code == .invalidOffset {
            return .finish(.success(.value(value)))
        }
        return .fail(.attError(code, handle: handle))
    }
}

/// Read Using Characteristic UUID (Core 5.4 Vol 3 Part G §4.8.2): one Read By Type Request over the range; the
/// handle + value pairs of the response, each handle within the range and in increasing order.
struct GATTClientReadByUUID: GATTClientProcedureMachine {
    let uuid: BluetoothUUID
    let range: ATTHandleRange

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard range.isValid else { return .fail(.invalidParameter("handle range \(range) is not valid")) }
        return .request(.readByTypeRequest(range: range, attributeType: uuid))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        guard case .readByTypeResponse(let list) = response else { return unexpected(response) }
        var floor = range.start
        for element in list.elements {
            guard element.handle >= floor, element.handle <= range.end else {
                return .invalid("handle \(gattHex(element.handle)) is outside \(range) or goes backwards")
            }
            floor = element.handle &+ 1
            if element.handle == UInt16.max { floor = UInt16.max }
        }
        return .finish(.success(.handleValues(list.elements)))
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        .fail(.attError(code, handle: handle))
    }
}

/// Read Multiple Characteristic Values (Core 5.4 Vol 3 Part G §4.8.4) and Read Multiple Variable Length
/// Characteristic Values (§4.8.5): one request naming 2 to (ATT_MTU − 1) / 2 handles.
struct GATTClientReadMultiple: GATTClientProcedureMachine {
    let handles: [UInt16]
    let variable: Bool

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        let limit = ATTMTU.maximumReadMultipleHandleCount(mtu: context.mtu)
        guard handles.count >= 2, handles.count <= limit else {
            return .fail(.invalidParameter("a read multiple names 2 to \(limit) handles, not \(handles.count)"))
        }
        guard !handles.contains(0) else { return .fail(.invalidParameter("handle 0x0000 is reserved")) }
        return .request(variable ? .readMultipleVariableRequest(handles: handles) : .readMultipleRequest(handles: handles))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        switch response {
        case .readMultipleResponse(let values) where !variable:
            return .finish(.success(.value(values)))
        case .readMultipleVariableResponse(let list) where variable:
            guard list.tuples.count <= handles.count else {
                return .invalid("\(list.tuples.count) values answer \(handles.count) handles")
            }
            return .finish(.success(.lengthValues(list.tuples)))
        default:
            return unexpected(response)
        }
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        .fail(.attError(code, handle: handle))
    }
}

/// Write Without Response (Core 5.4 Vol 3 Part G §4.9.1): one Write Command of at most ATT_MTU − 3 octets; and
/// Signed Write Without Response (§4.9.2): one Signed Write Command of at most ATT_MTU − 15 octets whose
/// signature the client's signer computes over opcode ‖ handle ‖ value (Vol 3 Part H §2.4.5).
struct GATTClientWriteCommand: GATTClientProcedureMachine {
    let handle: UInt16
    let value: [UInt8]
    let signed: Bool

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard handle != 0 else { return .fail(.invalidParameter("handle 0x0000 is reserved")) }
        let limit = signed
            ? ATTMTU.maximumSignedWriteValueLength(mtu: context.mtu)
            : ATTMTU.maximumWriteValueLength(mtu: context.mtu)
        guard value.count <= limit else {
            return .fail(.invalidParameter("a \(value.count)-octet value exceeds the \(limit) octets a \(signed ? "signed " : "")write command carries at this MTU"))
        }
        guard signed else { return .commandThenFinish(.writeCommand(handle: handle, value: value)) }
        let message = [ATTOpcode.signedWriteCommand.rawValue, UInt8(truncatingIfNeeded: handle), UInt8(truncatingIfNeeded: handle >> 8)] + value
        guard let signer = context.signer, let signature = signer(message) else { return .fail(.signingUnavailable) }
        return .commandThenFinish(.signedWriteCommand(handle: handle, value: value, signature: signature))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep { unexpected(response) }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        .fail(.attError(code, handle: handle))
    }
}

/// Write Characteristic Value / Descriptor (Core 5.4 Vol 3 Part G §4.9.3, §4.12.3), and the Client
/// Characteristic Configuration writes that subscribe and unsubscribe: one Write Request of at most
/// ATT_MTU − 3 octets, answered by a Write Response.
struct GATTClientWrite: GATTClientProcedureMachine {
    let handle: UInt16
    let value: [UInt8]

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard handle != 0 else { return .fail(.invalidParameter("handle 0x0000 is reserved")) }
        let limit = ATTMTU.maximumWriteValueLength(mtu: context.mtu)
        guard value.count <= limit else {
            return .fail(.invalidParameter("a \(value.count)-octet value exceeds the \(limit) octets of a Write Request at this MTU (use a long write)"))
        }
        return .request(.writeRequest(handle: handle, value: value))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        guard case .writeResponse = response else { return unexpected(response) }
        return .finish(.success(.written))
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        .fail(.attError(code, handle: handle))
    }
}

/// Write Long Characteristic Values / Descriptors (Core 5.4 Vol 3 Part G §4.9.4, §4.12.4) and Reliable Writes
/// (§4.9.5): each value is sent as Prepare Write Requests of at most ATT_MTU − 5 octets at growing offsets (an
/// empty value as one empty part at offset 0); every Prepare Write Response must echo its request exactly.
/// When all parts are queued, Execute Write Request 0x01 writes them.
///
/// A wrong echo, or an Error Response to a part after others were queued, sends Execute Write Request 0x00
/// (cancel) and, when it is answered (by a response or an error), fails the procedure with the first error.
struct GATTClientPreparedWrite: GATTClientProcedureMachine {
    enum Phase: Sendable {
        case preparing(handle: UInt16, offset: UInt16, part: [UInt8])
        case executing
        case cancelling(GATTClientError)
    }

    let items: [GATTReliableWriteItem]
    var itemIndex = 0
    var offset = 0
    var acceptedParts = 0
    var phase = Phase.executing

    init(items: [GATTReliableWriteItem]) { self.items = items }

    mutating func start(_ context: GATTClientContext) -> GATTClientStep {
        guard !items.isEmpty else { return .fail(.invalidParameter("a reliable write has at least one value")) }
        for item in items {
            guard item.handle != 0 else { return .fail(.invalidParameter("handle 0x0000 is reserved")) }
            guard item.value.count <= Int(UInt16.max) else {
                return .fail(.invalidParameter("a \(item.value.count)-octet value does not fit 16-bit offsets"))
            }
        }
        return prepareNext(context)
    }

    private mutating func prepareNext(_ context: GATTClientContext) -> GATTClientStep {
        guard items.indices.contains(itemIndex) else {
            phase = .executing
            return .request(.executeWriteRequest(flags: .write))
        }
        let item = items[itemIndex]
        let length = ATTMTU.maximumPrepareWriteValueLength(mtu: context.mtu)
        let part = Array(item.value.dropFirst(offset).prefix(length))
        let partOffset = UInt16(clamping: offset)
        phase = .preparing(handle: item.handle, offset: partOffset, part: part)
        return .request(.prepareWriteRequest(handle: item.handle, offset: partOffset, partValue: part))
    }

    mutating func receive(_ response: ATTPDU, _ context: GATTClientContext) -> GATTClientStep {
        switch (phase, response) {
        case (.preparing(let handle, let sentOffset, let part), .prepareWriteResponse(let echoHandle, let echoOffset, let echo)):
            guard echoHandle == handle, echoOffset == sentOffset, echo == part else {
                phase = .cancelling(.prepareWriteEchoMismatch(handle: handle, offset: sentOffset))
                return .request(.executeWriteRequest(flags: .cancel))
            }
            acceptedParts += 1
            offset += part.count
            if offset >= items[itemIndex].value.count {
                itemIndex += 1
                offset = 0
            }
            return prepareNext(context)
        case (.executing, .executeWriteResponse):
            return .finish(.success(.written))
        case (.cancelling(let error), .executeWriteResponse):
            return .fail(error)
        default:
            return unexpected(response)
        }
    }

    mutating func receiveError(_ code: ATTErrorCode, handle: UInt16, _ context: GATTClientContext) -> GATTClientStep {
        let error = GATTClientError.attError(code, handle: handle)
        switch phase {
        case .preparing where acceptedParts > 0:
            phase = .cancelling(error)
            return .request(.executeWriteRequest(flags: .cancel))
        case .preparing, .executing:
            return .fail(error)
        case .cancelling(let first):
            return .fail(first)
        }
    }
}
