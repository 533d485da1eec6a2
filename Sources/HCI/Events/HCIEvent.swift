public import BluetoothCore

/// One entry of Number Of Completed Packets (Core 5.4 Vol 4 Part E §7.7.19).
public struct HCICompletedPackets: Hashable, Sendable {
    public var handle: UInt16
    public var count: UInt16
    public init(handle: UInt16, count: UInt16) {
        self.handle = handle
        self.count = count
    }
}

/// An HCI event packet (Core 5.4 Vol 4 Part E §5.4.4): `Event_Code (1) | Parameter_Total_Length (1) | parameters`,
/// without the H4 packet indicator. The host decodes these; the virtual controller encodes them.
///
/// Known events must have exactly their spec parameter length (§7.7); unknown codes decode into
/// ``unknown(code:parameters:)``. Connection handles are masked to 12 bits and checked (≤ 0x0EFF), except in events
/// whose status is an error. Parameters longer than 255 octets are truncated when encoding: keep report lists
/// within one event.
public enum HCIEvent: Hashable, Sendable {
    case disconnectionComplete(status: HCIStatus, handle: UInt16, reason: HCIStatus)
    /// Encryption_Enabled: 0x00 off, 0x01 on (AES-CCM for LE).
    case encryptionChange(status: HCIStatus, handle: UInt16, encryptionEnabled: UInt8)
    case encryptionChangeV2(status: HCIStatus, handle: UInt16, encryptionEnabled: UInt8, encryptionKeySize: UInt8)
    case readRemoteVersionInformationComplete(status: HCIStatus, handle: UInt16, version: UInt8,
                                              companyIdentifier: CompanyIdentifier, subversion: UInt16)
    case commandComplete(numHCICommandPackets: UInt8, opcode: HCIOpcode, returnParameters: HCIReturnParameters)
    case commandStatus(status: HCIStatus, numHCICommandPackets: UInt8, opcode: HCIOpcode)
    case hardwareError(hardwareCode: UInt8)
    case numberOfCompletedPackets([HCICompletedPackets])
    /// Link_Type 0x00 synchronous, 0x01 ACL, 0x02 ISO.
    case dataBufferOverflow(linkType: UInt8)
    case encryptionKeyRefreshComplete(status: HCIStatus, handle: UInt16)
    case leMeta(HCILEMetaEvent)
    /// Vendor-specific event (0xFF) with its raw parameters.
    case vendor([UInt8])
    case unknown(code: HCIEventCode, parameters: [UInt8])

    public static let maximumParameterLength = 255

    /// For Command Complete and Command Status: the opcode answered and the command credits granted
    /// (Num_HCI_Command_Packets); nil for other events. The host's command pipe keys on this.
    public var commandResponse: (opcode: HCIOpcode, numHCICommandPackets: UInt8, status: HCIStatus?)? {
        switch self {
        case .commandComplete(let credits, let opcode, let returned): (opcode, credits, returned.status)
        case .commandStatus(let status, let credits, let opcode): (opcode, credits, status)
        default: nil
        }
    }

    public var code: HCIEventCode {
        switch self {
        case .disconnectionComplete: .disconnectionComplete
        case .encryptionChange: .encryptionChange
        case .encryptionChangeV2: .encryptionChangeV2
        case .readRemoteVersionInformationComplete: .readRemoteVersionInformationComplete
        case .commandComplete: .commandComplete
        case .commandStatus: .commandStatus
        case .hardwareError: .hardwareError
        case .numberOfCompletedPackets: .numberOfCompletedPackets
        case .dataBufferOverflow: .dataBufferOverflow
        case .encryptionKeyRefreshComplete: .encryptionKeyRefreshComplete
        case .leMeta: .leMeta
        case .vendor: .vendor
        case .unknown(let code, _): code
        }
    }

    /// Exact parameter lengths of the fixed-layout events.
    static let fixedLengths: [HCIEventCode: Int] = [
        .disconnectionComplete: 4, .encryptionChange: 4, .encryptionChangeV2: 5,
        .readRemoteVersionInformationComplete: 8, .commandStatus: 4, .hardwareError: 1, .dataBufferOverflow: 1,
        .encryptionKeyRefreshComplete: 3,
    ]

    // MARK: Decoding

    /// Decodes a whole event packet: code, parameter length (must match the bytes that follow) and parameters.
    public init(decoding bytes: [UInt8]) throws(DecodeError) {
        var reader = ByteReader(bytes)
        try self.init(from: &reader)
        try reader.expectEnd("HCI event packet")
    }

    /// Reads one event packet from `reader` (which may hold more after it).
    public init(from reader: inout ByteReader) throws(DecodeError) {
        let code = HCIEventCode(try reader.readUInt8("Event_Code"))
        let length = Int(try reader.readUInt8("Parameter_Total_Length"))
        guard reader.remaining >= length else {
            throw reader.error(.truncated, "Parameter_Total_Length says \(length) octets, \(reader.remaining) remain")
        }
        let start = reader.offset
        let parameters = try reader.readBytes(length, "parameters")
        try self.init(code: code, parameters: parameters, baseOffset: start)
    }

    /// Decodes the parameters of an event whose code is already known.
    public init(code: HCIEventCode, parameters: [UInt8], baseOffset: Int = 2) throws(DecodeError) {
        var r = ByteReader(parameters, baseOffset: baseOffset)
        if let length = Self.fixedLengths[code], parameters.count != length {
            throw r.error(.invalidLength, "\(code.name ?? "event") has \(length) parameter octets, not \(parameters.count)")
        }
        switch code {
        case .disconnectionComplete:
            let status = try r.hciReadStatus()
            self = .disconnectionComplete(status: status, handle: try r.hciReadHandle(validate: status == .success),
                                          reason: HCIStatus(try r.readUInt8("Reason")))
        case .encryptionChange:
            let status = try r.hciReadStatus()
            self = .encryptionChange(status: status, handle: try r.hciReadHandle(validate: status == .success),
                                     encryptionEnabled: try r.readUInt8("Encryption_Enabled"))
        case .encryptionChangeV2:
            let status = try r.hciReadStatus()
            self = .encryptionChangeV2(status: status, handle: try r.hciReadHandle(validate: status == .success),
                                       encryptionEnabled: try r.readUInt8("Encryption_Enabled"),
                                       encryptionKeySize: try r.readUInt8("Encryption_Key_Size"))
        case .readRemoteVersionInformationComplete:
            let status = try r.hciReadStatus()
            self = .readRemoteVersionInformationComplete(
                status: status, handle: try r.hciReadHandle(validate: status == .success),
                version: try r.readUInt8("Version"),
                companyIdentifier: CompanyIdentifier(try r.readUInt16("Company_Identifier")),
                subversion: try r.readUInt16("Subversion"))
        case .commandComplete:
            let credits = try r.readUInt8("Num_HCI_Command_Packets")
            let opcode = HCIOpcode(try r.readUInt16("Command_Opcode"))
            let offset = r.offset
            let returned = r.readRemaining()
            self = .commandComplete(numHCICommandPackets: credits, opcode: opcode,
                                    returnParameters: try HCIReturnParameters(opcode: opcode, bytes: returned, baseOffset: offset))
        case .commandStatus:
            self = .commandStatus(status: try r.hciReadStatus(), numHCICommandPackets: try r.readUInt8("Num_HCI_Command_Packets"),
                                  opcode: HCIOpcode(try r.readUInt16("Command_Opcode")))
        case .hardwareError:
            self = .hardwareError(hardwareCode: try r.readUInt8("Hardware_Code"))
        case .numberOfCompletedPackets:
            let start = r.offset
            let count = Int(try r.readUInt8("Num_Handles"))
            guard r.remaining == count * 4 else {
                throw DecodeError(.invalidLength, at: start,
                                  "Num_Handles \(count) needs \(count * 4) octets of entries, \(r.remaining) follow")
            }
            var entries: [HCICompletedPackets] = []
            entries.reserveCapacity(count)
            for _ in 0..<count {
                entries.append(HCICompletedPackets(handle: try r.hciReadHandle(),
                                                   count: try r.readUInt16("Num_Completed_Packets")))
            }
            self = .numberOfCompletedPackets(entries)
        case .dataBufferOverflow:
            self = .dataBufferOverflow(linkType: try r.readUInt8("Link_Type"))
        case .encryptionKeyRefreshComplete:
            let status = try r.hciReadStatus()
            self = .encryptionKeyRefreshComplete(status: status, handle: try r.hciReadHandle(validate: status == .success))
        case .leMeta:
            self = .leMeta(try HCILEMetaEvent(parameters: parameters, baseOffset: baseOffset))
            return
        case .vendor:
            self = .vendor(r.readRemaining())
        default:
            self = .unknown(code: code, parameters: r.readRemaining())
        }
        try r.expectEnd(code.name ?? "HCI event")
    }

    // MARK: Encoding

    /// The parameter block (without code and length), truncated to 255 octets.
    public var parameters: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .disconnectionComplete(let status, let handle, let reason):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
            w.write(reason.rawValue)
        case .encryptionChange(let status, let handle, let enabled):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
            w.write(enabled)
        case .encryptionChangeV2(let status, let handle, let enabled, let keySize):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
            w.write(enabled)
            w.write(keySize)
        case .readRemoteVersionInformationComplete(let status, let handle, let version, let company, let subversion):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
            w.write(version)
            w.write(company.rawValue)
            w.write(subversion)
        case .commandComplete(let credits, let opcode, let returned):
            w.write(credits)
            w.write(opcode.rawValue)
            w.write(returned.encode())
        case .commandStatus(let status, let credits, let opcode):
            w.write(status.rawValue)
            w.write(credits)
            w.write(opcode.rawValue)
        case .hardwareError(let code):
            w.write(code)
        case .numberOfCompletedPackets(let entries):
            let kept = entries.prefix(63)  // 1 + 63 * 4 = 253 octets
            w.write(UInt8(kept.count))
            for entry in kept {
                w.hciWriteHandle(entry.handle)
                w.write(entry.count)
            }
        case .dataBufferOverflow(let linkType):
            w.write(linkType)
        case .encryptionKeyRefreshComplete(let status, let handle):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
        case .leMeta(let meta):
            w.write(meta.encode())
        case .vendor(let parameters), .unknown(_, let parameters):
            w.write(parameters)
        }
        return Array(w.bytes.prefix(Self.maximumParameterLength))
    }

    /// The whole event packet: code, parameter length, parameters (no H4 indicator).
    public func encode() -> [UInt8] {
        let parameters = self.parameters
        return [code.rawValue, UInt8(truncatingIfNeeded: parameters.count)] + parameters
    }
}

extension HCIEvent: Dissectable {
    private typealias F = HCIFieldText

    /// The event's spec name ("Command Complete", or the LE subevent's name for LE Meta) with every field.
    public var dissection: Dissection {
        let header = [F.code("Event_Code", code), F.decimal("Parameter_Total_Length", parameters.count)]
        switch self {
        case .leMeta(let meta):
            let sub = meta.dissection
            return Dissection(sub.label, nil, header + sub.children)
        default:
            return Dissection(code.name ?? code.description, nil, header + fields)
        }
    }

    private static let encryptionNames: [UInt8: String] = [0x00: "Off", 0x01: "On (AES-CCM for LE)", 0x02: "On (AES-CCM for BR/EDR)"]

    private var fields: [Dissection] {
        switch self {
        case .disconnectionComplete(let status, let handle, let reason):
            return [F.status(status), F.handle(handle), F.status(reason, "Reason")]
        case .encryptionChange(let status, let handle, let enabled):
            return [F.status(status), F.handle(handle), F.named("Encryption_Enabled", enabled, Self.encryptionNames)]
        case .encryptionChangeV2(let status, let handle, let enabled, let keySize):
            return [F.status(status), F.handle(handle), F.named("Encryption_Enabled", enabled, Self.encryptionNames),
                    F.decimal("Encryption_Key_Size", keySize)]
        case .readRemoteVersionInformationComplete(let status, let handle, let version, let company, let subversion):
            return [F.status(status), F.handle(handle),
                    F.named("Version", version, HCILocalVersionInformation.versionNames),
                    F.code("Company_Identifier", company), F.hex16("Subversion", subversion)]
        case .commandComplete(let credits, let opcode, let returned):
            return [F.decimal("Num_HCI_Command_Packets", credits), F.code("Command_Opcode", opcode)] + returned.fields
        case .commandStatus(let status, let credits, let opcode):
            return [F.status(status), F.decimal("Num_HCI_Command_Packets", credits), F.code("Command_Opcode", opcode)]
        case .hardwareError(let code):
            return [F.hex8("Hardware_Code", code)]
        case .numberOfCompletedPackets(let entries):
            return [F.decimal("Num_Handles", entries.count)] + entries.map {
                Dissection("Handle", nil, [F.handle($0.handle), F.decimal("Num_Completed_Packets", $0.count)])
            }
        case .dataBufferOverflow(let linkType):
            return [F.named("Link_Type", linkType, [0x00: "Synchronous", 0x01: "ACL", 0x02: "ISO"])]
        case .encryptionKeyRefreshComplete(let status, let handle):
            return [F.status(status), F.handle(handle)]
        case .leMeta(let meta):
            return meta.dissection.children
        case .vendor(let parameters), .unknown(_, let parameters):
            return [F.bytes("Parameters", parameters)]
        }
    }
}
