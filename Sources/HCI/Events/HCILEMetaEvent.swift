public import BluetoothCore

/// The LE Meta event's subevents (Core 5.4 Vol 4 Part E §7.7.65): the first parameter octet is the subevent code.
/// Fixed-layout subevents must have exactly their spec length; report subevents are count-checked. LE Scan Timeout,
/// LE Advertising Set Terminated and LE Scan Request Received are ``extended(_:)``.
public enum HCILEMetaEvent: Hashable, Sendable {
    case connectionComplete(LEConnectionComplete)
    /// 1...25 reports.
    case advertisingReport([LEAdvertisingReport])
    case connectionUpdateComplete(status: HCIStatus, handle: UInt16, connectionInterval: UInt16,
                                  peripheralLatency: UInt16, supervisionTimeout: UInt16)
    case readRemoteFeaturesComplete(status: HCIStatus, handle: UInt16, features: UInt64)
    case longTermKeyRequest(handle: UInt16, randomNumber: UInt64, encryptedDiversifier: UInt16)
    case remoteConnectionParameterRequest(handle: UInt16, intervalMin: UInt16, intervalMax: UInt16,
                                          maxLatency: UInt16, timeout: UInt16)
    case dataLengthChange(handle: UInt16, maxTxOctets: UInt16, maxTxTime: UInt16, maxRxOctets: UInt16, maxRxTime: UInt16)
    /// Coordinates of 32 octets each, least significant octet first.
    case readLocalP256PublicKeyComplete(status: HCIStatus, x: [UInt8], y: [UInt8])
    /// The 32-octet DHKey, least significant octet first.
    case generateDHKeyComplete(status: HCIStatus, dhKey: [UInt8])
    case enhancedConnectionComplete(LEEnhancedConnectionComplete)
    case enhancedConnectionCompleteV2(LEEnhancedConnectionComplete, advertisingHandle: UInt8, syncHandle: UInt16)
    /// 1...25 reports.
    case directedAdvertisingReport([LEDirectedAdvertisingReport])
    case phyUpdateComplete(status: HCIStatus, handle: UInt16, txPHY: LEPhy, rxPHY: LEPhy)
    /// 1...10 reports.
    case extendedAdvertisingReport([LEExtendedAdvertisingReport])
    /// LE Scan Timeout, LE Advertising Set Terminated, LE Scan Request Received (§7.7.65.17–§7.7.65.19).
    case extended(HCIExtendedLEMetaEvent)
    case unknown(subevent: LESubeventCode, parameters: [UInt8])

    public var subevent: LESubeventCode {
        switch self {
        case .connectionComplete: .connectionComplete
        case .advertisingReport: .advertisingReport
        case .connectionUpdateComplete: .connectionUpdateComplete
        case .readRemoteFeaturesComplete: .readRemoteFeaturesComplete
        case .longTermKeyRequest: .longTermKeyRequest
        case .remoteConnectionParameterRequest: .remoteConnectionParameterRequest
        case .dataLengthChange: .dataLengthChange
        case .readLocalP256PublicKeyComplete: .readLocalP256PublicKeyComplete
        case .generateDHKeyComplete: .generateDHKeyComplete
        case .enhancedConnectionComplete: .enhancedConnectionComplete
        case .enhancedConnectionCompleteV2: .enhancedConnectionCompleteV2
        case .directedAdvertisingReport: .directedAdvertisingReport
        case .phyUpdateComplete: .phyUpdateComplete
        case .extendedAdvertisingReport: .extendedAdvertisingReport
        case .extended(let event): event.subevent
        case .unknown(let code, _): code
        }
    }

    /// Exact parameter lengths (after the subevent code) of the fixed-layout subevents.
    static let fixedLengths: [LESubeventCode: Int] = [
        .connectionComplete: 18, .connectionUpdateComplete: 9, .readRemoteFeaturesComplete: 11,
        .longTermKeyRequest: 12, .remoteConnectionParameterRequest: 10, .dataLengthChange: 10,
        .readLocalP256PublicKeyComplete: 65, .generateDHKeyComplete: 33, .enhancedConnectionComplete: 30,
        .enhancedConnectionCompleteV2: 33, .phyUpdateComplete: 5,
        .scanTimeout: 0, .advertisingSetTerminated: 5, .scanRequestReceived: 8,
    ]

    /// Decodes the LE Meta event parameters (subevent code first).
    public init(parameters: [UInt8], baseOffset: Int = 2) throws(DecodeError) {
        var r = ByteReader(parameters, baseOffset: baseOffset)
        let code = LESubeventCode(try r.readUInt8("Subevent_Code"))
        if let length = Self.fixedLengths[code], r.remaining != length {
            throw r.error(.invalidLength, "\(code.name ?? "subevent") has \(length) parameter octets, not \(r.remaining)")
        }
        switch code {
        case .connectionComplete:
            self = .connectionComplete(try LEConnectionComplete.read(&r))
        case .advertisingReport:
            self = .advertisingReport(try Self.readReports(&r, max: 25) { (r: inout ByteReader) throws(DecodeError) in
                try LEAdvertisingReport.read(&r)
            })
        case .connectionUpdateComplete:
            let status = try r.hciReadStatus()
            self = .connectionUpdateComplete(
                status: status, handle: try r.hciReadHandle(validate: status == .success),
                connectionInterval: try r.readUInt16("Connection_Interval"),
                peripheralLatency: try r.readUInt16("Peripheral_Latency"),
                supervisionTimeout: try r.readUInt16("Supervision_Timeout"))
        case .readRemoteFeaturesComplete:
            let status = try r.hciReadStatus()
            self = .readRemoteFeaturesComplete(status: status, handle: try r.hciReadHandle(validate: status == .success),
                                               features: try r.readUInt64("LE_Features"))
        case .longTermKeyRequest:
            self = .longTermKeyRequest(handle: try r.hciReadHandle(), randomNumber: try r.readUInt64("Random_Number"),
                                       encryptedDiversifier: try r.readUInt16("Encrypted_Diversifier"))
        case .remoteConnectionParameterRequest:
            self = .remoteConnectionParameterRequest(
                handle: try r.hciReadHandle(), intervalMin: try r.readUInt16("Interval_Min"),
                intervalMax: try r.readUInt16("Interval_Max"), maxLatency: try r.readUInt16("Max_Latency"),
                timeout: try r.readUInt16("Timeout"))
        case .dataLengthChange:
            self = .dataLengthChange(
                handle: try r.hciReadHandle(), maxTxOctets: try r.readUInt16("Max_TX_Octets"),
                maxTxTime: try r.readUInt16("Max_TX_Time"), maxRxOctets: try r.readUInt16("Max_RX_Octets"),
                maxRxTime: try r.readUInt16("Max_RX_Time"))
        case .readLocalP256PublicKeyComplete:
            self = .readLocalP256PublicKeyComplete(status: try r.hciReadStatus(), x: try r.readBytes(32, "Key_X_Coordinate"),
                                                   y: try r.readBytes(32, "Key_Y_Coordinate"))
        case .generateDHKeyComplete:
            self = .generateDHKeyComplete(status: try r.hciReadStatus(), dhKey: try r.readBytes(32, "DH_Key"))
        case .enhancedConnectionComplete, .enhancedConnectionCompleteV2:
            var local = BluetoothAddress(0, type: .random)
            var peer = BluetoothAddress(0, type: .random)
            let connection = try LEConnectionComplete.read(&r) { (r: inout ByteReader) throws(DecodeError) in
                local = try r.hciReadAddress("Local_Resolvable_Private_Address", type: .random)
                peer = try r.hciReadAddress("Peer_Resolvable_Private_Address", type: .random)
            }
            let enhanced = LEEnhancedConnectionComplete(connection: connection, localResolvablePrivateAddress: local,
                                                        peerResolvablePrivateAddress: peer)
            if code == .enhancedConnectionComplete {
                self = .enhancedConnectionComplete(enhanced)
            } else {
                self = .enhancedConnectionCompleteV2(enhanced, advertisingHandle: try r.readUInt8("Advertising_Handle"),
                                                     syncHandle: try r.readUInt16("Sync_Handle"))
            }
        case .directedAdvertisingReport:
            self = .directedAdvertisingReport(try Self.readReports(&r, max: 25) { (r: inout ByteReader) throws(DecodeError) in
                try LEDirectedAdvertisingReport.read(&r)
            })
        case .phyUpdateComplete:
            let status = try r.hciReadStatus()
            self = .phyUpdateComplete(status: status, handle: try r.hciReadHandle(validate: status == .success),
                                      txPHY: LEPhy(try r.readUInt8("TX_PHY")), rxPHY: LEPhy(try r.readUInt8("RX_PHY")))
        case .extendedAdvertisingReport:
            self = .extendedAdvertisingReport(try Self.readReports(&r, max: 10) { (r: inout ByteReader) throws(DecodeError) in
                try LEExtendedAdvertisingReport.read(&r)
            })
        case .scanTimeout, .advertisingSetTerminated, .scanRequestReceived:
            self = .extended(try HCIExtendedLEMetaEvent(subevent: code, reading: &r))
        default:
            self = .unknown(subevent: code, parameters: r.readRemaining())
        }
        try r.expectEnd(code.name ?? "LE Meta event")
    }

    private static func readReports<Report>(
        _ r: inout ByteReader, max: Int, _ read: (inout ByteReader) throws(DecodeError) -> Report
    ) throws(DecodeError) -> [Report] {
        let start = r.offset
        let count = Int(try r.readUInt8("Num_Reports"))
        guard count >= 1, count <= max else {
            throw DecodeError(.invalidValue, at: start, "Num_Reports \(count) is outside 1...\(max)")
        }
        var reports: [Report] = []
        reports.reserveCapacity(count)
        for _ in 0..<count { reports.append(try read(&r)) }
        return reports
    }

    /// The LE Meta event parameters: subevent code, then the subevent's parameters.
    public func encode() -> [UInt8] {
        var w = ByteWriter()
        w.write(subevent.rawValue)
        switch self {
        case .connectionComplete(let c):
            c.write(&w)
        case .advertisingReport(let reports):
            w.write(UInt8(truncatingIfNeeded: reports.count))
            for report in reports { report.write(&w) }
        case .connectionUpdateComplete(let status, let handle, let interval, let latency, let timeout):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
            for value in [interval, latency, timeout] { w.write(value) }
        case .readRemoteFeaturesComplete(let status, let handle, let features):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
            w.write(features)
        case .longTermKeyRequest(let handle, let random, let ediv):
            w.hciWriteHandle(handle)
            w.write(random)
            w.write(ediv)
        case .remoteConnectionParameterRequest(let handle, let intervalMin, let intervalMax, let latency, let timeout):
            w.hciWriteHandle(handle)
            for value in [intervalMin, intervalMax, latency, timeout] { w.write(value) }
        case .dataLengthChange(let handle, let txOctets, let txTime, let rxOctets, let rxTime):
            w.hciWriteHandle(handle)
            for value in [txOctets, txTime, rxOctets, rxTime] { w.write(value) }
        case .readLocalP256PublicKeyComplete(let status, let x, let y):
            w.write(status.rawValue)
            w.hciWriteFixed(x, count: 32)
            w.hciWriteFixed(y, count: 32)
        case .generateDHKeyComplete(let status, let key):
            w.write(status.rawValue)
            w.hciWriteFixed(key, count: 32)
        case .enhancedConnectionComplete(let e):
            Self.writeEnhanced(e, &w)
        case .enhancedConnectionCompleteV2(let e, let advertisingHandle, let syncHandle):
            Self.writeEnhanced(e, &w)
            w.write(advertisingHandle)
            w.write(syncHandle)
        case .directedAdvertisingReport(let reports):
            w.write(UInt8(truncatingIfNeeded: reports.count))
            for report in reports { report.write(&w) }
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            w.write(status.rawValue)
            w.hciWriteHandle(handle)
            w.write(tx.rawValue)
            w.write(rx.rawValue)
        case .extendedAdvertisingReport(let reports):
            w.write(UInt8(truncatingIfNeeded: reports.count))
            for report in reports { report.write(&w) }
        case .extended(let event):
            w.write(event.parameters)
        case .unknown(_, let parameters):
            w.write(parameters)
        }
        return w.bytes
    }

    private static func writeEnhanced(_ e: LEEnhancedConnectionComplete, _ w: inout ByteWriter) {
        e.connection.write(&w) { w in
            w.hciWrite(e.localResolvablePrivateAddress)
            w.hciWrite(e.peerResolvablePrivateAddress)
        }
    }
}

extension HCILEMetaEvent: Dissectable {
    private typealias F = HCIFieldText

    /// The subevent's spec name ("LE Connection Complete") with Subevent_Code and its fields.
    public var dissection: Dissection {
        Dissection(subevent.name ?? subevent.description, nil, [F.code("Subevent_Code", subevent)] + fields)
    }

    private static func enhancedFields(_ e: LEEnhancedConnectionComplete) -> [Dissection] {
        e.connection.fields(between: [
            Dissection("Local_Resolvable_Private_Address", e.localResolvablePrivateAddress.string),
            Dissection("Peer_Resolvable_Private_Address", e.peerResolvablePrivateAddress.string),
        ])
    }

    private var fields: [Dissection] {
        switch self {
        case .connectionComplete(let c): return c.fields()
        case .advertisingReport(let reports):
            return [F.decimal("Num_Reports", reports.count)] + reports.map(\.dissection)
        case .connectionUpdateComplete(let status, let handle, let interval, let latency, let timeout):
            return [F.status(status), F.handle(handle), F.connectionInterval("Connection_Interval", interval),
                    F.latency("Peripheral_Latency", latency), F.supervisionTimeout("Supervision_Timeout", timeout)]
        case .readRemoteFeaturesComplete(let status, let handle, let features):
            return [F.status(status), F.handle(handle), F.hex64("LE_Features", features)]
        case .longTermKeyRequest(let handle, let random, let ediv):
            return [F.handle(handle), F.hex64("Random_Number", random), F.hex16("Encrypted_Diversifier", ediv)]
        case .remoteConnectionParameterRequest(let handle, let intervalMin, let intervalMax, let latency, let timeout):
            return [F.handle(handle), F.connectionInterval("Interval_Min", intervalMin),
                    F.connectionInterval("Interval_Max", intervalMax), F.latency("Max_Latency", latency),
                    F.supervisionTimeout("Timeout", timeout)]
        case .dataLengthChange(let handle, let txOctets, let txTime, let rxOctets, let rxTime):
            return [F.handle(handle), F.octets("Max_TX_Octets", txOctets), F.txTime("Max_TX_Time", txTime),
                    F.octets("Max_RX_Octets", rxOctets), F.txTime("Max_RX_Time", rxTime)]
        case .readLocalP256PublicKeyComplete(let status, let x, let y):
            return [F.status(status), F.bytes("Key_X_Coordinate", x), F.bytes("Key_Y_Coordinate", y)]
        case .generateDHKeyComplete(let status, let key):
            return [F.status(status), F.bytes("DH_Key", key)]
        case .enhancedConnectionComplete(let e):
            return Self.enhancedFields(e)
        case .enhancedConnectionCompleteV2(let e, let advertisingHandle, let syncHandle):
            return Self.enhancedFields(e) + [F.hex8("Advertising_Handle", advertisingHandle), F.hex16("Sync_Handle", syncHandle)]
        case .directedAdvertisingReport(let reports):
            return [F.decimal("Num_Reports", reports.count)] + reports.map(\.dissection)
        case .phyUpdateComplete(let status, let handle, let tx, let rx):
            return [F.status(status), F.handle(handle), F.code("TX_PHY", tx), F.code("RX_PHY", rx)]
        case .extendedAdvertisingReport(let reports):
            return [F.decimal("Num_Reports", reports.count)] + reports.map(\.dissection)
        case .extended(let event):
            return event.fields
        case .unknown(_, let parameters):
            return [F.bytes("Parameters", parameters)]
        }
    }
}
