public import ATT
import BluetoothCore

/// The GATT server of one device, sans-I/O (Core 5.4 Vol 3 Part G §4: every server side of the procedures;
/// Vol 3 Part F §3.4 for the PDUs and their errors).
///
/// One instance serves every connection: the database (and its stored values) is shared; each connection has its
/// own CCCD values, Client Supported Features, prepare queue, ATT_MTU and security state. The owner keeps one
/// `ATTBearer` per connection, hands each `.request` to ``handleRequest(_:from:)`` and sends back the reply with
/// the bearer's `respond(_:now:)`; `.command` goes to ``handleCommand(_:from:)``; `.mtuChanged` to
/// ``setMTU(_:for:)``. Values pushed by the application (``notify(handle:value:)``, ``serviceChanged(_:)``)
/// come back as ``GATTServerOutbound`` PDUs for the bearers of the subscribed connections.
///
/// Responses are built with the ATT module's packing builders, so they fill ATT_MTU the way §3.4 asks.
public struct GATTServer: Sendable {
    struct PreparedWrite: Sendable {
        var handle: UInt16
        var offset: Int
        var value: [UInt8]
    }

    struct Connection: Sendable {
        var mtu = ATTMTU.leDefault
        var security = GATTLinkSecurity.open
        var clientConfigurations: [UInt16: UInt16] = [:]
        var clientFeatures: UInt8 = 0
        var prepareQueue: [PreparedWrite] = []
        /// The ATT_MTU of each Enhanced ATT bearer of the connection (the unenhanced one is `mtu`).
        var enhancedMTUs: [GATTBearerID: Int] = [:]
        /// The enhanced bearers notifications may go on (those the client opened).
        var notificationBearers: Set<GATTBearerID> = []
        /// The requests the application answers later (``GATTDeferral``), at most one per bearer: ATT is
        /// sequential on each bearer.
        var deferred: [GATTBearerID: DeferredState] = [:]

        func mtu(_ bearer: GATTBearerID) -> Int {
            bearer.isEnhanced ? enhancedMTUs[bearer] ?? ATTMTU.leDefault : mtu
        }

        /// Where notifications and indications go: the first Enhanced ATT bearer when there is one (Vol 3 Part G
        /// §4.10, §4.11 allow any bearer; one bearer keeps them in order), else the unenhanced bearer.
        var notificationBearer: GATTBearerID { notificationBearers.min() ?? .unenhanced }
    }

    /// The database, with the stored values as last written.
    public private(set) var database: GATTDatabase
    /// The Client Characteristic Configuration descriptor of each characteristic value, by the value's handle − 1
    /// (0: none), found once: the database's layout is fixed for the server's life (only stored values change),
    /// and every notification asks.
    private let cccdHandles: [UInt16]
    private var connections: [GATTConnectionID: Connection] = [:]
    /// Checks Signed Write Commands; nil: every signed write on an unencrypted link is dropped.
    public var signatureVerifier: GATTSignatureVerifier?
    /// How many Prepare Write Requests a connection may queue before *Prepare Queue Full*.
    public var maximumPreparedWrites: Int
    /// Attribute values whose reads and writes the application answers later (`GATTServer+Deferred.swift`).
    public var deferral: GATTDeferral?
    var nextDeferredID: UInt64 = 0

    public init(database: GATTDatabase, maximumPreparedWrites: Int = 128, signatureVerifier: GATTSignatureVerifier? = nil) {
        self.database = database
        cccdHandles = Self.clientConfigurationHandles(of: database)
        self.maximumPreparedWrites = maximumPreparedWrites
        self.signatureVerifier = signatureVerifier
    }

    // MARK: - Connections

    /// Starts serving `connection` (a connection the server has not seen starts at MTU 23, unencrypted).
    public mutating func connect(_ connection: GATTConnectionID, security: GATTLinkSecurity = .open, mtu: Int = ATTMTU.leDefault) {
        connections[connection] = Connection(mtu: ATTMTU.clamped(mtu), security: security)
    }

    /// Forgets `connection`: its prepare queue and CCCD values are dropped.
    public mutating func disconnect(_ connection: GATTConnectionID) {
        connections[connection] = nil
    }

    /// The ATT_MTU of a bearer of `connection` changed (the bearer's `.mtuChanged`; for an Enhanced ATT bearer,
    /// an L2CAP reconfiguration).
    public mutating func setMTU(_ mtu: Int, for connection: GATTConnectionID, bearer: GATTBearerID = .unenhanced) {
        if bearer.isEnhanced {
            guard connections[connection]?.enhancedMTUs[bearer] != nil else { return }
            connections[connection]?.enhancedMTUs[bearer] = max(mtu, ATTMTU.leDefault)
        } else {
            connections[connection, default: Connection()].mtu = ATTMTU.clamped(mtu)
        }
    }

    /// An Enhanced ATT bearer of `connection` opened with this ATT_MTU (Vol 3 Part F §3.2.11). With
    /// `notifications` (the client opened it, so its client listens there), the connection's notifications and
    /// indications go on its first such bearer from now on.
    public mutating func openBearer(_ bearer: GATTBearerID, mtu: Int, for connection: GATTConnectionID,
                                    notifications: Bool = true) {
        guard bearer.isEnhanced else { return }
        connections[connection, default: Connection()].enhancedMTUs[bearer] = max(mtu, ATTMTU.leDefault)
        if notifications { connections[connection]?.notificationBearers.insert(bearer) }
    }

    /// An Enhanced ATT bearer closed: its deferred request (if any) is dropped.
    public mutating func closeBearer(_ bearer: GATTBearerID, for connection: GATTConnectionID) {
        guard bearer.isEnhanced, connections[connection] != nil else { return }
        connections[connection]?.enhancedMTUs[bearer] = nil
        connections[connection]?.notificationBearers.remove(bearer)
        connections[connection]?.deferred[bearer] = nil
    }

    /// The Enhanced ATT bearers of `connection`, in order.
    public func enhancedBearers(for connection: GATTConnectionID) -> [GATTBearerID] {
        connections[connection]?.enhancedMTUs.keys.sorted() ?? []
    }

    /// The security of `connection` changed (encryption, pairing, application authorization).
    public mutating func setSecurity(_ security: GATTLinkSecurity, for connection: GATTConnectionID) {
        connections[connection, default: Connection()].security = security
    }

    /// Restores the CCCD values of a bonded client (Core 5.4 Vol 3 Part G §3.3.3.3: they persist across
    /// connections for bonded devices).
    public mutating func setClientConfiguration(_ configuration: GATTClientConfiguration, descriptor handle: UInt16, for connection: GATTConnectionID) {
        connections[connection, default: Connection()].clientConfigurations[handle] = configuration.rawValue
    }

    /// Whether the client may receive Multiple Handle Value Notifications (it set bit 2 of Client Supported
    /// Features, or the owner said so).
    public mutating func setMultipleNotificationsSupported(_ supported: Bool, for connection: GATTConnectionID) {
        if supported {
            connections[connection, default: Connection()].clientFeatures |= 0x04
        } else {
            connections[connection, default: Connection()].clientFeatures &= ~0x04
        }
    }

    /// The CCCD value `connection` wrote for the characteristic whose value handle is `valueHandle`.
    public func clientConfiguration(valueHandle: UInt16, for connection: GATTConnectionID) -> GATTClientConfiguration {
        guard let descriptor = cccdHandle(forValue: valueHandle) else { return [] }
        return GATTClientConfiguration(rawValue: connections[connection]?.clientConfigurations[descriptor] ?? 0)
    }

    /// Connections the server holds state for.
    public var connectionCount: Int { connections.count }
    /// Prepared writes queued by `connection` (leak checks).
    public func pendingPreparedWriteCount(for connection: GATTConnectionID) -> Int {
        connections[connection]?.prepareQueue.count ?? 0
    }
    /// Prepared writes queued by every connection.
    public var pendingPreparedWriteCount: Int { connections.values.reduce(0) { $0 + $1.prepareQueue.count } }

    /// The ATT_MTU of a bearer of `connection` (the unenhanced one by default).
    public func mtu(for connection: GATTConnectionID, bearer: GATTBearerID = .unenhanced) -> Int {
        connections[connection]?.mtu(bearer) ?? ATTMTU.leDefault
    }

    // Per-bearer state for the deferred requests (`GATTServer+Deferred.swift`).
    var connectionIDs: [GATTConnectionID] { Array(connections.keys) }
    func deferredStates(_ connection: GATTConnectionID) -> [GATTBearerID: DeferredState] {
        connections[connection]?.deferred ?? [:]
    }
    mutating func setDeferredState(_ state: DeferredState?, _ connection: GATTConnectionID, _ bearer: GATTBearerID) {
        if state == nil, connections[connection] == nil { return }
        connections[connection, default: Connection()].deferred[bearer] = state
    }
    func securityOf(_ connection: GATTConnectionID) -> GATTLinkSecurity { connections[connection]?.security ?? .open }
    func preparedQueue(_ connection: GATTConnectionID) -> [PreparedWrite] { connections[connection]?.prepareQueue ?? [] }
    mutating func clearPreparedQueue(_ connection: GATTConnectionID) { connections[connection]?.prepareQueue = [] }

    // MARK: - Values pushed by the application

    /// Sets the stored value of `handle` (the application's own write, no permission check) and returns the
    /// notifications and indications for the connections subscribed to it (values cut to ATT_MTU − 3).
    public mutating func updateValue(_ value: [UInt8], handle: UInt16) -> [GATTServerOutbound] {
        storeValue(value, handle: handle)
        return notify(handle: handle, value: value)
    }

    /// Sets the stored value of `handle` (the application's own write, no permission check; values the
    /// application serves itself are left alone), cut to 512 octets (§3.2.9), and notifies no one.
    /// ``updateValue(_:handle:)`` is this followed by ``notify(handle:value:)``; an owner that looks at the
    /// notifications before it commits to the update (send-queue readiness) calls the two itself, so the PDUs
    /// are built once.
    public mutating func storeValue(_ value: [UInt8], handle: UInt16) {
        guard case .bytes? = database.attribute(handle)?.storage else { return }
        let limit = ATTMTU.maximumAttributeValueLength
        database.setStorage(.bytes(value.count <= limit ? value : Array(value.prefix(limit))), at: handle)
    }

    /// Notifications or indications of `value` for every connection subscribed to the characteristic whose value
    /// handle is `handle` (indication preferred when a client enabled both), cut to ATT_MTU − 3 (§4.10, §4.11),
    /// in connection order.
    public func notify(handle: UInt16, value: [UInt8]) -> [GATTServerOutbound] {
        guard let descriptor = cccdHandle(forValue: handle) else { return [] }
        var outbound: [GATTServerOutbound] = []
        func add(_ id: GATTConnectionID, _ connection: Connection) {
            let configuration = GATTClientConfiguration(rawValue: connection.clientConfigurations[descriptor] ?? 0)
            guard configuration.contains(.indication) || configuration.contains(.notification) else { return }
            let bearer = connection.notificationBearer
            let limit = ATTMTU.maximumNotificationValueLength(mtu: connection.mtu(bearer))
            // The caller's array is shared, not copied, when it fits (the usual case).
            let cut = value.count <= limit ? value : Array(value.prefix(limit))
            if configuration.contains(.indication) {
                outbound.append(GATTServerOutbound(connection: id, pdu: .handleValueIndication(handle: handle, value: cut), bearer: bearer))
            } else {
                outbound.append(GATTServerOutbound(connection: id, pdu: .handleValueNotification(handle: handle, value: cut), bearer: bearer))
            }
        }
        if connections.count <= 1 {
            // One connection (the usual case per notification): no sorted copy of the table.
            for (id, connection) in connections { add(id, connection) }
        } else {
            for (id, connection) in connections.sorted(by: { $0.key < $1.key }) { add(id, connection) }
        }
        return outbound
    }

    /// One Multiple Handle Value Notification (§4.10.2) for `connection` carrying as many of `values` as fit
    /// ATT_MTU − 1, in order; nil unless the client supports it (Client Supported Features bit 2) and at least two
    /// values fit whole. Values of characteristics the client did not enable notifications for are skipped.
    public func multipleNotification(_ values: [(handle: UInt16, value: [UInt8])], to connection: GATTConnectionID) -> GATTServerOutbound? {
        guard let state = connections[connection], state.clientFeatures & 0x04 != 0 else { return nil }
        let bearer = state.notificationBearer
        var room = state.mtu(bearer) - 1
        var tuples: [ATTHandleValue] = []
        for (handle, value) in values {
            guard let descriptor = cccdHandle(forValue: handle),
                  GATTClientConfiguration(rawValue: state.clientConfigurations[descriptor] ?? 0).contains(.notification) else { continue }
            guard 4 + value.count <= room else { break }
            room -= 4 + value.count
            tuples.append(ATTHandleValue(handle: handle, value: value))
        }
        guard let notification = try? ATTMultipleHandleValueNotification(tuples: tuples) else { return nil }
        return GATTServerOutbound(connection: connection, pdu: .multipleHandleValueNotification(notification), bearer: bearer)
    }

    /// Service Changed indications (§7.1) for `range` to every connection that enabled them; empty when the
    /// database has no Service Changed characteristic.
    public mutating func serviceChanged(_ range: ATTHandleRange) -> [GATTServerOutbound] {
        guard let characteristic = database.serviceChanged else { return [] }
        var value = ByteWriter(capacity: 4)
        value.write(range.start)
        value.write(range.end)
        database.setStorage(.bytes(value.bytes), at: characteristic.value)
        return notify(handle: characteristic.value, value: value.bytes).filter(\.isIndication)
    }

    // MARK: - Requests and commands

    /// Answers one request from `connection` on `bearer` (any request but Exchange MTU, which the bearer answers).
    /// Responses are sized to that bearer's ATT_MTU; a deferred request is remembered for that bearer.
    public mutating func handleRequest(_ request: ATTPDU, from connection: GATTConnectionID,
                                       on bearer: GATTBearerID = .unenhanced) -> GATTServerReply {
        if connections[connection] == nil { connections[connection] = Connection() }
        let mtu = mtu(for: connection, bearer: bearer)
        let opcode = request.opcode
        func fail(_ handle: UInt16, _ error: ATTErrorCode) -> GATTServerReply {
            GATTServerReply(response: .errorResponse(requestOpcode: opcode, handle: handle, error: error))
        }
        if let violation = Self.violation(of: request) { return fail(violation.handle, violation.error) }
        if let deferred = deferIfAsked(request, from: connection, on: bearer) { return deferred }
        switch request {
        case .exchangeMTURequest:
            return GATTServerReply(response: .exchangeMTUResponse(serverRxMTU: UInt16(clamping: ATTBearer.maximumMTU)))
        case .findInformationRequest(let range):
            return findInformation(range, mtu: mtu).map { GATTServerReply(response: $0) } ?? fail(range.start, .attributeNotFound)
        case .findByTypeValueRequest(let range, let type, let value):
            return findByTypeValue(range, type: type, value: value, mtu: mtu)
                .map { GATTServerReply(response: $0) } ?? fail(range.start, .attributeNotFound)
        case .readByGroupTypeRequest(let range, let groupType):
            guard groupType == GATTUUID.primaryService || groupType == GATTUUID.secondaryService else {
                return fail(range.start, .unsupportedGroupType)
            }
            return readByGroupType(range, groupType: groupType, mtu: mtu)
                .map { GATTServerReply(response: $0) } ?? fail(range.start, .attributeNotFound)
        case .readByTypeRequest(let range, let type):
            switch readByType(range, type: type, connection, mtu: mtu) {
            case .success(let pdu): return GATTServerReply(response: pdu)
            case .failure(let failure): return fail(failure.handle, failure.error)
            }
        case .readRequest(let handle):
            switch read(handle, offset: 0, blob: false, connection, mtu: mtu) {
            case .success(let value): return GATTServerReply(response: .readResponse(value: cut(value, mtu: mtu)))
            case .failure(let error): return fail(handle, error.code)
            }
        case .readBlobRequest(let handle, let offset):
            switch read(handle, offset: Int(offset), blob: true, connection, mtu: mtu) {
            case .success(let value): return GATTServerReply(response: .readBlobResponse(partValue: cut(value, mtu: mtu)))
            case .failure(let error): return fail(handle, error.code)
            }
        case .readMultipleRequest(let handles), .readMultipleVariableRequest(let handles):
            var values: [[UInt8]] = []
            for handle in handles {
                switch read(handle, offset: 0, blob: false, connection, mtu: mtu) {
                case .success(let value): values.append(value)
                case .failure(let error): return fail(handle, error.code)
                }
            }
            if case .readMultipleRequest = request {
                return GATTServerReply(response: .readMultipleResponse(values: cut(values.flatMap { $0 }, mtu: mtu)))
            }
            guard let response = ATTReadMultipleVariableResponse.packing(values, mtu: mtu) else {
                return fail(handles.first ?? 0, .unlikelyError)
            }
            return GATTServerReply(response: .readMultipleVariableResponse(response))
        case .writeRequest(let handle, let value):
            if let error = checkWrite(handle, connection) { return fail(handle, error) }
            switch write(handle, offset: 0, value: value, kind: .request, connection) {
            case .success(let events): return GATTServerReply(response: .writeResponse, events: events)
            case .failure(let error): return fail(handle, error.code)
            }
        case .prepareWriteRequest(let handle, let offset, let value):
            if let error = checkWrite(handle, connection) { return fail(handle, error) }
            guard let count = connections[connection]?.prepareQueue.count, count < maximumPreparedWrites else {
                return fail(handle, .prepareQueueFull)
            }
            connections[connection]?.prepareQueue.append(PreparedWrite(handle: handle, offset: Int(offset), value: value))
            return GATTServerReply(response: .prepareWriteResponse(handle: handle, offset: offset, partValue: value))
        case .executeWriteRequest(let flags):
            let queue = connections[connection]?.prepareQueue ?? []
            connections[connection]?.prepareQueue = []
            guard flags == .write else { return GATTServerReply(response: .executeWriteResponse) }
            switch executeWrites(queue, connection) {
            case .success(let events): return GATTServerReply(response: .executeWriteResponse, events: events)
            case .failure(let failure): return fail(failure.handle, failure.error)
            }
        default:
            return fail(0, .requestNotSupported)
        }
    }

    /// Handles one command from `connection` (Write Command, Signed Write Command): never answered; failures are
    /// silent (§3.4.5.3, §3.4.5.4).
    public mutating func handleCommand(_ command: ATTPDU, from connection: GATTConnectionID) -> [GATTServerEvent] {
        if connections[connection] == nil { connections[connection] = Connection() }
        switch command {
        case .writeCommand(let handle, let value):
            guard handle != 0, checkWrite(handle, connection) == nil else { return [] }
            return (try? write(handle, offset: 0, value: value, kind: .command, connection).get()) ?? []
        case .signedWriteCommand(let handle, let value, let signature):
            let rejected = { (reason: GATTSignedWriteRejection) in
                [GATTServerEvent.signedWriteRejected(connection: connection, handle: handle, reason: reason)]
            }
            guard handle != 0, let attribute = database.attribute(handle), attribute.allowsSignedWrite else {
                return rejected(.notPermitted)
            }
            let security = connections[connection]?.security ?? .open
            // On an encrypted link the signature adds nothing (Vol 3 Part C §10.4.2): process as a write command.
            if !security.encrypted {
                var message = ByteWriter(capacity: 3 + value.count)
                message.write(command.opcode.rawValue)
                message.write(handle)
                message.write(value)
                guard let signatureVerifier else { return rejected(.noVerifier) }
                if case .rejected(let reason) = signatureVerifier(connection, message.bytes, signature) {
                    return rejected(reason)
                }
            }
            if let error = checkWrite(handle, connection, signed: !security.encrypted) { return rejected(.writeRefused(error)) }
            switch write(handle, offset: 0, value: value, kind: .signedCommand, connection) {
            case .success(let events): return events
            case .failure(let error): return rejected(.writeRefused(error.code))
            }
        default:
            return []
        }
    }

    // MARK: - Discovery

    private func findInformation(_ range: ATTHandleRange, mtu: Int) -> ATTPDU? {
        let candidates = database.attributes[database.indices(in: range)].lazy.map { ATTHandleUUID(handle: $0.handle, uuid: $0.type) }
        return ATTFindInformationResponse.packing(candidates, mtu: mtu).map(ATTPDU.findInformationResponse)
    }

    private func findByTypeValue(_ range: ATTHandleRange, type: UInt16, value: [UInt8], mtu: Int) -> ATTPDU? {
        let uuid = BluetoothUUID(type)
        let grouping = uuid == GATTUUID.primaryService || uuid == GATTUUID.secondaryService
        let wanted: BluetoothUUID? = grouping ? (try? BluetoothUUID(littleEndianBytes: value)) : nil
        let found = database.attributes[database.indices(in: range)].lazy.filter { attribute in
            guard attribute.type == uuid, attribute.permissions.readable, let stored = attribute.storedValue else { return false }
            if let wanted { return (try? BluetoothUUID(littleEndianBytes: stored)) == wanted }
            return stored == value
        }.map { ATTHandlesInformation(foundAttributeHandle: $0.handle, groupEndHandle: $0.groupEnd ?? $0.handle) }
        let list = ATTMTU.packingHandlesInformation(found, mtu: mtu)
        return list.isEmpty ? nil : .findByTypeValueResponse(list)
    }

    private func readByGroupType(_ range: ATTHandleRange, groupType: BluetoothUUID, mtu: Int) -> ATTPDU? {
        let groups = database.attributes[database.indices(in: range)].lazy.compactMap { attribute -> ATTAttributeGroupData? in
            guard attribute.type == groupType, let end = attribute.groupEnd, let value = attribute.storedValue else { return nil }
            return ATTAttributeGroupData(handle: attribute.handle, endGroupHandle: end, value: value)
        }
        return ATTReadByGroupTypeResponse.packing(groups, mtu: mtu).map(ATTPDU.readByGroupTypeResponse)
    }

    struct Failure: Error {
        var handle: UInt16
        var error: ATTErrorCode
    }

    private func readByType(_ range: ATTHandleRange, type: BluetoothUUID, _ connection: GATTConnectionID, mtu: Int) -> Result<ATTPDU, Failure> {
        let cap = ATTMTU.maximumReadByTypeElementValueLength(mtu: mtu)
        var chosen: [ATTHandleValue] = []
        for attribute in database.attributes[database.indices(in: range)] where attribute.type == type {
            switch read(attribute.handle, offset: 0, blob: false, connection, mtu: mtu) {
            case .failure(let error):
                // An attribute that would cause an error ends the response; alone, it is the answer (§3.4.4.1).
                if chosen.isEmpty { return .failure(Failure(handle: attribute.handle, error: error.code)) }
            case .success(let value):
                let element = ATTHandleValue(handle: attribute.handle, value: Array(value.prefix(cap)))
                if let first = chosen.first {
                    guard element.value.count == first.value.count, 2 + (chosen.count + 1) * (2 + first.value.count) <= mtu else { break }
                }
                chosen.append(element)
                continue
            }
            break
        }
        guard let response = ATTReadByTypeResponse.packing(chosen, mtu: mtu) else {
            return .failure(Failure(handle: range.start, error: .attributeNotFound))
        }
        return .success(.readByTypeResponse(response))
    }

    // MARK: - Reads and writes

    func cut(_ value: [UInt8], mtu: Int) -> [UInt8] {
        Array(value.prefix(ATTMTU.maximumReadResponseValueLength(mtu: mtu)))
    }

    /// The value of `handle` from `offset`, after the permission checks.
    func read(_ handle: UInt16, offset: Int, blob: Bool, _ connection: GATTConnectionID, mtu: Int) -> Result<[UInt8], GATTAttributeError> {
        guard let attribute = database.attribute(handle) else { return .failure(GATTAttributeError(.invalidHandle)) }
        let state = connections[connection] ?? Connection()
        if let error = attribute.permissions.readError(for: state.security) { return .failure(GATTAttributeError(error)) }
        let whole: [UInt8]
        switch attribute.storage {
        case .bytes(let bytes):
            whole = bytes
        case .clientConfiguration:
            let bits = state.clientConfigurations[handle] ?? 0
            whole = [UInt8(truncatingIfNeeded: bits), UInt8(truncatingIfNeeded: bits >> 8)]
        case .clientSupportedFeatures:
            whole = [state.clientFeatures]
        case .dynamic(let read, _):
            guard let read else { return .failure(GATTAttributeError(.readNotPermitted)) }
            return read(GATTReadRequest(connection: connection, handle: handle, offset: offset, security: state.security))
        }
        if blob, attribute.isFixedLength, whole.count <= ATTMTU.maximumReadResponseValueLength(mtu: mtu) {
            return .failure(GATTAttributeError(.attributeNotLong))
        }
        guard offset <= whole.count else { return .failure(GATTAttributeError(.invalidOffset)) }
        return .success(Array(whole[offset...]))
    }

    /// Existence and write permission of `handle` for `connection`.
    func checkWrite(_ handle: UInt16, _ connection: GATTConnectionID, signed: Bool = false) -> ATTErrorCode? {
        guard let attribute = database.attribute(handle) else { return .invalidHandle }
        var security = connections[connection]?.security ?? .open
        // A verified signature stands for an authenticated, encrypted link for the value's write permission
        // (Vol 3 Part C §10.4.2: data signing replaces encryption on an unencrypted link).
        if signed { security = GATTLinkSecurity(encrypted: true, authenticated: security.authenticated, keySize: 16, authorized: security.authorized) }
        return attribute.permissions.writeError(for: security)
    }

    /// Applies one write (permissions already checked); returns the events or the ATT error.
    mutating func write(_ handle: UInt16, offset: Int, value: [UInt8], kind: GATTWriteRequest.Kind,
                                _ connection: GATTConnectionID) -> Result<[GATTServerEvent], GATTAttributeError> {
        guard let attribute = database.attribute(handle) else { return .failure(GATTAttributeError(.invalidHandle)) }
        let state = connections[connection] ?? Connection()
        switch attribute.storage {
        case .bytes(let old):
            guard offset <= old.count else { return .failure(GATTAttributeError(.invalidOffset)) }
            let new = Array(old.prefix(offset)) + value
            guard new.count <= attribute.maximumLength else { return .failure(GATTAttributeError(.invalidAttributeValueLength)) }
            if kind == .preparedValidation { return .success([]) }
            database.setStorage(.bytes(new), at: handle)
            return .success([.valueWritten(connection: connection, handle: handle, value: new)])
        case .clientConfiguration(let valueHandle, _):
            guard offset == 0, value.count == 2 else { return .failure(GATTAttributeError(.invalidAttributeValueLength)) }
            if kind == .preparedValidation { return .success([]) }
            let bits = UInt16(value[0]) | UInt16(value[1]) << 8
            connections[connection, default: Connection()].clientConfigurations[handle] = bits
            return .success([.subscriptionChanged(connection: connection, valueHandle: valueHandle, configuration: GATTClientConfiguration(rawValue: bits))])
        case .clientSupportedFeatures:
            guard offset == 0, value.count == 1 else { return .failure(GATTAttributeError(.invalidAttributeValueLength)) }
            // Bits cannot be cleared once set by a client (Vol 3 Part G §7.2): keep the union.
            let features = state.clientFeatures | (value[0] & 0x07)
            if kind == .preparedValidation { return .success([]) }
            connections[connection, default: Connection()].clientFeatures = features
            return .success([.clientFeaturesChanged(connection: connection, features: features)])
        case .dynamic(_, let write):
            guard let write else { return .failure(GATTAttributeError(.writeNotPermitted)) }
            guard offset + value.count <= attribute.maximumLength else { return .failure(GATTAttributeError(.invalidAttributeValueLength)) }
            if let error = write(GATTWriteRequest(connection: connection, handle: handle, offset: offset, value: value, kind: kind, security: state.security)) {
                return .failure(GATTAttributeError(error))
            }
            return .success([])
        }
    }

    /// Execute Write: every queued write is validated (permissions, offsets, lengths, the handlers' own checks)
    /// before any is applied; one bad entry and nothing changes (§3.4.6.3). Consecutive parts of one handle
    /// (each offset at the end of the previous part) are merged into one write, so a long write of a value
    /// builds it whole; a part whose offset is past the value built so far is *Invalid Offset*.
    private mutating func executeWrites(_ queue: [PreparedWrite], _ connection: GATTConnectionID) -> Result<[GATTServerEvent], Failure> {
        var merged: [PreparedWrite] = []
        for entry in queue {
            if let last = merged.last, last.handle == entry.handle, last.offset + last.value.count == entry.offset {
                merged[merged.count - 1].value += entry.value
            } else {
                merged.append(entry)
            }
        }
        // Validation on a scratch copy, so that stored values reflect earlier parts of the same handle.
        var scratch = self
        for entry in merged {
            if let error = scratch.checkWrite(entry.handle, connection) { return .failure(Failure(handle: entry.handle, error: error)) }
            let kind: GATTWriteRequest.Kind = isDynamic(entry.handle) ? .preparedValidation : .prepared
            if case .failure(let error) = scratch.write(entry.handle, offset: entry.offset, value: entry.value, kind: kind, connection) {
                return .failure(Failure(handle: entry.handle, error: error.code))
            }
        }
        var events: [GATTServerEvent] = []
        for entry in merged {
            switch write(entry.handle, offset: entry.offset, value: entry.value, kind: .prepared, connection) {
            case .success(let new): events += new
            case .failure(let error): return .failure(Failure(handle: entry.handle, error: error.code))
            }
        }
        return .success(events)
    }

    private func isDynamic(_ handle: UInt16) -> Bool {
        if case .dynamic? = database.attribute(handle)?.storage { return true }
        return false
    }

    private func cccdHandle(forValue valueHandle: UInt16) -> UInt16? {
        let index = Int(valueHandle) - 1
        guard index >= 0, index < cccdHandles.count, cccdHandles[index] != 0 else { return nil }
        return cccdHandles[index]
    }

    /// ``cccdHandles``: the descriptor that names a value as its owner and follows it with no declaration between
    /// (characteristic, service or include: Vol 3 Part G §3.3.3.3); the first such descriptor when there are two.
    private static func clientConfigurationHandles(of database: GATTDatabase) -> [UInt16] {
        var handles = [UInt16](repeating: 0, count: database.attributes.count)
        var lastDeclaration: UInt16 = 0
        for attribute in database.attributes {
            if attribute.type == GATTUUID.characteristic || attribute.groupEnd != nil || attribute.type == GATTUUID.include {
                lastDeclaration = attribute.handle
            } else if case .clientConfiguration(let owner, _) = attribute.storage, owner >= 1, owner < attribute.handle,
                      lastDeclaration <= owner, handles[Int(owner) - 1] == 0 {
                handles[Int(owner) - 1] = attribute.handle
            }
        }
        return handles
    }

    private static func violation(of request: ATTPDU) -> ATTProtocolViolation? {
        do { try request.validate() } catch { return error }
        return nil
    }
}
