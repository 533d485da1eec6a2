public import BluetoothCore
import DequeModule

/// One ATT bearer (the LE fixed channel 0x0004 of one connection), both roles, sans-I/O
/// (Core 5.4 Vol 3 Part F §3.3 "Attribute PDU" / §3.3.2 sequential protocol / §3.3.3 transaction timeout,
/// §3.4.2 MTU exchange).
///
/// Inputs are calls (``enqueue(request:now:)``, ``send(_:)``, ``sendIndication(handle:value:now:)``,
/// ``respond(_:now:)``, ``receive(_:now:)``, ``handleTimeout(now:)``); outputs are ``ATTBearerAction``s the owner
/// performs in order. The owner arms one timer for ``nextDeadline`` and calls ``handleTimeout(now:)`` when it
/// fires. No clocks, no threads.
///
/// Client side: one request in flight, a FIFO queue behind it; a response (or an Error Response naming the
/// request's opcode) completes the request in flight; anything else that looks like a response kills the bearer
/// and asks for a disconnection. 30 s without the response: every request fails with
/// ``ATTBearerError/Code/transactionTimeout`` and the link is disconnected.
///
/// Server side: requests are handed up (``ATTBearerAction/request(_:)``) one at a time. **Pipelining choice:** a
/// client that sends a second request before our response breaks §3.3.2 ("shall send no other request ... until
/// it has received the response"); the specification does not say what the server does. We queue such requests
/// (in order, up to ``maximumPipelinedRequests``) and hand each up after the previous one is answered, so the
/// peer gets every answer in order; past the cap the link is disconnected. Undecodable requests are answered per
/// ``ATTServerInput`` (Invalid PDU, Request Not Supported, Invalid Handle) — in order with the queued ones;
/// undecodable or unknown commands are dropped silently. Indications: one awaiting confirmation, the rest queued;
/// 30 s without a confirmation ends the bearer like a request timeout. A confirmation with no indication
/// outstanding is ignored (§3.4.7.3 defines no error for it and a confirmation is never answered).
///
/// Enhanced ATT bearers (§3.2.11, ``init(enhancedMTU:)``): the same machine on an L2CAP channel in Enhanced
/// Credit Based Flow Control mode (SPSM 0x0027) instead of the fixed channel. ATT_MTU is the smaller of the two
/// L2CAP MTUs (§3.2.8), set at creation and raised by ``raiseEnhancedMTU(_:)`` after an L2CAP reconfiguration; there
/// is no Exchange MTU on it (§3.4.2.1: our client refuses to send one, a peer's is answered *Request Not
/// Supported*). The one-request-at-a-time rule, indications and the 30 s timeout apply per bearer; the owner
/// answers ``ATTBearerAction/disconnectLink(_:)`` from an enhanced bearer by closing its L2CAP channel.
///
/// MTU: ``preferredMTU`` (23...517) is our Rx MTU as client and server. The first exchange, in either direction,
/// fixes ATT_MTU = max(23, min(ours, theirs)); our client sends at most one Exchange MTU Request (a second
/// ``enqueue(request:now:)`` of one fails with ``ATTBearerError/Code/invalidOperation``); a repeated request from
/// the peer is answered again but changes nothing.
public struct ATTBearer: Sendable {
    /// The ATT transaction timeout (§3.3.3).
    public static let transactionTimeout: Duration = .seconds(30)
    /// The largest ATT_MTU we offer (§3.2.9: values are at most 512 octets; 517 fits a Prepare Write of 512).
    public static let maximumMTU = 517
    /// How many requests a misbehaving peer may pipeline behind the one being answered before we disconnect.
    public static let maximumPipelinedRequests = 16

    private struct PendingRequest: Sendable {
        var id: ATTBearerRequestID
        var pdu: ATTPDU
    }

    private struct PendingIndication: Sendable {
        var handle: UInt16
        var bytes: [UInt8]
    }

    private enum IncomingRequest: Sendable {
        /// To hand up to the server.
        case request(ATTPDU)
        /// Already answered by the bearer (Error Response for a bad PDU, Exchange MTU Response).
        case answer([UInt8], newMTU: Int?)
    }

    /// Our Rx MTU, offered in both directions.
    public let preferredMTU: Int
    /// The current ATT_MTU (23 until an exchange).
    public private(set) var mtu: Int = ATTMTU.leDefault
    /// Whether an MTU exchange (either direction) has completed.
    public private(set) var mtuExchanged = false
    /// Whether our client already sent its Exchange MTU Request.
    private var clientExchangeSent = false
    /// Set once the bearer is dead (timeout, protocol violation, ``close(reason:)``).
    public private(set) var closedReason: String?

    private var nextRequestNumber: UInt64 = 1
    private var outstanding: PendingRequest?
    private var requestQueue: Deque<PendingRequest> = []
    private var transactionDeadline: StackInstant?

    private var incomingInProgress: ATTPDU?
    private var incomingQueue: Deque<IncomingRequest> = []

    private var indicationOutstanding: PendingIndication?
    private var indicationQueue: Deque<PendingIndication> = []
    private var confirmationDeadline: StackInstant?

    /// Indications received by our client and not yet confirmed.
    public private(set) var unconfirmedIndications = 0

    /// Whether this is an Enhanced ATT bearer (an L2CAP enhanced credit-based channel, §3.2.11).
    public let isEnhanced: Bool

    /// A bearer offering `preferredMTU` (clamped to 23...517).
    public init(preferredMTU: Int = ATTBearer.maximumMTU) {
        self.preferredMTU = min(max(preferredMTU, ATTMTU.leDefault), Self.maximumMTU)
        self.isEnhanced = false
    }

    /// An Enhanced ATT bearer whose ATT_MTU is `enhancedMTU`: the smaller of the local and remote L2CAP MTUs of
    /// its channel (at least 64 on an enhanced channel; values below 23 are taken as 23). No MTU exchange happens.
    public init(enhancedMTU: Int) {
        let mtu = min(max(enhancedMTU, ATTMTU.leDefault), Int(UInt16.max))
        self.preferredMTU = mtu
        self.isEnhanced = true
        self.mtu = mtu
        self.mtuExchanged = true
        self.clientExchangeSent = true
    }

    /// After an L2CAP Credit Based Reconfiguration of an enhanced bearer's channel: ATT_MTU becomes the new
    /// smaller of the two L2CAP MTUs. It never decreases (the L2CAP MTUs may not); nothing for an unenhanced bearer.
    public mutating func raiseEnhancedMTU(_ newMTU: Int) -> [ATTBearerAction] {
        guard isEnhanced, isOpen, newMTU > mtu else { return [] }
        mtu = min(newMTU, Int(UInt16.max))
        return [.mtuChanged(mtu)]
    }

    // MARK: - State for owners and leak checks

    /// Whether the bearer still works.
    public var isOpen: Bool { closedReason == nil }
    /// Requests of our client in flight or queued.
    public var pendingRequestCount: Int { (outstanding == nil ? 0 : 1) + requestQueue.count }
    /// Indications of our server awaiting confirmation or queued.
    public var pendingIndicationCount: Int { (indicationOutstanding == nil ? 0 : 1) + indicationQueue.count }
    /// Requests from the peer being answered or queued behind it.
    public var pendingIncomingRequestCount: Int { (incomingInProgress == nil ? 0 : 1) + incomingQueue.count }

    /// The earliest instant at which ``handleTimeout(now:)`` has something to do.
    public var nextDeadline: StackInstant? {
        switch (transactionDeadline, confirmationDeadline) {
        case (nil, nil): return nil
        case (let a?, nil): return a
        case (nil, let b?): return b
        case (let a?, let b?): return min(a, b)
        }
    }

    // MARK: - Client side

    /// Enqueues a request of our client. It is sent at once when no other request is in flight, otherwise after
    /// those before it. The answer arrives as ``ATTBearerAction/response(_:_:)`` with the returned identifier
    /// (immediately, as a failure, when the bearer is dead or the PDU is not a request that fits ATT_MTU).
    public mutating func enqueue(request: ATTPDU, now: StackInstant) -> (id: ATTBearerRequestID, actions: [ATTBearerAction]) {
        let id = ATTBearerRequestID(rawValue: nextRequestNumber)
        nextRequestNumber &+= 1
        if let closedReason {
            return (id, [.response(id, .failure(ATTBearerError(.bearerClosed, closedReason)))])
        }
        guard request.kind == .request else {
            return (id, [.response(id, .failure(ATTBearerError(.invalidOperation, "\(request.opcode) is not a request")))])
        }
        if case .exchangeMTURequest = request {
            guard !isEnhanced else {
                return (id, [.response(id, .failure(ATTBearerError(.invalidOperation, "no Exchange MTU on an Enhanced ATT bearer")))])
            }
            guard !clientExchangeSent else {
                return (id, [.response(id, .failure(ATTBearerError(.invalidOperation, "the client exchanges the MTU once per connection")))])
            }
            clientExchangeSent = true
        }
        requestQueue.append(PendingRequest(id: id, pdu: request))
        return (id, startNextRequest(now: now))
    }

    /// Enqueues our client's Exchange MTU Request offering ``preferredMTU``.
    public mutating func exchangeMTU(now: StackInstant) -> (id: ATTBearerRequestID, actions: [ATTBearerAction]) {
        enqueue(request: .exchangeMTURequest(clientRxMTU: UInt16(clamping: preferredMTU)), now: now)
    }

    /// Sends a command (Write Command, Signed Write Command) or, for our server, a Handle Value Notification or
    /// Multiple Handle Value Notification: no flow control, no answer. Throws when the bearer is dead, the PDU is
    /// of another kind, or it exceeds ATT_MTU.
    public mutating func send(_ pdu: ATTPDU) throws(ATTBearerError) -> [ATTBearerAction] {
        if let closedReason { throw ATTBearerError(.bearerClosed, closedReason) }
        guard pdu.kind == .command || pdu.kind == .notification else {
            throw ATTBearerError(.invalidOperation, "\(pdu.opcode) is neither a command nor a notification")
        }
        let bytes = pdu.encode()
        guard bytes.count <= mtu else {
            throw ATTBearerError(.exceedsMTU, "\(pdu.opcode) has \(bytes.count) octets, ATT_MTU is \(mtu)")
        }
        return [.send(bytes)]
    }

    /// Confirms the oldest indication received by our client (Handle Value Confirmation, §3.4.7.3). Nothing when
    /// none awaits confirmation or the bearer is dead.
    public mutating func confirmIndication() -> [ATTBearerAction] {
        guard isOpen, unconfirmedIndications > 0 else { return [] }
        unconfirmedIndications -= 1
        return [.send(ATTPDU.handleValueConfirmation.encode())]
    }

    // MARK: - Server side

    /// Sends (or queues behind the one awaiting confirmation) a Handle Value Indication. Throws when the bearer is
    /// dead or the indication exceeds ATT_MTU.
    public mutating func sendIndication(handle: UInt16, value: [UInt8], now: StackInstant) throws(ATTBearerError) -> [ATTBearerAction] {
        if let closedReason { throw ATTBearerError(.bearerClosed, closedReason) }
        let bytes = ATTPDU.handleValueIndication(handle: handle, value: value).encode()
        guard bytes.count <= mtu else {
            throw ATTBearerError(.exceedsMTU, "the indication has \(bytes.count) octets, ATT_MTU is \(mtu)")
        }
        indicationQueue.append(PendingIndication(handle: handle, bytes: bytes))
        return startNextIndication(now: now)
    }

    /// Answers the request last handed up with ``ATTBearerAction/request(_:)``: `response` must be its response
    /// PDU or an Error Response naming its opcode, and fit ATT_MTU. Then hands up the next queued request, if any.
    public mutating func respond(_ response: ATTPDU, now: StackInstant) throws(ATTBearerError) -> [ATTBearerAction] {
        if let closedReason { throw ATTBearerError(.bearerClosed, closedReason) }
        guard let request = incomingInProgress else {
            throw ATTBearerError(.invalidOperation, "no request from the peer awaits an answer")
        }
        let matches: Bool
        if case .errorResponse(let opcode, _, _) = response {
            matches = opcode == request.opcode
        } else {
            matches = request.opcode.responseOpcode == response.opcode
        }
        guard matches else {
            throw ATTBearerError(.invalidOperation, "\(response.opcode) does not answer \(request.opcode)")
        }
        let bytes = response.encode()
        guard bytes.count <= mtu else {
            throw ATTBearerError(.exceedsMTU, "\(response.opcode) has \(bytes.count) octets, ATT_MTU is \(mtu)")
        }
        incomingInProgress = nil
        return [.send(bytes)] + startNextIncoming()
    }

    // MARK: - Input

    /// Handles the payload of one L2CAP frame received on the ATT channel.
    public mutating func receive(_ bytes: [UInt8], now: StackInstant) -> [ATTBearerAction] {
        receive(bytes[...], now: now)
    }

    /// Handles the payload of one L2CAP frame received on the ATT channel, as a slice of the frame.
    public mutating func receive(_ bytes: ArraySlice<UInt8>, now: StackInstant) -> [ATTBearerAction] {
        guard isOpen, let first = bytes.first else { return [] }
        let opcode = ATTOpcode(rawValue: first)
        switch ATTServerInput(classifying: bytes) {
        case .respond(let errorResponse):
            return queueIncoming(.answer(errorResponse.encode(), newMTU: nil))
        case .ignore(let reason):
            // A malformed response is a protocol violation when it could answer our request in flight; every
            // other undecodable PDU (commands, notifications, stray responses) is dropped.
            if opcode.kind == .response, outstanding != nil {
                return die(.invalidResponse(opcode: opcode, reason: reason), error: ATTBearerError(.bearerClosed, "invalid response: \(reason)"))
            }
            return []
        case .process(let pdu):
            return process(pdu, now: now)
        }
    }

    private mutating func process(_ pdu: ATTPDU, now: StackInstant) -> [ATTBearerAction] {
        switch pdu.kind {
        case .request:
            if case .exchangeMTURequest = pdu, isEnhanced {
                // §3.4.2.1: not sent on an Enhanced ATT bearer; ATT_MTU comes from L2CAP.
                let answer = ATTPDU.errorResponse(requestOpcode: .exchangeMTURequest, handle: 0, error: .requestNotSupported)
                return queueIncoming(.answer(answer.encode(), newMTU: nil))
            }
            if case .exchangeMTURequest(let clientRxMTU) = pdu {
                let answer = ATTPDU.exchangeMTUResponse(serverRxMTU: UInt16(clamping: preferredMTU)).encode()
                let newMTU = mtuExchanged ? nil : ATTMTU.negotiated(clientRxMTU: clientRxMTU, serverRxMTU: UInt16(clamping: preferredMTU))
                return queueIncoming(.answer(answer, newMTU: newMTU))
            }
            return queueIncoming(.request(pdu))
        case .response:
            return handleResponse(pdu, now: now)
        case .command:
            return [.command(pdu)]
        case .notification:
            return [.notification(pdu)]
        case .indication:
            unconfirmedIndications += 1
            return [.indication(pdu)]
        case .confirmation:
            guard let indication = indicationOutstanding else { return [] }
            indicationOutstanding = nil
            confirmationDeadline = nil
            return [.indicationConfirmed(handle: indication.handle)] + startNextIndication(now: now)
        }
    }

    private mutating func handleResponse(_ pdu: ATTPDU, now: StackInstant) -> [ATTBearerAction] {
        guard let request = outstanding else {
            return die(.unexpectedResponse(opcode: pdu.opcode), error: ATTBearerError(.bearerClosed, "unexpected response \(pdu.opcode)"))
        }
        let result: Result<ATTPDU, ATTBearerError>
        var actions: [ATTBearerAction] = []
        if case .errorResponse(let requestOpcode, let handle, let error) = pdu {
            guard requestOpcode == request.pdu.opcode else {
                return die(.unexpectedResponse(opcode: pdu.opcode), error: ATTBearerError(.bearerClosed, "Error Response for \(requestOpcode) while \(request.pdu.opcode) is outstanding"))
            }
            result = .failure(ATTBearerError(.errorResponse, "\(request.pdu.opcode) failed", attError: error, handle: handle))
        } else {
            guard request.pdu.opcode.responseOpcode == pdu.opcode else {
                return die(.unexpectedResponse(opcode: pdu.opcode), error: ATTBearerError(.bearerClosed, "\(pdu.opcode) while \(request.pdu.opcode) is outstanding"))
            }
            if case .exchangeMTUResponse(let serverRxMTU) = pdu, !mtuExchanged {
                mtuExchanged = true
                mtu = ATTMTU.negotiated(clientRxMTU: UInt16(clamping: preferredMTU), serverRxMTU: serverRxMTU)
                actions.append(.mtuChanged(mtu))
            }
            result = .success(pdu)
        }
        outstanding = nil
        transactionDeadline = nil
        actions.append(.response(request.id, result))
        return actions + startNextRequest(now: now)
    }

    // MARK: - Time

    /// Fires the transaction timeout when due: the bearer dies, every request and indication fails, and the
    /// owner is asked to disconnect the link (§3.3.3).
    public mutating func handleTimeout(now: StackInstant) -> [ATTBearerAction] {
        guard isOpen else { return [] }
        if let deadline = transactionDeadline, deadline <= now {
            return die(.transactionTimeout, error: ATTBearerError(.transactionTimeout, "no response within 30 s"))
        }
        if let deadline = confirmationDeadline, deadline <= now {
            return die(.confirmationTimeout, error: ATTBearerError(.transactionTimeout, "no confirmation within 30 s"))
        }
        return []
    }

    /// Ends the bearer because the link is gone: everything pending fails with
    /// ``ATTBearerError/Code/bearerClosed``; no disconnection is asked for.
    public mutating func close(reason: String) -> [ATTBearerAction] {
        guard isOpen else { return [] }
        return failEverything(ATTBearerError(.bearerClosed, reason), reason: reason)
    }

    // MARK: - Internals

    private mutating func die(_ reason: ATTBearerDisconnectReason, error: ATTBearerError) -> [ATTBearerAction] {
        failEverything(error, reason: reason.description) + [.disconnectLink(reason)]
    }

    private mutating func failEverything(_ error: ATTBearerError, reason: String) -> [ATTBearerAction] {
        closedReason = reason
        var actions: [ATTBearerAction] = []
        if let outstanding { actions.append(.response(outstanding.id, .failure(error))) }
        for request in requestQueue { actions.append(.response(request.id, .failure(error))) }
        if let indicationOutstanding { actions.append(.indicationFailed(handle: indicationOutstanding.handle, error)) }
        for indication in indicationQueue { actions.append(.indicationFailed(handle: indication.handle, error)) }
        outstanding = nil
        requestQueue = []
        transactionDeadline = nil
        indicationOutstanding = nil
        indicationQueue = []
        confirmationDeadline = nil
        incomingInProgress = nil
        incomingQueue = []
        unconfirmedIndications = 0
        return actions
    }

    private mutating func startNextRequest(now: StackInstant) -> [ATTBearerAction] {
        var actions: [ATTBearerAction] = []
        while outstanding == nil, !requestQueue.isEmpty {
            let next = requestQueue.removeFirst()
            let bytes = next.pdu.encode()
            guard bytes.count <= mtu else {
                actions.append(.response(next.id, .failure(ATTBearerError(.exceedsMTU, "\(next.pdu.opcode) has \(bytes.count) octets, ATT_MTU is \(mtu)"))))
                continue
            }
            outstanding = next
            transactionDeadline = now + Self.transactionTimeout
            actions.append(.send(bytes))
        }
        return actions
    }

    private mutating func startNextIndication(now: StackInstant) -> [ATTBearerAction] {
        guard indicationOutstanding == nil, !indicationQueue.isEmpty else { return [] }
        let next = indicationQueue.removeFirst()
        indicationOutstanding = next
        confirmationDeadline = now + Self.transactionTimeout
        return [.send(next.bytes)]
    }

    private mutating func queueIncoming(_ item: IncomingRequest) -> [ATTBearerAction] {
        guard incomingInProgress == nil, incomingQueue.isEmpty else {
            guard incomingQueue.count < Self.maximumPipelinedRequests else {
                return die(.tooManyPipelinedRequests, error: ATTBearerError(.bearerClosed, "the peer pipelined too many requests"))
            }
            incomingQueue.append(item)
            return []
        }
        incomingQueue.append(item)
        return startNextIncoming()
    }

    /// Hands up the next queued request, sending the answers the bearer made itself on the way.
    private mutating func startNextIncoming() -> [ATTBearerAction] {
        var actions: [ATTBearerAction] = []
        while incomingInProgress == nil, !incomingQueue.isEmpty {
            switch incomingQueue.removeFirst() {
            case .answer(let bytes, let newMTU):
                actions.append(.send(bytes))
                if let newMTU, !mtuExchanged {
                    mtuExchanged = true
                    mtu = newMTU
                    actions.append(.mtuChanged(newMTU))
                }
            case .request(let pdu):
                incomingInProgress = pdu
                actions.append(.request(pdu))
            }
        }
        return actions
    }
}
