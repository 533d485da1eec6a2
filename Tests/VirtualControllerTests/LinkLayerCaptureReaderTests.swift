import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import TestSupport
import Testing
@testable import VirtualController
@testable import SharedAir
import LinkLayer

/// ``LinkLayerCaptureReader`` (what `blue snoop show` reads link-layer pcaps with): what ``LinkLayerSniffer`` wrote
/// comes back PDU for PDU with its channel, PHY, direction and the decrypted mark, in either byte order; hostile
/// files give the packets before the damage and a typed error, or a thrown one for a header that is no pcap of a
/// Bluetooth LE link type.
@Suite struct LinkLayerCaptureReaderTests {
    static func packets() -> [AirPacket] {
        let advertiser = BluetoothAddress(0xC0FFEE_000001)
        return [
            AirPacket(time: .zero, kind: .advertising(.connectableUndirected), sender: advertiser,
                      bytes: AdvertisingChannelPDU.legacyAdvertising(.connectableUndirected, advertiser: advertiser, target: nil, data: [2, 1, 6]),
                      channel: 37, phy: .le1M, accessAddress: AdvertisingChannelPDU.accessAddress, crcInit: AdvertisingChannelPDU.crcInit),
            AirPacket(time: StackInstant(nanoseconds: 1_000_000), kind: .extendedAdvertising(.auxAdvInd), sender: advertiser,
                      bytes: AdvertisingChannelPDU.extended(ExtendedAdvertisingPayload(advA: advertiser, adi: (5, 2), advData: [2, 1, 6])),
                      channel: 9, phy: .leCoded, accessAddress: AdvertisingChannelPDU.accessAddress, crcInit: AdvertisingChannelPDU.crcInit),
            AirPacket(time: StackInstant(nanoseconds: 2_000_000), kind: .data(link: 1, fromCentral: false), sender: advertiser,
                      bytes: [0x0F, 0x03, 0x16, 0x02, 0x02], channel: 17, phy: .le2M, accessAddress: 0x5065_4A23, crcInit: 0x12_3456),
        ]
    }

    static func capture(_ packets: [AirPacket]) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ll-read-\(UUID().uuidString).pcap").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sniffer = try LinkLayerSniffer(path: path, startMicroseconds: 1_700_000_000_000_000)
        for packet in packets { sniffer.write(packet) }
        #expect(sniffer.finish() == nil)
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    @Test func whatTheSnifferWroteComesBack() throws {
        let bytes = try Self.capture(Self.packets())
        let read = try LinkLayerCaptureReader.read(bytes)
        #expect(read.linkType == 256 && read.error == nil)
        try #require(read.packets.count == 3)
        #expect(read.packets.map(\.pdu) == Self.packets().map(\.bytes))
        #expect(read.packets.map(\.rfChannel) == [0, 10, 19])
        #expect(read.packets.map(\.phy) == [.le1M, .leCoded, .le2M])
        #expect(read.packets.map(\.pduType) == [0, 1, 3])
        #expect(read.packets.map(\.unixMicroseconds) == [1_700_000_000_000_000, 1_700_000_000_001_000, 1_700_000_000_002_000])
        #expect(read.packets.map(\.isAdvertising) == [true, true, false])
    }

    @Test func bigEndianNanosecondCapturesAndLinkType251() throws {
        var w = ByteWriter()
        for value in [UInt32(0x4D3C_B2A1)] { w.write(value) }
        // A big-endian header: version 2.4, no zone, no accuracy, snap 65535, LINKTYPE 251.
        w.write([0x00, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0xFB])
        let pdu: [UInt8] = [0x02, 0x09, 1, 0, 0, 0, 0, 0, 2, 1, 6]
        let record: [UInt8] = [0xD6, 0xBE, 0x89, 0x8E] + pdu + [0, 0, 0]
        w.write([0x65, 0x53, 0xF1, 0x00, 0x00, 0x0F, 0x42, 0x40, 0, 0, 0, UInt8(record.count), 0, 0, 0, UInt8(record.count)])
        w.write(record)
        let read = try LinkLayerCaptureReader.read(w.bytes)
        #expect(read.linkType == 251 && read.error == nil)
        #expect(read.packets.first?.pdu == pdu && read.packets.first?.rfChannel == nil)
        let expected: Int64 = 0x6553_F100 * 1_000_000 + 1_000
        #expect(read.packets.first?.unixMicroseconds == expected, "\(String(describing: read.packets.first))")
    }

    @Test func hostileFiles() throws {
        let bytes = try Self.capture(Self.packets())
        #expect(throws: DecodeError.self) { try LinkLayerCaptureReader.read(Array("not a capture at all, not at all".utf8)) }
        #expect(throws: DecodeError.self) { try LinkLayerCaptureReader.read(Array(bytes.prefix(20))) }
        var otherLinkType = bytes
        otherLinkType[20] = 201
        #expect(throws: DecodeError.self) { try LinkLayerCaptureReader.read(otherLinkType) }
        // Cut anywhere: the whole packets before the cut, then the error (none when the cut falls between records).
        var boundaries: Set<Int> = [24]
        var end = 24
        while end + 16 <= bytes.count {
            end += 16 + Int(bytes[end + 8]) + Int(bytes[end + 9]) << 8
            boundaries.insert(end)
        }
        for cut in 25..<bytes.count {
            let read = try LinkLayerCaptureReader.read(Array(bytes.prefix(cut)))
            #expect((read.error != nil) != boundaries.contains(cut), "cut at \(cut)")
            #expect(read.packets.map(\.pdu) == Array(Self.packets().map(\.bytes).prefix(read.packets.count)))
        }
        // A record announcing more than the snap length, and a PDU longer than its record.
        var huge = bytes
        huge[24 + 8] = 0xFF
        huge[24 + 9] = 0xFF
        huge[24 + 10] = 0x01
        #expect(try LinkLayerCaptureReader.read(huge).error?.code == .truncated)
        var long = bytes
        long[24 + 16 + 14 + 1] = 200
        let read = try LinkLayerCaptureReader.read(long)
        #expect(read.packets.isEmpty && read.error != nil)
        // Random bytes after a valid header: never a trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let noise = (0..<Int.random(in: 0...200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try LinkLayerCaptureReader.read(Array(bytes.prefix(24)) + noise)
        }
    }
}
