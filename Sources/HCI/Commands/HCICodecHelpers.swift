import BluetoothCore

/// The largest valid connection handle (Core 5.4 Vol 4 Part E §5.4.2: 0x0000...0x0EFF).
let hciMaximumConnectionHandle: UInt16 = 0x0EFF

extension ByteReader {
    /// Reads a connection handle, masks it to its 12 bits and, when `validate`, rejects values above 0x0EFF.
    mutating func hciReadHandle(_ field: String = "Connection_Handle", validate: Bool = true) throws(DecodeError) -> UInt16 {
        let start = offset
        let handle = try readUInt16(field) & 0x0FFF
        if validate, handle > hciMaximumConnectionHandle {
            throw DecodeError(.invalidValue, at: start, "\(field) 0x\(String(handle, radix: 16)) is above 0x0EFF")
        }
        return handle
    }

    /// Reads a 6-octet address whose kind follows `type` (random when bit 0 is set).
    mutating func hciReadAddress(_ field: String, type: LEAddressType) throws(DecodeError) -> BluetoothAddress {
        let bytes = try readBytes(6, field)
        return BluetoothAddress(bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }, type: type.bluetoothAddressType)
    }

    mutating func hciReadAddressType(_ field: String) throws(DecodeError) -> LEAddressType {
        LEAddressType(try readUInt8(field))
    }

    mutating func hciReadStatus(_ field: String = "Status") throws(DecodeError) -> HCIStatus {
        HCIStatus(try readUInt8(field))
    }
}

extension ByteWriter {
    /// Writes a connection handle's 12 bits.
    mutating func hciWriteHandle(_ handle: UInt16) { write(handle & 0x0FFF) }
    /// Writes exactly `count` octets: shorter input is zero-padded, longer input truncated (keys, coordinates).
    mutating func hciWriteFixed(_ bytes: [UInt8], count: Int) {
        write(bytes.prefix(count))
        if bytes.count < count { write([UInt8](repeating: 0, count: count - bytes.count)) }
    }
    mutating func hciWrite(_ address: BluetoothAddress) { write(address.littleEndianBytes) }
}

/// Field formatting shared by the command and event dissections.
enum HCIFieldText {
    static func field(_ label: String, _ value: String) -> Dissection { Dissection(label, value) }
    static func handle(_ handle: UInt16, _ label: String = "Connection_Handle") -> Dissection {
        Dissection(label, Dissection.hex16(handle))
    }
    static func status(_ status: HCIStatus, _ label: String = "Status") -> Dissection {
        Dissection(label, status.description)
    }
    static func hex8(_ label: String, _ value: UInt8) -> Dissection { Dissection(label, Dissection.hex8(value)) }
    static func hex16(_ label: String, _ value: UInt16) -> Dissection { Dissection(label, Dissection.hex16(value)) }
    static func hex64(_ label: String, _ value: UInt64) -> Dissection {
        let digits = String(value, radix: 16, uppercase: true)
        return Dissection(label, "0x" + String(repeating: "0", count: max(0, 16 - digits.count)) + digits)
    }
    static func decimal(_ label: String, _ value: some BinaryInteger) -> Dissection { Dissection(label, "\(value)") }
    static func bytes(_ label: String, _ value: [UInt8]) -> Dissection { Dissection(label, Dissection.bytes(value)) }
    static func code(_ label: String, _ value: some OpenCode) -> Dissection { Dissection(label, value.description) }
    static func address(_ label: String, _ address: BluetoothAddress) -> Dissection { Dissection(label, address.description) }
    static func dbm(_ label: String, _ value: Int8) -> Dissection { Dissection(label, "\(value) dBm") }
    static func rssi(_ label: String, _ value: Int8) -> Dissection {
        Dissection(label, value == 127 ? "127 (not available)" : "\(value) dBm")
    }
    static func enable(_ label: String, _ value: UInt8) -> Dissection {
        named(label, value, [0x00: "Disabled", 0x01: "Enabled"])
    }
    /// "Name (0x05)" from a local table, "Reserved (0x05)" otherwise.
    static func named(_ label: String, _ value: UInt8, _ names: [UInt8: String]) -> Dissection {
        Dissection(label, "\(names[value] ?? "Reserved") (\(Dissection.hex8(value)))")
    }
    /// A duration in `unitMicroseconds` steps: "0x0800 (1280.000 ms)".
    static func duration(_ label: String, _ value: UInt16, unitMicroseconds: Int) -> Dissection {
        let micro = Int(value) * unitMicroseconds
        let fraction = String(micro % 1000)
        let padded = String(repeating: "0", count: 3 - fraction.count) + fraction
        return Dissection(label, "\(Dissection.hex16(value)) (\(micro / 1000).\(padded) ms)")
    }
    /// A 24-bit interval in 0.625 ms steps: "0x000800 (1280.000 ms)".
    static func interval24(_ label: String, _ value: UInt32) -> Dissection {
        let micro = Int(value & 0xFF_FFFF) * 625
        let fraction = String(micro % 1000)
        let padded = String(repeating: "0", count: 3 - fraction.count) + fraction
        let digits = String(value & 0xFF_FFFF, radix: 16, uppercase: true)
        let hex = "0x" + String(repeating: "0", count: 6 - digits.count) + digits
        return Dissection(label, "\(hex) (\(micro / 1000).\(padded) ms)")
    }
    static func advertisingInterval(_ label: String, _ value: UInt16) -> Dissection {
        duration(label, value, unitMicroseconds: 625)
    }
    static func connectionInterval(_ label: String, _ value: UInt16) -> Dissection {
        duration(label, value, unitMicroseconds: 1250)
    }
    static func supervisionTimeout(_ label: String, _ value: UInt16) -> Dissection {
        Dissection(label, "\(Dissection.hex16(value)) (\(Int(value) * 10) ms)")
    }
    static func latency(_ label: String, _ value: UInt16) -> Dissection {
        Dissection(label, "\(value) connection events")
    }
    static func txTime(_ label: String, _ value: UInt16) -> Dissection { Dissection(label, "\(value) µs") }
    static func octets(_ label: String, _ value: UInt16) -> Dissection { Dissection(label, "\(value) octets") }
    static let phyMaskNames: [(UInt8, String)] = [(0x01, "LE 1M"), (0x02, "LE 2M"), (0x04, "LE Coded")]
    static func phyMask(_ label: String, _ value: UInt8) -> Dissection {
        let names = phyMaskNames.filter { value & $0.0 != 0 }.map(\.1)
        return Dissection(label, "\(Dissection.hex8(value)) (\(names.isEmpty ? "none" : names.joined(separator: ", ")))")
    }
}
