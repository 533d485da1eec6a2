import BluetoothRuntime
public import DBus

/// Where a client of bluetoothd starts: a connection to the bus bluetoothd is on, its object tree, and the adapter
/// chosen (`hciN`, or the first bluetoothd has) with its power state (BlueZ's doc/org.bluez.Adapter.rst).
public struct BlueZAdapterSession: Sendable {
    public static let adapterInterface = "org.bluez.Adapter1"
    public static let deviceInterface = "org.bluez.Device1"

    public let tree: BlueZObjectTree
    public let adapterPath: String
    public let powered: Bool

    public var connection: DBusConnection { tree.connection }

    /// Connects, loads the tree and picks the adapter; the connection is closed again on failure.
    public static func open(adapter name: String?, busAddress: String) async throws(DBusError) -> BlueZAdapterSession {
        let connection = try await DBusConnection.connect(address: busAddress)
        do throws(DBusError) {
            let tree = try await BlueZObjectTree.load(on: connection)
            let adapters = tree.objects(with: adapterInterface)
            guard let adapter = name.map({ name in adapters.first { $0.path.hasSuffix("/" + name) } }) ?? adapters.first else {
                throw DBusError(.connectFailed, name.map { "bluetoothd has no adapter \($0)" } ?? "bluetoothd has no adapter")
            }
            return BlueZAdapterSession(tree: tree, adapterPath: adapter.path, powered: adapter.properties["Powered"]?.boolValue ?? false)
        } catch {
            connection.close()
            throw error
        }
    }

    /// Calls `member` of `interface` on bluetoothd's object `path`.
    public func call(_ path: String, _ interface: String, _ member: String, _ body: [DBusValue] = [],
                     timeout: Duration = .seconds(30)) async throws(DBusError) -> DBusMessage {
        try await connection.call(.call(destination: BlueZObjectTree.service, path: path, interface: interface, member: member,
                                        body: body), timeout: timeout)
    }

    /// The device object of `address` under the adapter, when bluetoothd has one.
    public func devicePath(address: String) -> String? {
        let path = BlueZPaths.device(adapter: adapterPath, address: address)
        return tree.properties(path, Self.deviceInterface) == nil ? nil : path
    }
}
