package import BluetoothCore
package import BluetoothEngine
import DBus

/// The bonds bluetoothd keeps (/var/lib/bluetooth; BlueZ's doc/org.bluez.Device.rst Paired, Bonded, Trusted) as a
/// ``BondKeeper``: its paired Device1 objects under the adapter, forgotten with Adapter1.RemoveDevice. bluetoothd
/// does not show the keys, their size or the security they give: those are nil.
package struct BluetoothdBonds: BondKeeper {
    /// `hciN`, or nil for the first adapter bluetoothd has.
    package let adapter: String?
    let busAddress: String

    package init(adapter: String?, busAddress: String = DBusConnection.systemBusAddress) {
        self.adapter = adapter
        self.busAddress = busAddress
    }

    package var location: String { "bluetoothd (\(adapter ?? "its first adapter"))" }

    package func listBonds() async throws(HostError) -> BondListing {
        let session = try await open()
        defer { session.connection.close() }
        return BondListing(bonds: Self.paired(session).map(\.summary))
    }

    package func removeBonds(of address: BluetoothAddress) async throws(HostError) -> [BluetoothAddress] {
        let session = try await open()
        defer { session.connection.close() }
        let matching = Self.paired(session).filter { $0.summary.identity.value == address.value }
        guard !matching.isEmpty else { throw HostError(.invalidParameters, "bluetoothd has no device paired with \(address.string)") }
        for device in matching {
            do {
                _ = try await session.call(session.adapterPath, BlueZAdapterSession.adapterInterface, "RemoveDevice", [.objectPath(device.path)])
            } catch {
                throw HostError(.commandFailed, "bluetoothd did not remove \(device.summary.identity.string): \(error)")
            }
        }
        return matching.map(\.summary.identity)
    }

    private func open() async throws(HostError) -> BlueZAdapterSession {
        do {
            return try await BlueZAdapterSession.open(adapter: adapter, busAddress: busAddress)
        } catch {
            throw HostError(.notReady, "no BlueZ backend: \(error)")
        }
    }

    /// bluetoothd's paired devices under the adapter, by address.
    private static func paired(_ session: BlueZAdapterSession) -> [(path: String, summary: BondSummary)] {
        session.tree.objects(with: BlueZAdapterSession.deviceInterface)
            .filter { BlueZPaths.isUnder($0.path, session.adapterPath) && $0.properties["Paired"]?.boolValue == true }
            .compactMap { object in
                guard let identity = BlueZDevice.peer(object.properties) else { return nil }
                return (object.path, BondSummary(identity: identity, name: object.properties["Name"]?.stringValue,
                                                 bonded: object.properties["Bonded"]?.boolValue ?? true,
                                                 trusted: object.properties["Trusted"]?.boolValue ?? false))
            }
            .sorted { $0.summary.identity.value < $1.summary.identity.value }
    }
}
