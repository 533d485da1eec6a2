import BluetoothCore
import OpenCoreBluetooth

/// The one place blue's stack commands touch OpenCoreBluetooth: `CBPeer.identifier` of an address.
enum PeerIdentifierBridge {
    static func identifier(for address: BluetoothAddress) -> String {
        CBPeerIdentifier.identifier(for: address).uuidString
    }
}
