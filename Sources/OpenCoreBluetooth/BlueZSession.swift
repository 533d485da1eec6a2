import BlueZ
import DBus

/// What both BlueZ backends start from: a connection to the bus bluetoothd is on, its object tree, and the adapter
/// chosen (`hciN`, or the first bluetoothd has) with its power state (BlueZ's doc/org.bluez.Adapter.rst).
struct BlueZSession: Sendable {
    let tree: BlueZObjectTree
    let adapterPath: String
    let powered: Bool

    var connection: DBusConnection { tree.connection }

    /// Connects, loads the tree and picks the adapter; the connection is closed again on failure.
    static func open(adapter name: String?, busAddress: String) async throws(DBusError) -> BlueZSession {
        let connection = try await DBusConnection.connect(address: busAddress)
        do throws(DBusError) {
            let tree = try await BlueZObjectTree.load(on: connection)
            let adapters = tree.objects(with: BlueZCentralBackend.adapterInterface)
            guard let adapter = name.map({ name in adapters.first { $0.path.hasSuffix("/" + name) } }) ?? adapters.first else {
                throw DBusError(.connectFailed, name.map { "bluetoothd has no adapter \($0)" } ?? "bluetoothd has no adapter")
            }
            return BlueZSession(tree: tree, adapterPath: adapter.path, powered: adapter.properties["Powered"]?.boolValue ?? false)
        } catch {
            connection.close()
            throw error
        }
    }
}
