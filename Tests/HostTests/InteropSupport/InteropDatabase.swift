import BluetoothCore
import GATT

/// The GATT database both sides of the interop tests agree on: the Swift twin of Interop/peers/interop_gatt.py
/// (change both together).
///
/// The main service has a short value, a 512-octet value (long read), values written by Write Request, Write
/// Command, a long write and a reliable write of two characteristics, one that notifies and one that indicates.
/// Five more services hold 500 characteristics; characteristic i has ``bigUUID(_:)`` and ``bigValue(_:)``, of length
/// (i × 512) / 499, so 0 to 512 octets.
enum InteropDatabase {
    static func uuid(_ number: UInt32) -> BluetoothUUID {
        let text = String(number, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 8 - text.count)) + text
        return (try? BluetoothUUID(string: padded + "-7B6E-4E5C-9A3B-0C0FFEE0A11B")) ?? BluetoothUUID(0x0000)
    }

    static let mainService = uuid(0x5E1F_0001)
    static let read = uuid(0x5E1F_0002)
    static let longRead = uuid(0x5E1F_0003)
    static let write = uuid(0x5E1F_0004)
    static let writeWithoutResponse = uuid(0x5E1F_0005)
    static let longWrite = uuid(0x5E1F_0006)
    static let reliable1 = uuid(0x5E1F_0007)
    static let reliable2 = uuid(0x5E1F_0008)
    static let notify = uuid(0x5E1F_0009)
    static let indicate = uuid(0x5E1F_000A)

    static let bigServiceCount = 5
    static let bigPerService = 100
    static let bigCount = bigServiceCount * bigPerService

    static let readValue = Array("interop read value".utf8)
    static let notifications: [[UInt8]] = (0..<3).map { [UInt8](repeating: 0xA0 + UInt8($0), count: 10 + $0) }
    static let indications: [[UInt8]] = (0..<2).map { [UInt8](repeating: 0xB0 + UInt8($0), count: 20 + $0) }

    static func pattern(_ length: Int, seed: Int) -> [UInt8] {
        (0..<length).map { UInt8(truncatingIfNeeded: seed * 31 + $0 * 7 + 3) }
    }

    static let longReadValue = pattern(512, seed: 1000)
    static let writeValue = pattern(20, seed: 2000)
    static let writeWithoutResponseValue = pattern(16, seed: 2001)
    static let longWriteValue = pattern(400, seed: 2002)
    static let reliable1Value = pattern(300, seed: 2003)
    static let reliable2Value = pattern(150, seed: 2004)

    /// Written names as the Bumble server reports them, with the values our central writes.
    static let writtenValues: [(name: String, uuid: BluetoothUUID, value: [UInt8])] = [
        ("write", write, writeValue), ("writeWithoutResponse", writeWithoutResponse, writeWithoutResponseValue),
        ("longWrite", longWrite, longWriteValue), ("reliable1", reliable1, reliable1Value),
        ("reliable2", reliable2, reliable2Value),
    ]

    static func bigServiceUUID(_ service: Int) -> BluetoothUUID { uuid(0x5E1F_0100 + UInt32(service)) }
    static func bigUUID(_ index: Int) -> BluetoothUUID { uuid(0x5E1F_1000 + UInt32(index)) }
    static func bigLength(_ index: Int) -> Int { index * 512 / (bigCount - 1) }
    static func bigValue(_ index: Int) -> [UInt8] { pattern(bigLength(index), seed: index) }

    /// Our server's database: GAP, GATT (Service Changed), the main service and the 500 characteristics.
    static func make(deviceName: String) throws -> GATTDatabase {
        var database = GATTDatabase()
        try database.addGAPService(deviceName: deviceName)
        try database.addGATTService()
        let writable = GATTCharacteristicProperties([.read, .write])
        try database.add(GATTServiceDefinition(uuid: mainService, characteristics: [
            GATTCharacteristicDefinition(uuid: read, properties: .read, value: .stored(readValue)),
            GATTCharacteristicDefinition(uuid: longRead, properties: .read, value: .stored(longReadValue)),
            GATTCharacteristicDefinition(uuid: write, properties: writable),
            GATTCharacteristicDefinition(uuid: writeWithoutResponse, properties: [.read, .writeWithoutResponse]),
            GATTCharacteristicDefinition(uuid: longWrite, properties: writable),
            GATTCharacteristicDefinition(uuid: reliable1, properties: writable, extendedProperties: .reliableWrite),
            GATTCharacteristicDefinition(uuid: reliable2, properties: writable, extendedProperties: .reliableWrite),
            GATTCharacteristicDefinition(uuid: notify, properties: [.read, .notify], value: .stored([0])),
            GATTCharacteristicDefinition(uuid: indicate, properties: [.read, .indicate], value: .stored([0])),
        ]))
        for service in 0..<bigServiceCount {
            let characteristics = (0..<bigPerService).map { offset in
                let index = service * bigPerService + offset
                return GATTCharacteristicDefinition(uuid: bigUUID(index), properties: .read, value: .stored(bigValue(index)))
            }
            try database.add(GATTServiceDefinition(uuid: bigServiceUUID(service), characteristics: characteristics))
        }
        return database
    }
}
