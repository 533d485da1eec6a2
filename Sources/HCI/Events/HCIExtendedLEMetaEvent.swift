public import BluetoothCore

/// The parameters of the LE Advertising Set Terminated event (Core 5.4 Vol 4 Part E §7.7.65.18).
public struct LEAdvertisingSetTerminated: Hashable, Sendable {
    /// Success when a connection was created; otherwise why advertising stopped (e.g. 0x3C advertising timeout).
    public var status: HCIStatus
    public var advertisingHandle: UInt8
    /// The connection created, valid only when ``status`` is success.
    public var connectionHandle: UInt16
    public var numCompletedExtendedAdvertisingEvents: UInt8

    public init(status: HCIStatus, advertisingHandle: UInt8, connectionHandle: UInt16,
                numCompletedExtendedAdvertisingEvents: UInt8) {
        self.status = status
        self.advertisingHandle = advertisingHandle
        self.connectionHandle = connectionHandle
        self.numCompletedExtendedAdvertisingEvents = numCompletedExtendedAdvertisingEvents
    }
}

/// The parameters of the LE Scan Request Received event (Core 5.4 Vol 4 Part E §7.7.65.19).
public struct LEScanRequestReceived: Hashable, Sendable {
    public var advertisingHandle: UInt8
    public var scannerAddressType: LEAddressType
    public var scannerAddress: BluetoothAddress

    public init(advertisingHandle: UInt8, scannerAddressType: LEAddressType, scannerAddress: BluetoothAddress) {
        self.advertisingHandle = advertisingHandle
        self.scannerAddressType = scannerAddressType
        self.scannerAddress = scannerAddress
    }
}

/// The LE Meta subevents of extended scanning and advertising (Core 5.4 Vol 4 Part E §7.7.65.17–§7.7.65.19),
/// typed.
///
/// ``HCILEMetaEvent`` decodes them into ``HCILEMetaEvent/extended(_:)``.
public enum HCIExtendedLEMetaEvent: Hashable, Sendable {
    /// §7.7.65.17: the Duration of LE Set Extended Scan Enable elapsed.
    case scanTimeout
    /// §7.7.65.18.
    case advertisingSetTerminated(LEAdvertisingSetTerminated)
    /// §7.7.65.19.
    case scanRequestReceived(LEScanRequestReceived)

    public var subevent: LESubeventCode {
        switch self {
        case .scanTimeout: .scanTimeout
        case .advertisingSetTerminated: .advertisingSetTerminated
        case .scanRequestReceived: .scanRequestReceived
        }
    }

    /// Decodes the subevent's parameters (after the subevent code); they must be exactly its parameters.
    public init(subevent: LESubeventCode, parameters: [UInt8]) throws(DecodeError) {
        var r = ByteReader(parameters, baseOffset: 3)
        if let length = HCILEMetaEvent.fixedLengths[subevent], r.remaining != length {
            throw r.error(.invalidLength, "\(subevent.name ?? "subevent") has \(length) parameter octets, not \(r.remaining)")
        }
        try self.init(subevent: subevent, reading: &r)
        try r.expectEnd(subevent.name ?? "LE Meta event")
    }

    init(subevent: LESubeventCode, reading r: inout ByteReader) throws(DecodeError) {
        switch subevent {
        case .scanTimeout:
            self = .scanTimeout
        case .advertisingSetTerminated:
            let status = try r.hciReadStatus()
            self = .advertisingSetTerminated(LEAdvertisingSetTerminated(
                status: status, advertisingHandle: try r.readUInt8("Advertising_Handle"),
                connectionHandle: try r.hciReadHandle(validate: status == .success),
                numCompletedExtendedAdvertisingEvents: try r.readUInt8("Num_Completed_Extended_Advertising_Events")))
        case .scanRequestReceived:
            let handle = try r.readUInt8("Advertising_Handle")
            let type = try r.hciReadAddressType("Scanner_Address_Type")
            self = .scanRequestReceived(LEScanRequestReceived(
                advertisingHandle: handle, scannerAddressType: type,
                scannerAddress: try r.hciReadAddress("Scanner_Address", type: type)))
        default:
            throw r.error(.unknownType, "\(subevent) is not an extended scanning or advertising subevent")
        }
    }

    /// The subevent's parameters (without the subevent code).
    public var parameters: [UInt8] {
        var w = ByteWriter()
        switch self {
        case .scanTimeout:
            break
        case .advertisingSetTerminated(let e):
            w.write(e.status.rawValue)
            w.write(e.advertisingHandle)
            w.hciWriteHandle(e.connectionHandle)
            w.write(e.numCompletedExtendedAdvertisingEvents)
        case .scanRequestReceived(let e):
            w.write(e.advertisingHandle)
            w.write(e.scannerAddressType.rawValue)
            w.hciWrite(e.scannerAddress)
        }
        return w.bytes
    }

    private typealias F = HCIFieldText

    var fields: [Dissection] {
        switch self {
        case .scanTimeout:
            return []
        case .advertisingSetTerminated(let e):
            return [F.status(e.status), F.hex8("Advertising_Handle", e.advertisingHandle), F.handle(e.connectionHandle),
                    F.decimal("Num_Completed_Extended_Advertising_Events", e.numCompletedExtendedAdvertisingEvents)]
        case .scanRequestReceived(let e):
            return [F.hex8("Advertising_Handle", e.advertisingHandle), F.code("Scanner_Address_Type", e.scannerAddressType),
                    Dissection("Scanner_Address", e.scannerAddress.string)]
        }
    }
}

extension HCIExtendedLEMetaEvent: Dissectable {
    /// The subevent's dissection, as ``HCILEMetaEvent/dissection`` shows it.
    public var dissection: Dissection { HCILEMetaEvent.extended(self).dissection }
}

extension HCILEMetaEvent {
    /// The extended scanning or advertising subevent this is, if it is one.
    public var extendedEvent: HCIExtendedLEMetaEvent? {
        guard case .extended(let event) = self else { return nil }
        return event
    }
}
