import BlueZ
import BluetoothCore
import DBus
import Foundation

/// `blue bonds list|remove --hci bluez`: the bonds bluetoothd keeps (/var/lib/bluetooth, BlueZ's
/// doc/org.bluez.Device.rst Paired and Bonded), listed from its Device1 objects and removed with
/// Adapter1.RemoveDevice. bluetoothd does not show the keys themselves.
enum BlueZBonds {
    struct Entry: Sendable {
        var path: String
        var address: String
        var addressType: String
        var name: String?
        var bonded: Bool
        var trusted: Bool
    }

    /// Connects to bluetoothd (one line and exit 69 when it cannot).
    static func session(_ adapter: String?) async throws(CLIFailure) -> BlueZAdapterSession {
        do {
            return try await BlueZAdapterSession.open(adapter: adapter, busAddress: DBusConnection.systemBusAddress)
        } catch {
            throw CLIFailure(.unavailable, "no BlueZ backend: \(error)")
        }
    }

    /// bluetoothd's paired devices under the adapter, by address.
    static func entries(_ session: BlueZAdapterSession) -> [Entry] {
        session.tree.objects(with: BlueZAdapterSession.deviceInterface)
            .filter { BlueZPaths.isUnder($0.path, session.adapterPath) && $0.properties["Paired"]?.boolValue == true }
            .compactMap { object in
                guard let address = object.properties["Address"]?.stringValue else { return nil }
                return Entry(path: object.path, address: address, addressType: object.properties["AddressType"]?.stringValue ?? "public",
                             name: object.properties["Name"]?.stringValue, bonded: object.properties["Bonded"]?.boolValue ?? true,
                             trusted: object.properties["Trusted"]?.boolValue ?? false)
            }
            .sorted { $0.address < $1.address }
    }

    static func list(adapter: String?, json: Bool) async throws(CLIFailure) {
        let session = try await session(adapter)
        defer { session.connection.close() }
        let found = entries(session)
        if json {
            Console.json(["adapter": session.adapterPath, "bonds": found.map { entry -> [String: Any] in
                var object: [String: Any] = ["address": entry.address, "addressType": entry.addressType, "bonded": entry.bonded,
                                             "trusted": entry.trusted]
                if let name = entry.name { object["name"] = name }
                return object
            }])
            return
        }
        if found.isEmpty { Console.line("No devices paired with bluetoothd (\(session.adapterPath))") }
        for entry in found {
            Console.line("\(entry.address) (\(entry.addressType))\(entry.name.map { " \"\($0)\"" } ?? ""): paired through bluetoothd, "
                         + "\(entry.bonded ? "bonded" : "not bonded")\(entry.trusted ? ", trusted" : "")")
        }
    }

    static func remove(adapter: String?, address: BluetoothAddress, json: Bool) async throws(CLIFailure) {
        let session = try await session(adapter)
        defer { session.connection.close() }
        let matching = entries(session).filter { (try? BluetoothAddress(string: $0.address))?.value == address.value }
        guard !matching.isEmpty else {
            throw CLIFailure(.notFound, "bluetoothd has no device paired with \(address.string)")
        }
        for entry in matching {
            do {
                _ = try await session.call(session.adapterPath, BlueZAdapterSession.adapterInterface, "RemoveDevice", [.objectPath(entry.path)])
            } catch {
                throw CLIFailure(.failed, "bluetoothd did not remove \(entry.address): \(error)")
            }
        }
        if json {
            Console.json(["removed": matching.map(\.address)])
        } else {
            Console.line("Removed \(address.string) and its bond from bluetoothd")
        }
    }
}
