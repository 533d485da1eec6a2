public import BluetoothCore

/// An Attribute Protocol opcode (Core 5.4 Vol 3 Part F §3.3.1, Table 3.1; values from §3.4.8, Table 3.37).
///
/// The octet is an open code: bits 0–5 are the method, bit 6 the *Command Flag* and bit 7 the *Authentication
/// Signature Flag*. Unknown values are representable; ``ATTOpcodeTable`` says which ones this build decodes.
public struct ATTOpcode: OpenCode, Codable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }
    public static let codeKind = "ATT opcode"

    public static let errorResponse = ATTOpcode(0x01)
    public static let exchangeMTURequest = ATTOpcode(0x02)
    public static let exchangeMTUResponse = ATTOpcode(0x03)
    public static let findInformationRequest = ATTOpcode(0x04)
    public static let findInformationResponse = ATTOpcode(0x05)
    public static let findByTypeValueRequest = ATTOpcode(0x06)
    public static let findByTypeValueResponse = ATTOpcode(0x07)
    public static let readByTypeRequest = ATTOpcode(0x08)
    public static let readByTypeResponse = ATTOpcode(0x09)
    public static let readRequest = ATTOpcode(0x0A)
    public static let readResponse = ATTOpcode(0x0B)
    public static let readBlobRequest = ATTOpcode(0x0C)
    public static let readBlobResponse = ATTOpcode(0x0D)
    public static let readMultipleRequest = ATTOpcode(0x0E)
    public static let readMultipleResponse = ATTOpcode(0x0F)
    public static let readByGroupTypeRequest = ATTOpcode(0x10)
    public static let readByGroupTypeResponse = ATTOpcode(0x11)
    public static let writeRequest = ATTOpcode(0x12)
    public static let writeResponse = ATTOpcode(0x13)
    public static let prepareWriteRequest = ATTOpcode(0x16)
    public static let prepareWriteResponse = ATTOpcode(0x17)
    public static let executeWriteRequest = ATTOpcode(0x18)
    public static let executeWriteResponse = ATTOpcode(0x19)
    public static let readMultipleVariableRequest = ATTOpcode(0x20)
    public static let readMultipleVariableResponse = ATTOpcode(0x21)
    public static let multipleHandleValueNotification = ATTOpcode(0x23)
    public static let handleValueNotification = ATTOpcode(0x1B)
    public static let handleValueIndication = ATTOpcode(0x1D)
    public static let handleValueConfirmation = ATTOpcode(0x1E)
    public static let writeCommand = ATTOpcode(0x52)
    public static let signedWriteCommand = ATTOpcode(0xD2)

    /// Bits 0–5: the method.
    public var method: UInt8 { rawValue & 0x3F }
    /// Bit 6, the Command Flag: the PDU is a command, never answered (not even with an Error Response).
    public var isCommand: Bool { rawValue & 0x40 != 0 }
    /// Bit 7, the Authentication Signature Flag: a 12-octet signature ends the PDU.
    public var hasAuthenticationSignature: Bool { rawValue & 0x80 != 0 }

    /// The table entry for this opcode, or nil for an opcode the specification (as this build knows it) does
    /// not define.
    public var info: ATTOpcodeInfo? { ATTOpcodeTable.info(for: self) }

    /// What kind of PDU this opcode starts, if known.
    public var kind: ATTPDUKind? { info?.kind }

    /// For a request, the opcode of the response that answers it (an Error Response may answer instead).
    public var responseOpcode: ATTOpcode? { info?.responseOpcode }

    /// The ATT error a server answers with when a PDU starting with this opcode arrives and does not decode, or
    /// nil when no answer is sent.
    ///
    /// Commands (bit 6 set) are silently ignored, known or not (§3.3: "a server that receives a command it does
    /// not support shall ignore it"); so are PDUs of other kinds than requests (responses, notifications,
    /// indications, confirmations). An unknown opcode without the command flag is an unsupported request:
    /// *Request Not Supported* (§3.4.1.1). A known request that fails to decode (wrong length, bad field):
    /// *Invalid PDU*.
    public var errorForUndecodableRequest: ATTErrorCode? {
        if isCommand { return nil }
        guard let info else { return .requestNotSupported }
        return info.kind == .request ? .invalidPDU : nil
    }

    /// The specification's PDU names, by opcode ("Read By Type Request").
    public static let names: [UInt8: String] = {
        var names: [UInt8: String] = [:]
        for entry in ATTOpcodeTable.entries { names[entry.opcode.rawValue] = entry.name }
        return names
    }()
}
