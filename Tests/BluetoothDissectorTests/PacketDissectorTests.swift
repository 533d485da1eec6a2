import BluetoothCore
import BluetoothDissector
import TestSupport
import Testing

/// Recognition across layers and the nesting of one layer's payload inside another's.
@Suite struct PacketDissectorTests {
    /// Every kind recognised from its bytes alone, with the PDU name at the root or one level down.
    @Test(arguments: [
        ("040e0401030c00", PacketKind.h4, "Command Complete"),
        ("0e0401030c00", .hciEvent, "Command Complete"),
        ("030c00", .hciCommand, "Reset"),
        ("4000090005000400120300 0100", .acl, "Write Request"),
        ("050004001203000100", .l2cap, "Write Request"),
        ("0201060303aafe", .ad, "Flags"),
        ("100100ffff0028", .att, "Read By Group Type Request"),
        ("01040005100707", .smp, "Pairing Request"),
    ])
    func recognisesEachKind(hexText: String, kind: PacketKind, name: String) throws {
        let packet = try PacketDissector.dissect(hex(hexText))
        #expect(packet.kind == kind)
        #expect(packet.dissection.renderText().contains(name))
        #expect(packet.reencoded == hex(hexText))
    }

    @Test func aclCarriesL2CAPCarriesSMP() throws {
        // H4 ACL, L2CAP CID 0x0006, SMP Pairing Request from spec-vectors §1.10.
        let packet = try PacketDissector.dissect(hex("02 4000 0b00 0700 0600 01030009100d0f"))
        let text = packet.dissection.renderText()
        #expect(text.contains("Security Manager"))
        #expect(text.contains("Pairing Request"))
        #expect(text.contains("NoInputNoOutput") || text.contains("KeyboardDisplay"))
    }

    @Test func fragmentStartSaysHowLongThePDUIs() throws {
        // First ACL fragment of a 23-byte L2CAP payload carrying only 4 bytes of it.
        let packet = try PacketDissector.dissect(hex("4000 0800 1700 0400 0b 00 01 02"), as: .acl)
        #expect(packet.dissection.renderText().contains("first fragment of a 23-byte PDU"))
    }

    @Test func advertisingReportShowsDecodedAdvertisingData() throws {
        let packet = try PacketDissector.dissect(hex("043e1a020100014533221100450e0201060a09426c75654865617274c5"))
        let text = packet.dissection.renderText()
        #expect(text.contains("LE Advertising Report"))
        #expect(text.contains("Complete Local Name: \"BlueHeart\""))
        #expect(text.contains("RSSI: -59 dBm"))
    }

    @Test func setAdvertisingDataShowsDecodedAdvertisingData() throws {
        // LE Set Advertising Data: length 0x20, significant part 3 bytes (Flags), zero padding.
        let parameters = [0x03, 0x02, 0x01, 0x06] + [UInt8](repeating: 0, count: 28)
        let packet = try PacketDissector.dissect([0x08, 0x20, 0x20] + parameters)
        #expect(packet.kind == .hciCommand)
        #expect(packet.dissection.renderText().contains("LE General Discoverable Mode"))
    }

    @Test func malformedPayloadInsideAValidFrameIsShownNotThrown() throws {
        // L2CAP frame on the ATT channel whose payload is a truncated Read Blob Request.
        let packet = try PacketDissector.dissect(hex("0300 0400 0c0300"), as: .l2cap)
        #expect(packet.dissection.renderText().contains("Malformed payload"))
    }

    @Test func guessingRefusesUnknownCodesButForcingShowsThem() throws {
        #expect(throws: DissectorError.self) { try PacketDissector.dissect(hex("ee")) }
        let forced = try PacketDissector.dissect(hex("ee0100"), as: .smp)
        #expect(forced.dissection.renderText().contains("Unknown"))
    }

    @Test func errorListsEveryAttemptWithOffsets() {
        do {
            _ = try PacketDissector.dissect(hex("0c0300"))
            Issue.record("0c0300 should not be recognised")
        } catch {
            #expect(error.attempts.map(\.kind) == PacketDissector.recognitionOrder)
            #expect(error.description.contains("att: truncated at offset 3"))
        }
    }

    @Test func jsonIsWellFormedForEveryKind() throws {
        let packet = try PacketDissector.dissect(hex("0201061aff4c0002154142434445464748494041424344454600010002f8"))
        let json = packet.renderJSON()
        #expect(json.hasPrefix("{\"kind\":\"ad\""))
        #expect(json.contains("\"reencoded\":\"0201061aff4c"))
        #expect(json.contains("iBeacon"))
    }

    /// Random bytes: recognition either succeeds with a re-encoding or fails with a typed error; never traps.
    @Test func randomBytesNeverTrap() {
        var generator = SeededGenerator(seed: 0xD155_EC70)
        var recognised = 0
        for _ in 0..<5_000 {
            let bytes = generator.bytes(Int.random(in: 1...64, using: &generator))
            if let packet = try? PacketDissector.dissect(bytes) {
                recognised += 1
                _ = packet.renderJSON()
            }
        }
        #expect(recognised < 5_000)
    }
}
