public import BluetoothCore

/// A Security Manager Protocol PDU, Core 5.4 Vol 3 Part H §3.5 (pairing) and §3.6 (key distribution).
///
/// Byte order: every `[UInt8]` value (128-bit confirm, random, keys and DHKey check; the 32-octet P-256
/// coordinates; the 8-octet Rand) is kept exactly as on the wire, least significant octet first. The
/// specification prints sample values most significant octet first.
///
/// Decoding: ``init(decoding:)`` takes a whole SMP payload (one PDU per B-frame) and checks the exact length from
/// ``SMPCode/pduLengths``. Reserved codes decode as ``unknown(code:data:)``.
///
/// Encoding is total: fixed-size fields are written at their exact size (zero-padded or cut when a value built
/// locally has the wrong length; ``validate()`` reports that).
public enum SMPPDU: Hashable, Sendable {
    case pairingRequest(SMPPairingParameters)
    case pairingResponse(SMPPairingParameters)
    /// Mconfirm / Sconfirm (16 octets, wire order).
    case pairingConfirm(confirmValue: [UInt8])
    /// Mrand / Srand (16 octets, wire order).
    case pairingRandom(randomValue: [UInt8])
    case pairingFailed(reason: SMPPairingFailedReason)
    /// The LTK (16 octets, wire order).
    case encryptionInformation(longTermKey: [UInt8])
    /// EDIV and Rand identifying the LTK (Rand: 8 octets, wire order).
    case centralIdentification(ediv: UInt16, rand: [UInt8])
    /// The IRK (16 octets, wire order).
    case identityInformation(identityResolvingKey: [UInt8])
    /// The public or static random identity address.
    case identityAddressInformation(BluetoothAddress)
    /// The CSRK (16 octets, wire order).
    case signingInformation(signatureKey: [UInt8])
    case securityRequest(SMPAuthenticationRequirements)
    /// The P-256 public key: X then Y, 32 octets each, wire order (least significant octet first).
    case pairingPublicKey(x: [UInt8], y: [UInt8])
    /// Ea / Eb (16 octets, wire order).
    case pairingDHKeyCheck(checkValue: [UInt8])
    case pairingKeypressNotification(SMPKeypressNotificationType)
    /// A reserved code and the octets after it.
    case unknown(code: SMPCode, data: [UInt8])

    /// The code octet of this PDU.
    public var code: SMPCode {
        switch self {
        case .pairingRequest: .pairingRequest
        case .pairingResponse: .pairingResponse
        case .pairingConfirm: .pairingConfirm
        case .pairingRandom: .pairingRandom
        case .pairingFailed: .pairingFailed
        case .encryptionInformation: .encryptionInformation
        case .centralIdentification: .centralIdentification
        case .identityInformation: .identityInformation
        case .identityAddressInformation: .identityAddressInformation
        case .signingInformation: .signingInformation
        case .securityRequest: .securityRequest
        case .pairingPublicKey: .pairingPublicKey
        case .pairingDHKeyCheck: .pairingDHKeyCheck
        case .pairingKeypressNotification: .pairingKeypressNotification
        case .unknown(let code, _): code
        }
    }

    // MARK: Decoding

    /// Decodes one whole SMP payload (the information payload of a B-frame on CID 0x0006).
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        let code = SMPCode(try reader.readUInt8("SMP code"))
        guard let length = code.pduLength else {
            self = .unknown(code: code, data: reader.readRemaining())
            return
        }
        guard bytes.count == length else {
            let errorCode: DecodeError.Code = bytes.count < length ? .truncated : .trailingBytes
            throw DecodeError(
                errorCode, at: min(bytes.count, length),
                "SMP \(code.name ?? "PDU") is \(length) octets, not \(bytes.count)")
        }
        switch code {
        case .pairingRequest: self = .pairingRequest(try SMPPairingParameters(from: &reader))
        case .pairingResponse: self = .pairingResponse(try SMPPairingParameters(from: &reader))
        case .pairingConfirm: self = .pairingConfirm(confirmValue: try reader.readBytes(16, "Confirm Value"))
        case .pairingRandom: self = .pairingRandom(randomValue: try reader.readBytes(16, "Random Value"))
        case .pairingFailed: self = .pairingFailed(reason: SMPPairingFailedReason(try reader.readUInt8("Reason")))
        case .encryptionInformation:
            self = .encryptionInformation(longTermKey: try reader.readBytes(16, "Long Term Key"))
        case .centralIdentification:
            self = .centralIdentification(ediv: try reader.readUInt16("EDIV"), rand: try reader.readBytes(8, "Rand"))
        case .identityInformation:
            self = .identityInformation(identityResolvingKey: try reader.readBytes(16, "Identity Resolving Key"))
        case .identityAddressInformation:
            let typeOffset = reader.offset
            let type = try reader.readUInt8("AddrType")
            guard let addressType = BluetoothAddress.AddressType(rawValue: type) else {
                throw DecodeError(.invalidValue, at: typeOffset, "AddrType \(Dissection.hex8(type)) is neither public (0x00) nor random static (0x01)")
            }
            let bytes = try reader.readBytes(6, "BD_ADDR")
            self = .identityAddressInformation(try BluetoothAddress(littleEndianBytes: bytes, type: addressType))
        case .signingInformation:
            self = .signingInformation(signatureKey: try reader.readBytes(16, "Signature Key"))
        case .securityRequest:
            self = .securityRequest(SMPAuthenticationRequirements(rawValue: try reader.readUInt8("AuthReq")))
        case .pairingPublicKey:
            self = .pairingPublicKey(x: try reader.readBytes(32, "Public Key X"), y: try reader.readBytes(32, "Public Key Y"))
        case .pairingDHKeyCheck:
            self = .pairingDHKeyCheck(checkValue: try reader.readBytes(16, "DHKey Check"))
        case .pairingKeypressNotification:
            self = .pairingKeypressNotification(SMPKeypressNotificationType(try reader.readUInt8("Notification Type")))
        default:
            self = .unknown(code: code, data: reader.readRemaining())
        }
        try reader.expectEnd("SMP \(code)")
    }

    // MARK: Encoding

    public func encode() -> [UInt8] {
        var writer = ByteWriter(capacity: code.pduLength ?? 17)
        writer.write(code.rawValue)
        switch self {
        case .pairingRequest(let parameters), .pairingResponse(let parameters):
            parameters.write(to: &writer)
        case .pairingConfirm(let value), .pairingRandom(let value), .encryptionInformation(let value),
            .identityInformation(let value), .signingInformation(let value), .pairingDHKeyCheck(let value):
            writer.write(Self.fixed(value, 16))
        case .pairingFailed(let reason):
            writer.write(reason.rawValue)
        case .centralIdentification(let ediv, let rand):
            writer.write(ediv)
            writer.write(Self.fixed(rand, 8))
        case .identityAddressInformation(let address):
            writer.write(address.type.rawValue)
            writer.write(address.littleEndianBytes)
        case .securityRequest(let authReq):
            writer.write(authReq.rawValue)
        case .pairingPublicKey(let x, let y):
            writer.write(Self.fixed(x, 32))
            writer.write(Self.fixed(y, 32))
        case .pairingKeypressNotification(let type):
            writer.write(type.rawValue)
        case .unknown(_, let data):
            writer.write(data)
        }
        return writer.bytes
    }

    /// `value` zero-padded or cut to `count` octets.
    private static func fixed(_ value: [UInt8], _ count: Int) -> [UInt8] {
        value.count == count ? value : Array((value + [UInt8](repeating: 0, count: count)).prefix(count))
    }

    /// Checks the lengths of fixed-size values built locally, and the key size of pairing parameters.
    public func validate() throws(DecodeError) {
        func check(_ value: [UInt8], _ count: Int, _ field: String) throws(DecodeError) {
            guard value.count == count else {
                throw DecodeError(.invalidLength, at: 1, "\(field) must be \(count) octets, not \(value.count)")
            }
        }
        switch self {
        case .pairingRequest(let parameters), .pairingResponse(let parameters): try parameters.validate()
        case .pairingConfirm(let value): try check(value, 16, "Confirm Value")
        case .pairingRandom(let value): try check(value, 16, "Random Value")
        case .encryptionInformation(let value): try check(value, 16, "Long Term Key")
        case .identityInformation(let value): try check(value, 16, "Identity Resolving Key")
        case .signingInformation(let value): try check(value, 16, "Signature Key")
        case .pairingDHKeyCheck(let value): try check(value, 16, "DHKey Check")
        case .centralIdentification(_, let rand): try check(rand, 8, "Rand")
        case .pairingPublicKey(let x, let y):
            try check(x, 32, "Public Key X")
            try check(y, 32, "Public Key Y")
        default: break
        }
    }
}

extension SMPPDU: Dissectable {
    public var dissection: Dissection {
        var children = [Dissection("Code", code.description)]
        switch self {
        case .pairingRequest(let parameters), .pairingResponse(let parameters):
            children += parameters.fieldDissections
        case .pairingConfirm(let value): children.append(Dissection("Confirm Value", Self.wire(value)))
        case .pairingRandom(let value): children.append(Dissection("Random Value", Self.wire(value)))
        case .pairingFailed(let reason): children.append(Dissection("Reason", reason.description))
        case .encryptionInformation(let value): children.append(Dissection("Long Term Key", Self.wire(value)))
        case .centralIdentification(let ediv, let rand):
            children.append(Dissection("EDIV", Dissection.hex16(ediv)))
            children.append(Dissection("Rand", Self.wire(rand)))
        case .identityInformation(let value): children.append(Dissection("Identity Resolving Key", Self.wire(value)))
        case .identityAddressInformation(let address):
            children.append(
                Dissection("AddrType", "\(address.type == .public ? "Public" : "Random static") (\(Dissection.hex8(address.type.rawValue)))"))
            children.append(Dissection("BD_ADDR", address.string))
        case .signingInformation(let value): children.append(Dissection("Signature Key", Self.wire(value)))
        case .securityRequest(let authReq): children.append(Dissection("AuthReq", authReq.description))
        case .pairingPublicKey(let x, let y):
            children.append(Dissection("Public Key X", Self.wire(x)))
            children.append(Dissection("Public Key Y", Self.wire(y)))
        case .pairingDHKeyCheck(let value): children.append(Dissection("DHKey Check", Self.wire(value)))
        case .pairingKeypressNotification(let type): children.append(Dissection("Notification Type", type.description))
        case .unknown(_, let data): children.append(Dissection("Data", Dissection.bytes(data)))
        }
        let title = code.name.map { "SMP \($0)" } ?? "SMP Unknown PDU"
        return Dissection(title, nil, children)
    }

    /// A multi-octet value as the number it encodes: "0x" and the octets most significant first, as the
    /// specification prints sample data (the reverse of the wire order).
    private static func wire(_ value: [UInt8]) -> String {
        "0x" + Hex.encode(value.reversed())
    }
}
