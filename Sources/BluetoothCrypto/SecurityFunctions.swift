public import BluetoothCore

extension SecurityToolbox {
    // MARK: Legacy pairing (Vol 3 Part H §2.2.3, §2.2.4)

    /// `c1`, the legacy pairing confirm value function (Vol 3 Part H §2.2.3):
    /// `c1(k, r, preq, pres, iat, rat, ia, ra) = e(k, e(k, r ⊕ p1) ⊕ p2)` with
    /// `p1 = pres ‖ preq ‖ rat' ‖ iat'` and `p2 = padding ‖ ia ‖ ra`.
    ///
    /// - Parameters:
    ///   - k: the temporary key TK.
    ///   - r: Mrand or Srand.
    ///   - pairingRequest: the 7 octets of the Pairing Request PDU as sent (opcode first).
    ///   - pairingResponse: the 7 octets of the Pairing Response PDU as sent (opcode first).
    ///   - initiator: the initiating device's address; its type gives iat.
    ///   - responder: the responding device's address; its type gives rat.
    public static func c1(
        k: Block128, r: Block128, pairingRequest: [UInt8], pairingResponse: [UInt8],
        initiator: BluetoothAddress, responder: BluetoothAddress
    ) throws(BluetoothCryptoError) -> Block128 {
        guard pairingRequest.count == 7 else {
            throw .length("the Pairing Request (preq)", expected: 7, got: pairingRequest.count)
        }
        guard pairingResponse.count == 7 else {
            throw .length("the Pairing Response (pres)", expected: 7, got: pairingResponse.count)
        }
        let p1 = try Block128(
            msbFirst: pairingResponse.reversed() + pairingRequest.reversed()
                + [responder.type.rawValue, initiator.type.rawValue]
        )
        let p2 = Block128(high: initiator.value >> 16, low: (initiator.value & 0xFFFF) << 48 | responder.value)
        return try e(k, try e(k, r ^ p1) ^ p2)
    }

    /// `s1`, the legacy STK generation function (Vol 3 Part H §2.2.4): `s1(k, r1, r2) = e(k, r')` where `r'` is the
    /// 64 least significant bits of `r1` followed by the 64 least significant bits of `r2`. For the STK,
    /// `r1 = Srand` and `r2 = Mrand`.
    public static func s1(k: Block128, r1: Block128, r2: Block128) throws(BluetoothCryptoError) -> Block128 {
        try e(k, Block128(high: r1.low, low: r2.low))
    }

    // MARK: LE Secure Connections (Vol 3 Part H §2.2.6 – §2.2.11)

    /// `f4(U, V, X, Z) = AES-CMAC_X(U ‖ V ‖ Z)`, the LE Secure Connections confirm value (Vol 3 Part H §2.2.6).
    /// `u` and `v` are 256-bit P-256 X coordinates, most significant octet first (``LEPublicKey/x``).
    public static func f4(u: [UInt8], v: [UInt8], x: Block128, z: UInt8) throws(BluetoothCryptoError) -> Block128 {
        try check256(u, "U")
        try check256(v, "V")
        return try aesCMAC(key: x, message: u + v + [z])
    }

    /// The SALT of f5 (Vol 3 Part H §2.2.7).
    public static let f5Salt = Block128(high: 0x6C88_8391_AAF5_A538, low: 0x6037_0BDB_5A60_83BE)

    /// `f5(W, N1, N2, A1, A2)`, the LE Secure Connections key generation function (Vol 3 Part H §2.2.7): returns
    /// MacKey (counter 0) and LTK (counter 1). `a1`/`a2` are the initiating and responding device addresses; each
    /// enters as 56 bits, the address-type octet followed by the address.
    public static func f5(
        w: DHKey, n1: Block128, n2: Block128, a1: BluetoothAddress, a2: BluetoothAddress
    ) throws(BluetoothCryptoError) -> (macKey: Block128, ltk: Block128) {
        let t = try aesCMAC(key: f5Salt, message: w.msbFirst)
        let keyID: [UInt8] = [0x62, 0x74, 0x6C, 0x65]  // "btle"
        let tail = keyID + n1.msbFirst + n2.msbFirst + addressOctets(a1) + addressOctets(a2) + [0x01, 0x00]
        let macKey = try aesCMAC(key: t, message: [0x00] + tail)
        let ltk = try aesCMAC(key: t, message: [0x01] + tail)
        return (macKey, ltk)
    }

    /// The IOcap input of f6 (Vol 3 Part H §2.2.8): AuthReq (most significant), OOB data flag, IO capability, as
    /// found in the device's Pairing Request or Pairing Response.
    public struct IOCap: Hashable, Sendable {
        public var authReq: UInt8
        public var oobDataFlag: UInt8
        public var ioCapability: UInt8

        public init(authReq: UInt8, oobDataFlag: UInt8, ioCapability: UInt8) {
            self.authReq = authReq
            self.oobDataFlag = oobDataFlag
            self.ioCapability = ioCapability
        }

        /// From the 7 octets of a Pairing Request or Pairing Response as sent (opcode, IO capability, OOB data
        /// flag, AuthReq, ...), Vol 3 Part H §3.5.1/§3.5.2.
        public init(pairingPDU bytes: [UInt8]) throws(BluetoothCryptoError) {
            guard bytes.count == 7 else { throw .length("a Pairing Request/Response", expected: 7, got: bytes.count) }
            self.init(authReq: bytes[3], oobDataFlag: bytes[2], ioCapability: bytes[1])
        }

        /// The 24-bit value, most significant octet first.
        public var msbFirst: [UInt8] { [authReq, oobDataFlag, ioCapability] }
    }

    /// `f6(W, N1, N2, R, IOcap, A1, A2) = AES-CMAC_W(N1 ‖ N2 ‖ R ‖ IOcap ‖ A1 ‖ A2)`, the DHKey check value
    /// (Vol 3 Part H §2.2.8). `w` is the MacKey.
    public static func f6(
        w: Block128, n1: Block128, n2: Block128, r: Block128, ioCap: IOCap, a1: BluetoothAddress, a2: BluetoothAddress
    ) throws(BluetoothCryptoError) -> Block128 {
        try aesCMAC(
            key: w,
            message: n1.msbFirst + n2.msbFirst + r.msbFirst + ioCap.msbFirst + addressOctets(a1) + addressOctets(a2)
        )
    }

    /// `g2(U, V, X, Y) = AES-CMAC_X(U ‖ V ‖ Y) mod 2^32`, the numeric comparison value generator
    /// (Vol 3 Part H §2.2.9). The six digits to display are ``numericComparisonValue(_:)``.
    public static func g2(u: [UInt8], v: [UInt8], x: Block128, y: Block128) throws(BluetoothCryptoError) -> UInt32 {
        try check256(u, "U")
        try check256(v, "V")
        return UInt32(truncatingIfNeeded: try aesCMAC(key: x, message: u + v + y.msbFirst).low)
    }

    /// The six-digit value shown for numeric comparison: `g2 mod 10^6` (Vol 3 Part H §2.3.5.6.2).
    public static func numericComparisonValue(_ g2Value: UInt32) -> UInt32 {
        g2Value % 1_000_000
    }

    /// `h6(W, keyID) = AES-CMAC_W(keyID)`, the link key conversion function (Vol 3 Part H §2.2.10).
    public static func h6(w: Block128, keyID: KeyID) throws(BluetoothCryptoError) -> Block128 {
        try aesCMAC(key: w, message: keyID.msbFirst)
    }

    /// `h7(SALT, W) = AES-CMAC_SALT(W)`, the link key conversion function with a salt (Vol 3 Part H §2.2.11).
    public static func h7(salt: Block128, w: Block128) throws(BluetoothCryptoError) -> Block128 {
        try aesCMAC(key: salt, message: w.msbFirst)
    }

    /// The 32-bit key identifiers of h6 and the salts of h7: four ASCII characters, the first most significant.
    public struct KeyID: Hashable, Sendable, CustomStringConvertible {
        public var value: UInt32
        public init(_ value: UInt32) { self.value = value }
        /// "tmp1": LTK → intermediate link key.
        public static let tmp1 = KeyID(0x746D_7031)
        /// "tmp2": link key → intermediate LTK.
        public static let tmp2 = KeyID(0x746D_7032)
        /// "lebr": intermediate link key → BR/EDR link key.
        public static let lebr = KeyID(0x6C65_6272)
        /// "brle": intermediate LTK → LE LTK.
        public static let brle = KeyID(0x6272_6C65)
        /// The four octets, most significant first.
        public var msbFirst: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        /// The h7 SALT built from this key ID: 96 zero bits followed by the key ID.
        public var salt: Block128 { Block128(UInt64(value)) }
        public var description: String { String(decoding: msbFirst, as: UTF8.self) }
    }

    /// Derives the BR/EDR link key from an LE LTK (Vol 3 Part H §2.4.2.4): `h6(h6(LTK, "tmp1"), "lebr")` when the
    /// CT2 flag is 0, `h6(h7("tmp1", LTK), "lebr")` when both devices set CT2.
    public static func linkKey(fromLTK ltk: Block128, ct2: Bool) throws(BluetoothCryptoError) -> Block128 {
        let intermediate = ct2 ? try h7(salt: KeyID.tmp1.salt, w: ltk) : try h6(w: ltk, keyID: .tmp1)
        return try h6(w: intermediate, keyID: .lebr)
    }

    /// Derives the LE LTK from a BR/EDR link key (Vol 3 Part H §2.4.2.5): `h6(h6(LK, "tmp2"), "brle")` when CT2 is 0,
    /// `h6(h7("tmp2", LK), "brle")` when both devices set CT2.
    public static func ltk(fromLinkKey linkKey: Block128, ct2: Bool) throws(BluetoothCryptoError) -> Block128 {
        let intermediate = ct2 ? try h7(salt: KeyID.tmp2.salt, w: linkKey) : try h6(w: linkKey, keyID: .tmp2)
        return try h6(w: intermediate, keyID: .brle)
    }

    // MARK: Random address hash (Vol 3 Part H §2.2.2 "ah")

    /// `ah(k, r) = e(k, r') mod 2^24` with `r' = padding ‖ r` (Vol 3 Part H §2.2.2): the hash of a resolvable private
    /// address. Only the 24 low bits of `r` are used; the result is below 2^24.
    public static func ah(k: Block128, r: UInt32) throws(BluetoothCryptoError) -> UInt32 {
        let encrypted = try e(k, Block128(UInt64(r & 0xFF_FFFF)))
        return UInt32(truncatingIfNeeded: encrypted.low) & 0xFF_FFFF
    }

    // MARK: Helpers

    /// A1/A2 of f5/f6: the address-type octet, then the 48-bit address, most significant first.
    static func addressOctets(_ address: BluetoothAddress) -> [UInt8] {
        [address.type.rawValue] + address.littleEndianBytes.reversed()
    }

    static func check256(_ value: [UInt8], _ name: String) throws(BluetoothCryptoError) {
        guard value.count == 32 else { throw .length("\(name) (a 256-bit coordinate)", expected: 32, got: value.count) }
    }
}
