import DBus
import TestSupport
import Testing

/// The wire format (D-Bus Specification, "Type System", "Marshaling (Wire Format)", "Message Format").
@Suite struct DBusCodecTests {
    @Test func signaturesParseAndPrintBack() throws {
        for text in ["", "y", "bnqiuxtdsogh", "v", "as", "a{sv}", "a{oa{sa{sv}}}", "(ii)", "a(yv)", "(s(iu)a{ys})", "aay"] {
            #expect(DBusType.signature(of: try DBusType.parse(signature: text)) == text, "\(text)")
        }
        let deep = String(repeating: "a", count: 32) + "y"
        #expect(try DBusType.parse(signature: deep).count == 1)
    }

    @Test(arguments: [
        ("a", "signature ends inside a type"),
        ("()", "empty struct in a signature"),
        ("(i", "unterminated struct in a signature"),
        ("{sv}", "dictionary entry outside an array in a signature"),
        ("a{vs}", "dictionary key of type v (a key must be basic)"),
        ("a{sii}", "dictionary entry of more than a key and a value in a signature"),
        ("z", "unknown type code 0x7a in a signature"),
        (String(repeating: "a", count: 33) + "y", "arrays nested deeper than 32 in a signature"),
        (String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33), "structs nested deeper than 32 in a signature"),
    ])
    func invalidSignaturesSayWhy(text: String, reason: String) {
        #expect(throws: DBusError(.decode, reason)) { try DBusType.parse(signature: text) }
    }

    /// The bus's Hello call as libdbus and every other client put it on the wire.
    @Test func helloIsTheWellKnownBytes() throws {
        var hello = DBusMessage.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                     interface: "org.freedesktop.DBus", member: "Hello")
        hello.serial = 1
        let expected: [UInt8] = [0x6C, 0x01, 0x00, 0x01, 0, 0, 0, 0, 0x01, 0, 0, 0, 0x6D, 0, 0, 0]
            + [0x01, 0x01, 0x6F, 0x00, 0x15, 0, 0, 0] + Array("/org/freedesktop/DBus".utf8) + [0, 0, 0]
            + [0x02, 0x01, 0x73, 0x00, 0x14, 0, 0, 0] + Array("org.freedesktop.DBus".utf8) + [0, 0, 0, 0]
            + [0x03, 0x01, 0x73, 0x00, 0x05, 0, 0, 0] + Array("Hello".utf8) + [0, 0, 0]
            + [0x06, 0x01, 0x73, 0x00, 0x14, 0, 0, 0] + Array("org.freedesktop.DBus".utf8) + [0, 0, 0, 0]
        #expect(try hello.encoded() == expected)
        #expect(try DBusMessage(decoding: expected) == hello)
    }

    /// A big-endian method return, built by hand: reply serial 5, body `us` = 0x01020304, "hi".
    @Test func bigEndianMessagesDecode() throws {
        let bytes: [UInt8] = [0x42, 0x02, 0x00, 0x01, 0, 0, 0, 0x0B, 0, 0, 0, 0x07, 0, 0, 0, 0x10,
                              0x05, 0x01, 0x75, 0x00, 0, 0, 0, 0x05, 0x08, 0x01, 0x67, 0x00, 0x02, 0x75, 0x73, 0x00,
                              0x01, 0x02, 0x03, 0x04, 0, 0, 0, 0x02, 0x68, 0x69, 0x00]
        let message = try DBusMessage(decoding: bytes)
        #expect(message.kind == .methodReturn && message.serial == 7 && message.replySerial == 5)
        #expect(message.body == [.uint32(0x0102_0304), .string("hi")])
    }

    @Test func everyTypeRoundTrips() throws {
        let body: [DBusValue] = [
            .byte(0xFE), .boolean(true), .int16(-2), .uint16(65535), .int32(-70000), .uint32(4_000_000_000),
            .int64(-1 << 40), .uint64(1 << 63), .double(-2.5), .string("héllo ✓"), .objectPath("/org/bluez/hci0"),
            .signature("a{sv}"), .unixFD(0), .variant(.variant(.int32(3))), .array(.string, []), .bytes([1, 2, 3]),
            .structure([.int32(1), .structure([.byte(2), .string("x")])]),
            .properties(["Name": .string("blue"), "RSSI": .int16(-60), "UUIDs": .array(.string, [.string("180d")])]),
            .array(.array(.byte), [.bytes([]), .bytes([9])]),
        ]
        var message = DBusMessage(kind: .signal, serial: 9, path: "/a/b_1", interface: "org.example.Test", member: "Everything",
                                  body: body)
        message.sender = ":1.7"
        let bytes = try message.encoded()
        #expect(try DBusMessage.frameLength(prefix: Array(bytes.prefix(16))) == bytes.count)
        #expect(try DBusMessage(decoding: bytes) == message)
        #expect(message.signature == "ybnqiuxtdsoghvasay(i(ys))a{sv}aay")
    }

    @Test func whatTheSpecificationForbidsIsNotSent() {
        func refused(_ value: DBusValue) -> Bool {
            var writer = DBusWriter()
            do { try writer.write(value) } catch { return error.code == .invalidArgument }
            return false
        }
        #expect(refused(.string("a\u{0}b")))
        #expect(refused(.objectPath("/a//b")))
        #expect(refused(.objectPath("a/b")))
        #expect(refused(.objectPath("/a/")))
        #expect(refused(.signature("a{vs}")))
        #expect(refused(.array(.int32, [.string("x")])))
        #expect(refused(.structure([])))
        #expect(!refused(.objectPath("/")))
        #expect(throws: DBusError(.invalidArgument, "a method call needs a path and a member")) {
            try DBusMessage(kind: .methodCall, serial: 1).encoded()
        }
        #expect(throws: DBusError(.invalidArgument, "\"bad\" is not a valid interface name")) {
            try DBusMessage.call(destination: nil, path: "/", interface: "bad", member: "M").encoded()
        }
    }

    @Test func hostileHeadersAreRefusedWithTheirOffset() throws {
        var call = DBusMessage.call(destination: "org.example", path: "/x", interface: "org.example.I", member: "M",
                                    body: [.boolean(true)])
        call.serial = 3
        let good = try call.encoded()
        var badOrder = good
        badOrder[0] = 0x58
        #expect(throws: DBusError(.decode, "unknown byte order 0x58 at offset 0")) { try DBusMessage(decoding: badOrder) }
        var badVersion = good
        badVersion[3] = 2
        #expect(throws: DBusError(.decode, "protocol version 2 at offset 3")) { try DBusMessage(decoding: badVersion) }
        var badBoolean = good
        badBoolean[badBoolean.count - 4] = 2
        #expect(throws: DBusError.self) { try DBusMessage(decoding: badBoolean) }
        var zeroSerial = good
        zeroSerial[8] = 0
        #expect(throws: DBusError(.decode, "serial 0 at offset 8")) { try DBusMessage(decoding: zeroSerial) }
        #expect(throws: DBusError.self) { try DBusMessage(decoding: Array(good.dropLast())) }
        // A length that claims more than the 128 MiB limit.
        var huge = good
        huge[4...7] = [0xFF, 0xFF, 0xFF, 0x7F]
        #expect(throws: DBusError.self) { try DBusMessage.frameLength(prefix: Array(huge.prefix(16))) }
    }

    /// Any bytes at all: a value or an error, never a crash or a hang (random frames and mutations of valid ones).
    @Test func anyBytesDecodeOrFail() throws {
        var generator = SeededGenerator(seed: 0xDB05)
        var call = DBusMessage.call(destination: "org.bluez", path: "/org/bluez/hci0/dev_00_11", interface: "org.bluez.Device1",
                                    member: "Connect", body: [.properties(["A": .bytes([1, 2]), "B": .array(.objectPath, [.objectPath("/")])])])
        call.serial = 77
        let valid = try call.encoded()
        var decoded = 0
        for round in 0..<20_000 {
            var bytes = valid
            if round % 4 == 0 {
                bytes = (0..<Int.random(in: 16...200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                bytes[0] = 0x6C
                bytes[3] = 1
            } else {
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            }
            if let total = try? DBusMessage.frameLength(prefix: Array(bytes.prefix(16))), total == bytes.count,
               (try? DBusMessage(decoding: bytes)) != nil {
                decoded += 1
            }
        }
        #expect(decoded > 0, "some mutations (in string contents) still decode")
    }
}
