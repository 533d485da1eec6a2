import BluetoothCore
import HCI
import TestSupport
import Testing

/// btsnoop captures (the format Android and BlueZ write and Wireshark reads): header, records, round trips.
@Suite struct FramingBTSnoopTests {
    static let reset = H4Frame(type: .command, packet: hex("03 0C 00"))
    static let resetComplete = H4Frame(type: .event, packet: hex("0E 04 01 03 0C 00"))
    static let aclIn = H4Frame(type: .aclData, packet: hex("40 20 07 00 03 00 04 00 0A 01 00"))
    /// 2023-11-14 22:13:20.123456 UTC.
    static let unixTime: Int64 = 1_700_000_000_123_456

    @Test func goldenFileHeader() {
        let writer = BTSnoopWriter()
        #expect(writer.bytes == hex("62 74 73 6E 6F 6F 70 00  00 00 00 01  00 00 03 EA"))
        #expect(BTSnoopFileHeader(datalink: .hciUnencapsulated).encode() == hex("62 74 73 6E 6F 6F 70 00 00 00 00 01 00 00 03 E9"))
        #expect(BTSnoopFileHeader().dissection.renderText() == """
            btsnoop File Header
              Identification Pattern: btsnoop\\0
              Version Number: 1
              Datalink Type: HCI UART (H4) (0x000003EA)
            """)
    }

    @Test func goldenRecord() throws {
        var writer = BTSnoopWriter()
        _ = writer.takeBytes()
        writer.write(Self.reset, direction: .sent, unixMicroseconds: 0)
        // Original 4, included 4, flags 2 (sent, command), drops 0, timestamp = the Unix epoch, data.
        let expected = hex("""
            00 00 00 04  00 00 00 04  00 00 00 02  00 00 00 00  00 DC DD B3 0F 2F 80 00  01 03 0C 00
            """)
        #expect(writer.takeBytes() == expected)
        #expect(writer.bytes.isEmpty)
        let file = BTSnoopFileHeader().encode() + expected
        let (header, records, error) = try BTSnoopReader.readAll(file)
        #expect(header == BTSnoopFileHeader(version: 1, datalink: .hciUART))
        #expect(error == nil)
        #expect(records == [BTSnoopRecord(flags: .commandOrEvent, timestamp: 0x00DC_DDB3_0F2F_8000, data: hex("01 03 0C 00"))])
        #expect(records.first?.unixMicroseconds == 0)
        #expect(try records.first?.frame(datalink: .hciUART) == Self.reset)
    }

    @Test func timestampConversions() {
        #expect(BTSnoop.timestamp(unixMicroseconds: 0) == 0x00DC_DDB3_0F2F_8000)
        // BlueZ's arithmetic: (unix seconds - 946684800) * 10^6 + 0x00E03AB44A676000.
        #expect(BTSnoop.timestamp(unixMicroseconds: 946_684_800_000_000) == BTSnoop.year2000Offset)
        #expect(BTSnoop.unixMicroseconds(timestamp: BTSnoop.timestamp(unixMicroseconds: Self.unixTime)) == Self.unixTime)
        #expect(BTSnoop.formatTimestamp(BTSnoop.timestamp(unixMicroseconds: Self.unixTime)) == "2023-11-14 22:13:20.123456 UTC")
        #expect(BTSnoop.formatTimestamp(BTSnoop.unixEpochOffset) == "1970-01-01 00:00:00.000000 UTC")
        #expect(BTSnoop.formatTimestamp(BTSnoop.unixEpochOffset - 1) == "1969-12-31 23:59:59.999999 UTC")
        #expect(BTSnoop.formatTimestamp(BTSnoop.year2000Offset) == "2000-01-01 00:00:00.000000 UTC")
        #expect(BTSnoop.formatTimestamp(BTSnoop.timestamp(unixMicroseconds: 951_782_400_000_000)) == "2000-02-29 00:00:00.000000 UTC")
        // Extreme values print without trapping.
        _ = BTSnoop.formatTimestamp(.min)
        _ = BTSnoop.formatTimestamp(.max)
    }

    @Test func writeReadRoundTripH4() throws {
        let packets: [(H4Frame, BTSnoopDirection)] = [
            (Self.reset, .sent), (Self.resetComplete, .received), (Self.aclIn, .received),
            (H4Frame(type: .aclData, packet: hex("40 00 05 00 01 00 04 00 0B")), .sent),
            (H4Frame(type: .synchronousData, packet: hex("01 00 01 AA")), .received),
            (H4Frame(type: .isoData, packet: hex("01 20 01 00 AA")), .sent),
        ]
        var writer = BTSnoopWriter()
        for (index, (frame, direction)) in packets.enumerated() {
            writer.write(frame, direction: direction, unixMicroseconds: Self.unixTime + Int64(index) * 1000, cumulativeDrops: UInt32(index))
        }
        var reader = try BTSnoopReader(bytes: writer.takeBytes())
        #expect(reader.datalink == .hciUART)
        for (index, (frame, direction)) in packets.enumerated() {
            let record = try #require(try reader.next())
            #expect(try record.frame(datalink: .hciUART) == frame)
            #expect(record.direction == direction)
            #expect(record.flags.contains(.commandOrEvent) == (frame.type == .command || frame.type == .event))
            #expect(record.cumulativeDrops == UInt32(index))
            #expect(record.unixMicroseconds == Self.unixTime + Int64(index) * 1000)
            #expect(record.originalLength == record.includedLength)
        }
        #expect(try reader.next() == nil)
        #expect(try reader.next() == nil)
    }

    @Test func unencapsulatedDatalinkUsesFlagsForTheType() throws {
        var writer = BTSnoopWriter(datalink: .hciUnencapsulated)
        writer.write(Self.reset, direction: .sent, unixMicroseconds: 1)
        writer.write(Self.resetComplete, direction: .received, unixMicroseconds: 2)
        writer.write(Self.aclIn, direction: .received, unixMicroseconds: 3)
        let bytes = writer.takeBytes()
        #expect(Array(bytes[16..<43]) == hex("00 00 00 03 00 00 00 03 00 00 00 02 00 00 00 00 00 DC DD B3 0F 2F 80 01 03 0C 00"))
        let (header, records, error) = try BTSnoopReader.readAll(bytes)
        #expect(header.datalink == .hciUnencapsulated)
        #expect(error == nil)
        #expect(try records.map { try $0.frame(datalink: .hciUnencapsulated) } == [Self.reset, Self.resetComplete, Self.aclIn])
        #expect(records.map(\.flags.rawValue) == [2, 3, 1])
    }

    @Test func truncatedFinalRecordIsReportedAfterTheGoodOnes() throws {
        var writer = BTSnoopWriter()
        writer.write(Self.reset, direction: .sent, unixMicroseconds: 0)
        writer.write(Self.resetComplete, direction: .received, unixMicroseconds: 1)
        let full = writer.takeBytes()
        let secondRecord = 16 + 24 + 4
        // Cut inside the second record's header and inside its data.
        for cut in (secondRecord + 1)..<full.count {
            let (_, records, error) = try BTSnoopReader.readAll(Array(full.prefix(cut)))
            #expect(records.count == 1)
            let available = cut - secondRecord
            let expected = available < 24 ? 24 : 24 + 7
            #expect(error == .truncatedRecord(recordOffset: secondRecord, expected: expected, available: available))
            #expect(error?.decodeError.code == .truncated)
        }
        // After the error, next() returns nil.
        var reader = try BTSnoopReader(bytes: Array(full.dropLast()))
        _ = try reader.next()
        #expect(throws: BTSnoopError.self) { try reader.next() }
        #expect(try reader.next() == nil)
    }

    @Test("a datalink 2001 record: flags index << 16 | opcode, the payload as data; direction from the opcode")
    func monitorRecords() throws {
        let command = BTSnoopRecord(flags: BTSnoopFlags(rawValue: 1 << 16 | 2), timestamp: 0, data: [0x03, 0x0C, 0x00])
        #expect(try command.frame(datalink: .linuxMonitor) == H4Frame(type: .command, packet: [0x03, 0x0C, 0x00]))
        #expect(try command.monitorPacket().index == 1)
        #expect(command.direction == .sent)
        let aclIn = BTSnoopRecord(flags: BTSnoopFlags(rawValue: 5), timestamp: 0, data: [0x40, 0x20, 0x00, 0x00])
        #expect(try aclIn.frame(datalink: .linuxMonitor).type == .aclData)
        #expect(aclIn.direction == .received)
        let note = BTSnoopRecord(flags: BTSnoopFlags(rawValue: 0xFFFF << 16 | 12), timestamp: 0, data: Array("hi".utf8) + [0])
        #expect(try note.monitorPacket() == HCIMonitorPacket(index: 0xFFFF, kind: .note("hi")))
        #expect(throws: DecodeError.self) { try note.frame(datalink: .linuxMonitor) }
        let shortIndex = BTSnoopRecord(flags: BTSnoopFlags(rawValue: 0), timestamp: 0, data: [0x00, 0x00])
        #expect(throws: DecodeError.self) { try shortIndex.monitorPacket() }
    }

    @Test func headerErrors() {
        let good = BTSnoopFileHeader().encode()
        for length in 0..<16 {
            #expect(throws: BTSnoopError.truncatedHeader(available: length)) { try BTSnoopReader(bytes: Array(good.prefix(length))) }
        }
        #expect(throws: BTSnoopError.badMagic(Array("btsnoap".utf8) + [0])) {
            try BTSnoopReader(bytes: Array("btsnoap".utf8) + [0] + Array(good[8...]))
        }
        #expect(throws: BTSnoopError.unsupportedVersion(2)) {
            try BTSnoopReader(bytes: BTSnoopFileHeader(version: 2).encode())
        }
        #expect(throws: BTSnoopError.unsupportedDatalink(.hciThreeWire)) {
            try BTSnoopReader(bytes: BTSnoopFileHeader(datalink: .hciThreeWire).encode())
        }
        // btmon's captures (the Linux monitor, 2001) are read.
        #expect((try? BTSnoopReader(bytes: BTSnoopFileHeader(datalink: .linuxMonitor).encode())) != nil)
        #expect(BTSnoopError.unsupportedDatalink(BTSnoopDatalink(7)).decodeError.offset == 12)
        // A header alone is an empty capture.
        #expect((try? BTSnoopReader.readAll(good))?.records.isEmpty == true)
    }

    @Test func includedLongerThanOriginalIsRefused() throws {
        let record = hex("00 00 00 02  00 00 00 04  00 00 00 02  00 00 00 00  00 DC DD B3 0F 2F 80 00  01 03 0C 00")
        let (_, records, error) = try BTSnoopReader.readAll(BTSnoopFileHeader().encode() + record)
        #expect(records.isEmpty)
        #expect(error == .includedLengthExceedsOriginal(recordOffset: 16, included: 4, original: 2))
    }

    @Test func snappedRecordKeepsItsOriginalLength() throws {
        let record = BTSnoopRecord(originalLength: 11, flags: .received, timestamp: 5, data: hex("02 40 20"))
        #expect(record.isSnapped)
        let (_, records, _) = try BTSnoopReader.readAll(BTSnoopFileHeader().encode() + record.encode())
        #expect(records == [record])
        #expect(throws: DecodeError.self) { try record.frame(datalink: .hciUART) }
    }

    @Test func recordDissection() {
        let record = BTSnoopRecord(flags: [.received, .commandOrEvent], cumulativeDrops: 2,
                                   timestamp: BTSnoop.timestamp(unixMicroseconds: Self.unixTime), data: hex("04 0E 04 01 03 0C 00"))
        #expect(record.dissection.renderText() == """
            btsnoop Record
              Original Length: 7
              Included Length: 7
              Packet Flags: 0x00000003 (Received, Command/Event)
              Cumulative Drops: 2
              Timestamp: \(BTSnoop.timestamp(unixMicroseconds: Self.unixTime)) (2023-11-14 22:13:20.123456 UTC)
              Packet Data: 04 0e 04 01 03 0c 00 (7 bytes)
            """)
    }

    @Test func hostileFilesNeverCrash() {
        var rng = SeededGenerator(seed: 0xB75)
        var writer = BTSnoopWriter()
        for index in 0..<20 { writer.write(Self.aclIn, direction: .received, unixMicroseconds: Int64(index)) }
        let valid = writer.takeBytes()
        for _ in 0..<3000 {
            var bytes = valid
            // Flip a few bytes after the header (or anywhere, sometimes), then maybe cut.
            for _ in 0..<Int.random(in: 1...6, using: &rng) {
                let index = Int.random(in: (Bool.random(using: &rng) ? 0 : 16)..<bytes.count, using: &rng)
                bytes[index] = UInt8.random(in: 0...255, using: &rng)
            }
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &rng)))
            if let (header, records, _) = try? BTSnoopReader.readAll(bytes) {
                for record in records {
                    #expect(record.includedLength <= record.originalLength)
                    _ = try? record.frame(datalink: header.datalink)
                    _ = record.dissection
                }
            }
        }
        for _ in 0..<1000 {
            let bytes = BTSnoop.identificationPattern + rng.bytes(Int.random(in: 0...80, using: &rng))
            _ = try? BTSnoopReader.readAll(bytes)
        }
    }
}
