public import BluetoothCore

/// The IO capability of a device, Core 5.4 Vol 3 Part H §3.5.1, Table 3.4.
public struct SMPIOCapability: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "IO capability"

    public static let displayOnly = Self(0x00)
    public static let displayYesNo = Self(0x01)
    public static let keyboardOnly = Self(0x02)
    public static let noInputNoOutput = Self(0x03)
    public static let keyboardDisplay = Self(0x04)

    public static let names: [UInt8: String] = [
        0x00: "DisplayOnly",
        0x01: "DisplayYesNo",
        0x02: "KeyboardOnly",
        0x03: "NoInputNoOutput",
        0x04: "KeyboardDisplay",
    ]
}

/// The OOB data flag of the pairing feature exchange, Core 5.4 Vol 3 Part H §3.5.1, Table 3.5.
public struct SMPOOBDataFlag: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "OOB data flag"

    public static let notPresent = Self(0x00)
    public static let present = Self(0x01)

    public static let names: [UInt8: String] = [
        0x00: "OOB Authentication data not present",
        0x01: "OOB Authentication data from remote device present",
    ]
}

/// The AuthReq field, Core 5.4 Vol 3 Part H §3.5.1, Figure 3.3: Bonding_Flags (2 bits), MITM, SC, Keypress, CT2
/// and two RFU bits (kept as received).
public struct SMPAuthenticationRequirements: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bonding_Flags = 01: Bonding.
    public static let bonding = Self(rawValue: 0x01)
    /// MITM protection requested.
    public static let mitm = Self(rawValue: 0x04)
    /// LE Secure Connections supported.
    public static let secureConnections = Self(rawValue: 0x08)
    /// Keypress notifications (Passkey Entry).
    public static let keypress = Self(rawValue: 0x10)
    /// h7 supported for cross-transport key derivation.
    public static let ct2 = Self(rawValue: 0x20)

    /// The two-bit Bonding_Flags field: 0b00 No Bonding, 0b01 Bonding, 0b10 and 0b11 reserved.
    public var bondingFlags: UInt8 { rawValue & 0x03 }

    /// "0x05: Bonding, MITM"; "0x00: No Bonding".
    public var description: String {
        var parts: [String] = []
        switch bondingFlags {
        case 0: parts.append("No Bonding")
        case 1: parts.append("Bonding")
        default: parts.append("Reserved Bonding_Flags (\(bondingFlags))")
        }
        if contains(.mitm) { parts.append("MITM") }
        if contains(.secureConnections) { parts.append("SC") }
        if contains(.keypress) { parts.append("Keypress") }
        if contains(.ct2) { parts.append("CT2") }
        if rawValue & 0xC0 != 0 { parts.append("RFU bits \(Dissection.hex8(rawValue & 0xC0))") }
        return "\(Dissection.hex8(rawValue)): " + parts.joined(separator: ", ")
    }
}

/// The Initiator / Responder Key Distribution fields, Core 5.4 Vol 3 Part H §3.6.1, Figure 3.11: EncKey, IdKey,
/// SignKey, LinkKey and four RFU bits (kept as received).
public struct SMPKeyDistribution: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// LTK (legacy pairing: Encryption Information + Central Identification).
    public static let encryptionKey = Self(rawValue: 0x01)
    /// IRK and identity address.
    public static let identityKey = Self(rawValue: 0x02)
    /// CSRK.
    public static let signingKey = Self(rawValue: 0x04)
    /// Derive the BR/EDR link key.
    public static let linkKey = Self(rawValue: 0x08)

    /// "0x07: EncKey, IdKey, SignKey"; "0x00: none".
    public var description: String {
        var parts: [String] = []
        if contains(.encryptionKey) { parts.append("EncKey") }
        if contains(.identityKey) { parts.append("IdKey") }
        if contains(.signingKey) { parts.append("SignKey") }
        if contains(.linkKey) { parts.append("LinkKey") }
        if rawValue & 0xF0 != 0 { parts.append("RFU bits \(Dissection.hex8(rawValue & 0xF0))") }
        return "\(Dissection.hex8(rawValue)): " + (parts.isEmpty ? "none" : parts.joined(separator: ", "))
    }
}

/// The notification type of a Pairing Keypress Notification, Core 5.4 Vol 3 Part H §3.5.8, Table 3.8.
public struct SMPKeypressNotificationType: OpenCode {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "keypress notification type"

    public static let passkeyEntryStarted = Self(0x00)
    public static let passkeyDigitEntered = Self(0x01)
    public static let passkeyDigitErased = Self(0x02)
    public static let passkeyCleared = Self(0x03)
    public static let passkeyEntryCompleted = Self(0x04)

    public static let names: [UInt8: String] = [
        0x00: "Passkey entry started",
        0x01: "Passkey digit entered",
        0x02: "Passkey digit erased",
        0x03: "Passkey cleared",
        0x04: "Passkey entry completed",
    ]
}

/// The parameters of a Pairing Request or Pairing Response, Core 5.4 Vol 3 Part H §3.5.1 and §3.5.2.
public struct SMPPairingParameters: Hashable, Sendable {
    public var ioCapability: SMPIOCapability
    public var oobDataFlag: SMPOOBDataFlag
    public var authenticationRequirements: SMPAuthenticationRequirements
    /// 7...16 octets; decoding rejects other values.
    public var maximumEncryptionKeySize: UInt8
    public var initiatorKeyDistribution: SMPKeyDistribution
    public var responderKeyDistribution: SMPKeyDistribution

    /// The allowed range of the Maximum Encryption Key Size field.
    public static let encryptionKeySizeRange: ClosedRange<UInt8> = 7...16

    public init(
        ioCapability: SMPIOCapability, oobDataFlag: SMPOOBDataFlag = .notPresent,
        authenticationRequirements: SMPAuthenticationRequirements, maximumEncryptionKeySize: UInt8 = 16,
        initiatorKeyDistribution: SMPKeyDistribution, responderKeyDistribution: SMPKeyDistribution
    ) {
        self.ioCapability = ioCapability
        self.oobDataFlag = oobDataFlag
        self.authenticationRequirements = authenticationRequirements
        self.maximumEncryptionKeySize = maximumEncryptionKeySize
        self.initiatorKeyDistribution = initiatorKeyDistribution
        self.responderKeyDistribution = responderKeyDistribution
    }

    /// Reads the six parameter octets; the key size must be 7...16.
    public init(from reader: inout ByteReader) throws(DecodeError) {
        ioCapability = SMPIOCapability(try reader.readUInt8("IO Capability"))
        oobDataFlag = SMPOOBDataFlag(try reader.readUInt8("OOB data flag"))
        authenticationRequirements = SMPAuthenticationRequirements(rawValue: try reader.readUInt8("AuthReq"))
        let keySizeOffset = reader.offset
        maximumEncryptionKeySize = try reader.readUInt8("Maximum Encryption Key Size")
        guard Self.encryptionKeySizeRange.contains(maximumEncryptionKeySize) else {
            throw DecodeError(
                .invalidValue, at: keySizeOffset, "Maximum Encryption Key Size \(maximumEncryptionKeySize) outside 7...16")
        }
        initiatorKeyDistribution = SMPKeyDistribution(rawValue: try reader.readUInt8("Initiator Key Distribution"))
        responderKeyDistribution = SMPKeyDistribution(rawValue: try reader.readUInt8("Responder Key Distribution"))
    }

    /// Appends the six parameter octets (the PDU without its code octet).
    public func write(to writer: inout ByteWriter) {
        writer.write(ioCapability.rawValue)
        writer.write(oobDataFlag.rawValue)
        writer.write(authenticationRequirements.rawValue)
        writer.write(maximumEncryptionKeySize)
        writer.write(initiatorKeyDistribution.rawValue)
        writer.write(responderKeyDistribution.rawValue)
    }

    /// Checks the key size range (for values built locally).
    public func validate() throws(DecodeError) {
        guard Self.encryptionKeySizeRange.contains(maximumEncryptionKeySize) else {
            throw DecodeError(
                .invalidValue, at: 4, "Maximum Encryption Key Size \(maximumEncryptionKeySize) outside 7...16")
        }
    }

    var fieldDissections: [Dissection] {
        [
            Dissection("IO Capability", ioCapability.description),
            Dissection("OOB Data Flag", oobDataFlag.description),
            Dissection("AuthReq", authenticationRequirements.description),
            Dissection("Maximum Encryption Key Size", "\(maximumEncryptionKeySize)"),
            Dissection("Initiator Key Distribution", initiatorKeyDistribution.description),
            Dissection("Responder Key Distribution", responderKeyDistribution.description),
        ]
    }
}
