import AdvertisingData
import BluetoothCore
import TestSupport
import Testing

@Suite struct DissectionTests {
    @Test func heartRateListUsesSIGNames() throws {
        let data = try AdvertisingData(decoding: hex("020106 03030d18 0709 4852 2053656e"))
        let tree = data.dissection
        #expect(tree.label == "Advertising Data")
        #expect(tree.children.map(\.label) == [
            "Flags", "Complete List of 16-bit Service or Service Class UUIDs", "Complete Local Name",
        ])
        #expect(tree.children[0].value == "0x06 (LE General Discoverable Mode, BR/EDR Not Supported)")
        #expect(tree.children[0].children.map(\.label) == ["LE General Discoverable Mode", "BR/EDR Not Supported"])
        #expect(tree.children[1].value == "Heart Rate (0x180D)")
        #expect(tree.children[1].children == [Dissection("UUID", "Heart Rate (0x180D)")])
        #expect(tree.children[2].value == "\"HR Sen\"")
    }

    @Test func iBeaconChild() throws {
        let data = try AdvertisingData(decoding: hex("0201061aff4c0002154142434445464748494041424344454600010002f8"))
        let manufacturer = data.dissection.children[1]
        #expect(manufacturer.label == "Manufacturer Specific Data")
        #expect(manufacturer.value == "Apple, Inc. (0x004C)")
        #expect(manufacturer.children.first == Dissection("Company Identifier", "Apple, Inc. (0x004C)"))
        let beacon = try #require(manufacturer.children.first { $0.label == "iBeacon" })
        #expect(beacon.children == [
            Dissection("Proximity UUID", "41424344-4546-4748-4940-414243444546"),
            Dissection("Major", "1 (0x0001)"),
            Dissection("Minor", "2 (0x0002)"),
            Dissection("Measured Power", "-8 dBm"),
        ])
    }

    @Test func eddystoneChildren() throws {
        let url = try AdvertisingData(decoding: hex("0303aafe1316aafe10f8036769746875620063697472757a"))
        let serviceData = url.dissection.children[1]
        #expect(serviceData.label == "Service Data - 16-bit UUID")
        #expect(serviceData.value?.hasSuffix("(0xFEAA)") == true)
        let frame = try #require(serviceData.children.first { $0.label == "Eddystone-URL" })
        #expect(frame.value == "https://github.com/citruz")
        let tlm = try AdvertisingData(decoding: hex("0201060303aafe1116aafe20000b1813000000146700002ac4"))
        let tlmFrame = try #require(tlm.dissection.children[2].children.first { $0.label == "Eddystone-TLM" })
        #expect(tlmFrame.children.contains(Dissection("Temperature", "19.0 °C")))
        #expect(tlmFrame.children.contains(Dissection("Battery Voltage", "2840 mV")))
        #expect(tlmFrame.children.contains(Dissection("Time Since Power-on", "1094.8 s")))
        let uid = try AdvertisingData(decoding: hex("0201060303aafe1716aafe00e3123456789012346789010000000000010000"))
        let uidFrame = try #require(uid.dissection.children[2].children.first { $0.label == "Eddystone-UID" })
        #expect(uidFrame.children.contains(Dissection("Namespace", "12345678901234678901")))
        let bad = AdvertisingData([.serviceData16(0xFEAA, data: [0x99])])
        #expect(bad.dissection.children[0].children.last == Dissection("Eddystone", "malformed frame"))
    }

    @Test func otherValues() throws {
        let text = try AdvertisingData(decoding: hex("020a7b 03193f03 0512 0600 4006 031a 2000 02 99 01"), kind: .extended).dissection.renderText()
        #expect(text.contains("Tx Power Level: 123 dBm"))
        #expect(text.contains("Appearance: "))
        #expect(text.contains("Connection Interval Min: 0x0006 (7.5 ms)"))
        #expect(text.contains("Connection Interval Max: 0x0640 (2000 ms)"))
        #expect(text.contains("Advertising Interval: 0x0020 (20 ms)"))
        #expect(text.contains("Unknown AD type (0x99): 01 (1 byte)"))
        let json = AdvertisingData([.localName(LocalName("a\"b\n"), complete: true)]).dissection.renderJSON()
        #expect(json.contains(#""value":"\"a\"b\n\"""#))
    }
}
