/// How a peer's stable identifier is made (CoreBluetooth's `CBPeer.identifier`, `blue`'s "identifier"): a name-based
/// UUID (RFC 9562 §5.5, version 5, SHA-1) of the text "AA:BB:CC:DD:EE:FF/public" (the identity address and its type,
/// Core 5.4 Vol 6 Part B §1.3) in the namespace ``namespace``. The same device therefore has the same identifier in
/// every run and every process, without a store, and the address itself does not appear in it (as on Apple
/// platforms, it is "not the BD_ADDR"). Unlike Apple's, it does not depend on the local adapter.
public enum PeerIdentifier {
    /// The OpenCoreBluetooth peer namespace, 6F70656E-4342-5065-6572-4944656E7469 ("openCBPeerIDenti").
    public static let namespace: [UInt8] = [0x6F, 0x70, 0x65, 0x6E, 0x43, 0x42, 0x50, 0x65,
                                            0x65, 0x72, 0x49, 0x44, 0x65, 0x6E, 0x74, 0x69]

    /// The 16 octets of the identifier of the device with this identity address, in UUID order.
    public static func octets(for address: BluetoothAddress) -> [UInt8] {
        let name = "\(address.string)/\(address.type == .public ? "public" : "random")"
        var digest = SHA1.hash(namespace + Array(name.utf8))
        digest[6] = (digest[6] & 0x0F) | 0x50
        digest[8] = (digest[8] & 0x3F) | 0x80
        return Array(digest.prefix(16))
    }

    /// The identifier as UUID text, upper case ("E621E1F8-C36C-495A-93FC-0C247A3E6E5F", as `UUID.uuidString`).
    public static func text(for address: BluetoothAddress) -> String {
        let hex = octets(for: address).map { octet in
            let digits = String(octet, radix: 16, uppercase: true)
            return octet < 0x10 ? "0" + digits : digits
        }
        return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
    }
}
