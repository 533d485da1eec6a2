import ATT
import BluetoothCore
import DBus
package import GATT
import BluetoothEngine

/// The GATT client procedures (Core 5.4 Vol 3 Part G §4) on bluetoothd: each one the call its D-Bus API offers.
/// bluetoothd resolves the whole database at connection (its GattService1 / GattCharacteristic1 / GattDescriptor1
/// objects, named by the attribute handles in their paths: a characteristic's path names its declaration, its value
/// is the handle after) and reads and writes whole values (long reads and prepared writes are its business), so a
/// procedure here is one call: ReadValue, WriteValue (`type` request or command; at most ``commandWindow`` Write
/// Commands unanswered by bluetoothd), StartNotify / StopNotify (bluetoothd writes the CCCD). Those its API has no
/// call for (Read Using Characteristic UUID, Read Multiple, signed and reliable writes) are refused with *request
/// refused*. bluetoothd's replies with an ATT error name (BlueZErrors) become that ATT error. Discovery results are
/// remembered per link, to name the object a later procedure's handle belongs to.
extension BlueZEngine {
    /// How many Write Commands may wait for bluetoothd's answer before the link is not ready to send.
    package static let commandWindow = 8

    static let serviceInterface = "org.bluez.GattService1"
    static let characteristicInterface = "org.bluez.GattCharacteristic1"
    static let descriptorInterface = "org.bluez.GattDescriptor1"

    package func gatt(connectionHandle handle: UInt16, _ procedure: GATTProcedure,
              completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        onLoop { [self] in
            guard let link = links[handle], link.connection.role == .central else {
                return completion(.failure(.bearerFailed(.disconnected(reason: nil))))
            }
            run(procedure, on: handle, completion)
        }
    }

    private func run(_ procedure: GATTProcedure, on handle: UInt16,
                     _ completion: @escaping @Sendable (Result<GATTProcedureResult, GATTClientError>) -> Void) {
        let failed: @Sendable (BlueZCallError, UInt16) -> Void = { error, attribute in
            completion(.failure(Self.clientError(error, handle: attribute)))
        }
        switch procedure {
        case .discoverAllPrimaryServices, .discoverPrimaryServices:
            services(on: handle) { result in
                var services: [BlueZRemoteService]
                switch result {
                case .success(let found): services = found
                case .failure(let error): return failed(error, 0x0001)
                }
                if case .discoverPrimaryServices(let uuid) = procedure { services = services.filter { $0.uuid == uuid } }
                completion(.success(.services(services.filter(\.isPrimary).map {
                    GATTDiscoveredService(range: ATTHandleRange(start: $0.startHandle, end: $0.endHandle), uuid: $0.uuid)
                })))
            }
        case .discoverAllCharacteristics(let range), .discoverCharacteristics(let range, _):
            guard let service = links[handle]?.services[range.start], let path = links[handle]?.attributePaths[range.start] else {
                return completion(.failure(.invalidParameter("no service discovered at handle \(Dissection.hex16(range.start))")))
            }
            let found = attributes(Self.characteristicInterface, under: path)
            var characteristics: [GATTDiscoveredCharacteristic] = []
            for (index, entry) in found.enumerated() {
                guard let uuid = entry.properties["UUID"]?.stringValue.flatMap({ try? BluetoothUUID(string: $0) }) else { continue }
                // The path names the declaration; the value is the next attribute (Core 5.4 Vol 3 Part G §3.3.2).
                let valueHandle = entry.handle &+ 1
                links[handle]?.attributePaths[valueHandle] = entry.path
                let flags = (entry.properties["Flags"]?.arrayValue ?? []).compactMap(\.stringValue)
                let properties = flags.reduce(UInt8(0)) { $0 | (BlueZDevice.propertyBits[$1] ?? 0) }
                let end = index + 1 < found.count ? found[index + 1].handle - 1 : service.endHandle
                let characteristic = GATTDiscoveredCharacteristic(declarationHandle: entry.handle, properties: .init(rawValue: properties),
                                                                  valueHandle: valueHandle, uuid: uuid, endHandle: max(end, valueHandle))
                links[handle]?.characteristics[valueHandle] = characteristic
                characteristics.append(characteristic)
            }
            if case .discoverCharacteristics(_, let uuid) = procedure { characteristics = characteristics.filter { $0.uuid == uuid } }
            completion(.success(.characteristics(characteristics)))
        case .discoverAllDescriptors(let range):
            guard range.start <= range.end else { return completion(.success(.descriptors([]))) }
            guard let characteristic = links[handle]?.characteristics[range.start &- 1],
                  let path = links[handle]?.attributePaths[characteristic.valueHandle] else {
                return completion(.failure(.invalidParameter("no characteristic discovered before handle \(Dissection.hex16(range.start))")))
            }
            let descriptors = attributes(Self.descriptorInterface, under: path).compactMap { entry -> GATTDiscoveredDescriptor? in
                guard let uuid = entry.properties["UUID"]?.stringValue.flatMap({ try? BluetoothUUID(string: $0) }) else { return nil }
                links[handle]?.attributePaths[entry.handle] = entry.path
                if uuid == GATTUUID.clientCharacteristicConfiguration { links[handle]?.clientConfigurations[entry.handle] = characteristic.valueHandle }
                return GATTDiscoveredDescriptor(handle: entry.handle, uuid: uuid)
            }
            completion(.success(.descriptors(descriptors)))
        case .readCharacteristicValue(let attribute), .readLongCharacteristicValue(let attribute),
             .readDescriptor(let attribute), .readLongDescriptor(let attribute):
            guard let path = links[handle]?.attributePaths[attribute] else { return failed(.invalidHandle("no attribute at handle \(attribute)"), attribute) }
            call(path, Self.interface(of: path), "ReadValue", [.properties([:])]) { result in
                switch result {
                case .success(let reply): completion(.success(.value(reply.body.first?.bytesValue ?? [])))
                case .failure(let error): failed(Self.callError(error, reading: true), attribute)
                }
            }
        case .writeCharacteristicValue(let attribute, let value), .writeLongCharacteristicValue(let attribute, let value),
             .writeDescriptor(let attribute, let value), .writeLongDescriptor(let attribute, let value):
            guard let path = links[handle]?.attributePaths[attribute] else { return failed(.invalidHandle("no attribute at handle \(attribute)"), attribute) }
            let options: [String: DBusValue] = Self.interface(of: path) == Self.characteristicInterface ? ["type": .string("request")] : [:]
            call(path, Self.interface(of: path), "WriteValue", [.bytes(value), .properties(options)]) { result in
                switch result {
                case .success: completion(.success(.written))
                case .failure(let error): failed(Self.callError(error, reading: false), attribute)
                }
            }
        case .writeWithoutResponse(let attribute, let value):
            writeCommand(value, attribute: attribute, on: handle)
            completion(.success(.written))
        case .subscribe(let cccd, _), .unsubscribe(let cccd):
            guard let valueHandle = links[handle]?.clientConfigurations[cccd], let path = links[handle]?.attributePaths[valueHandle] else {
                return completion(.failure(.invalidParameter("no Client Characteristic Configuration discovered at \(Dissection.hex16(cccd))")))
            }
            let enabled: Bool
            if case .subscribe = procedure { enabled = true } else { enabled = false }
            if enabled { notifying[path] = (handle, valueHandle) }
            call(path, Self.characteristicInterface, enabled ? "StartNotify" : "StopNotify") { [self] result in
                if !enabled || (try? result.get()) == nil { notifying[path] = nil }
                switch result {
                case .success: completion(.success(.written))
                case .failure(let error): failed(Self.callError(error, reading: true), cccd)
                }
            }
        case .findIncludedServices(let range):
            // bluetoothd lists includes as object paths (GattService1.Includes) of services it resolved, and names
            // the included services, not their include declarations: those follow the service declaration in order
            // (Core 5.4 Vol 3 Part G §3.1, as bluetoothd's database keeps them).
            guard links[handle]?.services[range.start] != nil, let path = links[handle]?.attributePaths[range.start] else {
                return completion(.failure(.invalidParameter("no service discovered at handle \(Dissection.hex16(range.start))")))
            }
            let includes = Set((session?.tree.properties(path, Self.serviceInterface)?["Includes"]?.arrayValue ?? [])
                .compactMap { $0.stringValue.flatMap(BlueZPaths.handle(of:)) })
            services(on: handle) { result in
                let services: [BlueZRemoteService]
                switch result {
                case .success(let found): services = found
                case .failure(let error): return failed(error, range.start)
                }
                completion(.success(.includedServices(services.filter { includes.contains($0.startHandle) }.enumerated().map { index, service in
                    GATTDiscoveredIncludedService(
                        declarationHandle: range.start &+ 1 &+ UInt16(truncatingIfNeeded: index),
                        service: GATTDiscoveredService(range: ATTHandleRange(start: service.startHandle, end: service.endHandle), uuid: service.uuid))
                })))
            }
        case .readUsingCharacteristicUUID, .readMultipleCharacteristicValues,
             .readMultipleVariableCharacteristicValues, .signedWriteWithoutResponse, .reliableWrite:
            completion(.failure(.requestRefused("bluetoothd's D-Bus API has no call for \(procedure)")))
        }
    }

    /// Every service bluetoothd resolved on the link, remembered (once it resolved them).
    private func services(on handle: UInt16, _ completion: @escaping (Result<[BlueZRemoteService], BlueZCallError>) -> Void) {
        whenResolved(handle) { [self] resolved in
            guard case .success(let device) = resolved else { return completion(resolved.map { _ in [] }) }
            let found = attributes(Self.serviceInterface, under: device)
            var services: [BlueZRemoteService] = []
            for (index, entry) in found.enumerated() {
                guard let uuid = entry.properties["UUID"]?.stringValue.flatMap({ try? BluetoothUUID(string: $0) }) else { continue }
                // bluetoothd does not say where a service ends: before the next one, or at the last attribute it has
                // (a characteristic's value follows its declaration).
                let end = index + 1 < found.count ? found[index + 1].handle - 1 : lastHandle(under: entry.path, from: entry.handle)
                let service = BlueZRemoteService(uuid: uuid, isPrimary: entry.properties["Primary"]?.boolValue ?? true,
                                                 startHandle: entry.handle, endHandle: end)
                links[handle]?.attributePaths[entry.handle] = entry.path
                links[handle]?.services[entry.handle] = service
                services.append(service)
            }
            completion(.success(services))
        }
    }

    /// A Write Command is WriteValue with `type` command; bluetoothd answers once it queued it for the link. At most
    /// ``commandWindow`` unanswered ones: the one that fills the window is sent and the link is then not ready, and
    /// `readyToSend` follows when bluetoothd answered enough of them (CoreBluetooth's `canSendWriteWithoutResponse`
    /// and `peripheralIsReady(toSendWriteWithoutResponse:)`).
    private func writeCommand(_ value: [UInt8], attribute: UInt16, on handle: UInt16) {
        guard let path = links[handle]?.attributePaths[attribute] else { return }
        links[handle]?.commandsInFlight += 1
        if (links[handle]?.commandsInFlight ?? 0) >= Self.commandWindow { links[handle]?.writesFull = true }
        call(path, Self.characteristicInterface, "WriteValue", [.bytes(value), .properties(["type": .string("command")])]) { [self] _ in
            guard let link = links[handle] else { return }
            let inFlight = max(0, link.commandsInFlight - 1)
            links[handle]?.commandsInFlight = inFlight
            guard link.writesFull, inFlight < Self.commandWindow / 2 else { return }
            links[handle]?.writesFull = false
            emit(.readyToSend(handle: handle))
        }
    }

    /// The attributes of `interface` directly under `parent`, with the handle in their name, by handle.
    private func attributes(_ interface: String, under parent: String) -> [(handle: UInt16, path: String, properties: [String: DBusValue])] {
        (session?.tree.objects(with: interface) ?? [])
            .filter { $0.path.hasPrefix(parent + "/") && !$0.path.dropFirst(parent.count + 1).contains("/") }
            .compactMap { entry in BlueZPaths.handle(of: entry.path).map { ($0, entry.path, entry.properties) } }
            .sorted { $0.handle < $1.handle }
    }

    /// The highest attribute handle bluetoothd has below `path` (`start` when none).
    private func lastHandle(under path: String, from start: UInt16) -> UInt16 {
        var last = start
        for interface in [Self.characteristicInterface, Self.descriptorInterface] {
            for entry in session?.tree.objects(with: interface) ?? [] where BlueZPaths.isUnder(entry.path, path) {
                guard let handle = BlueZPaths.handle(of: entry.path) else { continue }
                last = max(last, interface == Self.characteristicInterface ? handle &+ 1 : handle)
            }
        }
        return last
    }

    private static func interface(of path: String) -> String {
        path.split(separator: "/").last?.hasPrefix("desc") == true ? descriptorInterface : characteristicInterface
    }

    static func callError(_ error: DBusError, reading: Bool) -> BlueZCallError {
        if let code = BlueZErrors.attErrorCode(error, reading: reading) { return .att(code) }
        return error.code == .timedOut ? .timedOut("bluetoothd: \(error)") : .failed("bluetoothd: \(error)")
    }

    /// A failure as the GATT client's: an ATT error stays one; a lost link is a bearer failure; the rest (bluetoothd
    /// refused or failed the call) is a refused request with bluetoothd's reason.
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

