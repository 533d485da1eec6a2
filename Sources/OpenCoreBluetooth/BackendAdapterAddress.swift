package import BluetoothCore

/// A backend that can say its adapter's address (bluetoothd's Adapter1.Address), for the async API's
/// `localAddress()` on bluetoothd; nil until the backend found its adapter.
package protocol BackendAdapterAddress: AnyObject, Sendable {
    var adapterAddress: BluetoothAddress? { get }
}

extension BlueZCentralBackend: BackendAdapterAddress {}
