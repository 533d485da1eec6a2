import ATT
import BluetoothCore

/// One write of an Execute Write the application answers (Core 5.4 Vol 3 Part F §3.4.6): consecutive prepared
/// parts of one handle are merged, so a long write arrives whole at its first offset.
public struct GATTPreparedWrite: Hashable, Sendable, Codable {
    public var handle: UInt16
    public var offset: Int
    public var value: [UInt8]

    public init(handle: UInt16, offset: Int, value: [UInt8]) {
        self.handle = handle
        self.offset = offset
        self.value = value
    }
}

/// A request of a client that the application answers later (CoreBluetooth's `didReceiveRead` /
/// `didReceiveWrite` + `respond(to:withResult:)`): a Read or Read Blob Request (§3.4.4.3, §3.4.4.5), a Write
/// Request (§3.4.5.1) or an Execute Write Request with its prepared writes (§3.4.6.3) on a deferred value.
public struct GATTPendingRequest: Hashable, Sendable, Codable {
    public enum Kind: Hashable, Sendable, Codable {
        /// Read (offset 0) or Read Blob: answer the value **from `offset`**; the server cuts it to the response.
        case read(handle: UInt16, offset: Int)
        /// Write Request of a whole value.
        case write(handle: UInt16, value: [UInt8])
        /// Execute Write of the queued writes to deferred values, in order (writes to stored values of the same
        /// batch were validated and are applied when the application answers success).
        case executeWrite([GATTPreparedWrite])
    }

    /// Unique per server; answer with ``GATTServer/respond(toDeferred:on:result:)``.
    public var id: UInt64
    public var connection: GATTConnectionID
    public var kind: Kind
    /// The ATT bearer the request came on (its answer goes back on it).
    public var bearer: GATTBearerID

    public init(id: UInt64, connection: GATTConnectionID, kind: Kind, bearer: GATTBearerID = .unenhanced) {
        self.id = id
        self.connection = connection
        self.kind = kind
        self.bearer = bearer
    }
}

/// Which attribute values the application answers itself, later, and how it hears of requests.
///
/// The server still checks existence, permissions (the link's security), value lengths and, for Execute Write,
/// the whole batch before deferring. Reads and writes of these values by other procedures (Read By Type, Read
/// Multiple, Write Command) keep using the attribute's own value handlers. `handler` is called synchronously
/// from ``GATTServer/handleRequest(_:from:)`` on the owner's executor and must not call back into the server;
/// it usually forwards the request to the application's queue.
public struct GATTDeferral: Sendable {
    public var handles: Set<UInt16>
    public var handler: @Sendable (GATTPendingRequest) -> Void

    public init(handles: Set<UInt16>, handler: @escaping @Sendable (GATTPendingRequest) -> Void) {
        self.handles = handles
        self.handler = handler
    }
}

extension GATTServer {
    struct DeferredState: Sendable {
        var request: GATTPendingRequest
        var opcode: ATTOpcode
        /// Writes to stored values of the same Execute Write, applied on success.
        var stored: [PreparedWrite]
    }

    /// Requests handed to the application and not answered yet (leak checks).
    public var pendingDeferredRequestCount: Int {
        connectionIDs.reduce(0) { $0 + deferredStates($1).count }
    }

    /// The request of `connection` awaiting the application's answer, if any (the oldest when several bearers
    /// have one).
    public func deferredRequest(for connection: GATTConnectionID) -> GATTPendingRequest? {
        deferredStates(connection).values.map(\.request).min { $0.id < $1.id }
    }

    /// The request `id` of `connection` awaiting the application's answer (its ``GATTPendingRequest/bearer`` says
    /// where the answer goes).
    public func deferredRequest(id: UInt64, on connection: GATTConnectionID) -> GATTPendingRequest? {
        deferredStates(connection).values.first { $0.request.id == id }?.request
    }

    /// Answers a deferred request: for reads the value from the request's offset (cut to ATT_MTU − 1) or an ATT
    /// error; for writes success (empty value) or an error. A deferred write of a Client Characteristic
    /// Configuration descriptor takes effect (the subscription changes, with its event) when answered success. Returns the reply for the bearer, nil when `id` is not
    /// the request awaiting an answer on `connection` (already answered, or the connection is gone).
    public mutating func respond(toDeferred id: UInt64, on connection: GATTConnectionID,
                                 result: Result<[UInt8], GATTAttributeError>) -> GATTServerReply? {
        guard let state = deferredStates(connection).values.first(where: { $0.request.id == id }) else { return nil }
        let bearer = state.request.bearer
        setDeferredState(nil, connection, bearer)
        let mtu = mtu(for: connection, bearer: bearer)
        func fail(_ handle: UInt16, _ code: ATTErrorCode) -> GATTServerReply {
            GATTServerReply(response: .errorResponse(requestOpcode: state.opcode, handle: handle, error: code))
        }
        switch (state.request.kind, result) {
        case (.read(let handle, _), .failure(let error)), (.write(let handle, _), .failure(let error)):
            return fail(handle, error.code)
        case (.read, .success(let value)):
            let part = cut(value, mtu: mtu)
            return GATTServerReply(response: state.opcode == .readBlobRequest ? .readBlobResponse(partValue: part) : .readResponse(value: part))
        case (.write(let handle, let value), .success):
            // A CCCD the application answers for (Android's BluetoothGattServer does): its value is still the
            // server's, per client, so notifications follow the subscription once the application accepts it.
            if case .clientConfiguration? = database.attribute(handle)?.storage {
                switch write(handle, offset: 0, value: value, kind: .request, connection) {
                case .success(let events): return GATTServerReply(response: .writeResponse, events: events)
                case .failure(let error): return fail(handle, error.code)
                }
            }
            return GATTServerReply(response: .writeResponse)
        case (.executeWrite(let writes), .failure(let error)):
            return fail(writes.first?.handle ?? 0, error.code)
        case (.executeWrite, .success):
            var events: [GATTServerEvent] = []
            for entry in state.stored {
                if case .success(let new) = write(entry.handle, offset: entry.offset, value: entry.value, kind: .prepared, connection) {
                    events += new
                }
            }
            return GATTServerReply(response: .executeWriteResponse, events: events)
        }
    }

    /// Carries the deferral, its id counter and the requests awaiting answers over from the server this one
    /// replaces (a database change while requests are pending).
    public mutating func adoptDeferredRequests(from old: GATTServer) {
        deferral = old.deferral
        nextDeferredID = old.nextDeferredID
        for id in old.connectionIDs {
            for (bearer, state) in old.deferredStates(id) { setDeferredState(state, id, bearer) }
        }
    }

    // MARK: - Internals

    /// The deferred reply when `request` is for a deferred value and passes the server's checks; nil to let
    /// the ordinary path answer (including its errors).
    mutating func deferIfAsked(_ request: ATTPDU, from connection: GATTConnectionID, on bearer: GATTBearerID) -> GATTServerReply? {
        guard let deferral, !deferral.handles.isEmpty else { return nil }
        let security = securityOf(connection)
        switch request {
        case .readRequest(let handle), .readBlobRequest(let handle, _):
            guard deferral.handles.contains(handle), let attribute = database.attribute(handle),
                  attribute.permissions.readError(for: security) == nil else { return nil }
            var offset = 0
            if case .readBlobRequest(_, let blobOffset) = request { offset = Int(blobOffset) }
            return pend(.read(handle: handle, offset: offset), opcode: request.opcode, stored: [], connection, bearer)
        case .writeRequest(let handle, let value):
            guard deferral.handles.contains(handle), let attribute = database.attribute(handle),
                  checkWrite(handle, connection) == nil, value.count <= attribute.maximumLength else { return nil }
            return pend(.write(handle: handle, value: value), opcode: request.opcode, stored: [], connection, bearer)
        case .executeWriteRequest(let flags):
            let queue = preparedQueue(connection)
            guard flags == .write, queue.contains(where: { deferral.handles.contains($0.handle) }) else { return nil }
            clearPreparedQueue(connection)
            var merged: [PreparedWrite] = []
            for entry in queue {
                if let last = merged.last, last.handle == entry.handle, last.offset + last.value.count == entry.offset {
                    merged[merged.count - 1].value += entry.value
                } else {
                    merged.append(entry)
                }
            }
            var scratch = self
            for entry in merged {
                let fail = { (code: ATTErrorCode) in
                    GATTServerReply(response: .errorResponse(requestOpcode: .executeWriteRequest, handle: entry.handle, error: code))
                }
                if let error = scratch.checkWrite(entry.handle, connection) { return fail(error) }
                if deferral.handles.contains(entry.handle) {
                    let maximum = database.attribute(entry.handle)?.maximumLength ?? 0
                    if entry.offset > maximum { return fail(.invalidOffset) }
                    if entry.offset + entry.value.count > maximum { return fail(.invalidAttributeValueLength) }
                } else if case .failure(let error) = scratch.write(entry.handle, offset: entry.offset, value: entry.value,
                                                                    kind: .preparedValidation, connection) {
                    return fail(error.code)
                }
            }
            let writes = merged.filter { deferral.handles.contains($0.handle) }
                .map { GATTPreparedWrite(handle: $0.handle, offset: $0.offset, value: $0.value) }
            return pend(.executeWrite(writes), opcode: .executeWriteRequest,
                        stored: merged.filter { !deferral.handles.contains($0.handle) }, connection, bearer)
        default:
            return nil
        }
    }

    private mutating func pend(_ kind: GATTPendingRequest.Kind, opcode: ATTOpcode, stored: [PreparedWrite],
                               _ connection: GATTConnectionID, _ bearer: GATTBearerID) -> GATTServerReply {
        nextDeferredID &+= 1
        let request = GATTPendingRequest(id: nextDeferredID, connection: connection, kind: kind, bearer: bearer)
        setDeferredState(DeferredState(request: request, opcode: opcode, stored: stored), connection, bearer)
        deferral?.handler(request)
        return GATTServerReply(response: .handleValueConfirmation, deferred: request)
    }
}
