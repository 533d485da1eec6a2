import ATT
import BluetoothCore
import GATT
import Testing
import TestSupport

/// Answers with a closure (hostile servers).
struct ClientTestClosureResponder: ClientTestResponder {
    var requests: [ATTPDU] = []
    var body: (ATTPDU, Int) -> ATTPDU?

    init(_ body: @escaping (ATTPDU, Int) -> ATTPDU?) { self.body = body }

    mutating func respond(to request: ATTPDU) -> ATTPDU? {
        requests.append(request)
        return body(request, requests.count - 1)
    }
}

private func pdu(_ text: String) -> ATTPDU {
    (try? ATTPDU(decoding: hex(text))) ?? .errorResponse(requestOpcode: ATTOpcode(0), handle: 0, error: .unlikelyError)
}

private func isInvalidResponse(_ result: Result<GATTProcedureResult, GATTClientError>?) -> Bool {
    if case .failure(.invalidResponse)? = result { return true }
    return false
}

@Suite("GATT client: hostile servers")
struct GATTClientHostileTests {
    @Test("a server answering the same services again cannot make discovery loop")
    func repeatedServices() {
        var client = GATTClient()
        var server = ClientTestClosureResponder { _, _ in pdu("1106010004000118") }
        let (result, run) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &server)
        #expect(isInvalidResponse(result))
        #expect(clientHexList(run.requests) == ["100100ffff0028", "100500ffff0028"])
        expectClientIdle(client)
    }

    @Test("service groups that go backwards or end before they start are invalid", arguments: [
        "1106100005000118",  // ends before it starts
        "110610001200011805000600" + "0d18",  // second group before the first
        "1106000001000118",  // handle 0x0000 (caught by the ATT rules)
    ])
    func backwardsServices(response: String) {
        var client = GATTClient()
        var server = ClientTestClosureResponder { _, _ in pdu(response) }
        let (result, run) = runClientProcedure(.discoverAllPrimaryServices, on: &client, &server)
        #expect(isInvalidResponse(result), "\(String(describing: result))")
        #expect(run.requests.count == 1)
        expectClientIdle(client)
    }

    @Test("characteristic, include and descriptor discovery reject handles that do not advance")
    func nonAdvancingDiscovery() {
        var client = GATTClient()
        let range = ATTHandleRange(start: 0x0001, end: 0x0010)
        var sameDeclaration = ClientTestClosureResponder { _, _ in pdu("09070200020300002a") }
        let (characteristics, characteristicRun) = runClientProcedure(.discoverAllCharacteristics(range: range), on: &client, &sameDeclaration)
        #expect(isInvalidResponse(characteristics))
        #expect(characteristicRun.requests.count == 2)

        var valueBeforeDeclaration = ClientTestClosureResponder { _, _ in pdu("09070500020400002a") }
        #expect(isInvalidResponse(runClientProcedure(.discoverAllCharacteristics(range: range), on: &client, &valueBeforeDeclaration).0))

        var outside = ClientTestClosureResponder { _, _ in pdu("09072000022100002a") }
        #expect(isInvalidResponse(runClientProcedure(.discoverAllCharacteristics(range: range), on: &client, &outside).0))

        var badLength = ClientTestClosureResponder { _, _ in pdu("0906020002030000") }
        #expect(isInvalidResponse(runClientProcedure(.discoverAllCharacteristics(range: range), on: &client, &badLength).0))

        var sameInclude = ClientTestClosureResponder { _, _ in pdu("0908020005000600" + "0f18") }
        let (includes, includeRun) = runClientProcedure(.findIncludedServices(range: range), on: &client, &sameInclude)
        #expect(isInvalidResponse(includes))
        #expect(includeRun.requests.count == 2)

        var shortUUID = ClientTestClosureResponder { request, _ in
            if case .readRequest = request { return pdu("0b0f18") }
            return pdu("090602000500ffff")
        }
        let (unresolved, _) = runClientProcedure(.findIncludedServices(range: range), on: &client, &shortUUID)
        #expect(isInvalidResponse(unresolved), "\(String(describing: unresolved))")

        var sameDescriptor = ClientTestClosureResponder { _, _ in pdu("050104000229") }
        let (descriptors, descriptorRun) = runClientProcedure(.discoverAllDescriptors(range: ATTHandleRange(start: 4, end: 9)), on: &client, &sameDescriptor)
        #expect(isInvalidResponse(descriptors))
        #expect(clientHexList(descriptorRun.requests) == ["0404000900", "0405000900"])
        expectClientIdle(client)
    }

    @Test("a response of the wrong opcode fails the procedure and the next one runs")
    func wrongOpcode() throws {
        var client = GATTClient()
        var server = ClientTestClosureResponder { request, _ in
            if case .readRequest = request { return .readResponse(value: [42]) }
            return .readResponse(value: [1, 2, 3])
        }
        let (first, firstActions) = client.enqueue(.discoverAllPrimaryServices)
        let (second, secondActions) = client.enqueue(.readCharacteristicValue(handle: 3))
        #expect(secondActions.isEmpty, "the second waits for the first")
        let run = driveClient(&client, &server, firstActions + secondActions)
        #expect(run.results[first] == .failure(.unexpectedResponse(received: .readResponse, expected: .readByGroupTypeResponse)))
        #expect(try run.results[second]?.get() == .value([42]))
        #expect(run.completionOrder == [first, second])
        expectClientIdle(client)
    }

    @Test("empty lists, Error Responses naming another request and surplus values are invalid")
    func malformedAnswers() {
        var client = GATTClient()
        var empty = ClientTestClosureResponder { _, _ in .findByTypeValueResponse([]) }
        #expect(isInvalidResponse(runClientProcedure(.discoverPrimaryServices(uuid: BluetoothUUID(0x180D)), on: &client, &empty).0))

        var otherError = ClientTestClosureResponder { _, _ in .errorResponse(requestOpcode: .writeRequest, handle: 3, error: .invalidHandle) }
        #expect(isInvalidResponse(runClientProcedure(.readCharacteristicValue(handle: 3), on: &client, &otherError).0))

        var surplus = ClientTestClosureResponder { _, _ in pdu("21" + "010001" + "010002" + "010003") }
        #expect(isInvalidResponse(runClientProcedure(.readMultipleVariableCharacteristicValues(handles: [3, 5]), on: &client, &surplus).0))

        var outside = ClientTestClosureResponder { _, _ in pdu("0903" + "0900" + "07") }
        #expect(isInvalidResponse(runClientProcedure(.readUsingCharacteristicUUID(uuid: BluetoothUUID(0x2A19), range: ATTHandleRange(start: 1, end: 8)), on: &client, &outside).0))

        var wrongHandleEcho = ClientTestClosureResponder { request, _ in
            guard case .prepareWriteRequest(_, let offset, let part) = request else { return .executeWriteResponse }
            return .prepareWriteResponse(handle: 0x0004, offset: offset, partValue: part)
        }
        let (echo, echoRun) = runClientProcedure(.writeLongCharacteristicValue(handle: 3, value: [1, 2, 3]), on: &client, &wrongHandleEcho)
        #expect(echo == .failure(.prepareWriteEchoMismatch(handle: 3, offset: 0)))
        #expect(clientHexList(echoRun.requests) == ["1603000000010203", "1800"])
        expectClientIdle(client)
    }

    @Test("a server sending full parts forever stops at the 16-bit offset limit")
    func endlessLongRead() {
        var client = GATTClient()
        var endless = ClientTestClosureResponder { request, _ in
            if case .readRequest = request { return .readResponse(value: Array(repeating: 1, count: 22)) }
            return .readBlobResponse(partValue: Array(repeating: 2, count: 22))
        }
        let (result, run) = runClientProcedure(.readLongCharacteristicValue(handle: 3), on: &client, &endless)
        #expect(isInvalidResponse(result))
        #expect(run.requests.count == 65535 / 22 + 1)
        expectClientIdle(client)
    }

    @Test("random answers never trap, loop or leave a procedure behind")
    func randomAnswers() {
        var generator = SeededGenerator(seed: 0x6A77)
        let procedures: [GATTProcedure] = [
            .discoverAllPrimaryServices, .discoverPrimaryServices(uuid: BluetoothUUID(0x180D)),
            .findIncludedServices(range: .all), .discoverAllCharacteristics(range: .all),
            .discoverCharacteristics(range: .all, uuid: BluetoothUUID(0x2A37)), .discoverAllDescriptors(range: .all),
            .readLongCharacteristicValue(handle: 3), .readUsingCharacteristicUUID(uuid: BluetoothUUID(0x2A37), range: .all),
            .readMultipleVariableCharacteristicValues(handles: [3, 5]), .writeLongCharacteristicValue(handle: 3, value: Array(repeating: 7, count: 60)),
            .reliableWrite([GATTReliableWriteItem(handle: 3, value: [1]), GATTReliableWriteItem(handle: 5, value: [2])]),
        ]
        var client = GATTClient()
        var outcomes: Set<String> = []
        for round in 0..<400 {
            let procedure = procedures[round % procedures.count]
            var random = ClientTestClosureResponder { request, _ in
                // Mostly the expected response opcode with random parameters, sometimes anything.
                for _ in 0..<50 {
                    let opcode: UInt8
                    switch UInt8.random(in: 0...9, using: &generator) {
                    case 0: opcode = 0x01
                    case 1: opcode = UInt8.random(in: 0...0x30, using: &generator)
                    default: opcode = request.opcode.responseOpcode?.rawValue ?? 0x01
                    }
                    let length = Int.random(in: 0...30, using: &generator)
                    if let answer = try? ATTPDU(decoding: [opcode] + generator.bytes(length)), answer.kind == .response {
                        return answer
                    }
                }
                return .errorResponse(requestOpcode: request.opcode, handle: 0, error: .unlikelyError)
            }
            let (result, _) = runClientProcedure(procedure, on: &client, &random)
            #expect(result != nil, "round \(round): \(procedure) did not complete")
            switch result {
            case .success?: outcomes.insert("success")
            case .failure(.invalidResponse)?: outcomes.insert("invalid")
            case .failure(.unexpectedResponse)?: outcomes.insert("unexpected")
            case .failure(.attError)?: outcomes.insert("error")
            case .failure(.prepareWriteEchoMismatch)?: outcomes.insert("echo")
            default: outcomes.insert("other")
            }
            expectClientIdle(client)
        }
        #expect(outcomes.isSuperset(of: ["success", "invalid", "unexpected", "error", "echo"]), "\(outcomes)")
    }

    @Test("a response with nothing outstanding is dropped and counted")
    func strayResponse() {
        var client = GATTClient()
        #expect(client.receive(response: .writeResponse).isEmpty)
        #expect(client.strayResponseCount == 1)
        expectClientIdle(client)
    }
}

@Suite("GATT client: queue, notifications, bearer failure")
struct GATTClientQueueTests {
    @Test("one request at a time; procedures and commands run and complete in enqueue order")
    func serialised() throws {
        var client = GATTClient()
        let (first, firstActions) = client.enqueue(.readCharacteristicValue(handle: 3))
        let (second, secondActions) = client.enqueue(.writeWithoutResponse(handle: 5, value: [1]))
        let (third, thirdActions) = client.enqueue(.readCharacteristicValue(handle: 7))
        #expect(firstActions == [.sendRequest(.readRequest(handle: 3))])
        #expect(secondActions.isEmpty && thirdActions.isEmpty)
        #expect(client.pendingProcedureCount == 3)
        #expect(client.outstandingRequest == .readRequest(handle: 3))
        #expect(first < second && second < third)
        let afterFirst = client.receive(response: .readResponse(value: [9]))
        #expect(afterFirst == [
            .complete(first, .success(.value([9]))),
            .sendCommand(.writeCommand(handle: 5, value: [1])),
            .complete(second, .success(.written)),
            .sendRequest(.readRequest(handle: 7)),
        ])
        let afterThird = client.receive(response: .readResponse(value: [8]))
        #expect(afterThird == [.complete(third, .success(.value([8])))])
        expectClientIdle(client)
    }

    @Test("notifications and indications are delivered in arrival order, around a running procedure")
    func notificationsInOrder() throws {
        var client = GATTClient()
        let (id, _) = client.enqueue(.readCharacteristicValue(handle: 3))
        var events: [GATTClientAction] = []
        events += client.receive(serverPDU: .handleValueNotification(handle: 0x10, value: [1]))
        events += client.receive(serverPDU: .handleValueIndication(handle: 0x11, value: [2]))
        let multiple = try ATTMultipleHandleValueNotification(tuples: [ATTHandleValue(handle: 0x12, value: [3]), ATTHandleValue(handle: 0x13, value: [])])
        events += client.receive(serverPDU: .multipleHandleValueNotification(multiple))
        events += client.receive(notification: 0x10, value: [4])
        #expect(client.outstandingRequest == .readRequest(handle: 3), "notifications do not answer the request")
        events += client.receive(serverPDU: .readResponse(value: [5]))
        #expect(events == [
            .notification(handle: 0x10, value: [1]),
            .indication(handle: 0x11, value: [2]),
            .notification(handle: 0x12, value: [3]),
            .notification(handle: 0x13, value: []),
            .notification(handle: 0x10, value: [4]),
            .complete(id, .success(.value([5]))),
        ])
        expectClientIdle(client)
    }

    @Test("a bearer failure fails the current and every queued procedure, then every new one")
    func bearerFailure() {
        var client = GATTClient()
        let ids = [
            client.enqueue(.discoverAllPrimaryServices).0,
            client.enqueue(.readLongCharacteristicValue(handle: 3)).0,
            client.enqueue(.writeCharacteristicValue(handle: 3, value: [1])).0,
        ]
        #expect(client.pendingProcedureCount == 3)
        let actions = client.bearerFailed(.transactionTimeout)
        #expect(actions == ids.map { .complete($0, .failure(.bearerFailed(.transactionTimeout))) })
        expectClientIdle(client)
        #expect(client.bearerFailure == .transactionTimeout)
        let (late, lateActions) = client.enqueue(.readCharacteristicValue(handle: 3))
        #expect(lateActions == [.complete(late, .failure(.bearerFailed(.transactionTimeout)))])
        #expect(client.receive(response: .writeResponse).isEmpty, "a late response is dropped")
        #expect(client.bearerFailed(.disconnected(reason: 0x13)).isEmpty)
        #expect(client.bearerFailure == .transactionTimeout, "the first failure is kept")
        expectClientIdle(client)
    }
}
