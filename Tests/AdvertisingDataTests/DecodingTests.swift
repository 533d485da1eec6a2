import AdvertisingData
import BluetoothCore
import TestSupport
import Testing

@Suite struct DecodingTests {
    @Test func zeroLengthTerminatesSignificantPart() throws {
        let padded = hex("020106") + [UInt8](repeating: 0, count: 28)
        let data = try AdvertisingData(decoding: padded)
        #expect(data.structures == [.flags(.generalDiscoverableLEOnly)])
        #expect(data.encode() == hex("020106"))
        // Whatever follows the terminator is not looked at.
        #expect(try AdvertisingData(decoding: hex("020106 00 ff ff")).structures.count == 1)
        #expect(try AdvertisingData(decoding: []).structures.isEmpty)
    }

    @Test func lengthPastEndThrows() {
        #expect(throws: DecodeError.self) { try AdvertisingData(decoding: hex("0509414243")) }
        do {
            _ = try AdvertisingData(decoding: hex("020106 0509414243"))
            Issue.record("decoded a structure running past the end")
        } catch {
            #expect(error.code == .truncated)
            #expect(error.offset == 5)
        }
    }

    @Test func legacyCapIs31ExtendedIs1650() throws {
        let name = ADStructure.localName(LocalName(String(repeating: "x", count: 30)), complete: true)  // 32 octets
        let bytes = name.encode()
        #expect(bytes.count == 32)
        #expect(throws: DecodeError.self) { try AdvertisingData(decoding: bytes) }
        #expect(try AdvertisingData(decoding: bytes, kind: .extended).structures == [name])
        let big = [UInt8](repeating: 0, count: 1651)
        #expect(throws: DecodeError.self) { try AdvertisingData(decoding: big, kind: .extended) }
        let maxExtended = (0..<6).flatMap { _ in ADStructure.manufacturerData(.testing, data: [UInt8](repeating: 1, count: 250)).encode() }
            + ADStructure.unknown(ADType(0x99), [UInt8](repeating: 7, count: 1650 - 6 * 254 - 2)).encode()
        #expect(maxExtended.count == 1650)
        #expect(try AdvertisingData(decoding: maxExtended, kind: .extended).encode() == maxExtended)
    }

    @Test func contentsAreStrictUnlessLenient() throws {
        let cases = [
            "0403aafeaa",  // 16-bit list of 3 octets
            "040578563412",  // 32-bit list of 3 octets
            "030600112233445566778899aabbccddee",  // 128-bit list, wrong length
            "03010600",  // flags with 2 octets
            "030a7b00",  // tx power with 2 octets
            "020a",  // wrong: length 2 with 1 octet is truncation -> framing
            "0419010203",  // appearance 3 octets
            "02ff4c",  // manufacturer data without a full company id
            "0816aa",  // framing error
            "0417001122",  // public target address not a multiple of 6
            "032f0102",  // long interval of 2 octets
            "031c0000",  // LE role 2 octets
        ]
        for text in cases {
            #expect(throws: DecodeError.self, "\(text)") { try AdvertisingData(decoding: hex(text)) }
        }
        let lenient = try AdvertisingData(decoding: hex("0403aafeaa 020a7b"), lenient: true)
        #expect(lenient.structures == [.unknown(.completeList16BitServiceUUIDs, [0xAA, 0xFE, 0xAA]), .txPowerLevel(123)])
        #expect(lenient.encode() == hex("0403aafeaa 020a7b"))
        // Framing errors throw even when lenient.
        #expect(throws: DecodeError.self) { try AdvertisingData(decoding: hex("0816aa"), lenient: true) }
    }

    @Test func errorOffsetsPointIntoTheWholeBuffer() {
        do {
            _ = try AdvertisingData(decoding: hex("020106 0403aafeaa"))
            Issue.record("odd 16-bit list accepted")
        } catch {
            #expect(error.code == .invalidLength)
            #expect(error.offset == 5)  // start of the list's data
        }
    }

    @Test func everyTypedStructureRoundTrips() throws {
        let address = try BluetoothAddress(string: "C0:11:22:33:44:55")
        let uuid128 = try BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")
        let structures: [ADStructure] = [
            .flags([.leLimitedDiscoverable, .brEdrNotSupported]),
            .serviceUUIDs16([0x180D, 0x180F], complete: false),
            .serviceUUIDs32([0x0001_180D], complete: true),
            .serviceUUIDs128([uuid128], complete: false),
            .localName(LocalName(bytes: [0xFF, 0xFE, 0x41]), complete: true),
            .txPowerLevel(-127),
            .classOfDevice(ClassOfDevice(rawValue: 0x5A020C)),
            .peripheralConnectionIntervalRange(ConnectionIntervalRange(minimum: 6, maximum: 0xFFFF)),
            .serviceSolicitation16([0x1812]),
            .serviceSolicitation32([0xDEAD_BEEF]),
            .serviceSolicitation128([uuid128]),
            .serviceData16(0x180F, data: [100]),
            .serviceData32(0x1234_5678, data: []),
            .serviceData128(uuid128, data: [1, 2, 3]),
            .publicTargetAddresses([BluetoothAddress(0x0011_2233_4455), BluetoothAddress(0xAABB_CCDD_EEFF)]),
            .randomTargetAddresses([BluetoothAddress(0xC011_2233_4455, type: .random)]),
            .appearance(.genericHeartRateSensor),
            .advertisingInterval(0x0800),
            .advertisingIntervalLong(0x01_0000),
            .advertisingIntervalLong(0x0100_0000),
            .leDeviceAddress(BluetoothAddress(address.value, type: .random)),
            .leDeviceAddress(BluetoothAddress(0x0011_2233_4455)),
            .leRole(.centralPreferred),
            .uri(URIData("https://example.com/x")),
            .leSupportedFeatures(LESupportedFeatures(bytes: [0x01, 0x01])),
            .encryptedData([9, 8, 7, 6, 5]),
            .manufacturerData(.nordicSemiconductor, data: [0xCA, 0xFE]),
            .unknown(ADType(0x3D), [1, 2]),
            .unknown(ADType(0x10), []),
        ]
        for structure in structures {
            let bytes = structure.encode()
            #expect(bytes.count == structure.encodedLength)
            #expect(try ADStructure(decoding: bytes) == structure, "\(structure)")
            #expect(try ADStructure(type: structure.type, data: structure.data) == structure)
        }
        let all = AdvertisingData(structures)
        #expect(try AdvertisingData(decoding: all.encode(), kind: .extended) == all)
    }

    @Test func longIntervalAcceptsFourOctetsAndReencodesCanonically() throws {
        let decoded = try ADStructure(decoding: hex("052f00010000"))
        #expect(decoded == .advertisingIntervalLong(0x100))
        #expect(decoded.encode() == hex("042f000100"))
    }

    @Test func invalidUTF8NameIsKeptAsBytes() throws {
        let data = try AdvertisingData(decoding: hex("0409ff4142"))
        #expect(data.localNameValue?.string == nil)
        #expect(data.localNameValue?.bytes == [0xFF, 0x41, 0x42])
        #expect(data.localName == "\u{FFFD}AB")
        #expect(data.encode() == hex("0409ff4142"))
    }

    @Test func completeNamePreferredOverShortened() throws {
        let data = AdvertisingData([.localName("Heart", complete: false), .localName("Heart Rate Sensor", complete: true)])
        #expect(data.localName == "Heart Rate Sensor")
        #expect(AdvertisingData([.localName("Heart", complete: false)]).localName == "Heart")
    }

    @Test func scannerAccessorsCollectAllSizes() throws {
        let uuid128 = try BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")
        let data = AdvertisingData([
            .serviceUUIDs16([0x180D], complete: false),
            .serviceUUIDs32([0x0000_180D, 0x0001_0000], complete: true),
            .serviceUUIDs128([uuid128, BluetoothUUID(0x180F)], complete: true),
            .serviceSolicitation16([0x1812]),
            .serviceData16(0xFEAA, data: [1]),
            .serviceData128(uuid128, data: [2]),
            .serviceData32(0x0000_FEAA, data: [3]),
            .manufacturerData(.apple, data: [1]),
            .manufacturerData(.google, data: [2]),
        ])
        #expect(data.serviceUUIDs == [BluetoothUUID(0x180D), BluetoothUUID(uuid32: 0x0001_0000), uuid128, BluetoothUUID(0x180F)])
        #expect(data.solicitedServiceUUIDs == [BluetoothUUID(0x1812)])
        #expect(data.serviceData == [BluetoothUUID(0xFEAA): [1], uuid128: [2]])
        #expect(data.allManufacturerData.map(\.company) == [.apple, .google])
        #expect(data.structures(ofType: .manufacturerSpecificData).count == 2)
        #expect(data.hasIncompleteServiceList)
    }

    @Test func uriSchemes() throws {
        let https = URIData("https://example.com")
        #expect(https.bytes == [0x17] + Array("//example.com".utf8))
        #expect(https.uri == "https://example.com")
        #expect(https.scheme == "https:")
        #expect(URIData("http://a").bytes.first == 0x16)
        let unlisted = URIData("zzz:thing")
        #expect(unlisted.bytes == [0x01] + Array("zzz:thing".utf8))
        #expect(unlisted.uri == "zzz:thing")
        // An unknown code is kept and shown, not lost.
        let unknown = URIData(bytes: [0xC2, 0xBA] + Array("//x".utf8))  // U+00BA
        #expect(unknown.schemeCode == 0xBA)
        #expect(unknown.uri == nil)
        #expect(unknown.description.contains("0x00BA"))
        let decoded = try AdvertisingData(decoding: [UInt8(unknown.bytes.count + 1), 0x24] + unknown.bytes)
        #expect(decoded.structures == [.uri(unknown)])
        #expect(URIData(bytes: [0xFF]).uri == nil)
    }

    @Test func flagsNames() {
        #expect(ADFlags(rawValue: 0x06).description == "0x06 (LE General Discoverable Mode, BR/EDR Not Supported)")
        #expect(ADFlags(rawValue: 0x81).names == ["LE Limited Discoverable Mode", "Reserved (bit 7)"])
    }
}

@Suite struct ADTypeTableTests {
    /// Every AD type with a typed case decodes to it (not `.unknown`) and round-trips a sample; every other
    /// value of the type octet decodes as `.unknown` and round-trips unchanged.
    @Test func everyTypedADTypeHasACodec() throws {
        let samples: [UInt8: [UInt8]] = [
            0x01: [0x06], 0x02: [0x0D, 0x18], 0x03: [0x0D, 0x18], 0x04: [1, 2, 3, 4], 0x05: [1, 2, 3, 4],
            0x06: [UInt8](repeating: 7, count: 16), 0x07: [UInt8](repeating: 7, count: 16), 0x08: [0x41], 0x09: [0x41],
            0x0A: [0xF8], 0x0D: [1, 2, 3], 0x12: [6, 0, 0x40, 6], 0x14: [0x12, 0x18], 0x15: [UInt8](repeating: 1, count: 16),
            0x16: [0xAA, 0xFE, 0x30], 0x17: [1, 2, 3, 4, 5, 6], 0x18: [1, 2, 3, 4, 5, 0xC6], 0x19: [0xC1, 0x00],
            0x1A: [0x20, 0x00], 0x1B: [1, 2, 3, 4, 5, 0xC6, 1], 0x1C: [0x02], 0x1F: [1, 2, 3, 4], 0x20: [1, 2, 3, 4, 9],
            0x21: [UInt8](repeating: 2, count: 17), 0x24: [0x17, 0x2F, 0x2F, 0x61], 0x27: [0x01], 0x2F: [0, 0, 1],
            0x31: [1, 2, 3], 0xFF: [0x4C, 0x00, 0x01],
        ]
        for type in UInt8.min...UInt8.max {
            let data = samples[type] ?? [0xAB]
            let bytes = [UInt8(data.count + 1), type] + data
            let structure = try ADStructure(decoding: bytes)
            #expect(structure.type == ADType(type))
            #expect(structure.encode() == bytes, "type \(type)")
            let isUnknown = if case .unknown = structure { true } else { false }
            #expect(isUnknown == (samples[type] == nil), "type \(Dissection.hex8(type))")
            // Every structure names itself with the SIG's name, or says it is unknown.
            let label = structure.dissection.label
            #expect(label == (ADType(type).name ?? "Unknown AD type (\(Dissection.hex8(type)))"))
        }
    }
}
