import BluetoothCore
import L2CAP
import TestSupport
import Testing

@Suite struct L2CAPBasicFrameTests {
    @Test func goldenATTFrame() throws {
        // ATT Read Request for handle 0x0003 on CID 0x0004.
        let bytes = hex("0300 0400 0a 0300")
        let frame = try L2CAPBasicFrame(decoding: bytes)
        #expect(frame.channelID == .attributeProtocol)
        #expect(frame.payload == [0x0A, 0x03, 0x00])
        #expect(try L2CAPBasicFrame(channelID: .attributeProtocol, payload: [0x0A, 0x03, 0x00]).encode() == bytes)
    }

    @Test func emptyPayload() throws {
        let frame = try L2CAPBasicFrame(decoding: hex("0000 4000"))
        #expect(frame.payload.isEmpty)
        #expect(frame.channelID.isLEDynamic)
        #expect(frame.encode() == hex("0000 4000"))
    }

    @Test func lengthMustMatchPayload() {
        #expect(throws: DecodeError.self) { try L2CAPBasicFrame(decoding: hex("0400 0400 0a0300")) }
        #expect(throws: DecodeError.self) { try L2CAPBasicFrame(decoding: hex("0200 0400 0a0300")) }
        do {
            _ = try L2CAPBasicFrame(decoding: hex("0200 0400 0a0300"))
        } catch {
            #expect(error.code == .trailingBytes)
        }
    }

    @Test func truncatedAtEveryLength() {
        let bytes = hex("0500 0600 0b0d 0e0f 10")
        for length in 0..<bytes.count {
            #expect(throws: DecodeError.self) { try L2CAPBasicFrame(decoding: Array(bytes.prefix(length))) }
        }
    }

    @Test func oversizedPayloadIsRefused() {
        #expect(throws: DecodeError.self) {
            try L2CAPBasicFrame(channelID: .attributeProtocol, payload: [UInt8](repeating: 0, count: 65536))
        }
    }

    @Test func readsFromAReaderAndReportsAnnouncedLength() throws {
        var reader = ByteReader(hex("0100 0600 05 0200 0500 0a0b"))
        let first = try L2CAPBasicFrame(from: &reader)
        let second = try L2CAPBasicFrame(from: &reader)
        #expect(first.channelID == .securityManager && first.payload == [5])
        #expect(second.channelID == .leSignaling && second.payload == [10, 11])
        #expect(L2CAPBasicFrame.announcedPayloadLength(hex("1700 04")[...]) == 23)
        #expect(L2CAPBasicFrame.announcedPayloadLength(hex("17")[...]) == nil)
    }

    @Test func channelNames() {
        #expect(L2CAPChannelIdentifier.attributeProtocol.description == "Attribute protocol (0x0004)")
        #expect(L2CAPChannelIdentifier.leSignaling.description == "LE L2CAP Signaling channel (0x0005)")
        #expect(L2CAPChannelIdentifier.securityManager.description == "Security Manager protocol (0x0006)")
        #expect(L2CAPChannelIdentifier.signaling.description == "L2CAP Signaling channel (0x0001)")
        #expect(L2CAPChannelIdentifier(0x0040).description == "Dynamic LE channel (0x0040)")
        #expect(L2CAPChannelIdentifier(0x007F).isLEDynamic)
        #expect(!L2CAPChannelIdentifier(0x0080).isLEDynamic)
        #expect(L2CAPChannelIdentifier(0x0080).description == "Unknown L2CAP channel (0x0080)")
    }

    @Test func dissection() throws {
        let frame = try L2CAPBasicFrame(decoding: hex("0300 0400 0a 0300"))
        let text = frame.dissection.renderText()
        #expect(frame.dissection.label == "L2CAP Basic Frame")
        #expect(text.contains("Channel ID: Attribute protocol (0x0004)"))
        #expect(text.contains("Length: 3"))
    }

    @Test func randomBytesNeverCrash() {
        var generator = SeededGenerator(seed: 0xB_F4A3E)
        for _ in 0..<3000 {
            let count = Int.random(in: 0...12, using: &generator)
            let bytes = generator.bytes(count)
            if let frame = try? L2CAPBasicFrame(decoding: bytes) {
                #expect(frame.encode() == bytes)
            }
        }
    }
}
