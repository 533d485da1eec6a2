public import ATT
import BluetoothCore
import DequeModule

/// Signs a Signed Write Command (Core 5.4 Vol 3 Part H §2.4.5): given the message (opcode ‖ handle ‖ value),
/// returns the 12-octet Authentication Signature (SignCounter ‖ MAC) with the local CSRK and counter, or nil when
/// no signing key exists. The closure owns the sign counter. (GATT cannot depend on BluetoothCrypto; the Host
/// builds this closure from it.)
public typealias GATTClientSigner = @Sendable (_ message: [UInt8]) -> ATTAuthenticationSignature?

/// The GATT client procedures (Core 5.4 Vol 3 Part G §4) as a sans-I/O state machine over an ATT bearer.
///
/// Design note (the client half of the GATT module). `GATTClient` runs the client procedures of Vol 3 Part G §4
/// (service, included service, characteristic and descriptor discovery; reads, long reads, read by UUID, read
/// multiple and read multiple variable; write without response, signed write, write, long and reliable writes;
/// Client Characteristic Configuration writes) as a plain struct that turns a queue of procedures into ATT
/// requests, and ATT responses into the next request or a typed result. It owns no bearer, no timer and no
/// clock: it sits on an ATT bearer written separately, which does the MTU exchange, serialises transactions and
/// runs the 30 s transaction timeout (Vol 3 Part F §3.3.3). The contract with that bearer:
/// - at most one request is outstanding (``GATTClientAction/sendRequest(_:)``); the next is emitted only after
///   the previous one's response or Error Response is fed back with ``receive(response:)`` (or
///   ``receive(serverPDU:)``, which also routes notifications and indications); commands
///   (``GATTClientAction/sendCommand(_:)``) are emitted in queue order and complete at once;
/// - the owner sets ``mtu`` after the exchange; every request is sized with the MTU current when it is built;
/// - the owner reports the end of the bearer with ``bearerFailed(_:)``: the current and all queued procedures
///   fail with ``GATTClientError/bearerFailed(_:)``, and later ones fail as soon as they are enqueued;
/// - notifications and indications pass through as actions in arrival order; the owner confirms indications
///   through the bearer.
///
/// Procedures complete in enqueue order. Every continuation of a discovery strictly advances its start handle
/// and every response is checked against its request (opcode, handle range and order, Prepare Write echoes), so
/// a hostile server cannot make the client loop or accept garbage: the procedure fails with
/// ``GATTClientError/invalidResponse(_:)`` and the next one runs. State: owned by whoever owns the connection
/// (the Host), and mutated only on that stack's serial executor; no locks, no threads, no I/O.
///
/// Drive it so:
/// ```swift
/// var client = GATTClient(mtu: 23)
/// let (id, actions) = client.enqueue(.discoverAllPrimaryServices)   // perform actions
/// // for each ATT PDU the bearer receives from the server:
/// actions = client.receive(serverPDU: pdu)                            // perform actions
/// // .sendRequest(pdu) -> bearer; .complete(id, result) -> caller; .notification / .indication -> app
/// ```
/// It never sends a second request before the first is answered, and never holds a timer: the bearer does
/// timeouts and reports them through ``bearerFailed(_:)``.
public struct GATTClient: Sendable {
    /// ATT_MTU of the bearer (values below 23 are used as 23). Set it after the MTU exchange.
    public var mtu: Int
    /// Signs Signed Write Commands; nil fails them with ``GATTClientError/signingUnavailable``.
    public var signer: GATTClientSigner?

    private struct Running: Sendable {
        var id: GATTOperationID
        var machine: any GATTClientProcedureMachine
        var outstanding: ATTPDU
    }

    private var queue: Deque<(id: GATTOperationID, procedure: GATTProcedure)> = []
    private var running: Running?
    private var lastID: UInt64 = 0
    /// Why the bearer ended, once it has.
    public private(set) var bearerFailure: GATTClientBearerFailure?
    /// Responses that arrived with no request outstanding (dropped; the bearer should not let these through).
    public private(set) var strayResponseCount = 0

    public init(mtu: Int = ATTMTU.leDefault, signer: GATTClientSigner? = nil) {
        self.mtu = mtu
        self.signer = signer
    }

    /// Procedures not yet complete: the one awaiting a response plus those queued behind it.
    public var pendingProcedureCount: Int { queue.count + (running == nil ? 0 : 1) }
    /// The request whose response the client waits for, if any.
    public var outstandingRequest: ATTPDU? { running?.outstanding }
    /// No procedure running or queued.
    public var isIdle: Bool { running == nil && queue.isEmpty }

    private var context: GATTClientContext { GATTClientContext(mtu: ATTMTU.clamped(mtu), signer: signer) }

    /// Queues a procedure; it starts at once when nothing else runs. Returns its identifier and the actions to
    /// perform now (its first request, or its completion when it needs none).
    public mutating func enqueue(_ procedure: GATTProcedure) -> (GATTOperationID, [GATTClientAction]) {
        lastID += 1
        let id = GATTOperationID(rawValue: lastID)
        if let bearerFailure {
            return (id, [.complete(id, .failure(.bearerFailed(bearerFailure)))])
        }
        queue.append((id, procedure))
        var actions: [GATTClientAction] = []
        startNext(&actions)
        return (id, actions)
    }

    /// Feeds the server's answer to the outstanding request: its response, or an Error Response. A PDU that does
    /// not answer it fails the current procedure with ``GATTClientError/unexpectedResponse(received:expected:)``
    /// (the next one then starts). With no request outstanding the PDU is dropped and counted.
    public mutating func receive(response: ATTPDU) -> [GATTClientAction] {
        guard var current = running else {
            strayResponseCount += 1
            return []
        }
        let requestOpcode = current.outstanding.opcode
        let expected = requestOpcode.responseOpcode ?? .errorResponse
        let context = self.context
        let step: GATTClientStep
        if case .errorResponse(let answered, let handle, let code) = response {
            if answered == requestOpcode {
                step = current.machine.receiveError(code, handle: handle, context)
            } else {
                step = .fail(.invalidResponse("an Error Response for \(answered) answers \(requestOpcode)"))
            }
        } else if response.opcode != expected {
            step = .fail(.unexpectedResponse(received: response.opcode, expected: expected))
        } else {
            do {
                try response.validate()
                step = current.machine.receive(response, context)
            } catch {
                step = .fail(.invalidResponse(error.description))
            }
        }
        var actions: [GATTClientAction] = []
        running = nil
        apply(step, id: current.id, machine: &current.machine, &actions)
        startNext(&actions)
        return actions
    }

    /// A Handle Value Notification from the server: passed to the owner.
    public mutating func receive(notification handle: UInt16, value: [UInt8]) -> [GATTClientAction] {
        [.notification(handle: handle, value: value)]
    }

    /// A Handle Value Indication from the server: passed to the owner, who confirms it through the bearer.
    public mutating func receive(indication handle: UInt16, value: [UInt8]) -> [GATTClientAction] {
        [.indication(handle: handle, value: value)]
    }

    /// A Multiple Handle Value Notification: one notification action per tuple, in order.
    public mutating func receive(multipleNotification: ATTMultipleHandleValueNotification) -> [GATTClientAction] {
        multipleNotification.tuples.map { .notification(handle: $0.handle, value: $0.value) }
    }

    /// Routes any PDU received from the server: notifications and indications to the owner, everything else as
    /// the answer to the outstanding request.
    public mutating func receive(serverPDU pdu: ATTPDU) -> [GATTClientAction] {
        switch pdu {
        case .handleValueNotification(let handle, let value): return receive(notification: handle, value: value)
        case .handleValueIndication(let handle, let value): return receive(indication: handle, value: value)
        case .multipleHandleValueNotification(let list): return receive(multipleNotification: list)
        default: return receive(response: pdu)
        }
    }

    /// The bearer ended (transaction timeout, disconnection): the current and all queued procedures fail, in
    /// order, and every later one fails as soon as it is enqueued.
    public mutating func bearerFailed(_ failure: GATTClientBearerFailure) -> [GATTClientAction] {
        if bearerFailure == nil { bearerFailure = failure }
        var actions: [GATTClientAction] = []
        if let current = running {
            actions.append(.complete(current.id, .failure(.bearerFailed(failure))))
            running = nil
        }
        for pending in queue { actions.append(.complete(pending.id, .failure(.bearerFailed(failure)))) }
        queue.removeAll()
        return actions
    }

    /// Removes the procedures queued behind the running one (not started: nothing of them was sent) and returns
    /// them in order, so that the owner can run them on another ATT bearer of the connection (an Enhanced ATT
    /// bearer closing, Vol 3 Part F §3.2.11). The running procedure is left alone.
    public mutating func takeQueuedProcedures() -> [(id: GATTOperationID, procedure: GATTProcedure)] {
        defer { queue.removeAll() }
        return Array(queue)
    }

    /// Fails the procedure whose request is outstanding with `error` (its request was never answered because the
    /// bearer refused it) and starts the next one. Nothing when no request is outstanding.
    public mutating func failOutstandingRequest(_ error: GATTClientError) -> [GATTClientAction] {
        guard let current = running else { return [] }
        running = nil
        var actions: [GATTClientAction] = [.complete(current.id, .failure(error))]
        startNext(&actions)
        return actions
    }

    private mutating func startNext(_ actions: inout [GATTClientAction]) {
        while running == nil, !queue.isEmpty {
            let next = queue.removeFirst()
            var machine = next.procedure.makeMachine()
            let step = machine.start(context)
            apply(step, id: next.id, machine: &machine, &actions)
        }
    }

    private mutating func apply(_ step: GATTClientStep, id: GATTOperationID, machine: inout any GATTClientProcedureMachine, _ actions: inout [GATTClientAction]) {
        switch step {
        case .request(let pdu):
            running = Running(id: id, machine: machine, outstanding: pdu)
            actions.append(.sendRequest(pdu))
        case .commandThenFinish(let pdu):
            actions.append(.sendCommand(pdu))
            actions.append(.complete(id, .success(.written)))
        case .finish(let result):
            actions.append(.complete(id, result))
        }
    }
}
