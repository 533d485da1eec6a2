import ATT
import BluetoothCore
import GATT
import Testing
import TestSupport

// The test harness of the GATT client tests: a small in-test attribute server answering requests with the ATT
// module's codecs and packing builders (deliberately not the module's own GATT server), a scripted server that
// replays exact bytes, and a driver loop that feeds every request to a server and the answer back.

/// One attribute of the in-test server.
struct ClientTestAttribute {
    var handle: UInt16
    var type: BluetoothUUID
    var value: [UInt8]
    /// The end of the group, for service declarations.
    var groupEnd: UInt16?
    var readable = true
    var writable = true
}

/// What the in-test server answers to a Read Blob at exactly the end of a value.
enum ClientTestBlobEnd {
    case emptyPart, invalidOffset, attributeNotLong
}

/// A minimal GATT server over a flat attribute table: enough of Vol 3 Part F §3.4 to answer every request the
/// client sends, using ATTPDU and the ATT packing builders.
struct ClientTestServer {
    var attributes: [ClientTestAttribute] = []
    var mtu: Int
    var blobEnd = ClientTestBlobEnd.emptyPart
    var prepared: [(handle: UInt16, offset: UInt16, value: [UInt8])] = []
    var prepareQueueLimit = 1000
    /// Index of the Prepare Write whose echo is tampered with (counted from 0), if any.
    var tamperPrepareEchoAt: Int?
    var prepareCount = 0
    var requests: [ATTPDU] = []
    var commands: [ATTPDU] = []

    init(mtu: Int) { self.mtu = mtu }

    /// The handle of the first attribute added.
    var firstHandle: UInt16 = 1

    var nextHandle: UInt16 { attributes.last.map { $0.handle &+ 1 } ?? firstHandle }

    /// Adds a service declaration; its group ends where the next service starts (``finish()``).
    @discardableResult
    mutating func service(_ uuid: BluetoothUUID, primary: Bool = true) -> UInt16 {
        let handle = nextHandle
        attributes.append(ClientTestAttribute(handle: handle, type: BluetoothUUID(primary ? 0x2800 : 0x2801), value: uuid.littleEndianBytes, groupEnd: handle))
        return handle
    }

    /// Adds an include declaration of the service declared at `serviceHandle`.
    mutating func include(_ serviceHandle: UInt16) {
        guard let service = attributes.first(where: { $0.handle == serviceHandle }) else { return }
        var value = le(serviceHandle) + le(service.groupEnd ?? serviceHandle)
        if service.value.count == 2 { value += service.value }
        attributes.append(ClientTestAttribute(handle: nextHandle, type: BluetoothUUID(0x2802), value: value))
    }

    /// Adds a characteristic declaration and its value; returns the value handle.
    @discardableResult
    mutating func characteristic(_ uuid: BluetoothUUID, properties: UInt8 = 0x0A, value: [UInt8] = [], readable: Bool = true) -> UInt16 {
        let declaration = nextHandle
        let valueHandle = declaration + 1
        attributes.append(ClientTestAttribute(handle: declaration, type: BluetoothUUID(0x2803), value: [properties] + le(valueHandle) + uuid.littleEndianBytes))
        attributes.append(ClientTestAttribute(handle: valueHandle, type: uuid, value: value, readable: readable))
        return valueHandle
    }

    /// Adds a descriptor; returns its handle.
    @discardableResult
    mutating func descriptor(_ uuid: BluetoothUUID, value: [UInt8] = []) -> UInt16 {
        let handle = nextHandle
        attributes.append(ClientTestAttribute(handle: handle, type: uuid, value: value))
        return handle
    }

    /// Sets each service's group end to the handle before the next service (the last one: the last handle).
    mutating func finish() {
        let services = attributes.indices.filter { attributes[$0].groupEnd != nil }
        for (position, index) in services.enumerated() {
            let end = position + 1 < services.count ? attributes[services[position + 1]].handle - 1 : attributes[attributes.count - 1].handle
            attributes[index].groupEnd = end
            // Keep include declarations in step with the group ends.
            let start = attributes[index].handle
            for include in attributes.indices where attributes[include].type == BluetoothUUID(0x2802) {
                if attributes[include].value.prefix(2) == le(start)[...] {
                    attributes[include].value.replaceSubrange(2..<4, with: le(end))
                }
            }
        }
    }

    func value(at handle: UInt16) -> [UInt8]? { attributes.first { $0.handle == handle }?.value }

    private func le(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    private func error(_ request: ATTPDU, _ handle: UInt16, _ code: ATTErrorCode) -> ATTPDU {
        .errorResponse(requestOpcode: request.opcode, handle: handle, error: code)
    }

    private func inRange(_ range: ATTHandleRange) -> [ClientTestAttribute] {
        attributes.filter { range.contains($0.handle) }
    }

    /// Answers one request; nil for commands.
    mutating func answer(_ request: ATTPDU) -> ATTPDU? {
        if request.kind == .command {
            commands.append(request)
            switch request {
            case .writeCommand(let handle, let value), .signedWriteCommand(let handle, let value, _):
                if let index = attributes.firstIndex(where: { $0.handle == handle }) { attributes[index].value = value }
            default: break
            }
            return nil
        }
        requests.append(request)
        do { try request.validate() } catch { return error.errorResponse }
        switch request {
        case .readByGroupTypeRequest(let range, let type):
            let found = inRange(range).filter { $0.type == type && $0.groupEnd != nil }
                .map { ATTAttributeGroupData(handle: $0.handle, endGroupHandle: $0.groupEnd ?? $0.handle, value: $0.value) }
            guard let response = ATTReadByGroupTypeResponse.packing(found, mtu: mtu) else { return error(request, range.start, .attributeNotFound) }
            return .readByGroupTypeResponse(response)
        case .findByTypeValueRequest(let range, let type, let value):
            let found = inRange(range).filter { $0.type == BluetoothUUID(type) && $0.value == value }
                .map { ATTHandlesInformation(foundAttributeHandle: $0.handle, groupEndHandle: $0.groupEnd ?? $0.handle) }
            let list = ATTMTU.packingHandlesInformation(found, mtu: mtu)
            return list.isEmpty ? error(request, range.start, .attributeNotFound) : .findByTypeValueResponse(list)
        case .readByTypeRequest(let range, let type):
            let found = inRange(range).filter { $0.type == type }
            if let first = found.first, !first.readable { return error(request, first.handle, .readNotPermitted) }
            guard let response = ATTReadByTypeResponse.packing(found.map { ATTHandleValue(handle: $0.handle, value: $0.value) }, mtu: mtu) else {
                return error(request, range.start, .attributeNotFound)
            }
            return .readByTypeResponse(response)
        case .findInformationRequest(let range):
            guard let response = ATTFindInformationResponse.packing(inRange(range).map { ATTHandleUUID(handle: $0.handle, uuid: $0.type) }, mtu: mtu) else {
                return error(request, range.start, .attributeNotFound)
            }
            return .findInformationResponse(response)
        case .readRequest(let handle):
            guard let attribute = attributes.first(where: { $0.handle == handle }) else { return error(request, handle, .invalidHandle) }
            guard attribute.readable else { return error(request, handle, .readNotPermitted) }
            return .readResponse(value: ATTMTU.readResponseValue(attribute.value, mtu: mtu) ?? [])
        case .readBlobRequest(let handle, let offset):
            guard let attribute = attributes.first(where: { $0.handle == handle }) else { return error(request, handle, .invalidHandle) }
            if Int(offset) == attribute.value.count {
                switch blobEnd {
                case .emptyPart: break
                case .invalidOffset: return error(request, handle, .invalidOffset)
                case .attributeNotLong: return error(request, handle, .attributeNotLong)
                }
            }
            guard let part = ATTMTU.readResponseValue(attribute.value, offset: Int(offset), mtu: mtu) else {
                return error(request, handle, .invalidOffset)
            }
            return .readBlobResponse(partValue: part)
        case .readMultipleRequest(let handles):
            var values: [UInt8] = []
            for handle in handles {
                guard let value = value(at: handle) else { return error(request, handle, .invalidHandle) }
                values += value
            }
            return .readMultipleResponse(values: Array(values.prefix(ATTMTU.maximumReadMultipleResponseLength(mtu: mtu))))
        case .readMultipleVariableRequest(let handles):
            var values: [[UInt8]] = []
            for handle in handles {
                guard let value = value(at: handle) else { return error(request, handle, .invalidHandle) }
                values.append(value)
            }
            guard let response = ATTReadMultipleVariableResponse.packing(values, mtu: mtu) else { return error(request, 0, .unlikelyError) }
            return .readMultipleVariableResponse(response)
        case .writeRequest(let handle, let value):
            guard let index = attributes.firstIndex(where: { $0.handle == handle }) else { return error(request, handle, .invalidHandle) }
            guard attributes[index].writable else { return error(request, handle, .writeNotPermitted) }
            attributes[index].value = value
            return .writeResponse
        case .prepareWriteRequest(let handle, let offset, let part):
            defer { prepareCount += 1 }
            guard attributes.contains(where: { $0.handle == handle }) else { return error(request, handle, .invalidHandle) }
            guard prepared.count < prepareQueueLimit else { return error(request, handle, .prepareQueueFull) }
            prepared.append((handle, offset, part))
            if tamperPrepareEchoAt == prepareCount {
                return .prepareWriteResponse(handle: handle, offset: offset, partValue: part.map { $0 ^ 0xFF } + (part.isEmpty ? [0] : []))
            }
            return .prepareWriteResponse(handle: handle, offset: offset, partValue: part)
        case .executeWriteRequest(let flags):
            defer { prepared.removeAll() }
            guard flags == .write else { return .executeWriteResponse }
            var staged: [UInt16: [UInt8]] = [:]
            for write in prepared {
                var current = staged[write.handle] ?? value(at: write.handle) ?? []
                guard Int(write.offset) <= current.count else { return error(request, write.handle, .invalidOffset) }
                current = Array(current.prefix(Int(write.offset))) + write.value
                staged[write.handle] = current
            }
            for (handle, value) in staged {
                if let index = attributes.firstIndex(where: { $0.handle == handle }) { attributes[index].value = value }
            }
            return .executeWriteResponse
        default:
            return error(request, 0, .requestNotSupported)
        }
    }
}

/// Something that answers the client's requests.
protocol ClientTestResponder {
    mutating func respond(to request: ATTPDU) -> ATTPDU?
}

extension ClientTestServer: ClientTestResponder {
    mutating func respond(to request: ATTPDU) -> ATTPDU? { answer(request) }
}

/// Replays exact bytes: each request must be the next expected one; the answer is the scripted one. A request
/// beyond the script, or a different one, is recorded as a mismatch and answered with Unlikely Error.
struct ClientTestScript: ClientTestResponder {
    var steps: [(request: String, response: String)]
    var mismatches: [String] = []
    var position = 0

    init(_ steps: [(String, String)]) { self.steps = steps.map { (request: $0.0, response: $0.1) } }

    var isFinished: Bool { position == steps.count }

    mutating func respond(to request: ATTPDU) -> ATTPDU? {
        let sent = Hex.encode(request.encode())
        guard steps.indices.contains(position) else {
            mismatches.append("unscripted request \(sent)")
            return .errorResponse(requestOpcode: request.opcode, handle: 0, error: .unlikelyError)
        }
        let step = steps[position]
        position += 1
        if sent != step.request { mismatches.append("expected \(step.request), sent \(sent)") }
        return try? ATTPDU(decoding: hex(step.response))
    }
}

/// The outcome of driving the client until it is idle.
struct ClientTestRun {
    var results: [GATTOperationID: Result<GATTProcedureResult, GATTClientError>] = [:]
    var completionOrder: [GATTOperationID] = []
    var requests: [[UInt8]] = []
    var commands: [[UInt8]] = []
    var events: [GATTClientAction] = []
    var steps = 0
}

/// Performs `actions` against `responder` until nothing is left: each request's answer goes back through its
/// bytes (encode, decode) so the codecs are exercised too. Stops after `limit` steps (a loop is a failure).
func driveClient(_ client: inout GATTClient, _ responder: inout some ClientTestResponder, _ initial: [GATTClientAction], limit: Int = 20_000) -> ClientTestRun {
    var run = ClientTestRun()
    var pending = initial
    while !pending.isEmpty {
        run.steps += 1
        if run.steps > limit {
            Issue.record("the client did not stop within \(limit) steps")
            break
        }
        let action = pending.removeFirst()
        switch action {
        case .sendRequest(let pdu):
            #expect(client.outstandingRequest == pdu)
            run.requests.append(pdu.encode())
            guard let answer = responder.respond(to: pdu) else {
                Issue.record("no answer to \(pdu.opcode)")
                return run
            }
            let decoded = (try? ATTPDU(decoding: answer.encode())) ?? answer
            pending += client.receive(serverPDU: decoded)
        case .sendCommand(let pdu):
            run.commands.append(pdu.encode())
            _ = responder.respond(to: pdu)
        case .complete(let id, let result):
            #expect(run.results[id] == nil, "completed twice")
            run.results[id] = result
            run.completionOrder.append(id)
        case .notification, .indication:
            run.events.append(action)
        }
    }
    return run
}

/// Enqueues one procedure, drives it to completion and returns its result and the run.
func runClientProcedure(_ procedure: GATTProcedure, on client: inout GATTClient, _ responder: inout some ClientTestResponder) -> (Result<GATTProcedureResult, GATTClientError>?, ClientTestRun) {
    let (id, actions) = client.enqueue(procedure)
    let run = driveClient(&client, &responder, actions)
    return (run.results[id], run)
}

/// The leak check: nothing running or queued, no request outstanding.
func expectClientIdle(_ client: GATTClient, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(client.isIdle, sourceLocation: sourceLocation)
    #expect(client.pendingProcedureCount == 0, sourceLocation: sourceLocation)
    #expect(client.outstandingRequest == nil, sourceLocation: sourceLocation)
}

func clientHexList(_ list: [[UInt8]]) -> [String] { list.map { Hex.encode($0) } }

@Suite("GATT client test harness")
struct GATTClientHarnessTests {
    @Test("the in-test server answers a Read By Group Type with the ATT packing builder")
    func serverAnswers() {
        var server = ClientTestServer(mtu: 23)
        server.service(BluetoothUUID(0x1801))
        server.characteristic(BluetoothUUID(0x2A05), properties: 0x20)
        server.service(BluetoothUUID(0x180D))
        server.finish()
        let answer = server.answer(.readByGroupTypeRequest(range: .all, groupType: BluetoothUUID(0x2800)))
        #expect(answer.map { Hex.encode($0.encode()) } == "110601000300011804000400" + "0d18")
    }
}
