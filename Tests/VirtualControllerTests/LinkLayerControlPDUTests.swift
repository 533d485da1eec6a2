import BluetoothCore
import BluetoothRuntime
import Foundation
import HCI
import TestSupport
import Testing
@testable import VirtualController
@testable import SharedAir
import LinkLayer

/// Golden vectors of the link-layer control PDUs our controller sends (Core 5.4 Vol 6 Part B §2.4.2, the CtrData
/// layouts of Figures 2.35–2.65), each checked three ways: our encoding is the spec's bytes, our decoder gives the
/// value back, and Wireshark's dissector (which we did not write) reads the same fields from those bytes in a data
/// PDU of a LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR capture. Hostile payloads: every known opcode with one octet too few
/// or too many throws; unknown opcodes are kept as they are.
@Suite struct LinkLayerControlPDUTests {
    struct Vector: Sendable, CustomStringConvertible {
        var pdu: LinkLayerControlPDU
        var hex: String
        /// tshark fields and the values it must show.
        var fields: [(String, String)]
        var description: String { "\(pdu)" }
    }

    static let vectors: [Vector] = [
        Vector(pdu: .connectionUpdateIndication(windowSize: 1, windowOffset: 5, interval: 24, latency: 0, timeout: 72, instant: 42),
               hex: "00 01 0500 1800 0000 4800 2a00",
               fields: [("btle.control.window_size", "1"), ("btle.control.window_offset", "5"), ("btle.control.interval", "24"),
                        ("btle.control.latency", "0"), ("btle.control.timeout", "72"), ("btle.control.instant", "42")]),
        Vector(pdu: .terminateIndication(errorCode: 0x13), hex: "02 13", fields: [("btle.control.error_code", "0x13")]),
        Vector(pdu: .encryptionRequest(randomNumber: 0x0102_0304_0506_0708, encryptedDiversifier: 0x1234,
                                       skdm: 0xACBD_CEDF_E0F1_0213, ivm: 0xBADC_AB24),
               hex: "03 0807060504030201 3412 1302f1e0dfcebdac 24abdcba",
               fields: [("btle.control.random_number", "72623859790382856"), ("btle.control.encrypted_diversifier", "4660"),
                        ("btle.control.master_session_key_diversifier", "12447332406068838931"),
                        ("btle.control.master_session_initialization_vector", "3135023908")]),
        Vector(pdu: .encryptionResponse(skds: 0x0213_2435_4657_6879, ivs: 0xDEAF_BABE),
               hex: "04 7968574635241302 bebaafde",
               fields: [("btle.control.slave_session_key_diversifier", "149503023865358457"),
                        ("btle.control.slave_session_initialization_vector", "3736058558")]),
        Vector(pdu: .startEncryptionRequest, hex: "05", fields: []),
        Vector(pdu: .startEncryptionResponse, hex: "06", fields: []),
        Vector(pdu: .unknownResponse(unknownType: 0x0E), hex: "07 0e", fields: [("btle.control.unknown_type", "0x0e")]),
        Vector(pdu: .featureRequest(features: 0x0000_0000_0000_19FF), hex: "08 ff19000000000000",
               fields: [("btle.control.feature_set", "0x00000000000019ff")]),
        Vector(pdu: .featureResponse(features: 0x0000_0000_0000_0901), hex: "09 0109000000000000",
               fields: [("btle.control.feature_set", "0x0000000000000901")]),
        Vector(pdu: .pauseEncryptionRequest, hex: "0a", fields: []),
        Vector(pdu: .pauseEncryptionResponse, hex: "0b", fields: []),
        Vector(pdu: .versionIndication(version: 0x0D, companyIdentifier: 0x05F1, subversion: 0x0104), hex: "0c 0d f105 0401",
               fields: [("btle.control.version_number", "0x0d"), ("btle.control.company_id", "0x05f1"),
                        ("btle.control.subversion_number", "0x0104")]),
        Vector(pdu: .rejectIndication(errorCode: 0x06), hex: "0d 06", fields: [("btle.control.error_code", "0x06")]),
        Vector(pdu: .peripheralFeatureRequest(features: 0x0000_0000_0000_0001), hex: "0e 0100000000000000",
               fields: [("btle.control.feature_set", "0x0000000000000001")]),
        Vector(pdu: .rejectExtendedIndication(rejectOpcode: 0x16, errorCode: 0x1A), hex: "11 16 1a",
               fields: [("btle.control.reject_opcode", "0x16"), ("btle.control.error_code", "0x1a")]),
        Vector(pdu: .lengthRequest(.init(maxRxOctets: 251, maxRxTime: 2120, maxTxOctets: 251, maxTxTime: 2120)),
               hex: "14 fb00 4808 fb00 4808",
               fields: [("btle.control.max_rx_octets", "251"), ("btle.control.max_rx_time", "2120"),
                        ("btle.control.max_tx_octets", "251"), ("btle.control.max_tx_time", "2120")]),
        Vector(pdu: .lengthResponse(.init(maxRxOctets: 27, maxRxTime: 328, maxTxOctets: 251, maxTxTime: 17040)),
               hex: "15 1b00 4801 fb00 9042",
               fields: [("btle.control.max_rx_octets", "27"), ("btle.control.max_rx_time", "328"),
                        ("btle.control.max_tx_octets", "251"), ("btle.control.max_tx_time", "17040")]),
        Vector(pdu: .phyRequest(txPHYs: 0x02, rxPHYs: 0x06), hex: "16 02 06",
               fields: [("btle.control.tx_phys", "0x02"), ("btle.control.rx_phys", "0x06")]),
        Vector(pdu: .phyResponse(txPHYs: 0x07, rxPHYs: 0x03), hex: "17 07 03",
               fields: [("btle.control.tx_phys", "0x07"), ("btle.control.rx_phys", "0x03")]),
        Vector(pdu: .phyUpdateIndication(centralToPeripheral: 0x04, peripheralToCentral: 0x02, instant: 0x0123), hex: "18 04 02 2301",
               fields: [("btle.control.m_to_s_phy", "0x04"), ("btle.control.s_to_m_phy", "0x02"), ("btle.control.instant", "291")]),
        // One direction unchanged (tshark 4.0 then calls the Instant reserved, which the spec does only when both are 0).
        Vector(pdu: .phyUpdateIndication(centralToPeripheral: 0x02, peripheralToCentral: 0x00, instant: 0x0010), hex: "18 02 00 1000",
               fields: [("btle.control.m_to_s_phy", "0x02"), ("btle.control.s_to_m_phy", "0x00")]),
    ]

    static func bytes(_ hex: String) -> [UInt8] {
        (try? Hex.decode(hex.replacingOccurrences(of: " ", with: ""))) ?? []
    }

    @Test(arguments: vectors)
    func encodesAndDecodesTheSpecificationsLayout(_ vector: Vector) throws {
        let bytes = Self.bytes(vector.hex)
        #expect(!bytes.isEmpty)
        #expect(vector.pdu.encode() == bytes)
        #expect(try LinkLayerControlPDU(decoding: bytes) == vector.pdu)
        #expect(vector.pdu.opcode == bytes[0])
    }

    @Test(arguments: vectors)
    func aWrongLengthThrows(_ vector: Vector) {
        let bytes = Self.bytes(vector.hex)
        #expect(throws: DecodeError.self) { try LinkLayerControlPDU(decoding: bytes + [0x00]) }
        if bytes.count > 1 {
            #expect(throws: DecodeError.self) { try LinkLayerControlPDU(decoding: Array(bytes.dropLast())) }
        }
    }

    @Test func unknownOpcodesAreKeptAndEmptyPayloadsThrow() throws {
        #expect(try LinkLayerControlPDU(decoding: [0x2F, 1, 2, 3]) == .unknown(opcode: 0x2F, data: [1, 2, 3]))
        #expect(LinkLayerControlPDU.unknown(opcode: 0x2F, data: [1, 2, 3]).encode() == [0x2F, 1, 2, 3])
        #expect(throws: DecodeError.self) { try LinkLayerControlPDU(decoding: []) }
        // Every opcode with every length up to 30 octets: a value or a typed error, and what decodes encodes back.
        for opcode in UInt8(0)...0x3F {
            for length in 0...30 {
                let payload = [opcode] + (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ Int(opcode)) }
                if let pdu = try? LinkLayerControlPDU(decoding: payload) {
                    #expect(pdu.encode() == payload, "\(Hex.encode(payload))")
                }
            }
        }
    }

    @Test(.enabled(if: Tshark.enabled, "tshark is not installed"))
    func wiresharkReadsTheSameFields() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ll-control-\(UUID().uuidString).pcap").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let sniffer = try LinkLayerSniffer(path: path, startMicroseconds: 1_700_000_000_000_000)
        for (index, vector) in Self.vectors.enumerated() {
            let payload = vector.pdu.encode()
            let header = LinkLayerDataHeader(llid: LinkLayerDataHeader.control, nextExpectedSequence: UInt8(index & 1),
                                             sequence: UInt8(index & 1), moreData: false, length: UInt8(payload.count))
            sniffer.write(AirPacket(time: StackInstant(nanoseconds: UInt64(index) * 1_000_000), kind: .data(link: 1, fromCentral: true),
                                    sender: BluetoothAddress(0xC0FFEE_000001), bytes: [header.firstOctet, header.length] + payload,
                                    channel: UInt8(index % 37), phy: .le1M, accessAddress: 0x5065_4A23, crcInit: 0x12_3456))
        }
        #expect(sniffer.finish() == nil)
        let names = Array(Set(Self.vectors.flatMap { $0.fields.map(\.0) })).sorted()
        let rows = try await Tshark.fields(path, ["btle.control_opcode", "_ws.malformed"] + names)
        try #require(rows.count == Self.vectors.count)
        for (vector, row) in zip(Self.vectors, rows) {
            #expect(row[0] == String(format: "0x%02x", vector.pdu.opcode), "\(vector): \(row)")
            #expect(row[1].isEmpty, "\(vector): malformed")
            for (name, value) in vector.fields {
                let column = try #require(names.firstIndex(of: name)) + 2
                #expect(row[column] == value, "\(vector): \(name) is \(row[column]), not \(value)")
            }
        }
    }
}
