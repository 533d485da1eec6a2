public import BluetoothCore

/// A command on the LE L2CAP signaling channel (CID 0x0005), Core 5.4 Vol 3 Part A §4.
///
/// On LE a C-frame carries exactly one command, so ``init(decoding:)`` takes the whole C-frame payload: header
/// (code, identifier, length) then exactly `length` octets of data, whose size must match the code's entry in
/// ``L2CAPSignalingCode/leLengthRule``. Codes not valid on LE decode as ``unknown(code:identifier:data:)``; the Host
/// answers them with Command Reject *Command not understood* (``rejectNotUnderstood(identifier:)``).
///
/// Decoding checks structure only; value ranges (MTU, MPS, connection parameters, credits) are checked by each
/// parameter type's `validate()` (and ``validate()`` here), because the specification answers those with a result
/// code, not a Command Reject.
public enum L2CAPSignalingCommand: Hashable, Sendable {
    case commandReject(identifier: UInt8, L2CAPCommandReject)
    case disconnectionRequest(identifier: UInt8, L2CAPDisconnection)
    case disconnectionResponse(identifier: UInt8, L2CAPDisconnection)
    case connectionParameterUpdateRequest(identifier: UInt8, L2CAPConnectionParameterUpdateRequest)
    case connectionParameterUpdateResponse(identifier: UInt8, result: L2CAPConnectionParameterUpdateResult)
    case leCreditBasedConnectionRequest(identifier: UInt8, L2CAPLECreditBasedConnectionRequest)
    case leCreditBasedConnectionResponse(identifier: UInt8, L2CAPLECreditBasedConnectionResponse)
    case flowControlCreditIndication(identifier: UInt8, L2CAPFlowControlCreditIndication)
    case creditBasedConnectionRequest(identifier: UInt8, L2CAPCreditBasedConnectionRequest)
    case creditBasedConnectionResponse(identifier: UInt8, L2CAPCreditBasedConnectionResponse)
    case creditBasedReconfigureRequest(identifier: UInt8, L2CAPCreditBasedReconfigureRequest)
    case creditBasedReconfigureResponse(identifier: UInt8, result: L2CAPReconfigureResult)
    /// A code not valid on the LE signaling channel, with its data as received.
    case unknown(code: L2CAPSignalingCode, identifier: UInt8, data: [UInt8])

    /// The minimum signaling MTU on LE (MTU_sig, §4).
    public static let minimumLESignalingMTU = 23

    /// The answer to an unknown or malformed command.
    public static func rejectNotUnderstood(identifier: UInt8) -> Self {
        .commandReject(identifier: identifier, .commandNotUnderstood)
    }

    public var code: L2CAPSignalingCode {
        switch self {
        case .commandReject: .commandReject
        case .disconnectionRequest: .disconnectionRequest
        case .disconnectionResponse: .disconnectionResponse
        case .connectionParameterUpdateRequest: .connectionParameterUpdateRequest
        case .connectionParameterUpdateResponse: .connectionParameterUpdateResponse
        case .leCreditBasedConnectionRequest: .leCreditBasedConnectionRequest
        case .leCreditBasedConnectionResponse: .leCreditBasedConnectionResponse
        case .flowControlCreditIndication: .flowControlCreditIndication
        case .creditBasedConnectionRequest: .creditBasedConnectionRequest
        case .creditBasedConnectionResponse: .creditBasedConnectionResponse
        case .creditBasedReconfigureRequest: .creditBasedReconfigureRequest
        case .creditBasedReconfigureResponse: .creditBasedReconfigureResponse
        case .unknown(let code, _, _): code
        }
    }

    public var identifier: UInt8 {
        switch self {
        case .commandReject(let identifier, _), .disconnectionRequest(let identifier, _),
            .disconnectionResponse(let identifier, _), .connectionParameterUpdateRequest(let identifier, _),
            .connectionParameterUpdateResponse(let identifier, _), .leCreditBasedConnectionRequest(let identifier, _),
            .leCreditBasedConnectionResponse(let identifier, _), .flowControlCreditIndication(let identifier, _),
            .creditBasedConnectionRequest(let identifier, _), .creditBasedConnectionResponse(let identifier, _),
            .creditBasedReconfigureRequest(let identifier, _), .creditBasedReconfigureResponse(let identifier, _),
            .unknown(_, let identifier, _):
            identifier
        }
    }

    // MARK: Decoding

    /// Decodes one whole LE C-frame payload (exactly one command, no trailing bytes).
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        let header = try L2CAPSignalingHeader(from: &reader)
        guard reader.remaining == Int(header.length) else {
            if reader.remaining < Int(header.length) {
                throw reader.error(
                    .truncated, "signaling length \(header.length) but \(reader.remaining) data bytes present")
            }
            throw reader.error(
                .trailingBytes, "signaling length \(header.length) but \(reader.remaining) data bytes present"
                    + " (LE carries one command per C-frame)")
        }
        try self.init(header: header, data: &reader)
    }

    /// Decodes the data field of a command whose header was already read; `data` covers exactly the data field.
    public init(header: L2CAPSignalingHeader, data reader: inout ByteReader) throws(DecodeError) {
        let identifier = header.identifier
        guard let rule = L2CAPSignalingCode.leLengthRule[header.code.rawValue] else {
            self = .unknown(code: header.code, identifier: identifier, data: reader.readRemaining())
            return
        }
        let length = reader.remaining
        guard rule.accepts(length) else {
            throw reader.error(
                .invalidLength, "\(header.code.title) data must be \(rule.description), not \(length)")
        }
        switch header.code {
        case .commandReject:
            self = .commandReject(identifier: identifier, try Self.readReject(&reader))
        case .disconnectionRequest:
            self = .disconnectionRequest(identifier: identifier, try Self.readDisconnection(&reader))
        case .disconnectionResponse:
            self = .disconnectionResponse(identifier: identifier, try Self.readDisconnection(&reader))
        case .connectionParameterUpdateRequest:
            self = .connectionParameterUpdateRequest(
                identifier: identifier,
                L2CAPConnectionParameterUpdateRequest(
                    intervalMin: try reader.readUInt16("Interval Min"),
                    intervalMax: try reader.readUInt16("Interval Max"),
                    peripheralLatency: try reader.readUInt16("Peripheral Latency"),
                    timeoutMultiplier: try reader.readUInt16("Timeout Multiplier")))
        case .connectionParameterUpdateResponse:
            self = .connectionParameterUpdateResponse(
                identifier: identifier, result: L2CAPConnectionParameterUpdateResult(try reader.readUInt16("Result")))
        case .leCreditBasedConnectionRequest:
            self = .leCreditBasedConnectionRequest(
                identifier: identifier,
                L2CAPLECreditBasedConnectionRequest(
                    lePSM: try reader.readUInt16("LE_PSM"),
                    sourceCID: L2CAPChannelIdentifier(try reader.readUInt16("Source CID")),
                    mtu: try reader.readUInt16("MTU"),
                    mps: try reader.readUInt16("MPS"),
                    initialCredits: try reader.readUInt16("Initial Credits")))
        case .leCreditBasedConnectionResponse:
            self = .leCreditBasedConnectionResponse(
                identifier: identifier,
                L2CAPLECreditBasedConnectionResponse(
                    destinationCID: L2CAPChannelIdentifier(try reader.readUInt16("Destination CID")),
                    mtu: try reader.readUInt16("MTU"),
                    mps: try reader.readUInt16("MPS"),
                    initialCredits: try reader.readUInt16("Initial Credits"),
                    result: L2CAPConnectionResult(try reader.readUInt16("Result"))))
        case .flowControlCreditIndication:
            self = .flowControlCreditIndication(
                identifier: identifier,
                L2CAPFlowControlCreditIndication(
                    cid: L2CAPChannelIdentifier(try reader.readUInt16("CID")),
                    credits: try reader.readUInt16("Credits")))
        case .creditBasedConnectionRequest:
            let spsm = try reader.readUInt16("SPSM")
            let mtu = try reader.readUInt16("MTU")
            let mps = try reader.readUInt16("MPS")
            let credits = try reader.readUInt16("Initial Credits")
            self = .creditBasedConnectionRequest(
                identifier: identifier,
                L2CAPCreditBasedConnectionRequest(
                    spsm: spsm, mtu: mtu, mps: mps, initialCredits: credits,
                    sourceCIDs: try Self.readCIDs(&reader, "Source CID")))
        case .creditBasedConnectionResponse:
            let mtu = try reader.readUInt16("MTU")
            let mps = try reader.readUInt16("MPS")
            let credits = try reader.readUInt16("Initial Credits")
            let result = L2CAPConnectionResult(try reader.readUInt16("Result"))
            self = .creditBasedConnectionResponse(
                identifier: identifier,
                L2CAPCreditBasedConnectionResponse(
                    mtu: mtu, mps: mps, initialCredits: credits, result: result,
                    destinationCIDs: try Self.readCIDs(&reader, "Destination CID")))
        case .creditBasedReconfigureRequest:
            let mtu = try reader.readUInt16("MTU")
            let mps = try reader.readUInt16("MPS")
            self = .creditBasedReconfigureRequest(
                identifier: identifier,
                L2CAPCreditBasedReconfigureRequest(
                    mtu: mtu, mps: mps, destinationCIDs: try Self.readCIDs(&reader, "Destination CID")))
        case .creditBasedReconfigureResponse:
            self = .creditBasedReconfigureResponse(
                identifier: identifier, result: L2CAPReconfigureResult(try reader.readUInt16("Result")))
        default:
            // A code listed in the table without a case here would be a bug; treat it as not understood.
            self = .unknown(code: header.code, identifier: identifier, data: reader.readRemaining())
        }
        try reader.expectEnd(header.code.title)
    }

    private static func readReject(_ reader: inout ByteReader) throws(DecodeError) -> L2CAPCommandReject {
        let reason = L2CAPSignalingRejectReason(try reader.readUInt16("Reason"))
        switch reason {
        case .commandNotUnderstood:
            try reader.expectEnd("Command Reject (Command not understood has no data)")
            return .commandNotUnderstood
        case .signalingMTUExceeded:
            let mtu = try reader.readUInt16("Actual MTU")
            try reader.expectEnd("Command Reject (Signaling MTU exceeded)")
            return .signalingMTUExceeded(actualMTU: mtu)
        case .invalidCIDInRequest:
            let local = L2CAPChannelIdentifier(try reader.readUInt16("Local Endpoint CID"))
            let remote = L2CAPChannelIdentifier(try reader.readUInt16("Remote Endpoint CID"))
            return .invalidCIDInRequest(localCID: local, remoteCID: remote)
        default:
            return .other(reason: reason, data: reader.readRemaining())
        }
    }

    private static func readDisconnection(_ reader: inout ByteReader) throws(DecodeError) -> L2CAPDisconnection {
        L2CAPDisconnection(
            destinationCID: L2CAPChannelIdentifier(try reader.readUInt16("Destination CID")),
            sourceCID: L2CAPChannelIdentifier(try reader.readUInt16("Source CID")))
    }

    private static func readCIDs(_ reader: inout ByteReader, _ field: String) throws(DecodeError)
        -> [L2CAPChannelIdentifier]
    {
        var cids: [L2CAPChannelIdentifier] = []
        while !reader.isAtEnd {
            cids.append(L2CAPChannelIdentifier(try reader.readUInt16(field)))
        }
        return cids
    }

    // MARK: Encoding

    /// The data field (everything after the 4-octet header).
    public var data: [UInt8] {
        var writer = ByteWriter()
        switch self {
        case .commandReject(_, let reject):
            writer.write(reject.reason.rawValue)
            switch reject {
            case .commandNotUnderstood: break
            case .signalingMTUExceeded(let mtu): writer.write(mtu)
            case .invalidCIDInRequest(let local, let remote):
                writer.write(local.rawValue)
                writer.write(remote.rawValue)
            case .other(_, let data): writer.write(data)
            }
        case .disconnectionRequest(_, let value), .disconnectionResponse(_, let value):
            writer.write(value.destinationCID.rawValue)
            writer.write(value.sourceCID.rawValue)
        case .connectionParameterUpdateRequest(_, let value):
            writer.write(value.intervalMin)
            writer.write(value.intervalMax)
            writer.write(value.peripheralLatency)
            writer.write(value.timeoutMultiplier)
        case .connectionParameterUpdateResponse(_, let result):
            writer.write(result.rawValue)
        case .leCreditBasedConnectionRequest(_, let value):
            writer.write(value.lePSM)
            writer.write(value.sourceCID.rawValue)
            writer.write(value.mtu)
            writer.write(value.mps)
            writer.write(value.initialCredits)
        case .leCreditBasedConnectionResponse(_, let value):
            writer.write(value.destinationCID.rawValue)
            writer.write(value.mtu)
            writer.write(value.mps)
            writer.write(value.initialCredits)
            writer.write(value.result.rawValue)
        case .flowControlCreditIndication(_, let value):
            writer.write(value.cid.rawValue)
            writer.write(value.credits)
        case .creditBasedConnectionRequest(_, let value):
            writer.write(value.spsm)
            writer.write(value.mtu)
            writer.write(value.mps)
            writer.write(value.initialCredits)
            for cid in value.sourceCIDs { writer.write(cid.rawValue) }
        case .creditBasedConnectionResponse(_, let value):
            writer.write(value.mtu)
            writer.write(value.mps)
            writer.write(value.initialCredits)
            writer.write(value.result.rawValue)
            for cid in value.destinationCIDs { writer.write(cid.rawValue) }
        case .creditBasedReconfigureRequest(_, let value):
            writer.write(value.mtu)
            writer.write(value.mps)
            for cid in value.destinationCIDs { writer.write(cid.rawValue) }
        case .creditBasedReconfigureResponse(_, let result):
            writer.write(result.rawValue)
        case .unknown(_, _, let data):
            writer.write(data)
        }
        return writer.bytes
    }

    /// The C-frame payload: header then data. Data longer than 65535 octets (only possible through
    /// ``unknown(code:identifier:data:)`` or ``L2CAPCommandReject/other(reason:data:)``) is cut to fit the
    /// length field; ``validate()`` reports it.
    public func encode() -> [UInt8] {
        var body = data
        if body.count > Int(UInt16.max) { body = Array(body.prefix(Int(UInt16.max))) }
        var writer = ByteWriter(capacity: L2CAPSignalingHeader.length + body.count)
        writer.write(code.rawValue)
        writer.write(identifier)
        writer.write(UInt16(truncatingIfNeeded: body.count))
        writer.write(body)
        return writer.bytes
    }

    /// The value-range checks of the command's parameters (see each parameter type's `validate()`), plus the
    /// identifier rule (0x00 is never used) and the encodability of free-form data.
    public func validate() throws(DecodeError) {
        guard identifier != 0 else { throw DecodeError(.invalidValue, at: 1, "signaling identifier 0x00 is illegal") }
        switch self {
        case .connectionParameterUpdateRequest(_, let value): try value.validate()
        case .leCreditBasedConnectionRequest(_, let value): try value.validate()
        case .leCreditBasedConnectionResponse(_, let value): try value.validate()
        case .flowControlCreditIndication(_, let value): try value.validate()
        case .creditBasedConnectionRequest(_, let value): try value.validate()
        case .creditBasedConnectionResponse(_, let value): try value.validate()
        case .creditBasedReconfigureRequest(_, let value): try value.validate()
        case .commandReject(_, .other(_, let data)):
            guard data.count <= 4, data.count % 2 == 0 else {
                throw DecodeError(.invalidLength, at: 6, "reject data must be 0, 2 or 4 octets, not \(data.count)")
            }
        case .unknown(_, _, let data):
            guard data.count <= Int(UInt16.max) else {
                throw DecodeError(.invalidLength, at: 4, "command data above 65535 octets")
            }
        default: break
        }
    }
}
