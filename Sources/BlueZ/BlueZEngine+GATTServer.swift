package import AdvertisingData
package import ATT
import BluetoothCore
package import GATT
package import BluetoothEngine

/// The GATT server and advertising (Core 5.4 Vol 3 Part G §3, §4.8–§4.11; Part C §9.3) on bluetoothd: published
/// services become a GATT application of the peripheral backend (GattManager1.RegisterApplication) whose values
/// are all answered here, from the stored value or through the ``GATTDeferral`` (the async handlers), as our host's
/// server does; writes store the value and report it; subscriptions are bluetoothd's StartNotify / AcquireNotify;
/// notifications wait for room in bluetoothd's notification socket (`readyToSend`).
extension BlueZEngine {
    package func publish(deviceName: String, _ definitions: [GATTServiceDefinition],
                 completion: @escaping @Sendable (Result<[GATTServiceHandles], HostError>) -> Void) {
        onLoop { [self] in
            var handles: [GATTServiceHandles] = []
            var services: [BlueZLocalService] = []
            do throws(GATTDatabaseError) {
                for definition in definitions {
                    let added = try database.add(definition)
                    handles.append(added)
                    services.append(localService(definition, added))
                }
            } catch {
                return completion(.failure(HostError(.invalidDatabase, error.description)))
            }
            let numbered = handles, name = description
            addServices(services[...]) { [self] result in
                onLoop {
                    switch result {
                    case .success: completion(.success(numbered))
                    case .failure(let error):
                        completion(.failure(HostError(.commandFailed, "\(name) refused the services: \(error)")))
                    }
                }
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
            var subscribers: [UInt16: Set<BluetoothAddress>] = [:]
            for (handle, local) in localValues { subscribers[handle] = local.subscribers }
            localValues = [:]
            self.database = database
            let services = zip(database.definitions, database.services).filter { !ownServices.contains($0.0.uuid) }.map {
                localService($0.0, $0.1)
            }
            for (handle, centrals) in subscribers where localValues[handle] != nil { localValues[handle]?.subscribers = centrals }
            let name = description
            peripheral.replaceServices(services) { [self] result in
                onLoop {
                    completion?(result.mapError { HostError(.commandFailed, "\(name) refused the services: \($0)") })
                }
            }
        }
    }

    /// A definition as bluetoothd's GATT application takes it, remembering each value (ids are the handles).
    private func localService(_ definition: GATTServiceDefinition, _ handles: GATTServiceHandles) -> BlueZLocalService {
        var characteristics: [BlueZLocalCharacteristic] = []
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
            let descriptors = characteristic.descriptors.compactMap { descriptor -> BlueZLocalDescriptor? in
                guard case .stored(let value) = descriptor.value else { return nil }
                return BlueZLocalDescriptor(uuid: descriptor.uuid, value: value)
            }
            let permissions = characteristic.permissions
            characteristics.append(BlueZLocalCharacteristic(
                id: Int(numbered.value), uuid: characteristic.uuid, properties: characteristic.properties.rawValue,
                readSecurity: Self.security(permissions.read), writeSecurity: Self.security(permissions.write),
                encryptedNotifications: characteristic.subscriptionSecurity.encryption || characteristic.subscriptionSecurity.authentication,
                staticValue: nil, descriptors: descriptors))
        }
        return BlueZLocalService(id: Int(handles.start), uuid: definition.uuid, isPrimary: definition.isPrimary,
                                 includedServiceIDs: definition.includes.map { Int($0.start) }, characteristics: characteristics)
    }

    /// What an access needs, as bluetoothd's flags say it (Core 5.4 Vol 3 Part C §10.3).
    private static func security(_ access: GATTSecurityRequirement) -> BlueZAttributeSecurity {
        if access.authentication { return .authenticated }
        return access.encryption ? .encrypted : .none
    }

    private func addServices(_ services: ArraySlice<BlueZLocalService>,
                             _ completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        guard let first = services.first else { return completion(.success(())) }
        let rest = services.dropFirst()
        peripheral.addService(first) { [self] result in
            switch result {
            case .success: addServices(rest, completion)
            case .failure: completion(result)
            }
        }
    }

    package func setGATTDeferral(_ deferral: GATTDeferral?) {
        onLoop { [self] in self.deferral = deferral }
    }

    package func respondToGATTRequest(connectionHandle handle: UInt16, id: UInt64, result: Result<[UInt8], GATTAttributeError>) {
        onLoop { [self] in
            guard let request = deferredRequests.removeValue(forKey: id) else { return }
            switch result {
            case .success(let value): peripheral.respond(to: request.backendID, result: 0, value: value)
            case .failure(let error): peripheral.respond(to: request.backendID, result: error.code.rawValue, value: nil)
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
            guard peripheral.updateValue(value, characteristicID: Int(handle)) else {
                updatesFull = true
                completion?(.failure(HostError(.busy, "\(description)'s notification queue is full")))
                return
            }
            localValues[handle]?.value = value
            completion?(.success(centrals.keys.sorted()))
        }
    }

    // MARK: Advertising

    package func startAdvertising(_ content: AdvertisingContent, options: AdvertisingOptions,
                          completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            guard content.serviceData.isEmpty, options.kind == .connectable else {
                return completion(.failure(Self.refusal("an advertisement carries a name, service UUIDs and manufacturer data, connectable")))
            }
            advertise(localName: content.localName, serviceUUIDs: content.serviceUUIDs,
                      manufacturerData: content.manufacturerData.map { ($0.company.rawValue, $0.data) }, completion)
        }
    }

    /// Advertises exactly what bluetoothd's LEAdvertisement1 can say of these packets: the name, the service UUIDs
    /// and one manufacturer's data (CoreBluetooth's layout, `PeripheralAdvertisement`); bluetoothd lays them out
    /// and adds the flags. Anything else in them (service data, TX power, appearance...) is refused, not dropped.
    package func startAdvertising(advertisingData: AdvertisingData, scanResponse: AdvertisingData, options: AdvertisingOptions,
                                  completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        onLoop { [self] in
            if let error = notRunning() { return completion(.failure(error)) }
            let structures = advertisingData.structures + scanResponse.structures
            let manufacturers = advertisingData.allManufacturerData + scanResponse.allManufacturerData
            let said = structures.allSatisfy { structure in
                switch structure {
                case .flags, .serviceUUIDs16, .serviceUUIDs32, .serviceUUIDs128, .localName, .manufacturerData: true
                default: false
                }
            }
            guard options.kind == .connectable, manufacturers.count <= 1, said else {
                return completion(.failure(Self.refusal("an advertisement carries a name, service UUIDs and manufacturer data, connectable")))
            }
            advertise(localName: scanResponse.localName ?? advertisingData.localName,
                      serviceUUIDs: advertisingData.serviceUUIDs + scanResponse.serviceUUIDs,
                      manufacturerData: manufacturers.first.map { ($0.company.rawValue, $0.data) }, completion)
        }
    }

    /// Registers the advertisement, unless the same one is already registered (bluetoothd advertises again by itself
    /// after a connection).
    private func advertise(localName: String?, serviceUUIDs: [BluetoothUUID], manufacturerData: (company: UInt16, data: [UInt8])?,
                           _ completion: @escaping @Sendable (Result<Void, HostError>) -> Void) {
        let advertisement = Advertisement(localName: localName, serviceUUIDs: serviceUUIDs, company: manufacturerData?.company,
                                          manufacturerData: manufacturerData?.data)
        if advertising == advertisement { return completion(.success(())) }
        advertising = advertisement
        peripheral.startAdvertising(localName: localName, serviceUUIDs: serviceUUIDs, manufacturerData: manufacturerData) { [self] result in
            onLoop { [self] in
                if case .failure = result, advertising == advertisement { advertising = nil }
                completion(result.mapError { HostError(.commandFailed, "bluetoothd refused to advertise: \($0)") })
            }
        }
    }

    package func stopAdvertising(completion: (@Sendable (Result<Void, HostError>) -> Void)?) {
        onLoop { [self] in
            advertising = nil
            peripheral.stopAdvertising()
            completion?(.success(()))
        }
    }

    // MARK: Events of the peripheral backend

    func peripheralEvent(_ event: BlueZPeripheral.Event) {
        if case .closed = phase { return }
        switch event {
        case .stateChanged(let state):
            stateChanged(state, central: false)
        case .centralConnected(let peer, let mtu):
            // bluetoothd does not say who initiated a link: a device we connect to as central shows up connected
            // to the peripheral backend too. That one is ours, not a central's.
            if pendingConnectPeer == peer || handle(of: peer, role: .central) != nil { return }
            let handle = link(peer, role: .peripheral, mtu: mtu)
            mtuChanged(handle, mtu)
        case .centralDisconnected(let peer):
            if let handle = handle(of: peer, role: .peripheral) { linkEnded(handle, reason: .remoteUserTerminatedConnection) }
        case .readRequest(let id, let peer, let characteristicID, let offset):
            read(id: id, connection: link(peer, role: .peripheral), handle: UInt16(truncatingIfNeeded: characteristicID), offset: offset)
        case .writeRequests(let id, let peer, let writes, let responseRequired):
            write(id: id, connection: link(peer, role: .peripheral), writes, responseRequired: responseRequired)
        case .subscribed(let peer, let characteristicID), .unsubscribed(let peer, let characteristicID):
            let handle = UInt16(truncatingIfNeeded: characteristicID)
            guard let local = localValues[handle] else { return }
            let connection = link(peer, role: .peripheral)
            var configuration: GATTClientConfiguration = []
            if case .subscribed = event {
                localValues[handle]?.subscribers.insert(peer)
                configuration = local.properties.contains(.notify) ? .notification : .indication
            } else {
                localValues[handle]?.subscribers.remove(peer)
            }
            emit(.gattServer(.subscriptionChanged(connection: GATTConnectionID(connection), valueHandle: handle, configuration: configuration)))
        case .readyToUpdateSubscribers:
            guard updatesFull else { return }
            updatesFull = false
            for (handle, link) in links.sorted(by: { $0.key < $1.key }) where link.connection.role == .peripheral {
                emit(.readyToSend(handle: handle))
            }
        case .l2capChannelOpened(let channel):
            incomingChannel(channel)
        }
    }

    private func mtuChanged(_ handle: UInt16, _ mtu: Int) {
        guard let link = links[handle], link.mtu != mtu else { return }
        links[handle]?.mtu = mtu
        emit(.attMTUChanged(handle: handle, mtu: mtu))
    }

    /// A Read or Read Blob Request: the deferral's handler answers it, else the stored value from `offset`.
    private func read(id: UInt64, connection: UInt16, handle: UInt16, offset: Int) {
        guard let local = localValues[handle] else {
            return peripheral.respond(to: id, result: ATTErrorCode.attributeNotFound.rawValue, value: nil)
        }
        if let deferral, deferral.handles.contains(handle) {
            return hand(to: deferral, id: id, connection: connection, .read(handle: handle, offset: offset))
        }
        if let handler = local.read {
            // A value the definition computes: its handler answers, as on our host's server.
            switch handler(GATTReadRequest(connection: GATTConnectionID(connection), handle: handle, offset: offset, security: GATTLinkSecurity())) {
            case .success(let value): return peripheral.respond(to: id, result: 0, value: value)
            case .failure(let error): return peripheral.respond(to: id, result: error.code.rawValue, value: nil)
            }
        }
        guard offset <= local.value.count else {
            return peripheral.respond(to: id, result: ATTErrorCode.invalidOffset.rawValue, value: nil)
        }
        peripheral.respond(to: id, result: 0, value: Array(local.value[offset...]))
    }

    /// A Write Request (or one part of a long write, at its offset) or Write Commands: lengths checked against
    /// each value's maximum (*Invalid Attribute Value Length*, *Invalid Offset*); a request on a deferred value goes
    /// to the handler; otherwise the values are stored and reported (``GATTServerEvent/valueWritten``).
    private func write(id: UInt64, connection: UInt16, _ writes: [BlueZLocalWrite], responseRequired: Bool) {
        var updated: [(UInt16, [UInt8])] = []
        for write in writes {
            let handle = UInt16(truncatingIfNeeded: write.characteristicID)
            guard let local = localValues[handle] else {
                return refuse(id, responseRequired, .attributeNotFound)
            }
            let current = updated.last { $0.0 == handle }?.1 ?? local.value
            guard write.offset <= current.count else { return refuse(id, responseRequired, .invalidOffset) }
            guard write.offset + write.value.count <= local.maximumLength else {
                return refuse(id, responseRequired, .invalidAttributeValueLength)
            }
            updated.append((handle, Array(current.prefix(write.offset)) + write.value))
        }
        if responseRequired, let deferral, writes.allSatisfy({ deferral.handles.contains(UInt16(truncatingIfNeeded: $0.characteristicID)) }) {
            let kind: GATTPendingRequest.Kind
            if writes.count == 1, writes[0].offset == 0 {
                kind = .write(handle: UInt16(truncatingIfNeeded: writes[0].characteristicID), value: writes[0].value)
            } else {
                kind = .executeWrite(writes.map {
                    GATTPreparedWrite(handle: UInt16(truncatingIfNeeded: $0.characteristicID), offset: $0.offset, value: $0.value)
                })
            }
            return hand(to: deferral, id: id, connection: connection, kind)
        }
        for (handle, value) in updated {
            if let handler = localValues[handle]?.write {
                // A value the definition computes: its handler takes the write, as on our host's server (a Write
                // Command's error is dropped, Core 5.4 Vol 3 Part F §3.4.5.3).
                let request = GATTWriteRequest(connection: GATTConnectionID(connection), handle: handle, offset: 0, value: value,
                                               kind: responseRequired ? .request : .command, security: GATTLinkSecurity())
                if let code = handler(request) { return refuse(id, responseRequired, code) }
                continue
            }
            localValues[handle]?.value = value
            emit(.gattServer(.valueWritten(connection: GATTConnectionID(connection), handle: handle, value: value)))
        }
        if responseRequired { peripheral.respond(to: id, result: 0, value: nil) }
    }

    private func refuse(_ id: UInt64, _ responseRequired: Bool, _ code: ATTErrorCode) {
        if responseRequired { peripheral.respond(to: id, result: code.rawValue, value: nil) }
    }

    private func hand(to deferral: GATTDeferral, id: UInt64, connection: UInt16, _ kind: GATTPendingRequest.Kind) {
        nextRequestID += 1
        deferredRequests[nextRequestID] = DeferredRequest(backendID: id, connection: connection)
        deferral.handler(GATTPendingRequest(id: nextRequestID, connection: GATTConnectionID(connection), kind: kind))
    }
}
