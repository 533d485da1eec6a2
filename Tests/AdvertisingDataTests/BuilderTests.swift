import AdvertisingData
import BluetoothCore
import TestSupport
import Testing

@Suite struct BuilderTests {
    @Test func buildsAndTracksRemainingSpace() throws {
        var builder = AdvertisingDataBuilder()
        #expect(builder.capacity == 31)
        try builder.append(.flags(.generalDiscoverableLEOnly))
        #expect(builder.remainingSpace == 28)
        try builder.append(.serviceUUIDs16([0x180D], complete: true))
        #expect(builder.remainingSpace == 24)
        try builder.appendLocalName("HR")
        #expect(builder.encode() == hex("020106 03030d18 03094852"))
        #expect(builder.remainingSpace == 20)
        #expect(builder.advertisingData.localName == "HR")
    }

    @Test func overflowSaysWhichItemDidNotFit() throws {
        var builder = AdvertisingDataBuilder()
        try builder.append(.flags(.generalDiscoverableLEOnly))
        let uuid = try BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F002671")
        try builder.append(.serviceUUIDs128([uuid], complete: true))  // 18 octets, 21 used
        let manufacturer = ADStructure.manufacturerData(.apple, data: [UInt8](repeating: 0, count: 10))  // 14 octets
        do {
            try builder.append(manufacturer)
            Issue.record("31-octet budget exceeded")
        } catch {
            #expect(error.structure == manufacturer)
            #expect(error.reason == .doesNotFit(needed: 14, remaining: 10))
            #expect(error.capacity == 31)
            #expect(error.description == "Manufacturer Specific Data (0xFF) needs 14 octets but only 10 of 31 remain")
        }
        // The builder is unchanged by a refused item, and exactly-fitting items go in.
        #expect(builder.usedLength == 21)
        try builder.append(.manufacturerData(.apple, data: [UInt8](repeating: 0, count: 6)))
        #expect(builder.remainingSpace == 0)
        #expect(builder.encode().count == 31)
        #expect(throws: AdvertisingDataBuildError.self) { try builder.append(.flags([])) }
    }

    @Test func structureTooLongForItsLengthOctet() {
        var builder = AdvertisingDataBuilder(kind: .extended)
        let huge = ADStructure.encryptedData([UInt8](repeating: 0, count: 255))
        #expect(throws: AdvertisingDataBuildError(structure: huge, reason: .structureTooLong(dataLength: 255), capacity: 1650)) {
            try builder.append(huge)
        }
        #expect(throws: AdvertisingDataBuildError.self) { try AdvertisingData([huge]).validate(kind: .extended) }
        // encode() stays total: the oversize structure is cut to what one length octet can frame.
        #expect(huge.encode().count == 256)
        #expect(huge.encode().first == 0xFF)
    }

    @Test func validateChecksTheBudget() throws {
        let ok = AdvertisingData([.flags(.generalDiscoverableLEOnly), .localName("x", complete: true)])
        try ok.validate()
        let tooBig = AdvertisingData([.localName(LocalName(String(repeating: "n", count: 30)), complete: true)])
        #expect(throws: AdvertisingDataBuildError.self) { try tooBig.validate() }
        try tooBig.validate(kind: .extended)
    }

    @Test func longNamesAreShortenedToFit() throws {
        var builder = AdvertisingDataBuilder()
        try builder.append(.flags(.generalDiscoverableLEOnly))
        try builder.append(.serviceUUIDs16([0x180D], complete: true))
        try builder.appendLocalName("A very long heart rate sensor name")
        #expect(builder.remainingSpace == 0)
        #expect(builder.structures.last == .localName("A very long heart rate", complete: false))
        // Multi-byte characters are never split.
        var tight = AdvertisingDataBuilder()
        try tight.append(.unknown(ADType(0x99), [UInt8](repeating: 0, count: 25)))  // 27 used, 4 left: 2 for the name
        try tight.appendLocalName("éé")  // 4 octets of UTF-8 does not fit, one "é" does
        #expect(tight.structures.last == .localName("é", complete: false))
        var full = AdvertisingDataBuilder()
        try full.append(.unknown(ADType(0x99), [UInt8](repeating: 0, count: 27)))  // 29 used, no room for a name
        #expect(throws: AdvertisingDataBuildError.self) { try full.appendLocalName("x") }
    }

    @Test func iBeaconFitsExactlyAndBuildsThrough() throws {
        let beacon = IBeacon(proximityUUID: try BluetoothUUID(string: "E2C56DB5-DFFB-48D2-B060-D0F5A71096E0"),
                             major: 0x1234, minor: 0xABCD, measuredPower: -59)
        var builder = AdvertisingDataBuilder()
        for structure in beacon.advertisingData.structures { try builder.append(structure) }
        #expect(builder.usedLength == 30)
        #expect(try IBeacon(advertisement: builder.advertisingData) == beacon)
    }
}

@Suite struct PeripheralAdvertisementTests {
    @Test func nameAndOneServiceFitInTheirPackets() throws {
        let packets = PeripheralAdvertisement(localName: "Heart Rate Sensor", serviceUUIDs: [BluetoothUUID(0x180D)])
        #expect(packets.advertisingData.structures == [.flags(.generalDiscoverableLEOnly), .serviceUUIDs16([0x180D], complete: true)])
        #expect(packets.scanResponse.structures == [.localName("Heart Rate Sensor", complete: true)])
        try packets.advertisingData.validate()
        try packets.scanResponse.validate()
    }

    @Test func overflowGoesToScanResponseAndIsMarkedIncomplete() throws {
        let long = try (0..<3).map { index throws(DecodeError) in
            try BluetoothUUID(string: "0CDBE648-EED0-11E6-BC64-92361F00267\(index)")
        }
        let packets = PeripheralAdvertisement(localName: "A name that is far too long for one packet",
                                              serviceUUIDs: [BluetoothUUID(0x180D)] + long)
        try packets.advertisingData.validate()
        try packets.scanResponse.validate()
        #expect(packets.advertisingData.structures == [
            .flags(.generalDiscoverableLEOnly), .serviceUUIDs16([0x180D], complete: true),
            .serviceUUIDs128([long[0]], complete: false),
        ])
        // The name takes the whole scan response (shortened), so two 128-bit UUIDs are left out.
        #expect(packets.scanResponse.structures.count == 1)
        #expect(packets.scanResponse.localNameValue?.string == "A name that is far too long f")
        #expect(packets.serviceUUIDs == [BluetoothUUID(0x180D), long[0]])
        let noName = PeripheralAdvertisement(localName: nil, serviceUUIDs: long)
        #expect(noName.serviceUUIDs == Array(long.prefix(2)))
        #expect(noName.advertisingData.hasIncompleteServiceList)
    }
}
