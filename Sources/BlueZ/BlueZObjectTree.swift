import BluetoothRuntime
public import DBus

/// bluetoothd's objects as the freedesktop ObjectManager reports them (`org.freedesktop.DBus.ObjectManager`,
/// GetManagedObjects; InterfacesAdded, InterfacesRemoved and `org.freedesktop.DBus.Properties.PropertiesChanged`
/// signals): object path → interface → property → value, kept current, with each change told to the observers.
public final class BlueZObjectTree: Sendable {
    /// What changed: an object's interface appeared (all its properties), changed (the changed ones), or went.
    public enum Change: Sendable {
        case added(path: String, interface: String, properties: [String: DBusValue])
        case changed(path: String, interface: String, properties: [String: DBusValue])
        case removed(path: String, interface: String)
    }

    /// bluetoothd's bus name.
    public static let service = "org.bluez"

    public let connection: DBusConnection
    private let objects = LockedValue<[String: [String: [String: DBusValue]]]>([:])
    private let observers = LockedValue<[@Sendable (Change) -> Void]>([])

    private init(connection: DBusConnection) {
        self.connection = connection
    }

    /// Subscribes to bluetoothd's signals, then reads every object (the order matters: nothing is missed between).
    /// Fails when bluetoothd is not on the bus (``DBusError/Code/errorReply`` `ServiceUnknown`).
    public static func load(on connection: DBusConnection, timeout: Duration = .seconds(10)) async throws(DBusError) -> BlueZObjectTree {
        let tree = BlueZObjectTree(connection: connection)
        connection.addSignalHandler { [weak tree] message in tree?.apply(message) }
        try await connection.addMatch("type='signal',sender='\(service)'")
        let reply = try await connection.call(
            .call(destination: service, path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects"),
            timeout: timeout)
        var loaded: [String: [String: [String: DBusValue]]] = [:]
        for (path, interfaces) in reply.body.first?.dictionaryValue ?? [:] {
            var entry: [String: [String: DBusValue]] = [:]
            for (interface, properties) in interfaces.dictionaryValue ?? [:] {
                entry[interface] = (properties.dictionaryValue ?? [:]).mapValues(\.unwrapped)
            }
            loaded[path] = entry
        }
        // Signals applied meanwhile (after the match, before the reply) are older than the snapshot only for objects
        // the snapshot has; the snapshot wins for those.
        tree.objects.withLock { objects in objects.merge(loaded) { _, snapshot in snapshot } }
        return tree
    }

    /// Called with every change from now on (on the connection's reader thread), after the observers before it.
    public func observe(_ handler: @escaping @Sendable (Change) -> Void) {
        observers.withLock { $0.append(handler) }
    }

    /// The properties of `interface` on `path`.
    public func properties(_ path: String, _ interface: String) -> [String: DBusValue]? {
        objects.withLock { $0[path]?[interface] }
    }

    /// The paths that have `interface`, with its properties, sorted.
    public func objects(with interface: String) -> [(path: String, properties: [String: DBusValue])] {
        objects.withLock { objects in
            objects.compactMap { path, interfaces in interfaces[interface].map { (path, $0) } }.sorted { $0.path < $1.path }
        }
    }

    private func apply(_ message: DBusMessage) {
        guard message.kind == .signal else { return }
        var changes: [Change] = []
        switch (message.interface, message.member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard message.body.count == 2, let path = message.body[0].stringValue, let interfaces = message.body[1].dictionaryValue else { return }
            objects.withLock { objects in
                for (interface, properties) in interfaces {
                    let values = (properties.dictionaryValue ?? [:]).mapValues(\.unwrapped)
                    objects[path, default: [:]][interface] = values
                    changes.append(.added(path: path, interface: interface, properties: values))
                }
            }
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard message.body.count == 2, let path = message.body[0].stringValue,
                  let interfaces = message.body[1].arrayValue?.compactMap(\.stringValue) else { return }
            objects.withLock { objects in
                for interface in interfaces {
                    objects[path]?[interface] = nil
                    changes.append(.removed(path: path, interface: interface))
                }
                if objects[path]?.isEmpty == true { objects[path] = nil }
            }
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"):
            guard message.body.count >= 2, let path = message.path, let interface = message.body[0].stringValue,
                  let changed = message.body[1].dictionaryValue else { return }
            let invalidated = message.body.count > 2 ? (message.body[2].arrayValue?.compactMap(\.stringValue) ?? []) : []
            let values = changed.mapValues(\.unwrapped)
            objects.withLock { objects in
                for (name, value) in values { objects[path, default: [:]][interface, default: [:]][name] = value }
                for name in invalidated { objects[path]?[interface]?[name] = nil }
            }
            changes.append(.changed(path: path, interface: interface, properties: values))
        default:
            return
        }
        let handlers = observers.load()
        for change in changes {
            for handler in handlers { handler(change) }
        }
    }
}
