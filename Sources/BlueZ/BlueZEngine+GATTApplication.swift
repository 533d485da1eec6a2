import ATT
import BluetoothCore
import DBus
import Dispatch
import GATT

/// The local GATT server as bluetoothd takes it: a GATT application of objects the engine exports on the bus
/// (BlueZ's doc/org.bluez.GattManager.rst: an ObjectManager root with GattService1, GattCharacteristic1 and
/// GattDescriptor1 objects), registered with GattManager1.RegisterApplication (Core 5.4 Vol 3 Part G §3).
///
/// The objects are made from the engine's ``GATTDatabase`` (a service's path per start handle, a characteristic's per
/// value handle); bluetoothd reads the application once, so every change registers it again. Every call bluetoothd
/// makes on an object (properties, ReadValue, WriteValue, AcquireNotify, StartNotify) hops onto the engine's loop
/// and is answered from there ("Who owns the state" in ``BlueZEngine``); a value's read or write waits for the server
/// (``BlueZEngine/read(_:_:)``, the deferral) and bluetoothd's call waits with it. Notifications go through the socket
/// bluetoothd acquires (AcquireNotify, offered with NotifyAcquired; ``BlueZNotifyPipe``), whose full buffer is the
/// back-pressure; without it (StartNotify) they are PropertiesChanged signals of the Value. StartNotify and
/// StopNotify carry no central: they count for the central connected most recently.
extension BlueZEngine {
    /// What an exported object stands for.
    enum ExportedAttribute {
        case service(GATTServiceDefinition, GATTServiceHandles)
        case characteristic(GATTCharacteristicDefinition, valueHandle: UInt16, service: String)
        case descriptor(uuid: BluetoothUUID, value: [UInt8], characteristic: String)
    }

    /// The application's objects and bluetoothd's calls waiting for an answer (loop-confined).
    struct Application {
        var objects: [String: ExportedAttribute] = [:]
        var nextServiceIndex = 0
        var registered = false
        /// bluetoothd's ReadValue and WriteValue calls the server has not answered yet.
        var pendingCalls: [UInt64: DBusMessage] = [:]
        var nextCall: UInt64 = 0
        /// The AcquireNotify socket of each value that has one.
        var notifyPipes: [UInt16: BlueZNotifyPipe] = [:]
        /// Centrals bluetoothd reports connected (Device1 path → address), and the last one.
        var centrals: [String: BluetoothAddress] = [:]
        var lastCentral: BluetoothAddress?
    }

    static let gattManager = "org.bluez.GattManager1"

    // MARK: Publishing

    /// Exports `services` (definitions with the handles the database gave them) beside those exported, or instead of
    /// them when `replacing`, and registers the application again.
    func export(_ services: [(GATTServiceDefinition, GATTServiceHandles)], replacing: Bool,
                _ completion: @escaping @Sendable (Result<Void, DBusError>) -> Void) {
        guard let connection = session?.tree.connection else {
            return completion(.failure(DBusError(.disconnected, "bluetoothd is not connected")))
        }
        if replacing {
            for path in application.objects.keys { connection.export(path: path, nil) }
            application.objects = [:]
        }
        for (definition, handles) in services {
            let path = root + "/service\(application.nextServiceIndex)"
            application.nextServiceIndex += 1
            application.objects[path] = .service(definition, handles)
            for (index, (characteristic, numbered)) in zip(definition.characteristics, handles.characteristics).enumerated() {
                let characteristicPath = path + "/char\(index)"
                application.objects[characteristicPath] = .characteristic(characteristic, valueHandle: numbered.value, service: path)
                // Static descriptors besides the CCCD and Extended Properties, which bluetoothd adds itself.
                let descriptors = characteristic.descriptors.compactMap { descriptor -> (BluetoothUUID, [UInt8])? in
                    guard case .stored(let value) = descriptor.value else { return nil }
                    return (descriptor.uuid, value)
                }
                for (descriptorIndex, descriptor) in descriptors.enumerated() {
                    application.objects[characteristicPath + "/desc\(descriptorIndex)"] =
                        .descriptor(uuid: descriptor.0, value: descriptor.1, characteristic: characteristicPath)
                }
            }
        }
        for path in application.objects.keys {
            connection.export(path: path) { [weak self] call in
                guard let engine = self else { return nil }
                engine.onLoop { engine.attributeCall(call) }
                return nil
            }
        }
        reregister(completion)
    }

    /// Unregisters the application (when registered) and registers it again with what is exported now.
    private func reregister(_ completion: @escaping @Sendable (Result<Void, DBusError>) -> Void) {
        let register: @Sendable () -> Void = { [weak self] in
            guard let engine = self else { return }
            engine.onLoop {
                guard !engine.application.objects.isEmpty else { return completion(.success(())) }
                engine.callAdapter(Self.gattManager, "RegisterApplication", [.objectPath(engine.root), .properties([:])]) { result in
                    engine.onLoop {
                        if case .success = result { engine.application.registered = true }
                        completion(result.map { _ in () })
                    }
                }
            }
        }
        guard application.registered else { return register() }
        application.registered = false
        callAdapter(Self.gattManager, "UnregisterApplication", [.objectPath(root)]) { _ in register() }
    }

    /// Calls `member` of `interface` on the adapter.
    func callAdapter(_ interface: String, _ member: String, _ body: [DBusValue],
                     completion: @escaping @Sendable (Result<DBusMessage, DBusError>) -> Void) {
        guard let session else { return completion(.failure(DBusError(.disconnected, "bluetoothd is not connected"))) }
        session.tree.connection.call(.call(destination: BlueZObjectTree.service, path: session.adapterPath, interface: interface,
                                           member: member, body: body), timeout: .seconds(30), completion: completion)
    }

    // MARK: The objects bluetoothd reads

    /// The root's answers: every object of the application (ObjectManager) and its introspection.
    func rootCall(_ call: DBusMessage) -> DBusMessage {
        switch (call.interface, call.member) {
        case ("org.freedesktop.DBus.ObjectManager", "GetManagedObjects"):
            let properties = DBusType.array(.dictEntry(key: .string, value: .variant))
            let interfaces = DBusType.array(.dictEntry(key: .string, value: properties))
            let objects = application.objects.keys.sorted().map { path -> (DBusValue, DBusValue) in
                let (interface, values) = objectProperties(path)
                return (.objectPath(path), .dictionary(key: .string, value: properties, [(.string(interface), .properties(values))]))
            }
            return call.methodReturn([.dictionary(key: .objectPath, value: interfaces, objects)])
        case ("org.freedesktop.DBus.Introspectable", "Introspect"):
            return call.methodReturn([.string(Self.introspection(["org.freedesktop.DBus.ObjectManager"]))])
        default:
            return call.errorReply(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(call.member ?? "?") is not a method here")
        }
    }

    /// An object's interface and properties.
    private func objectProperties(_ path: String) -> (String, [String: DBusValue]) {
        switch application.objects[path] {
        case .service(let definition, _)?:
            let includes = application.objects.filter { _, object in
                if case .service(_, let handles) = object { return definition.includes.contains { $0.start == handles.start } }
                return false
            }.keys.sorted()
            return ("org.bluez.GattService1", [
                "UUID": .string(definition.uuid.fullString.lowercased()), "Primary": .boolean(definition.isPrimary),
                "Includes": .array(.objectPath, includes.map(DBusValue.objectPath)),
            ])
        case .characteristic(let definition, let valueHandle, let service)?:
            var properties: [String: DBusValue] = [
                "UUID": .string(definition.uuid.fullString.lowercased()), "Service": .objectPath(service),
                "Flags": .array(.string, Self.flags(definition).map(DBusValue.string)),
            ]
            // With NotifyAcquired, bluetoothd asks for a socket (AcquireNotify) instead of StartNotify: the socket's
            // buffer is updateValue's back-pressure.
            if !definition.properties.isDisjoint(with: [.notify, .indicate]) {
                properties["NotifyAcquired"] = .boolean(application.notifyPipes[valueHandle] != nil)
            }
            return ("org.bluez.GattCharacteristic1", properties)
        case .descriptor(let uuid, _, let characteristic)?:
            return ("org.bluez.GattDescriptor1", [
                "UUID": .string(uuid.fullString.lowercased()), "Characteristic": .objectPath(characteristic),
                "Flags": .array(.string, [.string("read")]),
            ])
        case nil:
            return ("", [:])
        }
    }

    /// bluetoothd's Flags for a characteristic: its properties, and the security an access needs (`encrypt-*`,
    /// `encrypt-authenticated-*`; Core 5.4 Vol 3 Part C §10.3).
    static func flags(_ definition: GATTCharacteristicDefinition) -> [String] {
        var flags = BlueZDevice.propertyBits.filter { definition.properties.rawValue & $0.value != 0 }.map(\.key).sorted()
        for (requirement, access) in [(definition.permissions.read, "read"), (definition.permissions.write, "write")] {
            if requirement.authentication { flags.append("encrypt-authenticated-\(access)") } else if requirement.encryption {
                flags.append("encrypt-\(access)")
            }
        }
        if definition.subscriptionSecurity.encryption || definition.subscriptionSecurity.authentication { flags.append("encrypt-notify") }
        return flags
    }

    /// Properties, Introspect, and the GATT methods bluetoothd calls on a service, characteristic or descriptor
    /// (on the loop; the answer is sent from here or once the server answered).
    private func attributeCall(_ call: DBusMessage) {
        guard let path = call.path, let connection = session?.tree.connection else { return }
        let reply: DBusMessage?
        let (interface, properties) = objectProperties(path)
        switch (call.interface, call.member, application.objects[path]) {
        case ("org.freedesktop.DBus.Properties", "GetAll", _):
            reply = call.methodReturn([.properties(call.body.first?.stringValue == interface ? properties : [:])])
        case ("org.freedesktop.DBus.Properties", "Get", _):
            if call.body.count == 2, call.body[0].stringValue == interface, let name = call.body[1].stringValue, let value = properties[name] {
                reply = call.methodReturn([.variant(value)])
            } else {
                reply = call.errorReply(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
            }
        case ("org.freedesktop.DBus.Introspectable", "Introspect", _):
            reply = call.methodReturn([.string(Self.introspection([interface, "org.freedesktop.DBus.Properties"]))])
        case ("org.bluez.GattCharacteristic1", "ReadValue", .characteristic(_, let handle, _)?):
            let options = call.body.first?.dictionaryValue
            serverRead(remember(call), central: central(options), handle: handle, offset: options?["offset"]?.intValue ?? 0)
            reply = nil
        case ("org.bluez.GattCharacteristic1", "WriteValue", .characteristic(_, let handle, _)?):
            // A Write Command is answered at once (nothing goes back to the central); a request once the server answered.
            let options = call.body.count > 1 ? call.body[1].dictionaryValue : nil
            let command = options?["type"]?.stringValue == "command"
            serverWrite(command ? nil : remember(call), central: central(options), handle: handle,
                        offset: options?["offset"]?.intValue ?? 0, value: call.body.first?.bytesValue ?? [])
            reply = command ? call.methodReturn() : nil
        case ("org.bluez.GattCharacteristic1", "AcquireNotify", .characteristic(_, let handle, _)?):
            reply = acquireNotify(call, handle: handle)
        case ("org.bluez.GattCharacteristic1", "StartNotify", .characteristic(_, let handle, _)?),
             ("org.bluez.GattCharacteristic1", "StopNotify", .characteristic(_, let handle, _)?):
            subscriptionChanged(central(nil), handle: handle, subscribed: call.member == "StartNotify")
            reply = call.methodReturn()
        case ("org.bluez.GattDescriptor1", "ReadValue", .descriptor(_, let value, _)?):
            let offset = call.body.first?.dictionaryValue?["offset"]?.intValue ?? 0
            reply = offset <= value.count ? call.methodReturn([.bytes(Array(value[offset...]))])
                : call.errorReply(name: "org.bluez.Error.InvalidOffset", message: "offset beyond the value")
        default:
            reply = call.errorReply(name: "org.bluez.Error.Failed", message: "\(call.member ?? "?") is not offered by \(path)")
        }
        guard let reply else { return }
        // Sent: the descriptors in the reply (AcquireNotify's socket end) are bluetoothd's now, our copies closed.
        _ = try? connection.send(reply)
        reply.closeFileDescriptors()
    }

    /// Keeps a call of bluetoothd's until the server answers it; after 30 s bluetoothd has given up on it (its own
    /// time limit is 25 s), so it is forgotten and a late answer goes nowhere.
    private func remember(_ call: DBusMessage) -> UInt64 {
        application.nextCall += 1
        let id = application.nextCall
        application.pendingCalls[id] = call
        loop.schedule(after: .seconds(30)) { [weak self] in
            guard let engine = self else { return }
            engine.application.pendingCalls[id] = nil
        }
        return id
    }

    /// Answers bluetoothd's call `id`: `value` (none for a write), or the ATT error `error` under the name bluetoothd
    /// turns back into it (Core 5.4 Vol 3 Part F §3.4.1.1).
    func answer(_ id: UInt64, value: [UInt8]? = nil, error: ATTErrorCode? = nil) {
        guard let call = application.pendingCalls.removeValue(forKey: id), let connection = session?.tree.connection else { return }
        guard let error else {
            _ = try? connection.send(call.member == "ReadValue" ? call.methodReturn([.bytes(value ?? [])]) : call.methodReturn())
            return
        }
        let name = switch error.rawValue {
        case 0x02, 0x03: "org.bluez.Error.NotPermitted"
        case 0x05, 0x08, 0x0F: "org.bluez.Error.NotAuthorized"
        case 0x07: "org.bluez.Error.InvalidOffset"
        case 0x0D: "org.bluez.Error.InvalidValueLength"
        case 0x06: "org.bluez.Error.NotSupported"
        default: "org.bluez.Error.Failed"
        }
        _ = try? connection.send(call.errorReply(name: name, message: "ATT error 0x\(String(error.rawValue, radix: 16))"))
    }

    /// bluetoothd's AcquireNotify (options: device, mtu, link): a socket pair, bluetoothd's end in the reply with the
    /// MTU; the first subscription of the characteristic (bluetoothd acquires once for all its subscribers).
    private func acquireNotify(_ call: DBusMessage, handle: UInt16) -> DBusMessage {
        guard application.notifyPipes[handle] == nil else {
            return call.errorReply(name: "org.bluez.Error.NotPermitted", message: "notifications already acquired")
        }
        let options = call.body.first?.dictionaryValue
        let mtu = options?["mtu"]?.intValue ?? 23
        guard let (pipe, remote) = BlueZNotifyPipe.make(characteristicID: Int(handle), mtu: mtu) else {
            return call.errorReply(name: "org.bluez.Error.Failed", message: "cannot make a socket pair")
        }
        let central = central(options)
        application.notifyPipes[handle] = pipe
        pipe.start(ready: { [weak self] in
            guard let engine = self else { return }
            engine.onLoop { engine.readyToUpdateSubscribers() }
        }, ended: { [weak self] in
            guard let engine = self else { return }
            engine.onLoop {
                guard engine.application.notifyPipes[handle] === pipe else { return }
                engine.application.notifyPipes[handle] = nil
                engine.subscriptionChanged(central, handle: handle, subscribed: false)
            }
        })
        subscriptionChanged(central, handle: handle, subscribed: true)
        // The connection sends bluetoothd's end and then closes our copy of it.
        return call.methodReturn([.unixFD(0), .uint16(UInt16(clamping: mtu))], fileDescriptors: [remote])
    }

    /// Sends `value` of `handle` to the subscribed centrals (bluetoothd's choice of which); false when its socket is
    /// full (``readyToUpdateSubscribers()`` follows).
    func notify(_ value: [UInt8], handle: UInt16) -> Bool {
        if let pipe = application.notifyPipes[handle] { return pipe.send(value) }
        guard let path = application.objects.first(where: { _, object in
            if case .characteristic(_, handle, _) = object { return true }
            return false
        })?.key, let connection = session?.tree.connection else { return true }
        _ = try? connection.send(DBusMessage(kind: .signal, path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                             body: [.string("org.bluez.GattCharacteristic1"), .properties(["Value": .bytes(value)]),
                                                    .array(.string, [])]))
        return true
    }

    // MARK: Centrals (bluetoothd's Device1 objects that connect to us)

    /// The central a call came from: its `device` option, else the one connected last.
    private func central(_ options: [String: DBusValue]?) -> BluetoothAddress {
        if let path = options?["device"]?.stringValue, let properties = session?.tree.properties(path, BlueZDevice.interface),
           let peer = BlueZDevice.peer(properties) {
            return peer
        }
        return application.lastCentral ?? BluetoothAddress(0, type: .public)
    }

    /// A Device1 change (on the loop): a central bluetoothd did not know appears connected (InterfacesAdded); a known
    /// one changes Connected; bluetoothd drops a temporary device's object when it goes.
    func applicationDeviceChanged(_ change: BlueZObjectTree.Change) {
        switch change {
        case .added(let path, BlueZDevice.interface, let properties), .changed(let path, BlueZDevice.interface, let properties):
            guard let connected = properties["Connected"]?.boolValue,
                  let peer = session?.tree.properties(path, BlueZDevice.interface).flatMap(BlueZDevice.peer) else { return }
            if connected {
                let fresh = application.centrals[path] == nil
                application.centrals[path] = peer
                application.lastCentral = peer
                if fresh { centralConnected(peer) }
            } else if application.centrals.removeValue(forKey: path) != nil {
                centralDisconnected(peer)
            }
        case .removed(let path, BlueZDevice.interface):
            if let peer = application.centrals.removeValue(forKey: path) { centralDisconnected(peer) }
        default:
            return
        }
    }

    /// Ends what the application holds (at shutdown): bluetoothd's waiting calls answered, sockets closed, the
    /// application unregistered.
    func closeApplication() {
        for id in application.pendingCalls.keys.sorted() { answer(id, error: .unlikelyError) }
        for pipe in application.notifyPipes.values { pipe.close() }
        application.notifyPipes = [:]
        if application.registered { callAdapter(Self.gattManager, "UnregisterApplication", [.objectPath(root)]) { _ in } }
        application.registered = false
    }

    /// Introspection XML naming the interfaces of an object (bluetoothd's client reads it for objects without an
    /// ObjectManager, such as the advertisement).
    static func introspection(_ interfaces: [String]) -> String {
        "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\" "
            + "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>"
            + interfaces.sorted().map { "<interface name=\"\($0)\"/>" }.joined() + "</node>"
    }
}
