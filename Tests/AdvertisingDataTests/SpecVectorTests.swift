import AdvertisingData
import BluetoothCore
import TestSupport
import Testing

/// Every row of spec-vectors.md §2.1: decodes to exactly the stated fields and re-encodes to the same bytes.
@Suite struct SpecVectorTests {
    private func decodeRoundTrip(_ text: String) throws -> AdvertisingData {
        let bytes = hex(text)
        #expect(!bytes.isEmpty)
        let data = try AdvertisingData(decoding: bytes)
        #expect(data.encode() == bytes)
        #expect(data.encodedLength == bytes.count)
        return data
    }

    @Test func blueZGapPTS() throws {
        let data = try decodeRoundTrip("0201040503001801180d095054532d4741502d3036423803190000")
        #expect(data.structures == [
            .flags(.brEdrNotSupported),
            .serviceUUIDs16([0x1800, 0x1801], complete: true),
            .localName("PTS-GAP-06B8", complete: true),
            .appearance(Appearance(0x0000)),
        ])
        #expect(data.flags == [.brEdrNotSupported])
        #expect(data.localName == "PTS-GAP-06B8")
        #expect(data.isLocalNameComplete)
        #expect(data.serviceUUIDs == [BluetoothUUID(0x1800), BluetoothUUID(0x1801)])
        #expect(data.appearance == Appearance(0))
        #expect(!data.isDiscoverable)
    }

    @Test(arguments: [("020104070301003412ab54020a00", true), ("020104070201003412ab54020a00", false)])
    func nimble16(_ text: String, _ complete: Bool) throws {
        let data = try decodeRoundTrip(text)
        #expect(data.structures == [
            .flags(ADFlags(rawValue: 0x04)), .serviceUUIDs16([0x0001, 0x1234, 0x54AB], complete: complete), .txPowerLevel(0),
        ])
        #expect(data.txPowerLevel == 0)
        #expect(data.hasIncompleteServiceList == !complete)
    }

    @Test(arguments: [("020104090578563412aeadacab020a00", true), ("020104090478563412aeadacab020a00", false)])
    func nimble32(_ text: String, _ complete: Bool) throws {
        let data = try decodeRoundTrip(text)
        #expect(data.structures == [
            .flags(.brEdrNotSupported), .serviceUUIDs32([0x1234_5678, 0xABAC_ADAE], complete: complete), .txPowerLevel(0),
        ])
        #expect(data.serviceUUIDs.map(\.uuidString) == ["12345678", "ABACADAE"])
    }

    @Test func nimble128() throws {
        let data = try decodeRoundTrip("020104110700112233445566778899aabbccddeeff020a00")
        let uuid = try BluetoothUUID(string: "FFEEDDCC-BBAA-9988-7766-554433221100")
        #expect(data.structures == [.flags(.brEdrNotSupported), .serviceUUIDs128([uuid], complete: true), .txPowerLevel(0)])
        #expect(data.serviceUUIDs == [uuid])
    }

    @Test func nimbleNames() throws {
        let complete = try decodeRoundTrip("07096d796e616d65")
        #expect(complete.structures == [.localName("myname", complete: true)])
        #expect(complete.localName == "myname")
        let shortened = try decodeRoundTrip("07086d796e616d65")
        #expect(shortened.structures == [.localName("myname", complete: false)])
        #expect(shortened.localName == "myname")
        #expect(!shortened.isLocalNameComplete)
    }

    @Test func nimbleMisc() throws {
        #expect(try decodeRoundTrip("051201020304").structures
            == [.peripheralConnectionIntervalRange(ConnectionIntervalRange(minimum: 0x0201, maximum: 0x0403))])
        let serviceData = try decodeRoundTrip("051601020304")
        #expect(serviceData.structures == [.serviceData16(0x0201, data: [0x03, 0x04])])
        #expect(serviceData.serviceData == [BluetoothUUID(0x0201): [0x03, 0x04]])
        #expect(try decodeRoundTrip("03193412").structures == [.appearance(Appearance(0x1234))])
        #expect(try decodeRoundTrip("031a3412").structures == [.advertisingInterval(0x1234)])
        let manufacturer = try decodeRoundTrip("05ff01020304")
        #expect(manufacturer.structures == [.manufacturerData(CompanyIdentifier(0x0201), data: [0x03, 0x04])])
        #expect(manufacturer.manufacturerData?.company == CompanyIdentifier(0x0201))
        #expect(manufacturer.manufacturerData?.data == [0x03, 0x04])
        #expect(manufacturer.manufacturerDataBytes == [0x01, 0x02, 0x03, 0x04])
    }

    @Test func bumbleTxPower() throws {
        let data = try decodeRoundTrip("020a7b")
        #expect(data.structures == [.txPowerLevel(123)])
        #expect(data.txPowerLevel == 123)
    }

    @Test func iBeacon() throws {
        let data = try decodeRoundTrip("0201061aff4c0002154142434445464748494041424344454600010002f8")
        #expect(data.flags == .generalDiscoverableLEOnly)
        #expect(data.isDiscoverable)
        #expect(data.manufacturerData?.company == .apple)
        let beacon = try IBeacon(advertisement: data)
        #expect(beacon.proximityUUID == (try BluetoothUUID(string: "41424344-4546-4748-4940-414243444546")))
        #expect(beacon.major == 1)
        #expect(beacon.minor == 2)
        #expect(beacon.measuredPower == -8)
        // Building gives back the same advertisement.
        #expect(beacon.advertisingData.encode() == hex("0201061aff4c0002154142434445464748494041424344454600010002f8"))
    }

    @Test func eddystoneUID() throws {
        let data = try decodeRoundTrip("0201060303aafe1716aafe00e3123456789012346789010000000000010000")
        let frame = try EddystoneFrame(advertisement: data)
        guard case .uid(let uid) = frame else { Issue.record("not UID: \(frame)"); return }
        #expect(uid.txPower == -29)
        #expect(uid.namespace == hex("12345678901234678901"))
        #expect(uid.instance == hex("000000000001"))
        #expect(uid.reserved == [0, 0])
        #expect(frame.advertisingData.encode() == data.encode())
    }

    @Test func eddystoneURL() throws {
        let data = try decodeRoundTrip("0303aafe1316aafe10f8036769746875620063697472757a")
        let frame = try EddystoneFrame(advertisement: data)
        guard case .url(let url) = frame else { Issue.record("not URL: \(frame)"); return }
        #expect(url.txPower == -8)
        #expect(url.schemeCode == 0x03)
        #expect(url.url == "https://github.com/citruz")
        let rebuilt = try EddystoneURL(txPower: -8, url: "https://github.com/citruz")
        #expect(rebuilt == url)
        #expect(AdvertisingData([.serviceUUIDs16([0xFEAA], complete: true), EddystoneFrame.url(rebuilt).adStructure]).encode()
            == data.encode())
    }

    @Test func eddystoneTLM() throws {
        let data = try decodeRoundTrip("0201060303aafe1116aafe20000b1813000000146700002ac4")
        let frame = try EddystoneFrame(advertisement: data)
        guard case .tlm(.plain(let tlm)) = frame else { Issue.record("not TLM: \(frame)"); return }
        #expect(tlm.batteryMillivolts == 2840)
        #expect(tlm.temperature == 0x1300)
        #expect(tlm.temperatureCelsius == 19.0)
        #expect(tlm.advertisementCount == 5223)
        #expect(tlm.uptimeDeciseconds == 10948)
        #expect(frame.advertisingData.encode() == data.encode())
    }

    @Test func eddystoneEID() throws {
        let data = try decodeRoundTrip("0201060303aafe0d16aafe30e34549445f74657374")
        let frame = try EddystoneFrame(advertisement: data)
        #expect(frame == .eid(EddystoneEID(txPower: -29, identifier: Array("EID_test".utf8))))
        #expect(frame.advertisingData.encode() == data.encode())
    }

    @Test func eddystoneEncryptedTLM() throws {
        // The row as published frames the service data with length 0x11, which covers the 12-octet ciphertext
        // but not the salt and MIC: "de ad be ff" then reads as a structure of length 0xDE. Strict framing
        // rejects it (beacontools' parser ignores the AD length). With the length corrected to 0x15 it decodes
        // to exactly the stated fields.
        #expect(throws: DecodeError.self) {
            try AdvertisingData(decoding: hex("0201060303aafe1116aafe2001414141414141414141414141deadbeff"))
        }
        let lenient = try? AdvertisingData(decoding: hex("0201060303aafe1116aafe2001414141414141414141414141"))
        #expect(throws: DecodeError.self) { try EddystoneFrame(advertisement: lenient ?? AdvertisingData()) }
        let data = try decodeRoundTrip("0201060303aafe1516aafe2001414141414141414141414141deadbeff")
        let frame = try EddystoneFrame(advertisement: data)
        #expect(frame == .tlm(.encrypted(EddystoneTLM.Encrypted(
            ciphertext: [UInt8](repeating: 0x41, count: 12), salt: 0xDEAD, integrityCheck: 0xBEFF))))
        #expect(frame.name == "Eddystone-eTLM")
        #expect(frame.advertisingData.encode() == data.encode())
    }

    @Test func eddystoneWrongServiceListIsRejected() throws {
        // The AD framing itself is fine; the Eddystone parser must refuse it (list says 0xFEAB).
        let data = try decodeRoundTrip("0201060303abfe1716aafe00e3123456789012346789010000000000010000")
        #expect(data.serviceUUIDs == [BluetoothUUID(0xFEAB)])
        #expect(throws: DecodeError.self) { try EddystoneFrame(advertisement: data) }
        do {
            _ = try EddystoneFrame(advertisement: data)
        } catch {
            #expect(error.code == .invalidValue)
            #expect(error.reason.contains("0xFEAA"))
        }
    }
}
