import ATT
import BluetoothCore
package import GATT
import BluetoothEngine

/// The GATT client procedures (Core 5.4 Vol 3 Part G §4) on bluetoothd: each one the backend call its D-Bus API
/// offers. bluetoothd resolves the whole database at connection and reads and writes whole values (long reads and
/// prepared writes are its business), so a procedure here is one call; those its API has no call for (Read Using
/// Characteristic UUID, Read Multiple, signed and reliable writes) are refused with
/// *request refused*. Discovery results are remembered per link, to name the service, characteristic or CCCD that a
/// later procedure's handles belong to.
extension BlueZEngine {
    package func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure,
              completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        onLoop { [self] in
            guard let link = links[handle], link.connection.role == .central else {
                return completion(.failure(.bearerFailed(.disconnected(reason: nil))))
            }
            run(procedure, on: handle, peer: link.connection.peer, completion)
        }
    }

    private func run(_ procedure: GATTProcedure, on handle: UInt16, peer: BluetoothAddress,
                     _ completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        /// A backend's answer, back on the loop, with the attribute handle its ATT errors name.
        func answer<Value: Sendable>(_ attribute: UInt16, _ body: @escaping @Sendable (Value) -> GATTProcedureResult)
            -> @Sendable (Result<Value, BlueZCallError>) -> Void {
            { [self] result in
                onLoop { completion(result.map(body).mapError { Self.clientError($0, handle: attribute) }) }
            }
        }
        switch procedure {
        case .discoverAllPrimaryServices, .discoverPrimaryServices:
            var uuids: [BluetoothUUID]?
            if case .discoverPrimaryServices(let uuid) = procedure { uuids = [uuid] }
            central.discoverServices(peer, uuids: uuids) { [self] result in
                onLoop { [self] in
                    if case .success(let services) = result {
                        for service in services { links[handle]?.services[service.startHandle] = service }
                    }
                    completion(result.map { services in
                        .services(services.filter(\.isPrimary).sorted { $0.startHandle < $1.startHandle }.map {
                            GATTDiscoveredService(range: ATTHandleRange(start: $0.startHandle, end: $0.endHandle), uuid: $0.uuid)
                        })
                    }.mapError { Self.clientError($0, handle: 0x0001) })
                }
            }
        case .discoverAllCharacteristics(let range), .discoverCharacteristics(let range, _):
            guard let service = links[handle]?.services[range.start] else {
                return completion(.failure(.invalidParameter("no service discovered at handle \(Dissection.hex16(range.start))")))
            }
            var uuids: [BluetoothUUID]?
            if case .discoverCharacteristics(_, let uuid) = procedure { uuids = [uuid] }
            central.discoverCharacteristics(peer, in: service, uuids: uuids) { [self] result in
                onLoop { [self] in
                    if case .success(let characteristics) = result {
                        for characteristic in characteristics { links[handle]?.characteristics[characteristic.valueHandle] = characteristic }
                    }
                    completion(result.map { .characteristics($0.sorted { $0.valueHandle < $1.valueHandle }) }.mapError { Self.clientError($0, handle: range.start) })
                }
            }
        case .discoverAllDescriptors(let range):
            guard range.start <= range.end else { return completion(.success(.descriptors([]))) }
            guard let characteristic = links[handle]?.characteristics[range.start &- 1] else {
                return completion(.failure(.invalidParameter("no characteristic discovered before handle \(Dissection.hex16(range.start))")))
            }
            central.discoverDescriptors(peer, valueHandle: characteristic.valueHandle) { [self] result in
                onLoop { [self] in
                    if case .success(let descriptors) = result {
                        for descriptor in descriptors where descriptor.uuid == GATTUUID.clientCharacteristicConfiguration {
                            links[handle]?.clientConfigurations[descriptor.handle] = characteristic.valueHandle
                        }
                    }
                    completion(result.map { descriptors in
                        .descriptors(descriptors.sorted { $0.handle < $1.handle })
                    }.mapError { Self.clientError($0, handle: range.start) })
                }
            }
        case .readCharacteristicValue(let attribute), .readLongCharacteristicValue(let attribute),
             .readDescriptor(let attribute), .readLongDescriptor(let attribute):
            central.read(peer, handle: attribute, completion: answer(attribute) { .value($0) })
        case .writeCharacteristicValue(let attribute, let value), .writeLongCharacteristicValue(let attribute, let value),
             .writeDescriptor(let attribute, let value), .writeLongDescriptor(let attribute, let value):
            central.write(peer, handle: attribute, value: value, completion: answer(attribute) { _ in .written })
        case .writeWithoutResponse(let attribute, let value):
            if !central.writeWithoutResponse(peer, handle: attribute, value: value) { links[handle]?.writesFull = true }
            completion(.success(.written))
        case .subscribe(let cccd, _), .unsubscribe(let cccd):
            guard let valueHandle = links[handle]?.clientConfigurations[cccd] else {
                return completion(.failure(.invalidParameter("no Client Characteristic Configuration discovered at \(Dissection.hex16(cccd))")))
            }
            var enabled = false
            if case .subscribe = procedure { enabled = true }
            central.setNotifications(peer, valueHandle: valueHandle, enabled: enabled, completion: answer(cccd) { _ in .written })
        case .findIncludedServices(let range):
            guard let service = links[handle]?.services[range.start] else {
                return completion(.failure(.invalidParameter("no service discovered at handle \(Dissection.hex16(range.start))")))
            }
            // bluetoothd names the included services, not their include declarations: those follow the service
            // declaration in order (Core 5.4 Vol 3 Part G §3.1, as bluetoothd's database keeps them).
            central.discoverIncludedServices(peer, in: service, uuids: nil) { [self] result in
                onLoop { [self] in
                    if case .success(let included) = result {
                        for service in included { links[handle]?.services[service.startHandle] = service }
                    }
                    completion(result.map { included in
                        .includedServices(included.enumerated().map { index, service in
                            GATTDiscoveredIncludedService(
                                declarationHandle: range.start &+ 1 &+ UInt16(truncatingIfNeeded: index),
                                service: GATTDiscoveredService(range: ATTHandleRange(start: service.startHandle, end: service.endHandle),
                                                               uuid: service.uuid))
                        })
                    }.mapError { Self.clientError($0, handle: range.start) })
                }
            }
        case .readUsingCharacteristicUUID, .readMultipleCharacteristicValues,
             .readMultipleVariableCharacteristicValues, .signedWriteWithoutResponse, .reliableWrite:
            completion(.failure(.requestRefused("bluetoothd's D-Bus API has no call for \(procedure)")))
        }
    }

    /// A backend's failure as the GATT client's: an ATT error stays one; a lost link is a bearer failure; the rest
    /// (bluetoothd refused or failed the call) is a refused request with bluetoothd's reason.
    static func clientError(_ error: BlueZCallError, handle: UInt16) -> GATTClientError {
        switch error {
        case .att(let code): .attError(ATTErrorCode(code), handle: handle)
        case .notConnected, .peerDisconnected: .bearerFailed(.disconnected(reason: nil))
        case .timedOut: .bearerFailed(.transactionTimeout)
        case .unknownDevice(let reason), .invalidHandle(let reason), .connectionFailed(let reason), .unsupported(let reason),
             .failed(let reason): .requestRefused(reason)
        }
    }
}
