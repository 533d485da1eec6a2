public import BluetoothCore
public import Foundation

/// How a peer's `identifier` is made: BluetoothCore's ``PeerIdentifier`` (a name-based UUID, RFC 9562 §5.5, of the
/// identity address and its type), as a `UUID`. The same device has the same identifier in every run and every
/// process, without a store; the address itself does not appear in it.
public enum CBPeerIdentifier {
    /// The OpenCoreBluetooth peer namespace.
    public static let namespace = UUID(uuidString: "6F70656E-4342-5065-6572-4944656E7469") ?? UUID()

    /// The identifier of the device with this identity address.
    public static func identifier(for address: BluetoothAddress) -> UUID {
        let octets = PeerIdentifier.octets(for: address)
        return UUID(uuid: (octets[0], octets[1], octets[2], octets[3], octets[4], octets[5], octets[6], octets[7],
                           octets[8], octets[9], octets[10], octets[11], octets[12], octets[13], octets[14], octets[15]))
    }
}
