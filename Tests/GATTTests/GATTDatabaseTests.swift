import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import Testing
import TestSupport

@Suite("GATT database")
struct GATTDatabaseTests {
    @Test("GAP and GATT services: handles, declarations, values")
    func standardServices() throws {
        var database = GATTDatabase()
        let gap = try database.addGAPService(deviceName: "OpenCoreBluetooth", appearance: 0x0340)
        let gatt = try database.addGATTService()
        #expect(gap.start == 1 && gap.end == 5)
        #expect(gatt.start == 6 && gatt.end == 9)
        #expect(database.attribute(3)?.storedValue == Array("OpenCoreBluetooth".utf8))
        #expect(database.attribute(5)?.storedValue == [0x40, 0x03])
        #expect(database.attribute(7)?.storedValue == [0x20, 0x08, 0x00, 0x05, 0x2A])
        #expect(database.attribute(9)?.type == GATTUUID.clientCharacteristicConfiguration)
        #expect(database.serviceChanged?.value == 8)
        #expect(database.serviceChanged?.clientConfiguration == 9)
        #expect(database.service(containing: 8)?.uuid == GATTUUID.genericAttributeService)
    }

    @Test("definition errors: unknown included service, value too long, handles exhausted")
    func errors() throws {
        var database = GATTDatabase()
        let foreign = GATTServiceHandles(uuid: BluetoothUUID(0x1234), isPrimary: false, start: 1, end: 3, characteristics: [])
        #expect(throws: GATTDatabaseError.self) {
            try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xAAAA), includes: [foreign], characteristics: []))
        }
        #expect(throws: GATTDatabaseError.self) {
            try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xAAAA), characteristics: [
                GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA1), properties: .read, value: .stored(Array(repeating: 0, count: 513))),
            ]))
        }
        #expect(database.lastHandle == 0)
        let many = (0..<32_767).map { _ in GATTCharacteristicDefinition(uuid: BluetoothUUID(0xAAA1), properties: .read) }
        try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xAAAA), characteristics: many))
        #expect(database.lastHandle == 0xFFFF)
        do {
            try database.add(GATTServiceDefinition(uuid: BluetoothUUID(0xBBBB), characteristics: []))
            Issue.record("the handle space is full")
        } catch {
            #expect(error.code == .handlesExhausted)
        }
        // The last range is served without overflow.
        var server = GATTServer(database: database)
        let reply = server.handleRequest(.findInformationRequest(ATTHandleRange(start: 0xFFFF, end: 0xFFFF)), from: GATTConnectionID(1))
        #expect(reply.response.encode() == hex("0501ffffa1aa"))
        let past = server.handleRequest(.readByTypeRequest(range: ATTHandleRange(start: 0xFFFE, end: 0xFFFF), attributeType: BluetoothUUID(0xAAA1)), from: GATTConnectionID(1))
        #expect(past.response.encode() == hex("0902ffff"))
    }

    @Test("520 characteristics with values of 0 to 512 octets: discovered and read back whole (Read + Read Blob), MTU 23 and 517")
    func largeDatabase() throws {
        var generator = SeededGenerator(seed: 0x5EED)
        var database = GATTDatabase()
        try database.addGAPService(deviceName: "large")
        try database.addGATTService()
        var expected: [UInt16: [UInt8]] = [:]
        var lengths = Array(0...512)
        lengths.shuffle(using: &generator)
        lengths += (0..<7).map { _ in Int.random(in: 0...512, using: &generator) }
        for serviceIndex in 0..<10 {
            let definitions = (0..<52).map { index -> GATTCharacteristicDefinition in
                let length = lengths[serviceIndex * 52 + index]
                return GATTCharacteristicDefinition(uuid: BluetoothUUID(UInt16(0xA000 + serviceIndex * 52 + index)), properties: [.read, .write],
                                                    value: .stored(generator.bytes(length)))
            }
            let service = try database.add(GATTServiceDefinition(uuid: BluetoothUUID(UInt16(0xF000 + serviceIndex)), characteristics: definitions))
            for (index, characteristic) in service.characteristics.enumerated() {
                expected[characteristic.value] = database.attribute(characteristic.value)?.storedValue
                if case .stored(let bytes) = definitions[index].value { #expect(bytes.count == expected[characteristic.value]?.count) }
            }
        }
        #expect(expected.count == 520)
        #expect(Set(expected.values.map(\.count)).count == 513)

        for mtu in [23, 517] {
            let harness = GATTServerTestHarness(database: database)
            if mtu != 23 { #expect(harness.exchange("020502") == ["030502"]) }
            // Discover every characteristic declaration with Read By Type, as a client does.
            var found: [UInt16] = []
            var start: UInt16 = 1
            var requests = 0
            while requests < 2_000 {
                requests += 1
                let reply = harness.exchange("08" + Hex.encode(le(start)) + "ffff" + "0328")
                guard let bytes = reply.first.map(hex), let pdu = try? ATTPDU(decoding: bytes),
                      case .readByTypeResponse(let response) = pdu else { break }
                for element in response.elements {
                    let value = element.value
                    guard value.count >= 3 else { continue }
                    found.append(UInt16(value[1]) | UInt16(value[2]) << 8)
                }
                guard let last = response.elements.last?.handle, last < 0xFFFF else { break }
                start = last + 1
            }
            #expect(Set(found).isSuperset(of: Set(expected.keys)))
            // Read every value whole.
            let chunk = mtu - 1
            var mismatches = 0
            var blobRequests = 0
            for (handle, value) in expected.sorted(by: { $0.key < $1.key }) {
                var read: [UInt8] = []
                let first = harness.exchange("0a" + Hex.encode(le(handle)))
                read += (first.first.map(hex) ?? []).dropFirst()
                var part = read.count
                while part == chunk {
                    blobRequests += 1
                    let next = harness.exchange("0c" + Hex.encode(le(handle)) + Hex.encode(le(UInt16(read.count))))
                    let bytes = next.first.map(hex) ?? []
                    guard bytes.first == 0x0D else { break }
                    part = bytes.count - 1
                    read += bytes.dropFirst()
                }
                if read != value { mismatches += 1 }
            }
            #expect(mismatches == 0, "MTU \(mtu)")
            // Every value longer than ATT_MTU − 1 needed Read Blob: sum of floor(length / (MTU − 1)).
            #expect(blobRequests == expected.values.reduce(0) { $0 + $1.count / chunk })
            harness.expectClean()
        }
    }

    private func le(_ value: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
}
