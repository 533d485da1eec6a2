import ATT
import BluetoothCore
import TestSupport

/// A named golden vector: bytes and the PDU they decode to.
struct ATTGolden: Sendable, CustomStringConvertible {
    let name: String
    let hex: String
    let pdu: ATTPDU
    var bytes: [UInt8] { TestSupport.hex(hex) }
    var description: String { "\(name) \(hex)" }
}

// Test data built from constants: a failing construction is a bug in the test, so `try!` is fine here.
func readByTypeResponse(_ elements: [ATTHandleValue]) -> ATTPDU {
    .readByTypeResponse(try! ATTReadByTypeResponse(elements: elements))
}

func readByGroupTypeResponse(_ elements: [ATTAttributeGroupData]) -> ATTPDU {
    .readByGroupTypeResponse(try! ATTReadByGroupTypeResponse(elements: elements))
}

func findInformationResponse(_ format: ATTUUIDFormat, _ pairs: [(UInt16, BluetoothUUID)]) -> ATTPDU {
    let information = pairs.map { ATTHandleUUID(handle: $0.0, uuid: $0.1) }
    return .findInformationResponse(try! ATTFindInformationResponse(format: format, information: information))
}

func uuid128(_ text: String) -> BluetoothUUID {
    (try? BluetoothUUID(string: text)) ?? BluetoothUUID(0)
}

/// 128-bit UUID used by BlueZ's test-gatt.c: 0000A00C-0000-0000-0123-456789ABCDEF (LE efcdab89674523010000000000 0ca00000).
let blueZService128 = uuid128("0000A00C-0000-0000-0123-456789ABCDEF")
let blueZCharacteristic128 = uuid128("0000B009-0000-0000-0123-456789ABCDEF")

let range1toFFFF = ATTHandleRange(start: 0x0001, end: 0xFFFF)

enum ATTGoldens {
    /// spec-vectors.md §2.2, BlueZ SERVICE_DATA_1_PDUS exchange (rows 1–16).
    static let blueZExchange: [ATTGolden] = [
        ATTGolden(name: "1 Exchange MTU Req 512", hex: "020002", pdu: .exchangeMTURequest(clientRxMTU: 512)),
        ATTGolden(name: "2 Exchange MTU Rsp 512", hex: "030002", pdu: .exchangeMTUResponse(serverRxMTU: 512)),
        ATTGolden(name: "3 Read By Group Type Req 0x2800", hex: "100100ffff0028",
                  pdu: .readByGroupTypeRequest(range: range1toFFFF, groupType: BluetoothUUID(0x2800))),
        ATTGolden(name: "4 Read By Group Type Rsp GATT", hex: "1106010004000118",
                  pdu: readByGroupTypeResponse([ATTAttributeGroupData(handle: 1, endGroupHandle: 4, value: [0x01, 0x18])])),
        ATTGolden(name: "5 Read By Group Type Req from 5", hex: "100500ffff0028",
                  pdu: .readByGroupTypeRequest(range: ATTHandleRange(start: 5, end: 0xFFFF), groupType: BluetoothUUID(0x2800))),
        ATTGolden(name: "6 Read By Group Type Rsp Heart Rate", hex: "1106050008000d18",
                  pdu: readByGroupTypeResponse([ATTAttributeGroupData(handle: 5, endGroupHandle: 8, value: [0x0D, 0x18])])),
        ATTGolden(name: "7 Read By Group Type Req from 9", hex: "100900ffff0028",
                  pdu: .readByGroupTypeRequest(range: ATTHandleRange(start: 9, end: 0xFFFF), groupType: BluetoothUUID(0x2800))),
        ATTGolden(name: "8 Error Rsp Attribute Not Found", hex: "011009000a",
                  pdu: .errorResponse(requestOpcode: .readByGroupTypeRequest, handle: 9, error: .attributeNotFound)),
        ATTGolden(name: "9a Read By Group Type Req 0x2801", hex: "100100ffff0128",
                  pdu: .readByGroupTypeRequest(range: range1toFFFF, groupType: BluetoothUUID(0x2801))),
        ATTGolden(name: "9b Error Rsp", hex: "011001000a",
                  pdu: .errorResponse(requestOpcode: .readByGroupTypeRequest, handle: 1, error: .attributeNotFound)),
        ATTGolden(name: "10a Read By Type Req 0x2802", hex: "08010004000228",
                  pdu: .readByTypeRequest(range: ATTHandleRange(start: 1, end: 4), attributeType: BluetoothUUID(0x2802))),
        ATTGolden(name: "10b Error Rsp", hex: "010801000a",
                  pdu: .errorResponse(requestOpcode: .readByTypeRequest, handle: 1, error: .attributeNotFound)),
        ATTGolden(name: "11 Read By Type Req 0x2803", hex: "08010004000328",
                  pdu: .readByTypeRequest(range: ATTHandleRange(start: 1, end: 4), attributeType: BluetoothUUID(0x2803))),
        ATTGolden(name: "12 Read By Type Rsp char decl", hex: "09070200020300002a",
                  pdu: readByTypeResponse([ATTHandleValue(handle: 2, value: [0x02, 0x03, 0x00, 0x00, 0x2A])])),
        ATTGolden(name: "13a Read By Type Req from 3", hex: "08030004000328",
                  pdu: .readByTypeRequest(range: ATTHandleRange(start: 3, end: 4), attributeType: BluetoothUUID(0x2803))),
        ATTGolden(name: "13b Error Rsp", hex: "010803000a",
                  pdu: .errorResponse(requestOpcode: .readByTypeRequest, handle: 3, error: .attributeNotFound)),
        ATTGolden(name: "14 Find Information Req", hex: "0404000400",
                  pdu: .findInformationRequest(ATTHandleRange(start: 4, end: 4))),
        ATTGolden(name: "15 Find Information Rsp 0x2901", hex: "050104000129",
                  pdu: findInformationResponse(.uuid16, [(4, BluetoothUUID(0x2901))])),
        ATTGolden(name: "16 Read By Type Rsp Read|Write", hex: "090706000a0700292a",
                  pdu: readByTypeResponse([ATTHandleValue(handle: 6, value: [0x0A, 0x07, 0x00, 0x29, 0x2A])])),
    ]

    /// spec-vectors.md §2.2, "More BlueZ test-gatt.c PDUs".
    static let blueZExtra: [ATTGolden] = [
        ATTGolden(name: "two services, last ends at 0xFFFF", hex: "110610f018f00018ffffffff0a18",
                  pdu: readByGroupTypeResponse([
                      ATTAttributeGroupData(handle: 0xF010, endGroupHandle: 0xF018, value: [0x00, 0x18]),
                      ATTAttributeGroupData(handle: 0xFFFF, endGroupHandle: 0xFFFF, value: [0x0A, 0x18]),
                  ])),
        ATTGolden(name: "group with 128-bit UUID", hex: "111490009600efcdab8967452301000000000ca00000",
                  pdu: readByGroupTypeResponse([
                      ATTAttributeGroupData(handle: 0x0090, endGroupHandle: 0x0096, value: blueZService128.littleEndianBytes128),
                  ])),
        // spec-vectors.md prints this one with an extra 00 octet (22 data octets for a length of 21, which cannot
        // decode); the bytes here are BlueZ's own (unit/test-gatt.c CHARACTERISTIC_DISC_SMALL_DB, 23 octets).
        ATTGolden(name: "char with 128-bit UUID", hex: "091514f08215f0efcdab89674523010000000009b00000",
                  pdu: readByTypeResponse([
                      ATTHandleValue(handle: 0xF014, value: [0x82, 0x15, 0xF0] + blueZCharacteristic128.littleEndianBytes128),
                  ])),
        ATTGolden(name: "Find Info CCCD + User Description", hex: "05010400022905000129",
                  pdu: findInformationResponse(.uuid16, [(4, BluetoothUUID(0x2902)), (5, BluetoothUUID(0x2901))])),
        ATTGolden(name: "Exchange MTU 23", hex: "021700", pdu: .exchangeMTURequest(clientRxMTU: 23)),
        // Further PDUs of BlueZ unit/test-gatt.c (commit 00910a68a7d5).
        ATTGolden(name: "SERVICE_DATA_3 two characteristic declarations", hex: "09071001021101002a200102210101" + "2a",
                  pdu: readByTypeResponse([
                      ATTHandleValue(handle: 0x0110, value: [0x02, 0x11, 0x01, 0x00, 0x2A]),
                      ATTHandleValue(handle: 0x0120, value: [0x02, 0x21, 0x01, 0x01, 0x2A]),
                  ])),
        ATTGolden(name: "INCLUDE_DISC include declaration", hex: "090811f001000f000a18",
                  pdu: readByTypeResponse([ATTHandleValue(handle: 0xF011, value: [0x01, 0x00, 0x0F, 0x00, 0x0A, 0x18])])),
        ATTGolden(name: "PRIMARY_DISC_LARGE_DB three services", hex: "1106100013000118200029000aa0300032000ba0",
                  pdu: readByGroupTypeResponse([
                      ATTAttributeGroupData(handle: 0x0010, endGroupHandle: 0x0013, value: [0x01, 0x18]),
                      ATTAttributeGroupData(handle: 0x0020, endGroupHandle: 0x0029, value: [0x0A, 0xA0]),
                      ATTAttributeGroupData(handle: 0x0030, endGroupHandle: 0x0032, value: [0x0B, 0xA0]),
                  ])),
        ATTGolden(name: "Find Information Rsp 0x2900", hex: "050116f00029",
                  pdu: findInformationResponse(.uuid16, [(0xF016, BluetoothUUID(0x2900))])),
    ]

    /// spec-vectors.md §2.2, canonical single PDUs.
    static let canonical: [ATTGolden] = [
        ATTGolden(name: "Find By Type Value Req", hex: "060100ffff00280d18",
                  pdu: .findByTypeValueRequest(range: range1toFFFF, attributeType: 0x2800, value: [0x0D, 0x18])),
        ATTGolden(name: "Find By Type Value Rsp", hex: "0705000800",
                  pdu: .findByTypeValueResponse([ATTHandlesInformation(foundAttributeHandle: 5, groupEndHandle: 8)])),
        ATTGolden(name: "Read Req", hex: "0a0300", pdu: .readRequest(handle: 3)),
        ATTGolden(name: "Read Rsp", hex: "0b010203", pdu: .readResponse(value: [1, 2, 3])),
        ATTGolden(name: "Read Blob Req", hex: "0c03001600", pdu: .readBlobRequest(handle: 3, offset: 22)),
        ATTGolden(name: "Read Multiple Req", hex: "0e03000500", pdu: .readMultipleRequest(handles: [3, 5])),
        ATTGolden(name: "Write Req CCCD", hex: "1203000100", pdu: .writeRequest(handle: 3, value: [0x01, 0x00])),
        ATTGolden(name: "Write Rsp", hex: "13", pdu: .writeResponse),
        ATTGolden(name: "Prepare Write Req", hex: "1603000000010203",
                  pdu: .prepareWriteRequest(handle: 3, offset: 0, partValue: [1, 2, 3])),
        ATTGolden(name: "Execute Write Req commit", hex: "1801", pdu: .executeWriteRequest(flags: .write)),
        ATTGolden(name: "Handle Value Notification", hex: "1b0300aabb",
                  pdu: .handleValueNotification(handle: 3, value: [0xAA, 0xBB])),
        ATTGolden(name: "Handle Value Indication", hex: "1d0300aabb",
                  pdu: .handleValueIndication(handle: 3, value: [0xAA, 0xBB])),
        ATTGolden(name: "Handle Value Confirmation", hex: "1e", pdu: .handleValueConfirmation),
        ATTGolden(name: "Write Command", hex: "5203000102", pdu: .writeCommand(handle: 3, value: [0x01, 0x02])),
        ATTGolden(name: "Read Multiple Variable Req", hex: "2003000500",
                  pdu: .readMultipleVariableRequest(handles: [3, 5])),
        // Signature from spec-vectors.md §1.8 (n = 0 row).
        ATTGolden(name: "Signed Write Cmd", hex: "d20300010200000000b3a8594127ebc2c0",
                  pdu: .signedWriteCommand(handle: 3, value: [0x01, 0x02],
                                           signature: ATTAuthenticationSignature(bytes: hex("00000000b3a8594127ebc2c0"))!)),
    ]

    /// Hand-built from the field layouts of Vol 3 Part F §3.4 for the PDUs and forms the sources above lack.
    static let handBuilt: [ATTGolden] = [
        ATTGolden(name: "Error Rsp Invalid Handle", hex: "010a030001",
                  pdu: .errorResponse(requestOpcode: .readRequest, handle: 3, error: .invalidHandle)),
        ATTGolden(name: "Error Rsp Database Out Of Sync", hex: "0112050012",
                  pdu: .errorResponse(requestOpcode: .writeRequest, handle: 5, error: .databaseOutOfSync)),
        ATTGolden(name: "Error Rsp unknown code", hex: "01200000ee",
                  pdu: .errorResponse(requestOpcode: .readMultipleVariableRequest, handle: 0, error: ATTErrorCode(0xEE))),
        ATTGolden(name: "Exchange MTU Rsp 23", hex: "031700", pdu: .exchangeMTUResponse(serverRxMTU: 23)),
        ATTGolden(name: "Find Information Rsp 128-bit", hex: "05021500efcdab8967452301000000000ca00000",
                  pdu: findInformationResponse(.uuid128, [(0x15, blueZService128)])),
        // Format 0x02 with a UUID on the Bluetooth Base (0x2902 in 128-bit form): the format is kept, so the
        // bytes round-trip although the UUID equals its 16-bit form.
        ATTGolden(name: "Find Information Rsp 128-bit on the base", hex: "05020300fb349b5f800000800010000002290000",
                  pdu: findInformationResponse(.uuid128, [(3, BluetoothUUID(0x2902))])),
        ATTGolden(name: "Find By Type Value Rsp two", hex: "070100040005000800",
                  pdu: .findByTypeValueResponse([
                      ATTHandlesInformation(foundAttributeHandle: 1, groupEndHandle: 4),
                      ATTHandlesInformation(foundAttributeHandle: 5, groupEndHandle: 8),
                  ])),
        ATTGolden(name: "Find By Type Value Req 128-bit value", hex: "060100ffff0028efcdab8967452301000000000ca00000",
                  pdu: .findByTypeValueRequest(range: range1toFFFF, attributeType: 0x2800, value: blueZService128.littleEndianBytes128)),
        ATTGolden(name: "Read By Type Req 128-bit", hex: "080100ffffefcdab8967452301000000000ca00000",
                  pdu: .readByTypeRequest(range: range1toFFFF, attributeType: blueZService128)),
        ATTGolden(name: "Read By Type Rsp two elements", hex: "0904030068690500796f",
                  pdu: readByTypeResponse([ATTHandleValue(handle: 3, value: [0x68, 0x69]), ATTHandleValue(handle: 5, value: [0x79, 0x6F])])),
        ATTGolden(name: "Read By Type Rsp empty values", hex: "090203000400",
                  pdu: readByTypeResponse([ATTHandleValue(handle: 3, value: []), ATTHandleValue(handle: 4, value: [])])),
        ATTGolden(name: "Read Rsp empty", hex: "0b", pdu: .readResponse(value: [])),
        ATTGolden(name: "Read Blob Rsp", hex: "0d0102", pdu: .readBlobResponse(partValue: [1, 2])),
        ATTGolden(name: "Read Multiple Req three", hex: "0e030005000700", pdu: .readMultipleRequest(handles: [3, 5, 7])),
        ATTGolden(name: "Read Multiple Rsp", hex: "0f01020304", pdu: .readMultipleResponse(values: [1, 2, 3, 4])),
        ATTGolden(name: "Read By Group Type Req 128-bit", hex: "100100ffffefcdab8967452301000000000ca00000",
                  pdu: .readByGroupTypeRequest(range: range1toFFFF, groupType: blueZService128)),
        ATTGolden(name: "Read Multiple Variable Rsp", hex: "21020001020100" + "03",
                  pdu: .readMultipleVariableResponse(try! ATTReadMultipleVariableResponse(tuples: [
                      ATTLengthValue(value: [1, 2])!, ATTLengthValue(value: [3])!,
                  ]))),
        ATTGolden(name: "Read Multiple Variable Rsp truncated", hex: "2102000102050003" + "04",
                  pdu: .readMultipleVariableResponse(try! ATTReadMultipleVariableResponse(tuples: [
                      ATTLengthValue(value: [1, 2])!, ATTLengthValue(length: 5, truncatedValue: [3, 4])!,
                  ]))),
        ATTGolden(name: "Read Multiple Variable Rsp empty value", hex: "210000",
                  pdu: .readMultipleVariableResponse(try! ATTReadMultipleVariableResponse(tuples: [ATTLengthValue(value: [])!]))),
        ATTGolden(name: "Write Req empty", hex: "120300", pdu: .writeRequest(handle: 3, value: [])),
        ATTGolden(name: "Write Cmd text", hex: "52030048656c6c6f", pdu: .writeCommand(handle: 3, value: Array("Hello".utf8))),
        ATTGolden(name: "Signed Write Cmd empty value", hex: "d2030001000000273974f4392a232a",
                  pdu: .signedWriteCommand(handle: 3, value: [],
                                           signature: ATTAuthenticationSignature(bytes: hex("01000000273974f4392a232a"))!)),
        ATTGolden(name: "Prepare Write Req offset", hex: "1603001600aabb",
                  pdu: .prepareWriteRequest(handle: 3, offset: 22, partValue: [0xAA, 0xBB])),
        ATTGolden(name: "Prepare Write Rsp", hex: "1703000000010203",
                  pdu: .prepareWriteResponse(handle: 3, offset: 0, partValue: [1, 2, 3])),
        ATTGolden(name: "Execute Write Req cancel", hex: "1800", pdu: .executeWriteRequest(flags: .cancel)),
        ATTGolden(name: "Execute Write Rsp", hex: "19", pdu: .executeWriteResponse),
        ATTGolden(name: "Handle Value Notification empty", hex: "1b2a00", pdu: .handleValueNotification(handle: 0x2A, value: [])),
        ATTGolden(name: "Multiple Handle Value Notification", hex: "2303000200aabb05000100cc",
                  pdu: .multipleHandleValueNotification(try! ATTMultipleHandleValueNotification(tuples: [
                      ATTHandleValue(handle: 3, value: [0xAA, 0xBB]), ATTHandleValue(handle: 5, value: [0xCC]),
                  ]))),
        ATTGolden(name: "Multiple Handle Value Notification empty values", hex: "23030000000500" + "0000",
                  pdu: .multipleHandleValueNotification(try! ATTMultipleHandleValueNotification(tuples: [
                      ATTHandleValue(handle: 3, value: []), ATTHandleValue(handle: 5, value: []),
                  ]))),
    ]

    static let all: [ATTGolden] = blueZExchange + blueZExtra + canonical + handBuilt
}
