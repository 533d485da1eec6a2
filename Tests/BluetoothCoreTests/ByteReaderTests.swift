import BluetoothCore
import Testing

@Suite struct ByteReaderTests {
    @Test func readsLittleEndianIntegers() throws {
        var reader = ByteReader([0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07])
        #expect(try reader.readUInt8() == 0x01)
        #expect(try reader.readUInt16() == 0x0302)
        #expect(try reader.readUInt32() == 0x0706_0504)
        #expect(reader.isAtEnd)
    }

    @Test func truncationNamesFieldAndOffset() {
        var reader = ByteReader([0x01, 0x02, 0x03])
        _ = try? reader.readUInt16("handle")
        #expect(throws: DecodeError(.truncated, at: 2, "expected 2 bytes for offset, 1 remains")) {
            try reader.readUInt16("offset")
        }
    }

    @Test func subReaderReportsOffsetsInParentTerms() throws {
        var reader = ByteReader([0xAA, 0xBB, 0x01, 0x02])
        try reader.skip(2)
        var sub = try reader.readSubReader(2, "payload")
        _ = try sub.readUInt8()
        #expect(sub.offset == 3)
        _ = try sub.readUInt8()
        do {
            _ = try sub.readUInt8("tail")
            Issue.record("read past the sub-reader's end")
        } catch {
            #expect(error.offset == 4)
            #expect(error.code == .truncated)
        }
    }

    @Test func expectEndReportsTrailingBytes() throws {
        var reader = ByteReader([0x01, 0x02])
        _ = try reader.readUInt8()
        #expect(throws: DecodeError(.trailingBytes, at: 1, "1 unexpected byte after Write Response")) {
            try reader.expectEnd("Write Response")
        }
    }

    @Test func writerRoundTrips() throws {
        var writer = ByteWriter()
        writer.write(UInt8(0xFE))
        writer.write(UInt16(0x1234))
        writer.writeUInt24(0x56_789A)
        writer.write(UInt64(0x0102_0304_0506_0708))
        writer.writeBigEndian(UInt32(0xDEAD_BEEF))
        var reader = ByteReader(writer.bytes)
        #expect(try reader.readUInt8() == 0xFE)
        #expect(try reader.readUInt16() == 0x1234)
        #expect(try reader.readUInt24() == 0x56_789A)
        #expect(try reader.readUInt64() == 0x0102_0304_0506_0708)
        #expect(try reader.readBigEndian(UInt32.self) == 0xDEAD_BEEF)
        #expect(reader.isAtEnd)
    }

    @Test func hexParsingAcceptsSeparatorsAndRejectsJunk() throws {
        #expect(try Hex.decode("0x01 02:0a-FF") == [0x01, 0x02, 0x0A, 0xFF])
        #expect(throws: DecodeError.self) { try Hex.decode("0g") }
        #expect(throws: DecodeError.self) { try Hex.decode("abc") }
        #expect(Hex.encode([0x01, 0xAB], separator: " ") == "01 ab")
    }
}
