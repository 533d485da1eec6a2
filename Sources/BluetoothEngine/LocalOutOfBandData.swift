public import BluetoothCore
public import BluetoothCrypto

/// Our LE Secure Connections out-of-band data (Core 5.4 Vol 3 Part H §2.3.5.6.4): the address we connect or
/// advertise with, our random r and the confirm value C = f4(PKx, PKx, r, 0) computed from the P-256 public key
/// this stack then uses for every pairing. Given to the peer by some other channel (NFC, QR code, a file).
public struct LocalOutOfBandData: Hashable, Sendable, Codable {
    /// Our LE address (the controller's own address).
    public var address: BluetoothAddress
    /// r, 128 bits.
    public var random: Block128
    /// C = f4(PKx, PKx, r, 0).
    public var confirm: Block128

    public init(address: BluetoothAddress, random: Block128, confirm: Block128) {
        self.address = address
        self.random = random
        self.confirm = confirm
    }
}
