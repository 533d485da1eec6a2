package import ATT
import BluetoothCore
package import GATT
package import BluetoothEngine

/// The GATT server (Core 5.4 Vol 3 Part G §3, §4.8–§4.11) on bluetoothd: published services are the engine's
/// ``GATTDatabase``, exported as a GATT application (``export(_:replacing:_:)``) whose values are all answered here,
/// from the stored value or through the ``GATTDeferral`` (the async handlers), as our host's server does; writes
/// store the value and report it; subscriptions are bluetoothd's StartNotify / AcquireNotify; notifications wait
/// for room in bluetoothd's notification socket (`readyToSend`).
extension BlueZEngine {
    package func publish(deviceName: String, _ definitions: [GATTServiceDefinition],
                 completion: @escaping @Sendable (Result<[GATTServiceHandles], HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            var added: [(GATTServiceDefinition, GATTServiceHandles)] = []
            do throws(GATTDatabaseError) {
                for definition in definitions { added.append((definition, try database.add(definition))) }
            } catch {
                return completion(.failure(HostError(.invalidDatabase, error.description)))
            }
            for (definition, handles) in added { remember(definition, handles) }
            let name = description, handles = added.map(\.1)
            export(added, replacing: false) { result in
                completion(result.map { handles }.mapError { HostError(.commandFailed, "\(name) refused the services: \($0)") })
            }
        }
    }

    /// Publishes the services of `database` instead of those published so far (CoreBluetooth's add and remove
    /// service): bluetoothd keeps the GAP and GATT services itself and tells subscribed clients of the change
    /// (Core 5.4 Vol 3 Part G §7.1) whatever `changedRange` says. The engine's handles are the database's.
    package func replaceGATTDatabase(_ database: GATTDatabase, changedRange: ATTHandleRange?,
                                     completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            if let error = notRunning() { return completion?(.failure(error)) ?? () }
            let ownServices: Set<BluetoothUUID> = [GATTUUID.genericAccessService, GATTUUID.genericAttributeService]
            let subscribers = localValues.mapValues(\.subscribers)
            localValues = [:]
            self.database = database
            let services = zip(database.definitions, database.services).filter { !ownServices.contains($0.0.uuid) }
            for (definition, handles) in services { remember(definition, handles) }
            for (handle, centrals) in subscribers where localValues[handle] != nil { localValues[handle]?.subscribers = centrals }
            let name = description
            export(Array(services), replacing: true) { result in
                completion?(result.mapError { HostError(.commandFailed, "\(name) refused the services: \($0)") })
            }
        }
    }

    /// Keeps each value of a definition (its handlers, its stored value) by value handle.
    private func remember(_ definition: GATTServiceDefinition, _ handles: GATTServiceHandles) {
        for (characteristic, numbered) in zip(definition.characteristics, handles.characteristics) {
            var initial: [UInt8] = []
            var read: (@Sendable (GATTReadRequest) -> Result<[UInt8], GATTAttributeError>)?
            var write: (@Sendable (GATTWriteRequest) -> ATTErrorCode?)?
            switch characteristic.value {
            case .stored(let value): initial = value
            case .dynamic(let reader, let writer): (read, write) = (reader, writer)
            }
            localValues[numbered.value] = LocalValue(properties: characteristic.properties, maximumLength: characteristic.maximumLength,
                                                     value: initial, read: read, write: write)
        }
    }

    package func setGATTDeferral(_ deferral: GATTDeferral?) {
        onLoop { [self] in self.deferral = deferral }
    }

    package func respondToGATTRequest(connectionHandle handle: UInt16, id: UInt64, result: Result<[UInt8], GATTAttributeError>) {
        onLoop { [self] in
            guard let request = deferredRequests.removeValue(forKey: id) else { return }
            switch result {
            case .success(let value): answer(request.callID, value: value)
            case .failure(let error): answer(request.callID, error: error.code)
            }
        }
    }

    package func updateValue(_ value: [UInt8], handle: UInt16, to targets: Set<UInt16>?, requireReady: Bool,
                     completion: (@Sendable (Result<[UInt16], HostError>) -> Void)?) {
        onLoop { [self] in
            guard let local = localValues[handle] else {
                completion?(.failure(HostError(.invalidParameters, "no local characteristic has value handle \(Dissection.hex16(handle))")))
                return
            }
            let centrals = links.filter { handle, link in
                link.connection.role == .peripheral && local.subscribers.contains(link.connection.peer)
                    && targets.map { $0.contains(handle) } ?? true
            }
            guard !centrals.isEmpty else {
                localValues[handle]?.value = value
                return completion?(.success([])) ?? ()
            }
            guard notify(value, handle: handle) else {
                updatesFull = true
                completion?(.failure(HostError(.busy, "\(description)'s notification queue is full")))
                return
            }
            localValues[handle]?.value = value
            completion?(.success(centrals.keys.sorted()))
        }
    }

    // MARK: What bluetoothd tells the server (on the loop)

    func centralConnected(_ peer: BluetoothAddress) {
        // bluetoothd does not say who initiated a link: a device we connect to as central shows up connected to
        // us too. That one is ours, not a central's.
        if pendingConnects[peer] != nil || handle(of: peer, role: .central) != nil { return }
        link(peer, role: .peripheral)
    }

    func centralDisconnected(_ peer: BluetoothAddress) {
        if let handle = handle(of: peer, role: .peripheral) { linkEnded(handle, reason: .remoteUserTerminatedConnection) }
    }

    func subscriptionChanged(_ peer: BluetoothAddress, handle: UInt16, subscribed: Bool) {
        guard let local = localValues[handle] else { return }
        let connection = link(peer, role: .peripheral)
        var configuration: GATTClientConfiguration = []
        if subscribed {
            localValues[handle]?.subscribers.insert(peer)
            configuration = local.properties.contains(.notify) ? .notification : .indication
        } else {
            localValues[handle]?.subscribers.remove(peer)
        }
        emit(.gattServer(.subscriptionChanged(connection: GATTConnectionID(connection), valueHandle: handle, configuration: configuration)))
    }

    func readyToUpdateSubscribers() {
        guard updatesFull else { return }
        updatesFull = false
        for (handle, link) in links.sorted(by: { $0.key < $1.key }) where link.connection.role == .peripheral {
            emit(.readyToSend(handle: handle))
        }
    }

    /// A Read or Read Blob Request (bluetoothd's call `id`): the deferral's handler answers it, else the definition's
    /// handler, else the stored value from `offset`; the answer goes to bluetoothd when it is known.
    func serverRead(_ id: UInt64, central: BluetoothAddress, handle: UInt16, offset: Int) {
        let connection = link(central, role: .peripheral)
        guard let local = localValues[handle] else { return answer(id, error: .attributeNotFound) }
        if let deferral, deferral.handles.contains(handle) {
            return hand(to: deferral, id: id, connection: connection, .read(handle: handle, offset: offset))
        }
        if let handler = local.read {
            // A value the definition computes: its handler answers, as on our host's server.
            let request = GATTReadRequest(connection: GATTConnectionID(connection), handle: handle, offset: offset, security: GATTLinkSecurity())
            switch handler(request) {
            case .success(let value): return answer(id, value: value)
            case .failure(let error): return answer(id, error: error.code)
            }
        }
        guard offset <= local.value.count else { return answer(id, error: .invalidOffset) }
        answer(id, value: Array(local.value[offset...]))
    }

    /// A Write Request (bluetoothd's call `id`; one part of a long write at its offset) or a Write Command (`id`
    /// nil): the length checked against the value's maximum (*Invalid Attribute Value Length*, *Invalid Offset*);
    /// a request on a deferred value goes to the handler; otherwise the value is stored and reported
    /// (``GATTServerEvent/valueWritten``), or given to the definition's handler.
    func serverWrite(_ id: UInt64?, central: BluetoothAddress, handle: UInt16, offset: Int, value: [UInt8]) {
        let connection = link(central, role: .peripheral)
        let refuse: (ATTErrorCode) -> Void = { [self] code in if let id { answer(id, error: code) } }
        guard let local = localValues[handle] else { return refuse(.attributeNotFound) }
        guard offset <= local.value.count else { return refuse(.invalidOffset) }
        guard offset + value.count <= local.maximumLength else { return refuse(.invalidAttributeValueLength) }
        if let id, let deferral, deferral.handles.contains(handle) {
            let kind: GATTPendingRequest.Kind = offset == 0 ? .write(handle: handle, value: value)
                : .executeWrite([GATTPreparedWrite(handle: handle, offset: offset, value: value)])
            return hand(to: deferral, id: id, connection: connection, kind)
        }
        let written = Array(local.value.prefix(offset)) + value
        if let handler = local.write {
            // A value the definition computes: its handler takes the write, as on our host's server (a Write
            // Command's error is dropped, Core 5.4 Vol 3 Part F §3.4.5.3).
            let request = GATTWriteRequest(connection: GATTConnectionID(connection), handle: handle, offset: 0, value: written,
                                           kind: id == nil ? .command : .request, security: GATTLinkSecurity())
            if let code = handler(request) { return refuse(code) }
        } else {
            localValues[handle]?.value = written
            emit(.gattServer(.valueWritten(connection: GATTConnectionID(connection), handle: handle, value: written)))
        }
        if let id { answer(id) }
    }

    private func hand(to deferral: GATTDeferral, id: UInt64, connection: UInt16, _ kind: GATTPendingRequest.Kind) {
        nextRequestID += 1
        deferredRequests[nextRequestID] = DeferredRequest(callID: id, connection: connection)
        deferral.handler(GATTPendingRequest(id: nextRequestID, connection: GATTConnectionID(connection), kind: kind))
    }
}
