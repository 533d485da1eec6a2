import ATT
public import BluetoothCore
import BluetoothRuntime
public import GATT
public import BluetoothEngine

/// A peripheral the local central is connected to, with its GATT server as async methods (Core 5.4 Vol 3
/// Part G §4: discovery §4.4–§4.7, reads §4.8, writes §4.9, notifications and indications §4.10–§4.12) and
/// L2CAP credit-based channels (Vol 3 Part A §4.22).
///
/// Procedures of one peripheral run one after the other in call order (the host queues them). Cancelling the
/// task that awaits one throws `CancellationError` at once; the ATT exchange under way still completes and its
/// result is dropped, so the bearer stays consistent. Identity: one object per connection.
public final class Peripheral: Sendable, Hashable, CustomStringConvertible {
    let link: PeerLink
    /// CCCD handle per characteristic value handle, once found.
    private let clientConfigurationHandles = LockedValue<[UInt16: UInt16]>([:])

    init(link: PeerLink) {
        self.link = link
    }

    /// The peripheral's address.
    public var address: BluetoothAddress { link.connection.peer }
    /// The HCI connection handle of the link.
    public var connectionHandle: UInt16 { link.handle }
    /// The connection as the host reported it at connection time.
    public var connection: Connection { link.connection }
    /// The ATT_MTU (23 until the exchange the host starts on connection completes).
    public var mtu: Int { link.mtuValue.load() }
    /// Whether the link is still up.
    public var isConnected: Bool { link.disconnection.value == nil }

    /// The longest value one write of `type` carries: ATT_MTU − 3 without response, 512 with (long writes).
    public func maximumWriteValueLength(for type: WriteType) -> Int {
        type == .withResponse ? ATTMTU.maximumAttributeValueLength : mtu - 3
    }

    /// Disconnects and waits until the link is down.
    public func disconnect() async throws { try await link.disconnect() }

    /// Waits until the link ends and returns the HCI reason. Cancelling throws `CancellationError`.
    public func disconnected() async throws -> HCIStatus { try await link.disconnection.wait() }

    // MARK: GATT procedures

    /// Runs any GATT client procedure (Vol 3 Part G §4) and returns its result.
    public func perform(_ procedure: GATTProcedure) async throws -> GATTProcedureResult {
        let engine = link.core.engine, handle = link.handle
        return try await PendingOperation.run { operation in
            engine.gatt(connectionHandle: handle, procedure) { result in
                operation.finish(result.mapError { BluetoothLEError($0) }.widened)
            }
        }
    }

    /// Discovers the primary services (§4.4.1), or only those of `uuids` (§4.4.2), in handle order.
    public func discoverServices(_ uuids: [BluetoothUUID]? = nil) async throws -> [RemoteService] {
        var found: [GATTDiscoveredService] = []
        if let uuids {
            for uuid in uuids { found += try await services(of: perform(.discoverPrimaryServices(uuid: uuid))) }
            found.sort { $0.startHandle < $1.startHandle }
        } else {
            found = try await services(of: perform(.discoverAllPrimaryServices))
        }
        return found.map(RemoteService.init)
    }

    /// Discovers the characteristics of a service (§4.6.1), or only those of `uuids` (§4.6.2).
    public func discoverCharacteristics(_ uuids: [BluetoothUUID]? = nil, of service: RemoteService) async throws -> [RemoteCharacteristic] {
        guard case .characteristics(let all) = try await perform(.discoverAllCharacteristics(of: service.discovered)) else {
            throw BluetoothLEError(.protocolError, "characteristic discovery returned something else")
        }
        let wanted = uuids.map(Set.init)
        return all.filter { wanted?.contains($0.uuid) ?? true }.map(RemoteCharacteristic.init)
    }

    /// Discovers the descriptors of a characteristic (§4.7.1).
    public func discoverDescriptors(of characteristic: RemoteCharacteristic) async throws -> [RemoteDescriptor] {
        guard characteristic.endHandle > characteristic.valueHandle else { return [] }
        guard case .descriptors(let all) = try await perform(.discoverAllDescriptors(of: characteristic.discovered)) else {
            throw BluetoothLEError(.protocolError, "descriptor discovery returned something else")
        }
        let descriptors = all.map(RemoteDescriptor.init)
        if let cccd = descriptors.first(where: { $0.uuid == GATTUUID.clientCharacteristicConfiguration }) {
            clientConfigurationHandles.withLock { $0[characteristic.valueHandle] = cccd.handle }
        }
        return descriptors
    }

    /// The characteristic `uuid` of the service `service` (discovering both), or ``BluetoothLEError/Code/notFound``.
    public func characteristic(_ uuid: BluetoothUUID, service: BluetoothUUID) async throws -> RemoteCharacteristic {
        guard let remoteService = try await discoverServices([service]).first else {
            throw BluetoothLEError(.notFound, "\(address) has no service \(service)")
        }
        guard let found = try await discoverCharacteristics([uuid], of: remoteService).first else {
            throw BluetoothLEError(.notFound, "service \(service) of \(address) has no characteristic \(uuid)")
        }
        return found
    }

    /// Reads a characteristic value, whole: Read Request, then Read Blob Requests while parts fill the MTU
    /// (§4.8.1, §4.8.3).
    public func read(_ characteristic: RemoteCharacteristic) async throws -> [UInt8] {
        try await value(of: perform(.readLongCharacteristicValue(handle: characteristic.valueHandle)))
    }

    /// Reads a descriptor value, whole (§4.12.1, §4.12.2).
    public func read(_ descriptor: RemoteDescriptor) async throws -> [UInt8] {
        try await value(of: perform(.readLongDescriptor(handle: descriptor.handle)))
    }

    /// Writes a characteristic value. With response: a Write Request, or prepared writes for a value longer than
    /// ATT_MTU − 3 (§4.9.3, §4.9.4). Without response: a Write Command (at most ATT_MTU − 3 octets), sent when
    /// the connection's send queue has room: the call suspends while it is full (§4.9.1).
    public func write(_ characteristic: RemoteCharacteristic, value: [UInt8], type: WriteType = .withResponse) async throws {
        let handle = characteristic.valueHandle
        switch type {
        case .withResponse:
            let procedure: GATTProcedure = value.count <= mtu - 3
                ? .writeCharacteristicValue(handle: handle, value: value)
                : .writeLongCharacteristicValue(handle: handle, value: value)
            _ = try await perform(procedure)
        case .withoutResponse:
            guard value.count <= mtu - 3 else {
                throw BluetoothLEError(.invalidParameters, "\(value.count) octets do not fit one Write Command (ATT_MTU \(mtu) − 3)")
            }
            try await whenReady { engine, connection, operation in
                engine.gatt(connectionHandle: connection, .writeWithoutResponse(handle: handle, value: value)) { result in
                    operation.finish(result.map { _ in () }.mapError { BluetoothLEError($0) }.widened)
                }
            }
        }
    }

    /// Writes a descriptor value with a Write Request (or prepared writes when long, §4.12.3, §4.12.4).
    public func write(_ descriptor: RemoteDescriptor, value: [UInt8]) async throws {
        let procedure: GATTProcedure = value.count <= mtu - 3
            ? .writeDescriptor(handle: descriptor.handle, value: value)
            : .writeLongDescriptor(handle: descriptor.handle, value: value)
        _ = try await perform(procedure)
    }

    /// Runs `send` on the loop once the connection may send (at once, or after `HostEvent/readyToSend(handle:)`).
    private func whenReady(
        _ send: @escaping @Sendable (any StackEngine, UInt16, PendingOperation<Void>) -> Void
    ) async throws {
        let core = link.core, handle = link.handle
        let waiter = LockedValue<UInt64?>(nil)
        try await PendingOperation<Void>.run(onCancel: {
            core.onLoop { if let id = waiter.load() { core.links[handle]?.readyWaiters[id] = nil } }
        }) { operation in
            core.onLoop {
                let id = core.whenReady(handle) {
                    guard !operation.isFinished else { return }
                    guard core.links[handle] != nil else {
                        operation.fail(BluetoothLEError.notConnected(handle))
                        return
                    }
                    send(core.engine, handle, operation)
                }
                waiter.store(id)
            }
        }
    }

    // MARK: Notifications

    /// A stream of the characteristic's notifications (or indications, when it only indicates; §4.10, §4.11).
    /// The first stream of a characteristic writes its CCCD (§4.12.3) before this returns; when the last one
    /// ends (the consumer leaves its loop, or drops it unused) the CCCD is written back to 0x0000. The stream finishes
    /// when the link ends. Values are buffered without limit: iterate promptly.
    public func notifications(for characteristic: RemoteCharacteristic) async throws -> ValueStream<[UInt8]> {
        let configuration: GATTProcedure.ClientConfiguration
        if characteristic.properties.contains(.notify) {
            configuration = .notifications
        } else if characteristic.properties.contains(.indicate) {
            configuration = .indications
        } else {
            throw BluetoothLEError(.notSupported, "\(characteristic) neither notifies nor indicates")
        }
        let cccd = try await clientConfigurationHandle(of: characteristic)
        let core = link.core, handle = link.handle, valueHandle = characteristic.valueHandle
        let id = LockedValue<UInt64>(0)
        let (stream, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .unbounded)
        let remove: @Sendable () -> Void = {
            core.onLoop { Self.removeNotificationSink(core, handle: handle, valueHandle: valueHandle, cccd: cccd, id: id.load()) }
        }
        continuation.onTermination = { _ in remove() }
        try await PendingOperation<Void>.run(onCancel: { continuation.finish() }) { operation in
            core.onLoop {
                guard !operation.isFinished else { return }
                guard core.links[handle] != nil else {
                    continuation.finish()
                    operation.fail(BluetoothLEError.notConnected(handle))
                    return
                }
                let sinkID = core.makeID()
                id.store(sinkID)
                let first = core.links[handle]?.notificationSinks[valueHandle]?.isEmpty ?? true
                core.links[handle]?.notificationSinks[valueHandle, default: [:]][sinkID] = continuation
                guard first else {
                    operation.succeed(())
                    return
                }
                core.engine.gatt(connectionHandle: handle, .subscribe(cccdHandle: cccd, configuration: configuration)) { result in
                    switch result {
                    case .success:
                        operation.succeed(())
                    case .failure(let error):
                        continuation.finish()
                        operation.fail(BluetoothLEError(error))
                    }
                }
            }
        }
        return ValueStream(base: stream, token: StopToken { continuation.finish() })
    }

    /// On the loop: forgets one notification stream; the last one of a characteristic unsubscribes.
    private static func removeNotificationSink(_ core: StackCore, handle: UInt16, valueHandle: UInt16, cccd: UInt16, id: UInt64) {
        guard core.links[handle]?.notificationSinks[valueHandle]?.removeValue(forKey: id) != nil else { return }
        guard core.links[handle]?.notificationSinks[valueHandle]?.isEmpty ?? false else { return }
        core.links[handle]?.notificationSinks[valueHandle] = nil
        core.engine.gatt(connectionHandle: handle, .unsubscribe(cccdHandle: cccd)) { _ in }
    }

    private func clientConfigurationHandle(of characteristic: RemoteCharacteristic) async throws -> UInt16 {
        if let known = clientConfigurationHandles.withLock({ $0[characteristic.valueHandle] }) { return known }
        _ = try await discoverDescriptors(of: characteristic)
        guard let found = clientConfigurationHandles.withLock({ $0[characteristic.valueHandle] }) else {
            throw BluetoothLEError(.notFound, "\(characteristic) has no Client Characteristic Configuration descriptor")
        }
        return found
    }

    // MARK: L2CAP

    /// Opens an LE credit-based channel to `psm` (Vol 3 Part A §4.22) and returns it once the peer accepted.
    /// Cancelling while the peer has not answered closes the channel if it opens after all.
    public func openL2CAPChannel(psm: UInt16, mtu: UInt16 = 2048) async throws -> L2CAPChannel {
        let core = link.core, handle = link.handle
        return try await PendingOperation.run { operation in
            core.engine.openChannel(connectionHandle: handle, psm: psm, mtu: mtu) { result in
                switch result {
                case .success(let info):
                    guard let channel = core.links[handle]?.channels[info.localCID.rawValue] else {
                        operation.fail(BluetoothLEError(.channelFailed, "the channel on PSM \(psm) closed at once"))
                        return
                    }
                    if !operation.succeed(channel) {
                        core.engine.closeL2CAPChannel(connectionHandle: handle, channel: info.localCID, completion: nil)
                    }
                case .failure(let error):
                    operation.fail(BluetoothLEError(.channelFailed, error.reason, hciStatus: error.status))
                }
            }
        }
    }

    // MARK: Helpers

    private func services(of result: GATTProcedureResult) throws -> [GATTDiscoveredService] {
        guard case .services(let services) = result else {
            throw BluetoothLEError(.protocolError, "service discovery returned something else")
        }
        return services
    }

    private func value(of result: GATTProcedureResult) throws -> [UInt8] {
        guard case .value(let value) = result else { throw BluetoothLEError(.protocolError, "a read returned no value") }
        return value
    }

    public static func == (lhs: Peripheral, rhs: Peripheral) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    public var description: String { "peripheral \(address) (\(Dissection.hex16(connectionHandle)))" }
}
