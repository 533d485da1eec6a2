import AdvertisingData
package import BluetoothCore
import BluetoothRuntime
import DBus
import Dispatch
import Foundation

/// The peripheral role's calls to bluetoothd, for the bluetoothd engine (``BlueZEngine``) and OpenCoreBluetooth's
/// BlueZ backend: the published services are a GATT application of objects we export on the bus (BlueZ's
/// doc/org.bluez.GattManager.rst: an ObjectManager root with GattService1, GattCharacteristic1 and GattDescriptor1
/// objects) registered with RegisterApplication, and the advertising an LEAdvertisement1 object registered with
/// LEAdvertisingManager1.RegisterAdvertisement (Core 5.4 Vol 3 Part G §3, Part C §9.3).
///
/// Mapping: bluetoothd calls ReadValue and WriteValue on our characteristics; a static value is answered at once,
/// the others become request events, answered with ``respond(to:result:value:)`` (the D-Bus reply waits for it).
/// Notifications go through the socket bluetoothd acquires (AcquireNotify, offered with the NotifyAcquired property;
/// ``BlueZNotifyPipe``): its full buffer is ``updateValue(_:characteristicID:)``'s back-pressure; without it
/// (StartNotify) they are PropertiesChanged signals of the Value, always with room. bluetoothd sends them to every
/// subscribed central. StartNotify/StopNotify carry no central; they are reported for the central connected most
/// recently. Services added or removed re-register the application (bluetoothd reads an application once).
/// Published L2CAP channels are listening kernel L2CAP sockets (``BlueZL2CAPListener``).
///
/// Who owns the state: this object, behind one lock; bluetoothd's calls arrive on the D-Bus reader thread and
/// events leave in order on a queue of its own.
package final class BlueZPeripheral: Sendable {
    /// What the peripheral side reports, in order.
    package enum Event: Sendable {
        case stateChanged(BlueZAdapterState)
        case centralConnected(BluetoothAddress, mtu: Int)
        case centralDisconnected(BluetoothAddress)
        /// A central read a value without a static value (answer with ``BlueZPeripheral/respond(to:result:value:)``).
        case readRequest(id: UInt64, central: BluetoothAddress, characteristicID: Int, offset: Int)
        /// A central wrote; `responseRequired` false for a Write Command (nothing to answer).
        case writeRequests(id: UInt64, central: BluetoothAddress, writes: [BlueZLocalWrite], responseRequired: Bool)
        case subscribed(BluetoothAddress, characteristicID: Int)
        case unsubscribed(BluetoothAddress, characteristicID: Int)
        /// Room again after ``BlueZPeripheral/updateValue(_:characteristicID:)`` said false.
        case readyToUpdateSubscribers
        case l2capChannelOpened(BlueZL2CAPChannel)
    }

    private struct Published {
        var service: BlueZLocalService
        var path: String
    }

    private struct State {
        var sink: (@Sendable (Event) -> Void)?
        var tree: BlueZObjectTree?
        var adapterPath: String?
        var powered = false
        var services: [Int: Published] = [:]
        var nextServiceIndex = 0
        /// Characteristic id → object path, and back.
        var characteristicPaths: [Int: String] = [:]
        var characteristics: [String: BlueZLocalCharacteristic] = [:]
        var registered = false
        var advertising = false
        var advertisement: [String: DBusValue] = [:]
        var pendingRequests: [UInt64: DBusMessage] = [:]
        var nextRequest: UInt64 = 1
        var centrals: [String: BluetoothAddress] = [:]
        var lastCentral: BluetoothAddress?
        /// Characteristics whose notifications go through an AcquireNotify socket, by id.
        var notifyPipes: [Int: BlueZNotifyPipe] = [:]
        /// Published PSMs (kernel listening sockets).
        var listeners: [UInt16: BlueZL2CAPListener] = [:]
        var closed = false
    }

    package let adapterName: String?
    /// The root of our objects on the bus (unique per backend in the process).
    package let root: String
    private let state = LockedValue(State())
    private let events = DispatchQueue(label: "BlueZ.peripheral.events")
    private static let counter = LockedValue(0)

    package static let gattManager = "org.bluez.GattManager1"
    package static let advertisingManager = "org.bluez.LEAdvertisingManager1"

    /// The bus bluetoothd is on (the system bus unless a test gives another).
    package let busAddress: String

    /// Where the backend says what went wrong outside any call: one line (logged as an error by default).
    private let report: @Sendable (String) -> Void
    /// The pairing agent asked for (`OCB_BLUEZ_AGENT`, ``BlueZPairingAgent``), registered while the backend runs.
    private let pairingAgent: BlueZPairingAgent?
    /// Where the agent's prompts go (the value to compare, the passkey to type): logged at notice by default.
    private let prompt: @Sendable (String) -> Void
    private let registeredAgent = LockedValue<BlueZAgent?>(nil)

    package init(adapter: String?, busAddress: String = DBusConnection.systemBusAddress,
                 report: @escaping @Sendable (String) -> Void = { Log.bluez.error("\($0)") },
                 pairingAgent: BlueZPairingAgent? = BlueZPairingAgent.fromEnvironment(),
                 prompt: @escaping @Sendable (String) -> Void = { Log.bluez.notice("\($0)") }) {
        self.pairingAgent = pairingAgent
        self.prompt = prompt
        adapterName = adapter
        self.busAddress = busAddress
        self.report = report
        let number = Self.counter.withLock { value -> Int in
            value += 1
            return value
        }
        root = "/org/opencorebluetooth/peripheral\(number)"
    }

    private func emit(_ event: Event) {
        guard let sink = state.withLock({ $0.closed ? nil : $0.sink }) else { return }
        events.async { sink(event) }
    }

    // MARK: Lifecycle

    package func start(_ events: @escaping @Sendable (Event) -> Void) {
        state.withLock { $0.sink = events }
        Task { await open() }
    }

    private func open() async {
        let started = await BlueZClientStart.run(adapter: adapterName, busAddress: busAddress, pairingAgent: pairingAgent,
                                                 agentPath: root + "/agent", prompt: prompt, report: report) { session in
            let keep = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.tree = session.tree
                state.adapterPath = session.adapterPath
                state.powered = session.powered
                return true
            }
            guard keep else { return false }
            session.connection.export(path: root) { [weak self] call in self?.rootCall(call) }
            session.connection.export(path: root + "/advertisement") { [weak self] call in self?.advertisementCall(call) }
            session.tree.observe { [weak self] change in self?.changed(change) }
            session.connection.onClose { [weak self] error in
                guard let self, !self.state.load().closed else { return }
                self.report("lost bluetoothd: \(error.reason); Bluetooth is off")
                self.emit(.stateChanged(.poweredOff))
            }
            return true
        }
        switch started {
        case .failed: emit(.stateChanged(.unavailable))
        case .dropped: return
        case .started(let powered, let agent):
            registeredAgent.store(agent)
            emit(.stateChanged(powered ? .poweredOn : .poweredOff))
        }
    }

    package func shutdown() {
        let (tree, adapter, registered, advertising) = state.withLock { state -> (BlueZObjectTree?, String?, Bool, Bool) in
            defer {
                state.closed = true
                state.sink = nil
            }
            return (state.tree, state.adapterPath, state.registered, state.advertising)
        }
        for listener in state.withLock({ state in defer { state.listeners = [:] }; return Array(state.listeners.values) }) {
            listener.close()
        }
        for pipe in state.withLock({ state in defer { state.notifyPipes = [:] }; return Array(state.notifyPipes.values) }) {
            pipe.close()
        }
        guard let tree, let adapter else { return }
        let connection = tree.connection
        if advertising {
            connection.call(.call(destination: BlueZObjectTree.service, path: adapter, interface: Self.advertisingManager,
                                  member: "UnregisterAdvertisement", body: [.objectPath(root + "/advertisement")]), timeout: .seconds(5)) { _ in }
        }
        if registered {
            connection.call(.call(destination: BlueZObjectTree.service, path: adapter, interface: Self.gattManager,
                                  member: "UnregisterApplication", body: [.objectPath(root)]), timeout: .seconds(5)) { _ in }
        }
        registeredAgent.withLock { agent in defer { agent = nil }; return agent }?.unregisterNow()
        DispatchQueue.global().asyncAfter(deadline: .now() + 6) { connection.close() }
    }

    private func call(_ member: String, on interface: String, _ body: [DBusValue], timeout: Duration = .seconds(30),
                      completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) {
        guard let (tree, adapter) = state.withLock({ state in state.tree.flatMap { tree in state.adapterPath.map { (tree, $0) } } }) else {
            return completion(.failure(DBusError(.disconnected, "bluetoothd is not connected")))
        }
        tree.connection.call(.call(destination: BlueZObjectTree.service, path: adapter, interface: interface, member: member, body: body),
                             timeout: timeout, completion: completion)
    }

    // MARK: Centrals (bluetoothd's Device1 objects that connect)

    private func changed(_ change: BlueZObjectTree.Change) {
        switch change {
        case .changed(let path, BlueZCentral.adapterInterface, let properties):
            guard let powered = properties["Powered"]?.boolValue,
                  state.withLock({ state -> Bool in
                      guard state.adapterPath == path, state.powered != powered else { return false }
                      state.powered = powered
                      return true
                  }) else { return }
            emit(.stateChanged(powered ? .poweredOn : .poweredOff))
        // A central bluetoothd did not know appears connected (InterfacesAdded); a known one changes Connected.
        case .added(let path, BlueZCentral.deviceInterface, let properties),
             .changed(let path, BlueZCentral.deviceInterface, let properties):
            guard let connected = properties["Connected"]?.boolValue,
                  let all = state.load().tree?.properties(path, BlueZCentral.deviceInterface),
                  let peer = BlueZCentral.peer(all) else { return }
            if connected {
                let fresh = state.withLock { state -> Bool in
                    defer {
                        state.centrals[path] = peer
                        state.lastCentral = peer
                    }
                    return state.centrals[path] == nil
                }
                if fresh { emit(.centralConnected(peer, mtu: 23)) }
            } else if state.withLock({ $0.centrals.removeValue(forKey: path) }) != nil {
                emit(.centralDisconnected(peer))
            }
        // bluetoothd drops a temporary device's object when it goes.
        case .removed(let path, BlueZCentral.deviceInterface):
            if let peer = state.withLock({ $0.centrals.removeValue(forKey: path) }) { emit(.centralDisconnected(peer)) }
        default:
            return
        }
    }

    /// The central a request came from: its `device` option, else the one connected last.
    private func central(of options: DBusValue?) -> BluetoothAddress {
        if let path = options?.dictionaryValue?["device"]?.stringValue,
           let properties = state.load().tree?.properties(path, BlueZCentral.deviceInterface),
           let peer = BlueZCentral.peer(properties) {
            return peer
        }
        return state.load().lastCentral ?? BluetoothAddress(0, type: .public)
    }

    // MARK: The GATT application

    package func addService(_ service: BlueZLocalService, completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        replaceServices(with: [service], keeping: true, completion)
    }

    /// Publishes `services` instead of every service published so far, with one registration of the application
    /// (bluetoothd numbers them and tells subscribed clients, Core 5.4 Vol 3 Part G §7.1).
    package func replaceServices(_ services: [BlueZLocalService], completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        replaceServices(with: services, keeping: false, completion)
    }

    private func replaceServices(with services: [BlueZLocalService], keeping: Bool,
                                 _ completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        let paths = state.withLock { state -> [String] in
            if !keeping {
                state.services = [:]
                state.characteristicPaths = [:]
                state.characteristics = [:]
            }
            var exported: [String] = []
            for service in services {
                let path = root + "/service\(state.nextServiceIndex)"
                state.nextServiceIndex += 1
                state.services[service.id] = Published(service: service, path: path)
                exported.append(path)
                for (index, characteristic) in service.characteristics.enumerated() {
                    let characteristicPath = path + "/char\(index)"
                    state.characteristicPaths[characteristic.id] = characteristicPath
                    state.characteristics[characteristicPath] = characteristic
                    exported.append(characteristicPath)
                    for descriptorIndex in characteristic.descriptors.indices {
                        exported.append(characteristicPath + "/desc\(descriptorIndex)")
                    }
                }
            }
            return exported
        }
        if let connection = state.load().tree?.connection {
            for path in paths { connection.export(path: path) { [weak self] call in self?.attributeCall(call) } }
        }
        reregister(completion)
    }

    /// Unregisters the application (when registered) and registers it again with what is published now.
    private func reregister(_ completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        let (registered, empty) = state.withLock { ($0.registered, $0.services.isEmpty) }
        let register: @Sendable () -> Void = { [self] in
            guard !empty else { return completion(.success(())) }
            call("RegisterApplication", on: Self.gattManager, [.objectPath(root), .properties([:])]) { [self] result in
                switch result {
                case .success:
                    state.withLock { $0.registered = true }
                    completion(.success(()))
                case .failure(let error):
                    completion(.failure(.failed("bluetoothd refused the GATT application: \(error)")))
                }
            }
        }
        guard registered else { return register() }
        state.withLock { $0.registered = false }
        call("UnregisterApplication", on: Self.gattManager, [.objectPath(root)]) { _ in register() }
    }

    /// Every object of the application: path → interface → properties.
    private func objects() -> [String: [String: [String: DBusValue]]] {
        let (services, notifyPipes) = state.withLock { (Array($0.services.values).sorted { $0.path < $1.path }, $0.notifyPipes) }
        var objects: [String: [String: [String: DBusValue]]] = [:]
        for published in services {
            let service = published.service
            let includes = service.includedServiceIDs.compactMap { id in services.first { $0.service.id == id }?.path }
            objects[published.path] = ["org.bluez.GattService1": [
                "UUID": .string(service.uuid.fullString.lowercased()), "Primary": .boolean(service.isPrimary),
                "Includes": .array(.objectPath, includes.map(DBusValue.objectPath)),
            ]]
            for (index, characteristic) in service.characteristics.enumerated() {
                let path = published.path + "/char\(index)"
                var properties: [String: DBusValue] = [
                    "UUID": .string(characteristic.uuid.fullString.lowercased()), "Service": .objectPath(published.path),
                    "Flags": .array(.string, characteristic.flags.map(DBusValue.string)),
                ]
                // With NotifyAcquired, bluetoothd asks for a socket (AcquireNotify) instead of StartNotify: the
                // socket's buffer is updateValue's back-pressure.
                if characteristic.properties & 0x30 != 0 { properties["NotifyAcquired"] = .boolean(notifyPipes[characteristic.id] != nil) }
                objects[path] = ["org.bluez.GattCharacteristic1": properties]
                for (descriptorIndex, descriptor) in characteristic.descriptors.enumerated() {
                    objects[path + "/desc\(descriptorIndex)"] = ["org.bluez.GattDescriptor1": [
                        "UUID": .string(descriptor.uuid.fullString.lowercased()), "Characteristic": .objectPath(path),
                        "Flags": .array(.string, [.string("read")]),
                    ]]
                }
            }
        }
        return objects
    }

    private static func managedObjects(_ objects: [String: [String: [String: DBusValue]]]) -> DBusValue {
        let properties = DBusType.array(.dictEntry(key: .string, value: .variant))
        let interfaces = DBusType.array(.dictEntry(key: .string, value: properties))
        return .dictionary(key: .objectPath, value: interfaces, objects.sorted { $0.key < $1.key }.map { path, entry in
            (.objectPath(path), .dictionary(key: .string, value: properties, entry.sorted { $0.key < $1.key }.map {
                (.string($0.key), .properties($0.value))
            }))
        })
    }

    private func rootCall(_ call: DBusMessage) -> DBusMessage? {
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"):
            return call.methodReturn([Self.managedObjects(objects())])
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return call.methodReturn([.string(Self.introspection(["org.freedesktop.DBus.ObjectManager"]))])
        default:
            return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(call.member ?? "?") is not a method here")
        }
    }

    /// Properties, Introspect, and the GATT methods bluetoothd calls on a service, characteristic or descriptor.
    private func attributeCall(_ call: DBusMessage) -> DBusMessage? {
        guard let path = call.path else { return nil }
        let entry = objects()[path] ?? [:]
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            let interface = call.body.first?.stringValue ?? ""
            return call.methodReturn([.properties(entry[interface] ?? [:])])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard call.body.count == 2, let interface = call.body[0].stringValue, let name = call.body[1].stringValue,
                  let value = entry[interface]?[name] else {
                return call.errorReply(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
            }
            return call.methodReturn([.variant(value)])
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return call.methodReturn([.string(Self.introspection(Array(entry.keys) + ["org.freedesktop.DBus.Properties"]))])
        case ("org.bluez.GattCharacteristic1", "ReadValue"):
            return read(call, path: path)
        case ("org.bluez.GattCharacteristic1", "WriteValue"):
            return write(call, path: path)
        case ("org.bluez.GattCharacteristic1", "AcquireNotify"):
            return acquireNotify(call, path: path)
        case ("org.bluez.GattCharacteristic1", "StartNotify"), ("org.bluez.GattCharacteristic1", "StopNotify"):
            guard let characteristic = state.load().characteristics[path] else { return call.errorReply(name: "org.bluez.Error.Failed", message: "gone") }
            let central = state.load().lastCentral ?? central(of: nil)
            emit(call.member == "StartNotify" ? .subscribed(central, characteristicID: characteristic.id)
                 : .unsubscribed(central, characteristicID: characteristic.id))
            return call.methodReturn()
        case ("org.bluez.GattDescriptor1", "ReadValue"):
            let characteristicPath = String(path[..<(path.range(of: "/desc")?.lowerBound ?? path.endIndex)])
            let index = Int(path.split(separator: "/").last?.dropFirst(4) ?? "") ?? -1
            guard let descriptors = state.load().characteristics[characteristicPath]?.descriptors, descriptors.indices.contains(index) else {
                return call.errorReply(name: "org.bluez.Error.Failed", message: "no such descriptor")
            }
            let offset = call.body.first?.dictionaryValue?["offset"]?.intValue ?? 0
            return call.methodReturn([.bytes(Array(descriptors[index].value.dropFirst(offset)))])
        default:
            return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(call.member ?? "?") is not a method here")
        }
    }

    private func read(_ call: DBusMessage, path: String) -> DBusMessage? {
        guard let characteristic = state.load().characteristics[path] else {
            return call.errorReply(name: "org.bluez.Error.Failed", message: "no such characteristic")
        }
        let offset = call.body.first?.dictionaryValue?["offset"]?.intValue ?? 0
        if let value = characteristic.staticValue {
            guard offset <= value.count else { return call.errorReply(name: "org.bluez.Error.InvalidOffset", message: "offset beyond the value") }
            return call.methodReturn([.bytes(Array(value.dropFirst(offset)))])
        }
        let id = remember(call)
        emit(.readRequest(id: id, central: central(of: call.body.first), characteristicID: characteristic.id, offset: offset))
        return nil
    }

    private func write(_ call: DBusMessage, path: String) -> DBusMessage? {
        guard let characteristic = state.load().characteristics[path], let value = call.body.first?.bytesValue else {
            return call.errorReply(name: "org.bluez.Error.Failed", message: "no such characteristic")
        }
        let options = call.body.count > 1 ? call.body[1] : nil
        let offset = options?.dictionaryValue?["offset"]?.intValue ?? 0
        let command = options?.dictionaryValue?["type"]?.stringValue == "command"
        let writes = [BlueZLocalWrite(characteristicID: characteristic.id, offset: offset, value: value)]
        let central = central(of: options)
        if command {
            emit(.writeRequests(id: 0, central: central, writes: writes, responseRequired: false))
            return call.methodReturn()
        }
        let id = remember(call)
        emit(.writeRequests(id: id, central: central, writes: writes, responseRequired: true))
        return nil
    }

    /// Keeps a call of bluetoothd's until the app answers it; after 30 s bluetoothd has given up on it (its own
    /// time limit is 25 s), so it is forgotten and a late answer goes nowhere.
    private func remember(_ call: DBusMessage) -> UInt64 {
        let id = state.withLock { state in
            let id = state.nextRequest
            state.nextRequest += 1
            state.pendingRequests[id] = call
            return id
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) { [weak self] in
            self?.state.withLock { _ = $0.pendingRequests.removeValue(forKey: id) }
        }
        return id
    }

    package func respond(to requestID: UInt64, result: UInt8, value: [UInt8]?) {
        guard let (call, connection) = state.withLock({ state in
            state.pendingRequests.removeValue(forKey: requestID).flatMap { call in state.tree.map { (call, $0.connection) } }
        }) else { return }
        let reply: DBusMessage
        if result == 0 {
            reply = call.member == "ReadValue" ? call.methodReturn([.bytes(value ?? [])]) : call.methodReturn()
        } else {
            // bluetoothd turns these names into ATT errors (Core 5.4 Vol 3 Part F §3.4.1.1).
            let name = switch result {
            case 0x02, 0x03: "org.bluez.Error.NotPermitted"
            case 0x05, 0x08, 0x0F: "org.bluez.Error.NotAuthorized"
            case 0x07: "org.bluez.Error.InvalidOffset"
            case 0x0D: "org.bluez.Error.InvalidValueLength"
            case 0x06: "org.bluez.Error.NotSupported"
            default: "org.bluez.Error.Failed"
            }
            reply = call.errorReply(name: name, message: "ATT error 0x\(String(result, radix: 16))")
        }
        _ = try? connection.send(reply)
    }

    /// bluetoothd's AcquireNotify (options: device, mtu, link): a socket pair, bluetoothd's end in the reply with the
    /// MTU; the first subscription of the characteristic (bluetoothd acquires once for all its subscribers).
    private func acquireNotify(_ call: DBusMessage, path: String) -> DBusMessage? {
        guard let characteristic = state.load().characteristics[path] else {
            return call.errorReply(name: "org.bluez.Error.Failed", message: "no such characteristic")
        }
        guard state.load().notifyPipes[characteristic.id] == nil else {
            return call.errorReply(name: "org.bluez.Error.NotPermitted", message: "notifications already acquired")
        }
        let options = call.body.first
        let mtu = options?.dictionaryValue?["mtu"]?.intValue ?? 23
        guard let (pipe, remote) = BlueZNotifyPipe.make(characteristicID: characteristic.id, mtu: mtu) else {
            return call.errorReply(name: "org.bluez.Error.Failed", message: "cannot make a socket pair")
        }
        let central = central(of: options)
        state.withLock { $0.notifyPipes[characteristic.id] = pipe }
        pipe.start(ready: { [weak self] in self?.emit(.readyToUpdateSubscribers) }, ended: { [weak self] in
            guard let self, state.withLock({ $0.notifyPipes[characteristic.id] === pipe ? $0.notifyPipes.removeValue(forKey: characteristic.id) : nil }) != nil else { return }
            emit(.unsubscribed(central, characteristicID: characteristic.id))
        })
        emit(.subscribed(central, characteristicID: characteristic.id))
        // The connection sends bluetoothd's end and then closes our copy of it.
        return call.methodReturn([.unixFD(0), .uint16(UInt16(clamping: mtu))], fileDescriptors: [remote])
    }

    /// Sends `value` to the subscribed centrals (bluetoothd's choice of which); false when its socket is full
    /// (``Event/readyToUpdateSubscribers`` follows).
    package func updateValue(_ value: [UInt8], characteristicID: Int) -> Bool {
        if let pipe = state.load().notifyPipes[characteristicID] { return pipe.send(value) }
        guard let (path, connection) = state.withLock({ state in
            state.characteristicPaths[characteristicID].flatMap { path in state.tree.map { (path, $0.connection) } }
        }) else { return true }
        let signal = DBusMessage(kind: .signal, path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                 body: [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes(value)]),
                                        .array(.string, [])])
        _ = try? connection.send(signal)
        return true
    }

    // MARK: Advertising

    private func advertisementCall(_ call: DBusMessage) -> DBusMessage? {
        let properties = state.withLock { $0.advertisement }
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            return call.methodReturn([.properties(properties)])
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard call.body.count == 2, let name = call.body[1].stringValue, let value = properties[name] else {
                return call.errorReply(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
            }
            return call.methodReturn([.variant(value)])
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return call.methodReturn([.string(Self.introspection(["org.bluez.LEAdvertisement1", "org.freedesktop.DBus.Properties"]))])
        case ("org.bluez.LEAdvertisement1", "Release"):
            state.withLock { $0.advertising = false }
            return call.methodReturn()
        default:
            return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(call.member ?? "?") is not a method here")
        }
    }

    /// Advertises `localName` and `serviceUUIDs`, connectable, with `manufacturerData` (company, octets after it)
    /// when given: CoreBluetooth's overflow area is Apple's (``ServiceOverflowArea``).
    package func startAdvertising(localName: String?, serviceUUIDs: [BluetoothUUID],
                                  manufacturerData: (company: UInt16, data: [UInt8])?,
                                  completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        var properties: [String: DBusValue] = [
            "Type": .string("peripheral"),
            "ServiceUUIDs": .array(.string, serviceUUIDs.map { .string($0.fullString.lowercased()) }),
        ]
        if let localName { properties["LocalName"] = .string(localName) }
        if let manufacturerData {
            properties["ManufacturerData"] = .dictionary(key: .uint16, value: .variant,
                                                         [(.uint16(manufacturerData.company), .variant(.bytes(manufacturerData.data)))])
        }
        let wasAdvertising = state.withLock { state -> Bool in
            state.advertisement = properties
            defer { state.advertising = true }
            return state.advertising
        }
        let path = root + "/advertisement"
        let register: @Sendable () -> Void = { [self] in
            call("RegisterAdvertisement", on: Self.advertisingManager, [.objectPath(path), .properties([:])]) { [self] result in
                switch result {
                case .success: completion(.success(()))
                case .failure(let error):
                    state.withLock { $0.advertising = false }
                    completion(.failure(.failed("bluetoothd refused the advertisement: \(error)")))
                }
            }
        }
        if wasAdvertising {
            call("UnregisterAdvertisement", on: Self.advertisingManager, [.objectPath(path)]) { _ in register() }
        } else {
            register()
        }
    }

    package func stopAdvertising() {
        guard state.withLock({ state -> Bool in
            defer { state.advertising = false }
            return state.advertising
        }) else { return }
        call("UnregisterAdvertisement", on: Self.advertisingManager, [.objectPath(root + "/advertisement")]) { _ in }
    }

    /// A listening kernel L2CAP socket on `psm` (0: the kernel picks one in the LE dynamic range, Core 5.4 Vol 3
    /// Part A §4.22), encryption required when asked (BT_SECURITY medium: the kernel refuses an unencrypted link).
    package func publishL2CAPChannel(psm: UInt16, encryptionRequired: Bool,
                                     completion: @escaping @Sendable (Result<UInt16, BlueZCallError>) -> Void) {
        let (tree, adapter) = state.withLock { ($0.tree, $0.adapterPath) }
        guard let local = BlueZL2CAPSocket.adapterAddress(tree, adapter) else {
            return completion(.failure(.failed("bluetoothd does not say the adapter's address")))
        }
        let fd: Int32
        do throws(BlueZL2CAPSocket.Failure) {
            fd = try BlueZL2CAPSocket.open(local: local, psm: psm, encrypted: encryptionRequired)
        } catch {
            return completion(.failure(.failed(error.description)))
        }
        guard let listener = BlueZL2CAPListener(fd: fd) else {
            return completion(.failure(.failed("cannot listen on an L2CAP socket")))
        }
        state.withLock { $0.listeners[listener.psm] = listener }
        listener.start { [weak self] channel in self?.emit(.l2capChannelOpened(channel)) }
        completion(.success(listener.psm))
    }

    package func unpublishL2CAPChannel(_ psm: UInt16, completion: @escaping @Sendable (Result<Void, BlueZCallError>) -> Void) {
        guard let listener = state.withLock({ $0.listeners.removeValue(forKey: psm) }) else {
            return completion(.failure(.failed("PSM \(psm) is not published")))
        }
        listener.close()
        completion(.success(()))
    }

    /// Introspection XML naming the interfaces of an object (bluetoothd's client reads it for objects without an
    /// ObjectManager, such as the advertisement).
    package static func introspection(_ interfaces: [String]) -> String {
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\" "
            + "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>"
            + interfaces.sorted().map { "<interface name=\"\($0)\"/>" }.joined() + "</node>"
    }
}
