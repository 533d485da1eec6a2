import ATT
import BluetoothCore
import BluetoothRuntime
import Testing
import TestSupport

/// A minimal owner: one bearer on a ManualEventLoop, one timer armed for its deadline (DESIGN.md "one timer").
private final class BearerOwner: @unchecked Sendable {
    let loop = ManualEventLoop()
    var bearer: ATTBearer
    var actions: [ATTBearerAction] = []
    private var timer: ScheduledJob?

    init(preferredMTU: Int = 517) { bearer = ATTBearer(preferredMTU: preferredMTU) }

    func perform(_ new: [ATTBearerAction]) {
        actions += new
        rearm()
    }

    func rearm() {
        timer?.cancel()
        timer = nil
        guard let deadline = bearer.nextDeadline else { return }
        timer = loop.schedule(at: deadline) { [self] in
            perform(bearer.handleTimeout(now: loop.now))
        }
    }

    func receive(_ text: String) { perform(bearer.receive(hex(text), now: loop.now)) }

    @discardableResult
    func enqueue(_ pdu: ATTPDU) -> ATTBearerRequestID {
        let (id, new) = bearer.enqueue(request: pdu, now: loop.now)
        perform(new)
        return id
    }

    /// The actions since the last call.
    func take() -> [ATTBearerAction] {
        defer { actions = [] }
        return actions
    }

    var leakFree: Bool {
        bearer.pendingRequestCount == 0 && bearer.pendingIndicationCount == 0
            && bearer.pendingIncomingRequestCount == 0 && loop.pendingWorkDescription == "nothing"
    }
}

@Suite("ATT bearer")
struct ATTBearerTests {
    @Test("client MTU exchange: min of both, once per connection")
    func clientMTUExchange() {
        let owner = BearerOwner(preferredMTU: 517)
        let id = owner.enqueue(.exchangeMTURequest(clientRxMTU: 517))
        #expect(owner.take() == [.send(hex("020502"))])
        owner.receive("030002")
        #expect(owner.take() == [.mtuChanged(512), .response(id, .success(.exchangeMTUResponse(serverRxMTU: 512)))])
        #expect(owner.bearer.mtu == 512)
        let second = owner.enqueue(.exchangeMTURequest(clientRxMTU: 517))
        let actions = owner.take()
        #expect(actions.count == 1)
        if case .response(let failed, .failure(let error)) = actions.first {
            #expect(failed == second)
            #expect(error.code == .invalidOperation)
        } else {
            Issue.record("expected a failure, got \(actions)")
        }
        #expect(owner.leakFree)
    }

    @Test("a server Rx MTU below 23 gives 23")
    func clientMTUBelowMinimum() {
        let owner = BearerOwner()
        _ = owner.bearer.exchangeMTU(now: owner.loop.now)
        owner.receive("031000")
        #expect(owner.take().first == .mtuChanged(23))
        #expect(owner.bearer.mtu == 23)
    }

    @Test("server answers Exchange MTU itself; below 23 gives 23; a repeat changes nothing")
    func serverMTUExchange() {
        let owner = BearerOwner(preferredMTU: 247)
        owner.receive("021000")
        #expect(owner.take() == [.send(hex("03f700")), .mtuChanged(23)])
        owner.receive("020002")
        #expect(owner.take() == [.send(hex("03f700"))])
        #expect(owner.bearer.mtu == 23)

        let other = BearerOwner(preferredMTU: 247)
        other.receive("020002")
        #expect(other.take() == [.send(hex("03f700")), .mtuChanged(247)])
        #expect(other.leakFree)
    }

    @Test("one request in flight, FIFO queue behind it")
    func requestQueue() {
        let owner = BearerOwner()
        let first = owner.enqueue(.readRequest(handle: 3))
        let second = owner.enqueue(.readRequest(handle: 5))
        let third = owner.enqueue(.writeRequest(handle: 7, value: [1]))
        #expect(owner.take() == [.send(hex("0a0300"))])
        #expect(owner.bearer.pendingRequestCount == 3)
        owner.receive("0b0102")
        #expect(owner.take() == [.response(first, .success(.readResponse(value: [1, 2]))), .send(hex("0a0500"))])
        owner.receive("010a05000a")
        let actions = owner.take()
        #expect(actions == [
            .response(second, .failure(ATTBearerError(.errorResponse, "Read Request (0x0A) failed", attError: .attributeNotFound, handle: 5))),
            .send(hex("12070001")),
        ])
        owner.receive("13")
        #expect(owner.take() == [.response(third, .success(.writeResponse))])
        #expect(owner.leakFree)
    }

    @Test("unexpected responses disconnect the link and fail everything")
    func unexpectedResponses() {
        // No request in flight.
        let idle = BearerOwner()
        idle.receive("13")
        #expect(idle.take() == [.disconnectLink(.unexpectedResponse(opcode: .writeResponse))])
        #expect(!idle.bearer.isOpen)
        idle.receive("1b0300aa")
        #expect(idle.take().isEmpty)

        // Wrong response opcode.
        let owner = BearerOwner()
        let id = owner.enqueue(.readRequest(handle: 3))
        let queued = owner.enqueue(.readRequest(handle: 4))
        _ = owner.take()
        owner.receive("13")
        let actions = owner.take()
        #expect(actions.count == 3)
        #expect(actions.last == .disconnectLink(.unexpectedResponse(opcode: .writeResponse)))
        for (index, expected) in [id, queued].enumerated() {
            if case .response(let failed, .failure(let error)) = actions[index] {
                #expect(failed == expected)
                #expect(error.code == .bearerClosed)
            } else {
                Issue.record("expected failure of \(expected), got \(actions[index])")
            }
        }
        #expect(owner.leakFree)

        // Error Response naming another request opcode.
        let mismatched = BearerOwner()
        mismatched.enqueue(.readRequest(handle: 3))
        _ = mismatched.take()
        mismatched.receive("0112030001")
        #expect(mismatched.take().last == .disconnectLink(.unexpectedResponse(opcode: .errorResponse)))

        // A malformed response while a request is in flight.
        let malformed = BearerOwner()
        malformed.enqueue(.exchangeMTURequest(clientRxMTU: 100))
        _ = malformed.take()
        malformed.receive("0301")
        if case .disconnectLink(.invalidResponse(let opcode, _)) = malformed.take().last {
            #expect(opcode == .exchangeMTUResponse)
        } else {
            Issue.record("a truncated Exchange MTU Response must disconnect")
        }
    }

    @Test("30 s transaction timeout: every request fails, the link is disconnected")
    func transactionTimeout() {
        let owner = BearerOwner()
        let first = owner.enqueue(.readRequest(handle: 3))
        let second = owner.enqueue(.readRequest(handle: 4))
        _ = owner.take()
        #expect(owner.bearer.nextDeadline == StackInstant.zero + .seconds(30))
        owner.loop.advance(by: .seconds(29))
        #expect(owner.take().isEmpty)
        owner.loop.advance(by: .seconds(1))
        let actions = owner.take()
        #expect(actions.count == 3)
        #expect(actions.last == .disconnectLink(.transactionTimeout))
        for (index, id) in [first, second].enumerated() {
            if case .response(let failed, .failure(let error)) = actions[index] {
                #expect(failed == id)
                #expect(error.code == .transactionTimeout)
            } else {
                Issue.record("expected a timeout failure, got \(actions[index])")
            }
        }
        // Dead: later requests fail at once, nothing is sent.
        let late = owner.enqueue(.readRequest(handle: 5))
        let lateActions = owner.take()
        if case .response(let failed, .failure(let error)) = lateActions.first {
            #expect(failed == late)
            #expect(error.code == .bearerClosed)
        } else {
            Issue.record("expected an immediate failure, got \(lateActions)")
        }
        #expect(throws: ATTBearerError.self) { try owner.bearer.send(.writeCommand(handle: 3, value: [])) }
        #expect(owner.leakFree)
    }

    @Test("each response restarts the 30 s timer for the next request")
    func timerRestartsPerRequest() {
        let owner = BearerOwner()
        owner.enqueue(.readRequest(handle: 3))
        owner.enqueue(.readRequest(handle: 4))
        owner.loop.advance(by: .seconds(20))
        owner.receive("0b")
        #expect(owner.bearer.nextDeadline == StackInstant.zero + .seconds(50))
        owner.loop.advance(by: .seconds(20))
        #expect(owner.bearer.isOpen)
        owner.receive("0b")
        #expect(owner.bearer.nextDeadline == nil)
        owner.rearm()
        #expect(owner.leakFree)
    }

    @Test("commands and notifications go out at once, not past ATT_MTU")
    func commandsWithoutFlowControl() throws {
        var bearer = ATTBearer()
        _ = bearer.enqueue(request: .readRequest(handle: 1), now: .zero)
        #expect(try bearer.send(.writeCommand(handle: 3, value: [1, 2])) == [.send(hex("5203000102"))])
        #expect(try bearer.send(.handleValueNotification(handle: 3, value: [0xAA, 0xBB])) == [.send(hex("1b0300aabb"))])
        #expect(throws: ATTBearerError.self) { try bearer.send(.handleValueNotification(handle: 3, value: Array(repeating: 0, count: 21))) }
        #expect(throws: ATTBearerError.self) { try bearer.send(.readRequest(handle: 3)) }
        #expect(bearer.pendingRequestCount == 1)
    }

    @Test("requests from the peer are handed up one at a time; pipelined ones wait their turn")
    func pipelinedRequests() throws {
        let owner = BearerOwner()
        owner.receive("0a0300")
        #expect(owner.take() == [.request(.readRequest(handle: 3))])
        // Pipelined: a second request, a malformed one and an unknown one before we answered.
        owner.receive("0a0500")
        owner.receive("0a05")
        owner.receive("3f0000")
        #expect(owner.take().isEmpty)
        #expect(owner.bearer.pendingIncomingRequestCount == 4)
        #expect(throws: ATTBearerError.self) { try owner.bearer.respond(.writeResponse, now: owner.loop.now) }
        owner.perform(try owner.bearer.respond(.readResponse(value: [1]), now: owner.loop.now))
        #expect(owner.take() == [.send(hex("0b01")), .request(.readRequest(handle: 5))])
        owner.perform(try owner.bearer.respond(.errorResponse(requestOpcode: .readRequest, handle: 5, error: .readNotPermitted), now: owner.loop.now))
        #expect(owner.take() == [.send(hex("010a050002")), .send(hex("010a000004")), .send(hex("013f000006"))])
        #expect(owner.leakFree)
        #expect(throws: ATTBearerError.self) { try owner.bearer.respond(.readResponse(value: []), now: owner.loop.now) }
    }

    @Test("too many pipelined requests disconnect")
    func pipelineCap() {
        let owner = BearerOwner()
        for _ in 0...ATTBearer.maximumPipelinedRequests { owner.receive("0a0300") }
        #expect(owner.take().count == 1)
        owner.receive("0a0300")
        #expect(owner.take() == [.disconnectLink(.tooManyPipelinedRequests)])
        #expect(owner.leakFree)
    }

    @Test("malformed input: short PDU → Invalid PDU, unknown request → Request Not Supported, unknown command → silence")
    func malformedInput() {
        let owner = BearerOwner()
        owner.receive("0a03")
        #expect(owner.take() == [.send(hex("010a000004"))])
        owner.receive("3f")
        #expect(owner.take() == [.send(hex("013f000006"))])
        owner.receive("7f0102")
        owner.receive("5203")
        owner.receive("d2")
        #expect(owner.take().isEmpty)
        owner.receive("0a0000")
        #expect(owner.take() == [.send(hex("010a000001"))])
        owner.receive("0405000100")
        #expect(owner.take() == [.send(hex("0104050001"))])
        owner.receive("5203000102")
        #expect(owner.take() == [.command(.writeCommand(handle: 3, value: [1, 2]))])
        #expect(owner.leakFree)
    }

    @Test("indications: one outstanding, the rest queued, confirmations matched, stray ones ignored")
    func indications() throws {
        let owner = BearerOwner()
        owner.receive("1e")
        #expect(owner.take().isEmpty)
        #expect(owner.bearer.isOpen)
        owner.perform(try owner.bearer.sendIndication(handle: 3, value: [0xAA, 0xBB], now: owner.loop.now))
        owner.perform(try owner.bearer.sendIndication(handle: 5, value: [0x01], now: owner.loop.now))
        #expect(owner.take() == [.send(hex("1d0300aabb"))])
        #expect(owner.bearer.pendingIndicationCount == 2)
        owner.loop.advance(by: .seconds(10))
        owner.receive("1e")
        #expect(owner.take() == [.indicationConfirmed(handle: 3), .send(hex("1d050001"))])
        #expect(owner.bearer.nextDeadline == StackInstant.zero + .seconds(40))
        owner.receive("1e")
        #expect(owner.take() == [.indicationConfirmed(handle: 5)])
        #expect(owner.leakFree)
    }

    @Test("30 s without a confirmation ends the bearer")
    func confirmationTimeout() throws {
        let owner = BearerOwner()
        owner.perform(try owner.bearer.sendIndication(handle: 3, value: [1], now: owner.loop.now))
        owner.perform(try owner.bearer.sendIndication(handle: 4, value: [2], now: owner.loop.now))
        _ = owner.take()
        owner.loop.advance(by: .seconds(30))
        let actions = owner.take()
        #expect(actions.count == 3)
        #expect(actions.last == .disconnectLink(.confirmationTimeout))
        if case .indicationFailed(let handle, let error) = actions.first {
            #expect(handle == 3)
            #expect(error.code == .transactionTimeout)
        } else {
            Issue.record("expected the indication to fail, got \(actions)")
        }
        #expect(owner.leakFree)
    }

    @Test("client side of notifications and indications")
    func clientReceivesIndications() throws {
        let owner = BearerOwner()
        let multiple = try ATTMultipleHandleValueNotification(tuples: [
            ATTHandleValue(handle: 3, value: [1]), ATTHandleValue(handle: 4, value: [1, 2]),
        ])
        owner.receive("1b0300aabb")
        owner.receive("1d0300aabb")
        owner.receive("230300010001040002000102")
        #expect(owner.take() == [
            .notification(.handleValueNotification(handle: 3, value: [0xAA, 0xBB])),
            .indication(.handleValueIndication(handle: 3, value: [0xAA, 0xBB])),
            .notification(.multipleHandleValueNotification(multiple)),
        ])
        #expect(owner.bearer.unconfirmedIndications == 1)
        #expect(owner.bearer.confirmIndication() == [.send([0x1E])])
        #expect(owner.bearer.confirmIndication().isEmpty)
    }

    @Test("close on link loss fails everything without asking for a disconnection")
    func closeOnLinkLoss() throws {
        let owner = BearerOwner()
        let id = owner.enqueue(.readRequest(handle: 1))
        owner.perform(try owner.bearer.sendIndication(handle: 3, value: [1], now: owner.loop.now))
        _ = owner.take()
        owner.perform(owner.bearer.close(reason: "link lost"))
        #expect(owner.take() == [
            .response(id, .failure(ATTBearerError(.bearerClosed, "link lost"))),
            .indicationFailed(handle: 3, ATTBearerError(.bearerClosed, "link lost")),
        ])
        #expect(owner.leakFree)
    }
}
