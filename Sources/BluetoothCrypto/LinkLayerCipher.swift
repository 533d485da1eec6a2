/// The direction of a link-layer data packet; it sets the direction bit of the CCM nonce
/// (Core 5.4 Vol 6 Part E §2.1: 1 for Central → Peripheral, 0 for Peripheral → Central).
public enum LinkLayerDirection: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case centralToPeripheral
    case peripheralToCentral

    /// The nonce's directionBit.
    public var directionBit: UInt8 { self == .centralToPeripheral ? 1 : 0 }

    public var description: String { self == .centralToPeripheral ? "Central→Peripheral" : "Peripheral→Central" }
}

/// LE link-layer encryption: AES-CCM with the session key, as the link layer uses it after the encryption start
/// procedure (Core 5.4 Vol 6 Part E §2; sample data Vol 6 Part C §1).
///
/// - Session key `SK = e(LTK, SKD)` with `SKD = SKDs ‖ SKDm` (SKDs most significant), from LL_ENC_REQ/LL_ENC_RSP.
/// - Nonce (13 octets) = 39-bit packetCounter and the direction bit as 5 octets least significant first, then the
///   IV = IVm ‖ IVs as sent (IVm's four octets first).
/// - CCM with a 4-octet MIC and a 2-octet length field (M = 4, L = 2, RFC 3610); additional authenticated data is
///   one octet: the first data-PDU header octet with NESN, SN and MD cleared (`& 0xE3`).
///
/// The value is immutable; the packet counters (one per direction, incremented for every non-empty PDU and not
/// for retransmissions) belong to the link layer using it. Empty PDUs are sent unencrypted without a MIC
/// (``encryptPDU(_:packetCounter:direction:)`` leaves them alone).
public struct LinkLayerCipher: Hashable, Sendable {
    /// The session key SK.
    public let sessionKey: Block128
    /// The 8 IV octets as they enter the nonce: IVm (least significant first) then IVs (least significant first).
    public let iv: [UInt8]

    /// The largest packet counter (39 bits).
    public static let maximumPacketCounter: UInt64 = (1 << 39) - 1
    /// Mask applied to the first header octet to form the additional authenticated data.
    public static let headerMask: UInt8 = 0xE3

    /// From an established session key and the two IV halves, as the numbers carried in LL_ENC_REQ (IVm) and
    /// LL_ENC_RSP (IVs).
    public init(sessionKey: Block128, ivm: UInt32, ivs: UInt32) {
        self.sessionKey = sessionKey
        self.iv = (0..<4).map { UInt8(truncatingIfNeeded: ivm >> (8 * $0)) }
            + (0..<4).map { UInt8(truncatingIfNeeded: ivs >> (8 * $0)) }
    }

    /// Derives the session key from the LTK and the session key diversifiers, as the numbers carried in
    /// LL_ENC_REQ (SKDm) and LL_ENC_RSP (SKDs).
    public init(ltk: Block128, skdm: UInt64, skds: UInt64, ivm: UInt32, ivs: UInt32) throws(BluetoothCryptoError) {
        self.init(sessionKey: try Self.sessionKey(ltk: ltk, skdm: skdm, skds: skds), ivm: ivm, ivs: ivs)
    }

    /// `SK = e(LTK, SKDs ‖ SKDm)` (Vol 6 Part B §5.1.3.1).
    public static func sessionKey(ltk: Block128, skdm: UInt64, skds: UInt64) throws(BluetoothCryptoError) -> Block128 {
        try SecurityToolbox.e(ltk, Block128(high: skds, low: skdm))
    }

    /// The 13-octet CCM nonce for a packet.
    public func nonce(packetCounter: UInt64, direction: LinkLayerDirection) throws(BluetoothCryptoError) -> [UInt8] {
        guard packetCounter <= Self.maximumPacketCounter else {
            throw BluetoothCryptoError(.invalidValue, "packet counter \(packetCounter) exceeds 39 bits")
        }
        let counterAndDirection = packetCounter | UInt64(direction.directionBit) << 39
        return (0..<5).map { UInt8(truncatingIfNeeded: counterAndDirection >> (8 * $0)) } + iv
    }

    /// Encrypts a payload: returns the encrypted payload followed by the 4-octet MIC.
    ///
    /// - Parameters:
    ///   - header: the first octet of the data PDU header (LLID, NESN, SN, MD...); it is masked with 0xE3 here.
    ///   - payload: the plaintext payload, at most 65535 − 4 octets (the link layer allows far fewer).
    public func encrypt(
        header: UInt8, payload: [UInt8], packetCounter: UInt64, direction: LinkLayerDirection
    ) throws(BluetoothCryptoError) -> [UInt8] {
        guard payload.count <= 0xFFFF - Self.micLength else {
            throw BluetoothCryptoError(.invalidLength, "a CCM payload has at most 65531 octets, not \(payload.count)")
        }
        let nonce = try nonce(packetCounter: packetCounter, direction: direction)
        let aad = header & Self.headerMask
        let tag = try authenticate(nonce: nonce, aad: aad, plaintext: payload)
        let stream = try keystream(nonce: nonce, count: payload.count)
        var out = [UInt8](repeating: 0, count: payload.count + Self.micLength)
        for index in 0..<payload.count { out[index] = payload[index] ^ stream[index + 16] }
        for index in 0..<Self.micLength { out[payload.count + index] = tag[index] ^ stream[index] }
        return out
    }

    /// Decrypts an encrypted payload followed by its 4-octet MIC and checks the MIC.
    ///
    /// Throws ``BluetoothCryptoError/Code/micFailure`` when the MIC does not match (the link layer then ends the
    /// connection with reason 0x3D, *Connection Terminated due to MIC Failure*), and
    /// ``BluetoothCryptoError/Code/invalidLength`` when fewer than 4 octets are given.
    public func decrypt(
        header: UInt8, encryptedPayload: [UInt8], packetCounter: UInt64, direction: LinkLayerDirection
    ) throws(BluetoothCryptoError) -> [UInt8] {
        guard encryptedPayload.count >= Self.micLength else {
            throw BluetoothCryptoError(
                .invalidLength, "an encrypted payload carries a 4-octet MIC; only \(encryptedPayload.count) octets"
            )
        }
        guard encryptedPayload.count <= 0xFFFF else {
            throw BluetoothCryptoError(.invalidLength, "a CCM payload has at most 65535 octets")
        }
        let nonce = try nonce(packetCounter: packetCounter, direction: direction)
        let length = encryptedPayload.count - Self.micLength
        let stream = try keystream(nonce: nonce, count: length)
        var plaintext = [UInt8](repeating: 0, count: length)
        for index in 0..<length { plaintext[index] = encryptedPayload[index] ^ stream[index + 16] }
        let tag = try authenticate(nonce: nonce, aad: header & Self.headerMask, plaintext: plaintext)
        var difference: UInt8 = 0
        for index in 0..<Self.micLength {
            difference |= (tag[index] ^ stream[index]) ^ encryptedPayload[length + index]
        }
        guard difference == 0 else {
            throw BluetoothCryptoError(.micFailure, "the MIC does not match (wrong key, counter, or altered packet)")
        }
        return plaintext
    }

    /// Encrypts a whole data channel PDU (2-octet header, then the payload): the length octet grows by 4 and the
    /// payload becomes ciphertext ‖ MIC. A PDU with an empty payload is returned unchanged (never encrypted).
    public func encryptPDU(
        _ pdu: [UInt8], packetCounter: UInt64, direction: LinkLayerDirection
    ) throws(BluetoothCryptoError) -> [UInt8] {
        guard pdu.count >= 2 else { throw BluetoothCryptoError(.invalidLength, "a data PDU has a 2-octet header") }
        let length = Int(pdu[1])
        guard pdu.count == 2 + length else {
            throw BluetoothCryptoError(.invalidLength, "header length \(length) but \(pdu.count - 2) payload octets")
        }
        guard length > 0 else { return pdu }
        guard length + Self.micLength <= 0xFF else {
            throw BluetoothCryptoError(.invalidLength, "payload of \(length) octets leaves no room for the MIC")
        }
        let sealed = try encrypt(
            header: pdu[0], payload: Array(pdu[2...]), packetCounter: packetCounter, direction: direction
        )
        return [pdu[0], UInt8(length + Self.micLength)] + sealed
    }

    /// Decrypts a whole encrypted data channel PDU: checks the MIC, returns the PDU with the plaintext payload and
    /// the length octet reduced by 4. A PDU with an empty payload is returned unchanged.
    public func decryptPDU(
        _ pdu: [UInt8], packetCounter: UInt64, direction: LinkLayerDirection
    ) throws(BluetoothCryptoError) -> [UInt8] {
        guard pdu.count >= 2 else { throw BluetoothCryptoError(.invalidLength, "a data PDU has a 2-octet header") }
        let length = Int(pdu[1])
        guard pdu.count == 2 + length else {
            throw BluetoothCryptoError(.invalidLength, "header length \(length) but \(pdu.count - 2) payload octets")
        }
        guard length > 0 else { return pdu }
        let plaintext = try decrypt(
            header: pdu[0], encryptedPayload: Array(pdu[2...]), packetCounter: packetCounter, direction: direction
        )
        return [pdu[0], UInt8(plaintext.count)] + plaintext
    }

    // MARK: CCM (RFC 3610, M = 4, L = 2)

    static let micLength = 4

    /// CBC-MAC over B0, the AAD block and the padded plaintext; returns the 16-octet final block (T = first 4).
    private func authenticate(nonce: [UInt8], aad: UInt8, plaintext: [UInt8]) throws(BluetoothCryptoError) -> [UInt8] {
        let key = sessionKey.msbFirst
        // Flags: Adata = 1, M' = (4 - 2) / 2 = 1, L' = 2 - 1 = 1.
        var x: [UInt8] = [0x49] + nonce + [UInt8(truncatingIfNeeded: plaintext.count >> 8), UInt8(truncatingIfNeeded: plaintext.count)]
        try SecurityToolbox.aesEncrypt(block: &x, keyMSBFirst: key)
        // Additional data: 2-octet length (1), the octet, zero padding.
        x[0] ^= 0x00
        x[1] ^= 0x01
        x[2] ^= aad
        try SecurityToolbox.aesEncrypt(block: &x, keyMSBFirst: key)
        var offset = 0
        while offset < plaintext.count {
            let end = min(offset + 16, plaintext.count)
            for index in offset..<end { x[index - offset] ^= plaintext[index] }
            try SecurityToolbox.aesEncrypt(block: &x, keyMSBFirst: key)
            offset = end
        }
        return x
    }

    /// The CTR keystream: S0 (for the MIC) followed by S1, S2, ... covering `count` octets.
    private func keystream(nonce: [UInt8], count: Int) throws(BluetoothCryptoError) -> [UInt8] {
        let key = sessionKey.msbFirst
        let blocks = 1 + (count + 15) / 16
        var stream: [UInt8] = []
        stream.reserveCapacity(blocks * 16)
        for counter in 0..<blocks {
            var a: [UInt8] = [0x01] + nonce + [UInt8(truncatingIfNeeded: counter >> 8), UInt8(truncatingIfNeeded: counter)]
            try SecurityToolbox.aesEncrypt(block: &a, keyMSBFirst: key)
            stream += a
        }
        return stream
    }
}
