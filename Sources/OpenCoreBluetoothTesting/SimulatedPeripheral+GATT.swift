import BluetoothCore
import L2CAP
import BluetoothEngine
import Foundation
import GATT
import Host
import OpenCoreBluetooth

/// The simulated peripheral's GATT server (Core 5.4 Vol 3 Part G §3, §4): the database built from the declared
/// services, and every Read, Write, Execute Write and CCCD write of the app handed to the delegate (a
/// ``GATTDeferral``), answered as its ``SimulatedResponse`` says.
extension SimulatedPeripheral {
    /// The database of `services` after the GAP and GATT services; the handles are remembered.
    func build(_ services: [SimulatedService]) throws(SimulatedWorldError) -> GATTDatabase {
        var database = GATTDatabase()
        var characteristics: [UInt16: SimulatedCharacteristic] = [:]
        var clientConfigurations: [UInt16: UInt16] = [:]
        do {
            try database.addGAPService(deviceName: spec.name ?? spec.advertisedName ?? "Simulated")
            try database.addGATTService()
            for service in services {
                guard let uuid = try? BluetoothUUID(string: service.uuid) else { throw SimulatedWorldError("bad service UUID \(service.uuid)") }
                var definitions: [GATTCharacteristicDefinition] = []
                for characteristic in service.characteristics {
                    guard let characteristicUUID = try? BluetoothUUID(string: characteristic.uuid) else {
                        throw SimulatedWorldError("bad characteristic UUID \(characteristic.uuid)")
                    }
                    let permissions = characteristic.permissions.gattPermissions
                    let properties = GATTCharacteristicProperties(rawValue: UInt8(truncatingIfNeeded: characteristic.properties.rawValue))
                    var descriptors: [GATTDescriptorDefinition] = []
                    for descriptor in characteristic.descriptors {
                        guard let descriptorUUID = try? BluetoothUUID(string: descriptor.uuid) else {
                            throw SimulatedWorldError("bad descriptor UUID \(descriptor.uuid)")
                        }
                        descriptors.append(GATTDescriptorDefinition(uuid: descriptorUUID, value: .stored(Array(descriptor.value))))
                    }
                    var definition = GATTCharacteristicDefinition(
                        uuid: characteristicUUID, properties: properties, permissions: permissions, value: valueHandlers(),
                        descriptors: descriptors,
                        subscriptionSecurity: characteristic.properties.subscriptionSecurity)
                    // Android's BluetoothGattServer: the app adds the CCCD itself, or nobody can subscribe.
                    if spec.personality?.appRunsTheGATTServer == true { definition.addsClientConfiguration = false }
                    definitions.append(definition)
                }
                let handles = try database.add(GATTServiceDefinition(uuid: uuid, isPrimary: service.isPrimary, characteristics: definitions))
                for (characteristic, assigned) in zip(service.characteristics, handles.characteristics) {
                    characteristics[assigned.value] = characteristic
                    if let cccd = assigned.clientConfiguration { clientConfigurations[cccd] = assigned.value }
                }
            }
        } catch let error as SimulatedWorldError {
            throw error
        } catch {
            throw SimulatedWorldError("the services do not make a GATT database: \(error)")
        }
        state.withLock { state in
            state.characteristics = characteristics
            state.clientConfigurations = clientConfigurations
            for characteristic in characteristics.values where state.values[characteristic.uuid] == nil {
                state.values[characteristic.uuid] = characteristic.value
            }
        }
        let deferred = Set(characteristics.keys).union(clientConfigurations.keys)
        stack.engine.setGATTDeferral(GATTDeferral(handles: deferred) { [weak self] request in self?.received(request) })
        return database
    }

    /// What procedures that are not deferred (Read By Type, Read Multiple, Write Command) meet: the current value;
    /// a Write Command keeps its value and tells the delegate.
    private func valueHandlers() -> GATTValue {
        .dynamic(
            read: { [weak self] request in
                guard let self else { return .failure(GATTAttributeError(.unlikelyError)) }
                let value = state.withLock { state in state.characteristics[request.handle].flatMap { state.values[$0.uuid] } } ?? Data()
                return request.answer(wholeValue: Array(value))
            },
            write: { [weak self] request in
                guard let self, request.kind == .command || request.kind == .signedCommand,
                      let characteristic = state.withLock({ $0.characteristics[request.handle] }) else { return nil }
                let data = Data(request.value)
                state.withLock { $0.values[characteristic.uuid] = data }
                record(.write(characteristic: characteristic.uuid, value: data, withResponse: false))
                let delegate = delegate
                onDelegateQueue { delegate.peripheral(self, didReceiveWriteCommandFor: characteristic, data: data) }
                return nil
            })
    }

    /// A request the delegate answers (on the stack's loop: handed to the delegate's queue at once).
    private func received(_ request: GATTPendingRequest) {
        let delegate = delegate
        switch request.kind {
        case .read(let handle, let offset):
            if let valueHandle = state.withLock({ $0.clientConfigurations[handle] }) {
                // The CCCD's value is the server's, per central.
                let bits = state.withLock { $0.subscriptions[request.connection.rawValue]?[valueHandle]?.rawValue } ?? 0
                let value = Data([UInt8(truncatingIfNeeded: bits), UInt8(truncatingIfNeeded: bits >> 8)])
                answer(request, offset <= value.count ? .success(value.subdata(in: offset..<value.count)) : .error(.invalidOffset))
                return
            }
            guard let characteristic = state.withLock({ $0.characteristics[handle] }) else { return }
            if offset == 0 { record(.read(characteristic: characteristic.uuid)) }
            onDelegateQueue { [self] in
                answer(request, delegate.peripheral(self, didReceiveReadRequestFor: characteristic, offset: offset))
            }
        case .write(let handle, let value):
            if let valueHandle = state.withLock({ $0.clientConfigurations[handle] }) {
                guard let characteristic = state.withLock({ $0.characteristics[valueHandle] }) else { return }
                let enabled = value.contains { $0 != 0 }
                record(.subscribe(characteristic: characteristic.uuid, enabled: enabled))
                onDelegateQueue { [self] in
                    answer(request, delegate.peripheral(self, didReceiveSetNotifyRequest: enabled, for: characteristic).map { Data() })
                }
                return
            }
            guard let characteristic = state.withLock({ $0.characteristics[handle] }) else { return }
            written(request, [(characteristic, Data(value))], delegate)
        case .executeWrite(let writes):
            // A long write: the prepared parts merged, at their offset into the current value.
            let parts = state.withLock { state in
                writes.compactMap { write -> (SimulatedCharacteristic, Data)? in
                    guard let characteristic = state.characteristics[write.handle] else { return nil }
                    var value = state.values[characteristic.uuid] ?? Data()
                    value = write.offset <= value.count ? value.prefix(write.offset) + Data(write.value) : Data(write.value)
                    return (characteristic, value)
                }
            }
            written(request, parts, delegate)
        }
    }

    /// Writes the delegate accepts are kept; the first refusal is the answer.
    private func written(_ request: GATTPendingRequest, _ parts: [(SimulatedCharacteristic, Data)], _ delegate: any SimulatedPeripheralDelegate) {
        for (characteristic, data) in parts { record(.write(characteristic: characteristic.uuid, value: data, withResponse: true)) }
        onDelegateQueue { [self] in
            var response = SimulatedResponse<Data>.success(Data())
            for (characteristic, data) in parts {
                let answer = delegate.peripheral(self, didReceiveWriteRequestFor: characteristic, data: data).map { Data() }
                response = answer
                if !answer.isSuccess { break }
            }
            answer(request, response) { [self] in
                state.withLock { state in for (characteristic, data) in parts { state.values[characteristic.uuid] = data } }
            }
        }
    }

    /// Carries out `response` for `request`: at once or after its delay, the answer, no answer, or the link
    /// dropped; `accepted` first when it is a success.
    private func answer(_ request: GATTPendingRequest, _ response: SimulatedResponse<Data>, accepted: (@Sendable () -> Void)? = nil) {
        let engine = stack.engine
        let connection = request.connection.rawValue
        switch response {
        case .delayed(let delay, let later):
            engine.eventLoop.schedule(after: delay) { [self] in answer(request, later, accepted: accepted) }
        case .never:
            break
        case .disconnect:
            engine.eventLoop.execute { engine.disconnect(connectionHandle: connection) }
        case .success(let value):
            engine.eventLoop.execute {
                accepted?()
                engine.respondToGATTRequest(connectionHandle: connection, id: request.id, result: .success(Array(value)))
            }
        case .attError(let code):
            engine.eventLoop.execute {
                engine.respondToGATTRequest(connectionHandle: connection, id: request.id, result: .failure(GATTAttributeError(ATTErrorCode(code))))
            }
        }
    }

    /// Asks for the spec's connection parameters when the link's interval is not within them (as peripheral: L2CAP
    /// Connection Parameter Update Request, Vol 3 Part A §4.20; the central answers and updates the link, §4.21).
    private func askForParameters(_ connection: Connection) {
        guard connection.role == .peripheral else { return }
        guard let wanted = spec.connectionParameters else {
            // The platform's own request (Linux), if any.
            if let request = spec.personality?.connectionParameterRequest(for: connection.parameters) {
                stack.engine.requestConnectionParameterUpdate(connectionHandle: connection.handle, request, completion: nil)
            }
            return
        }
        let range = L2CAPConnectionParameterUpdateRequest.intervalRange
        let minimum = SimulatedConnectionParameters.units(wanted.interval.lowerBound, of: 1250, in: range)
        let maximum = max(minimum, SimulatedConnectionParameters.units(wanted.interval.upperBound, of: 1250, in: range))
        guard !(minimum...maximum).contains(connection.parameters.interval) else { return }
        let request = L2CAPConnectionParameterUpdateRequest(
            intervalMin: minimum, intervalMax: maximum,
            peripheralLatency: UInt16(clamping: min(max(wanted.latency, 0), Int(L2CAPConnectionParameterUpdateRequest.maximumPeripheralLatency))),
            timeoutMultiplier: SimulatedConnectionParameters.units(wanted.supervisionTimeout, of: 10_000,
                                                                   in: L2CAPConnectionParameterUpdateRequest.timeoutRange))
        stack.engine.requestConnectionParameterUpdate(connectionHandle: connection.handle, request, completion: nil)
    }

    /// Follows the links and subscriptions; advertises again when a link ends.
    func watchEvents() {
        stack.engine.addEventHandler { [weak self] event in
            guard let self else { return }
            switch event {
            case .connected(let connection):
                state.withLock { state in
                    state.connections.insert(connection.handle)
                    state.parameters[connection.handle] = connection.parameters
                }
                record(.connected)
                askForParameters(connection)
                let delegate = delegate
                onDelegateQueue { delegate.peripheralDidConnect(self) }
            case .disconnected(let handle, _):
                state.withLock { state in
                    state.connections.remove(handle)
                    state.subscriptions[handle] = nil
                    state.parameters[handle] = nil
                }
                record(.disconnected)
                let delegate = delegate
                onDelegateQueue { delegate.peripheralDidDisconnect(self) }
                readvertise()
            case .gattIndicationConfirmed, .gattIndicationFailed:
                state.withLock { $0.valueInFlight = false }
            case .connectionUpdated(let connection):
                state.withLock { $0.parameters[connection.handle] = connection.parameters }
                record(.connectionUpdated(interval: SimulatedConnectionParameters.interval(units: connection.parameters.interval)))
            case .pairingCompleted(_, let outcome):
                record(outcome.usedExistingBond ? .encryptedWithBond : .paired(secureConnections: outcome.secureConnections ?? false))
            case .pairingFailed(_, let reason, let error):
                record(.pairingFailed(reason: reason.map { "\($0)" } ?? error.reason))
            case .gattServer(.subscriptionChanged(let connection, let valueHandle, let configuration)):
                let characteristic = state.withLock { state in
                    state.subscriptions[connection.rawValue, default: [:]][valueHandle] = configuration
                    return state.characteristics[valueHandle]
                }
                guard let characteristic else { return }
                let delegate = delegate
                onDelegateQueue {
                    if configuration.isEmpty {
                        delegate.peripheral(self, didUnsubscribeFrom: characteristic)
                    } else {
                        delegate.peripheral(self, didSubscribeTo: characteristic)
                    }
                }
            default:
                break
            }
        }
    }
}

extension SimulatedResponse {
    /// The same answer carrying another value.
    func map<Other: Sendable>(_ transform: (Value) -> Other) -> SimulatedResponse<Other> {
        switch self {
        case .success(let value): .success(transform(value))
        case .attError(let code): .attError(code)
        case .never: .never
        case .disconnect: .disconnect
        case .delayed(let delay, let later): .delayed(delay, later.map(transform))
        }
    }

    var isSuccess: Bool {
        switch self {
        case .success: true
        case .delayed(_, let later): later.isSuccess
        case .attError, .never, .disconnect: false
        }
    }
}
