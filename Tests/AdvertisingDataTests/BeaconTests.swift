import AdvertisingData
import BluetoothCore
import TestSupport
import Testing

@Suite struct BeaconTests {
    @Test func iBeaconRejectsMalformed() {
        let valid = hex("02154142434445464748494041424344454600010002f8")
        #expect(valid.count == 23)
        #expect(throws: Never.self) { try IBeacon(manufacturerData: valid) }
        for length in 0..<valid.count {
            #expect(throws: DecodeError.self) { try IBeacon(manufacturerData: Array(valid.prefix(length))) }
        }
        #expect(throws: DecodeError.self) { try IBeacon(manufacturerData: valid + [0]) }
        var wrongType = valid
        wrongType[0] = 0x03
        #expect(throws: DecodeError.self) { try IBeacon(manufacturerData: wrongType) }
        var wrongLength = valid
        wrongLength[1] = 0x14
        #expect(throws: DecodeError.self) { try IBeacon(manufacturerData: wrongLength) }
        // Another company's data is not an iBeacon.
        let google = AdvertisingData([.manufacturerData(.google, data: valid)])
        #expect(throws: DecodeError.self) { try IBeacon(advertisement: google) }
        #expect(!IBeacon.matches(company: .google, data: valid))
        #expect(IBeacon.matches(company: .apple, data: valid))
    }

    @Test func eddystoneURLCompression() throws {
        let cases: [(String, UInt8, [UInt8])] = [
            ("http://www.google.com/", 0x00, Array("google".utf8) + [0x00]),
            ("https://www.example.org", 0x01, Array("example".utf8) + [0x08]),
            ("http://goo.gl/abc", 0x02, Array("goo.gl/abc".utf8)),
            ("https://a.info/b.gov", 0x03, [0x61, 0x04, 0x62, 0x0D]),
            ("https://x.com", 0x03, [0x78, 0x07]),
            ("https://x.comb", 0x03, [0x78, 0x07, 0x62]),
        ]
        for (text, scheme, encoded) in cases {
            let url = try EddystoneURL(txPower: 0, url: text)
            #expect(url.schemeCode == scheme, "\(text)")
            #expect(url.encodedURL == encoded, "\(text)")
            #expect(url.url == text)
            let frame = EddystoneFrame.url(url)
            #expect(try EddystoneFrame(serviceData: frame.encode()) == frame)
        }
        #expect(throws: EddystoneURLError.unsupportedScheme("ftp://x")) { try EddystoneURL(txPower: 0, url: "ftp://x") }
        #expect(throws: EddystoneURLError.tooLong(encodedLength: 18)) {
            try EddystoneURL(txPower: 0, url: "https://" + String(repeating: "a", count: 18))
        }
        #expect(throws: Never.self) { try EddystoneURL(txPower: 0, url: "https://" + String(repeating: "a", count: 17)) }
        #expect(throws: EddystoneURLError.invalidCharacter(" ")) { try EddystoneURL(txPower: 0, url: "https://a b") }
        #expect(throws: EddystoneURLError.invalidCharacter("é")) { try EddystoneURL(txPower: 0, url: "https://é") }
    }

    @Test func eddystoneRejectsMalformedFrames() {
        let frames = [
            "",  // no frame type
            "40",  // unknown frame type
            "00e3123456789012346789010000000000",  // UID short
            "00e312345678901234678901000000000001000000",  // UID with 3 trailing
            "10f804",  // URL: reserved scheme 0x04
            "10f8036769740e",  // URL: reserved expansion 0x0E
            "10f80361202020",  // URL: space
            "10f803" + String(repeating: "61", count: 18),  // URL too long
            "2002",  // TLM unknown version
            "20000b18",  // TLM short
            "20000b1813000000146700002ac400",  // TLM long
            "200141414141",  // eTLM short
            "30e34549445f746573",  // EID short
            "30e34549445f7465737400",  // EID long
        ]
        for text in frames {
            #expect(throws: DecodeError.self, "\(text)") { try EddystoneFrame(serviceData: hex(text)) }
        }
    }

    @Test func eddystoneFromAdvertisementNeedsListAndData() throws {
        let uid = EddystoneFrame.uid(EddystoneUID(txPower: -20, namespace: [1, 2, 3], instance: [4], reserved: nil))
        #expect(try EddystoneFrame(advertisement: uid.advertisingData) == uid)
        // Incomplete list is fine too.
        #expect(try EddystoneFrame(advertisement: AdvertisingData([.serviceUUIDs16([0x180D, 0xFEAA], complete: false), uid.adStructure])) == uid)
        #expect(throws: DecodeError.self) { try EddystoneFrame(advertisement: AdvertisingData([uid.adStructure])) }
        #expect(throws: DecodeError.self) {
            try EddystoneFrame(advertisement: AdvertisingData([.serviceUUIDs16([0xFEAA], complete: true)]))
        }
        #expect(throws: DecodeError.self) {
            try EddystoneFrame(advertisement: AdvertisingData([
                .serviceUUIDs16([0xFEAA], complete: true), .serviceData16(0xFEAA, data: [0x77]),
            ]))
        }
    }

    @Test func eddystoneTemperatureNotSupported() throws {
        let tlm = EddystoneTLM.Plain(batteryMillivolts: 0, temperature: Int16.min, advertisementCount: 0, uptimeDeciseconds: 0)
        #expect(tlm.temperatureCelsius == nil)
        let negative = EddystoneTLM.Plain(batteryMillivolts: 0, temperature: -0x0180, advertisementCount: 0, uptimeDeciseconds: 0)
        #expect(negative.temperatureCelsius == -1.5)
        let frame = EddystoneFrame.tlm(.plain(negative))
        #expect(try EddystoneFrame(serviceData: frame.encode()) == frame)
    }
}
