/// One side of an encrypted LE connection: the ``LinkLayerCipher`` plus the two packet counters
/// (Core 5.4 Vol 6 Part E §2.1; Vol 6 Part B §5.1.3).
///
/// Each direction has its own 39-bit packetCounter, starting at 0 after the encryption start procedure and
/// incremented once per new non-empty PDU. A retransmission resends the bytes already sealed (do not seal again).
/// A value type owned by the link layer of one connection, driven on its executor.
public struct LinkLayerEncryptionSession: Hashable, Sendable {
    /// Which end of the connection this session encrypts for.
    public enum Role: Hashable, Sendable {
        case central
        case peripheral
    }

    public let cipher: LinkLayerCipher
    public let role: Role
    /// The counter of the next non-empty PDU we send.
    public private(set) var transmitCounter: UInt64 = 0
    /// The counter expected on the next non-empty PDU we receive.
    public private(set) var receiveCounter: UInt64 = 0

    public init(cipher: LinkLayerCipher, role: Role) {
        self.cipher = cipher
        self.role = role
    }

    private var transmitDirection: LinkLayerDirection { role == .central ? .centralToPeripheral : .peripheralToCentral }
    private var receiveDirection: LinkLayerDirection { role == .central ? .peripheralToCentral : .centralToPeripheral }

    /// Encrypts a data channel PDU (header + payload) for sending; empty PDUs pass unchanged and use no counter.
    public mutating func seal(_ pdu: [UInt8]) throws(BluetoothCryptoError) -> [UInt8] {
        let sealed = try cipher.encryptPDU(pdu, packetCounter: transmitCounter, direction: transmitDirection)
        if pdu.count > 2 { transmitCounter += 1 }
        return sealed
    }

    /// Decrypts a received data channel PDU and checks its MIC; the receive counter advances only on success.
    /// A ``BluetoothCryptoError/Code/micFailure`` means the connection must end (reason 0x3D).
    public mutating func open(_ pdu: [UInt8]) throws(BluetoothCryptoError) -> [UInt8] {
        let opened = try cipher.decryptPDU(pdu, packetCounter: receiveCounter, direction: receiveDirection)
        if pdu.count > 2 { receiveCounter += 1 }
        return opened
    }
}
