public import BluetoothCore

/// One report of an LE Advertising Report event (Core 5.4 Vol 4 Part E §7.7.65.2). `data` is the raw
/// advertising or scan response data (≤ 31 octets; longer data is truncated when encoding); the dissector decodes
/// the AD structures. RSSI 127 means "not available".
public struct LEAdvertisingReport: Hashable, Sendable {
    public var eventType: LEAdvertisingReportType
    public var addressType: LEAddressType
    public var address: BluetoothAddress
    public var data: [UInt8]
    public var rssi: Int8

    public init(eventType: LEAdvertisingReportType, addressType: LEAddressType, address: BluetoothAddress,
                data: [UInt8], rssi: Int8) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.data = data
        self.rssi = rssi
    }

    /// A report whose address type is taken from the address.
    public init(eventType: LEAdvertisingReportType, address: BluetoothAddress, data: [UInt8], rssi: Int8) {
        self.init(eventType: eventType, addressType: LEAddressType(address.type), address: address, data: data, rssi: rssi)
    }

    static func read(_ r: inout ByteReader) throws(DecodeError) -> LEAdvertisingReport {
        let eventType = LEAdvertisingReportType(try r.readUInt8("Event_Type"))
        let type = try r.hciReadAddressType("Address_Type")
        let address = try r.hciReadAddress("Address", type: type)
        let start = r.offset
        let length = Int(try r.readUInt8("Data_Length"))
        guard length <= HCICommand.maximumAdvertisingDataLength else {
            throw DecodeError(.invalidLength, at: start, "Data_Length \(length) exceeds 31")
        }
        let data = try r.readBytes(length, "Data")
        return LEAdvertisingReport(eventType: eventType, addressType: type, address: address, data: data,
                                   rssi: try r.readInt8("RSSI"))
    }

    func write(_ w: inout ByteWriter) {
        w.write(eventType.rawValue)
        w.write(addressType.rawValue)
        w.hciWrite(address)
        let significant = data.prefix(HCICommand.maximumAdvertisingDataLength)
        w.write(UInt8(significant.count))
        w.write(significant)
        w.write(rssi)
    }

    var dissection: Dissection {
        typealias F = HCIFieldText
        return Dissection("Report", nil, [
            F.code("Event_Type", eventType), F.code("Address_Type", addressType),
            Dissection("Address", address.string), F.decimal("Data_Length", data.count), F.bytes("Data", data),
            F.rssi("RSSI", rssi),
        ])
    }
}

/// One report of an LE Directed Advertising Report event (Core 5.4 Vol 4 Part E §7.7.65.11).
public struct LEDirectedAdvertisingReport: Hashable, Sendable {
    /// Always ADV_DIRECT_IND (0x01) per the spec; other values are kept.
    public var eventType: LEAdvertisingReportType
    public var addressType: LEAddressType
    public var address: BluetoothAddress
    public var directAddressType: LEAddressType
    public var directAddress: BluetoothAddress
    public var rssi: Int8

    public init(eventType: LEAdvertisingReportType = .advDirectInd, addressType: LEAddressType, address: BluetoothAddress,
                directAddressType: LEAddressType, directAddress: BluetoothAddress, rssi: Int8) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.directAddressType = directAddressType
        self.directAddress = directAddress
        self.rssi = rssi
    }

    static let encodedLength = 16

    static func read(_ r: inout ByteReader) throws(DecodeError) -> LEDirectedAdvertisingReport {
        let eventType = LEAdvertisingReportType(try r.readUInt8("Event_Type"))
        let type = try r.hciReadAddressType("Address_Type")
        let address = try r.hciReadAddress("Address", type: type)
        let directType = try r.hciReadAddressType("Direct_Address_Type")
        let direct = try r.hciReadAddress("Direct_Address", type: directType)
        return LEDirectedAdvertisingReport(eventType: eventType, addressType: type, address: address,
                                           directAddressType: directType, directAddress: direct, rssi: try r.readInt8("RSSI"))
    }

    func write(_ w: inout ByteWriter) {
        w.write(eventType.rawValue)
        w.write(addressType.rawValue)
        w.hciWrite(address)
        w.write(directAddressType.rawValue)
        w.hciWrite(directAddress)
        w.write(rssi)
    }

    var dissection: Dissection {
        typealias F = HCIFieldText
        return Dissection("Report", nil, [
            F.code("Event_Type", eventType), F.code("Address_Type", addressType), Dissection("Address", address.string),
            F.code("Direct_Address_Type", directAddressType), Dissection("Direct_Address", directAddress.string),
            F.rssi("RSSI", rssi),
        ])
    }
}

/// One report of an LE Extended Advertising Report event (Core 5.4 Vol 4 Part E §7.7.65.13). `data` is a
/// fragment of the advertising data (≤ 229 octets; `eventType` bits 5-6 say whether more follows).
public struct LEExtendedAdvertisingReport: Hashable, Sendable {
    /// Bit 0 connectable, 1 scannable, 2 directed, 3 scan response, 4 legacy, bits 5-6 data status.
    public var eventType: UInt16
    public var addressType: LEAddressType
    public var address: BluetoothAddress
    public var primaryPHY: LEPhy
    public var secondaryPHY: LEPhy
    public var advertisingSID: UInt8
    /// 127: not available.
    public var txPower: Int8
    public var rssi: Int8
    /// 1.25 ms units; 0 when there is no periodic advertising.
    public var periodicAdvertisingInterval: UInt16
    public var directAddressType: LEAddressType
    public var directAddress: BluetoothAddress
    public var data: [UInt8]

    public static let maximumDataLength = 229

    /// Event_Type bits 5-6: 0b00 complete, 0b01 incomplete with more data to come, 0b10 incomplete and truncated.
    public var dataStatus: UInt16 { (eventType >> 5) & 0b11 }

    public init(eventType: UInt16, addressType: LEAddressType, address: BluetoothAddress, primaryPHY: LEPhy = .le1M,
                secondaryPHY: LEPhy = LEPhy(0), advertisingSID: UInt8 = 0xFF, txPower: Int8 = 127, rssi: Int8,
                periodicAdvertisingInterval: UInt16 = 0, directAddressType: LEAddressType = .public,
                directAddress: BluetoothAddress = .zero, data: [UInt8]) {
        self.eventType = eventType
        self.addressType = addressType
        self.address = address
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.advertisingSID = advertisingSID
        self.txPower = txPower
        self.rssi = rssi
        self.periodicAdvertisingInterval = periodicAdvertisingInterval
        self.directAddressType = directAddressType
        self.directAddress = directAddress
        self.data = data
    }

    static func read(_ r: inout ByteReader) throws(DecodeError) -> LEExtendedAdvertisingReport {
        let eventType = try r.readUInt16("Event_Type")
        let type = try r.hciReadAddressType("Address_Type")
        let address = try r.hciReadAddress("Address", type: type)
        let primary = LEPhy(try r.readUInt8("Primary_PHY"))
        let secondary = LEPhy(try r.readUInt8("Secondary_PHY"))
        let sid = try r.readUInt8("Advertising_SID")
        let txPower = try r.readInt8("TX_Power")
        let rssi = try r.readInt8("RSSI")
        let interval = try r.readUInt16("Periodic_Advertising_Interval")
        let directType = try r.hciReadAddressType("Direct_Address_Type")
        let direct = try r.hciReadAddress("Direct_Address", type: directType)
        let start = r.offset
        let length = Int(try r.readUInt8("Data_Length"))
        guard length <= maximumDataLength else {
            throw DecodeError(.invalidLength, at: start, "Data_Length \(length) exceeds 229")
        }
        return LEExtendedAdvertisingReport(
            eventType: eventType, addressType: type, address: address, primaryPHY: primary, secondaryPHY: secondary,
            advertisingSID: sid, txPower: txPower, rssi: rssi, periodicAdvertisingInterval: interval,
            directAddressType: directType, directAddress: direct, data: try r.readBytes(length, "Data"))
    }

    func write(_ w: inout ByteWriter) {
        w.write(eventType)
        w.write(addressType.rawValue)
        w.hciWrite(address)
        w.write(primaryPHY.rawValue)
        w.write(secondaryPHY.rawValue)
        w.write(advertisingSID)
        w.write(txPower)
        w.write(rssi)
        w.write(periodicAdvertisingInterval)
        w.write(directAddressType.rawValue)
        w.hciWrite(directAddress)
        let significant = data.prefix(Self.maximumDataLength)
        w.write(UInt8(significant.count))
        w.write(significant)
    }

    var eventTypeText: String {
        let bits = [(0x01, "connectable"), (0x02, "scannable"), (0x04, "directed"), (0x08, "scan response"), (0x10, "legacy")]
        var parts = bits.filter { eventType & UInt16($0.0) != 0 }.map(\.1)
        switch (eventType >> 5) & 0x03 {
        case 0: parts.append("complete")
        case 1: parts.append("incomplete, more data to come")
        case 2: parts.append("incomplete, truncated")
        default: parts.append("reserved data status")
        }
        return "\(Dissection.hex16(eventType)) (\(parts.joined(separator: ", ")))"
    }

    var dissection: Dissection {
        typealias F = HCIFieldText
        return Dissection("Report", nil, [
            Dissection("Event_Type", eventTypeText), F.code("Address_Type", addressType),
            Dissection("Address", address.string), F.code("Primary_PHY", primaryPHY), F.code("Secondary_PHY", secondaryPHY),
            F.hex8("Advertising_SID", advertisingSID),
            Dissection("TX_Power", txPower == 127 ? "127 (not available)" : "\(txPower) dBm"), F.rssi("RSSI", rssi),
            periodicAdvertisingInterval == 0
                ? Dissection("Periodic_Advertising_Interval", "0x0000 (no periodic advertising)")
                : F.connectionInterval("Periodic_Advertising_Interval", periodicAdvertisingInterval),
            F.code("Direct_Address_Type", directAddressType), Dissection("Direct_Address", directAddress.string),
            F.decimal("Data_Length", data.count), F.bytes("Data", data),
        ])
    }
}
