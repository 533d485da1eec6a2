import ATT
import BluetoothCore
import PropertyBased
import Testing
import TestSupport

@Suite("ATT MTU helpers")
struct ATTMTUTests {
    @Test func valueSizes() {
        #expect(ATTMTU.maximumNotificationValueLength(mtu: 23) == 20)
        #expect(ATTMTU.maximumNotificationValueLength(mtu: 247) == 244)
        #expect(ATTMTU.maximumIndicationValueLength(mtu: 23) == 20)
        #expect(ATTMTU.maximumWriteValueLength(mtu: 517) == 514)
        #expect(ATTMTU.maximumSignedWriteValueLength(mtu: 23) == 8)
        #expect(ATTMTU.maximumPrepareWriteValueLength(mtu: 23) == 18)
        #expect(ATTMTU.maximumReadResponseValueLength(mtu: 23) == 22)
        #expect(ATTMTU.maximumReadMultipleResponseLength(mtu: 23) == 22)
        #expect(ATTMTU.maximumFindByTypeValueLength(mtu: 23) == 16)
        #expect(ATTMTU.maximumReadByTypeElementValueLength(mtu: 23) == 19)
        #expect(ATTMTU.maximumReadByTypeElementValueLength(mtu: 517) == 253)
        #expect(ATTMTU.maximumReadByGroupTypeElementValueLength(mtu: 23) == 17)
        #expect(ATTMTU.maximumReadByGroupTypeElementValueLength(mtu: 517) == 251)
        #expect(ATTMTU.maximumHandlesInformationCount(mtu: 23) == 5)
        #expect(ATTMTU.maximumReadMultipleHandleCount(mtu: 23) == 11)
        // Below the LE minimum counts as 23.
        #expect(ATTMTU.maximumNotificationValueLength(mtu: 0) == 20)
        #expect(ATTMTU.maximumNotificationValueLength(mtu: -5) == 20)
        #expect(ATTMTU.negotiated(clientRxMTU: 512, serverRxMTU: 247) == 247)
        #expect(ATTMTU.negotiated(clientRxMTU: 10, serverRxMTU: 247) == 23)
    }

    @Test func readResponseValue() {
        let value = [UInt8](0..<40)
        #expect(ATTMTU.readResponseValue(value, mtu: 23) == Array(0..<22))
        #expect(ATTMTU.readResponseValue(value, offset: 22, mtu: 23) == Array(22..<40))
        #expect(ATTMTU.readResponseValue(value, offset: 40, mtu: 23) == [])
        #expect(ATTMTU.readResponseValue(value, offset: 41, mtu: 23) == nil)
        #expect(ATTMTU.readResponseValue(value, offset: -1, mtu: 23) == nil)
    }

    @Test func readByTypePackingTakesSameLengthElementsThatFit() throws {
        // Characteristic declarations with 16-bit UUIDs are 5 octets: (23 - 2) / 7 = 3 fit.
        let declarations: [ATTHandleValue] = (0..<6).map { (index: Int) -> ATTHandleValue in
            let handle = UInt16(2 + 2 * index)
            return ATTHandleValue(handle: handle, value: [0x02, UInt8(handle + 1), 0x00, 0x00, 0x2A])
        }
        let packed = try #require(ATTReadByTypeResponse.packing(declarations, mtu: 23))
        #expect(packed.elements == Array(declarations.prefix(3)))
        #expect(ATTPDU.readByTypeResponse(packed).encode().count <= 23)
        // Stops at the first element of another length.
        let mixed = [declarations[0], ATTHandleValue(handle: 9, value: [1, 2, 3] + [UInt8](repeating: 0, count: 16)), declarations[1]]
        #expect(ATTReadByTypeResponse.packing(mixed, mtu: 23)?.elements == [declarations[0]])
        // Long values are cut to MTU - 4, and the cut length then groups.
        let long = [ATTHandleValue(handle: 1, value: .init(repeating: 7, count: 100)), ATTHandleValue(handle: 2, value: .init(repeating: 8, count: 60))]
        let cut = try #require(ATTReadByTypeResponse.packing(long, mtu: 23))
        #expect(cut.elements == [ATTHandleValue(handle: 1, value: .init(repeating: 7, count: 19))])
        #expect(ATTPDU.readByTypeResponse(cut).encode().count == 23)
        let wide = try #require(ATTReadByTypeResponse.packing(long, mtu: 517))
        #expect(wide.elements.count == 1)  // 100 and 60 differ
        #expect(ATTReadByTypeResponse.packing([ATTHandleValue](), mtu: 23) == nil)
        let huge = try #require(ATTReadByTypeResponse.packing([ATTHandleValue(handle: 1, value: .init(repeating: 1, count: 512))], mtu: 517))
        #expect(huge.elementLength == 255)
    }

    @Test func readByGroupTypePacking() throws {
        let services: [ATTAttributeGroupData] = (0..<5).map { (index: Int) -> ATTAttributeGroupData in
            let start = UInt16(1 + 4 * index)
            return ATTAttributeGroupData(handle: start, endGroupHandle: start + 3, value: [0x0D, 0x18])
        }
        let packed = try #require(ATTReadByGroupTypeResponse.packing(services, mtu: 23))
        #expect(packed.elements.count == 3)  // 2 + 3 * 6 = 20 ≤ 23 < 26
        let long = [ATTAttributeGroupData(handle: 0x90, endGroupHandle: 0x96, value: blueZService128.littleEndianBytes128)] + services
        #expect(ATTReadByGroupTypeResponse.packing(long, mtu: 23)?.elements.count == 1)
    }

    @Test func findInformationPacking() throws {
        let pairs = (1...8).map { ATTHandleUUID(handle: UInt16($0), uuid: BluetoothUUID(0x2900 + UInt16($0))) }
        let packed = try #require(ATTFindInformationResponse.packing(pairs, mtu: 23))
        #expect(packed.format == .uuid16)
        #expect(packed.information.count == 5)  // 2 + 5 * 4 = 22
        let wide = [ATTHandleUUID(handle: 1, uuid: blueZService128)] + pairs
        let widePacked = try #require(ATTFindInformationResponse.packing(wide, mtu: 23))
        #expect(widePacked.format == .uuid128)
        #expect(widePacked.information.count == 1)
        #expect(ATTFindInformationResponse.packing([ATTHandleUUID](), mtu: 23) == nil)
    }

    @Test func handlesInformationPacking() {
        let found: [ATTHandlesInformation] = (0..<10).map { (index: Int) -> ATTHandlesInformation in
            let start = UInt16(index * 4 + 1)
            return ATTHandlesInformation(foundAttributeHandle: start, groupEndHandle: start + 3)
        }
        #expect(ATTMTU.packingHandlesInformation(found, mtu: 23).count == 5)
    }

    @Test func readMultipleVariablePackingTruncatesTheLastValue() throws {
        let values: [[UInt8]] = [[1, 2, 3], .init(repeating: 9, count: 30), [4]]
        let packed = try #require(ATTReadMultipleVariableResponse.packing(values, mtu: 23))
        // 22 octets of tuples: 2 + 3, then 2 + 15 of 30.
        #expect(packed.tuples.count == 2)
        #expect(packed.isTruncated)
        #expect(packed.tuples[1].length == 30)
        #expect(packed.tuples[1].value.count == 15)
        let bytes = ATTPDU.readMultipleVariableResponse(packed).encode()
        #expect(bytes.count == 23)
        #expect(try ATTPDU(decoding: bytes) == .readMultipleVariableResponse(packed))
        // A value whose length field would be cut is left out.
        let exact: [[UInt8]] = [.init(repeating: 1, count: 19), [2, 3]]
        let left = try #require(ATTReadMultipleVariableResponse.packing(exact, mtu: 23))
        #expect(left.tuples.count == 1 && !left.isTruncated)
        #expect(ATTReadMultipleVariableResponse.packing([[UInt8]](), mtu: 23) == nil)
    }

    @Test func packingNeverExceedsTheMTU() async {
        await propertyCheck(input: Gen.int(in: 23...300), Gen.uint8().array(of: 0...40).array(of: 0...12)) { mtu, values in
            let elements = values.enumerated().map { ATTHandleValue(handle: UInt16($0.offset + 1), value: $0.element) }
            if let response = ATTReadByTypeResponse.packing(elements, mtu: mtu) {
                #expect(ATTPDU.readByTypeResponse(response).encode().count <= mtu)
            }
            let groups = values.enumerated().map {
                ATTAttributeGroupData(handle: UInt16($0.offset + 1), endGroupHandle: 0xFFFF, value: $0.element)
            }
            if let response = ATTReadByGroupTypeResponse.packing(groups, mtu: mtu) {
                #expect(ATTPDU.readByGroupTypeResponse(response).encode().count <= mtu)
            }
            if let response = ATTReadMultipleVariableResponse.packing(values, mtu: mtu) {
                let bytes = ATTPDU.readMultipleVariableResponse(response).encode()
                #expect(bytes.count <= mtu)
                #expect((try? ATTPDU(decoding: bytes)) == .readMultipleVariableResponse(response))
            }
        }
    }
}

@Suite("ATT dissection")
struct ATTDissectionTests {
    @Test func readByGroupTypeRequest() throws {
        let dissection = try ATTPDU(decoding: hex("100100ffff0028")).dissection
        #expect(dissection.label == "Read By Group Type Request")
        #expect(dissection.children == [
            Dissection("Starting Handle", "0x0001"),
            Dissection("Ending Handle", "0xFFFF"),
            Dissection("Attribute Group Type", "Primary Service (0x2800)"),
        ])
    }

    @Test func errorResponse() throws {
        let text = try ATTPDU(decoding: hex("011009000a")).dissection.renderText()
        #expect(text == """
            Error Response
              Request Opcode In Error: Read By Group Type Request (0x10)
              Attribute Handle In Error: 0x0009
              Error Code: Attribute Not Found (0x0A)
            """)
    }

    @Test func valuesShowHexAndPrintableText() throws {
        let dissection = try ATTPDU(decoding: hex("52030048656c6c6f")).dissection
        #expect(dissection.children[1] == Dissection("Attribute Value", "48 65 6c 6c 6f (5 bytes) \"Hello\""))
        let binary = try ATTPDU(decoding: hex("1b0300aabb")).dissection
        #expect(binary.children[1] == Dissection("Attribute Value", "aa bb (2 bytes)"))
    }

    @Test func groupValuesAndFindInformationUseSIGNames() throws {
        let services = try ATTPDU(decoding: hex("1106050008000d18")).dissection.renderText()
        #expect(services.contains("Attribute Value: Heart Rate (0x180D)"))
        let info = try ATTPDU(decoding: hex("05010400022905000129")).dissection.renderText()
        #expect(info.contains("Client Characteristic Configuration (0x2902)"))
        #expect(info.contains("Format: 16-bit UUIDs (0x01)"))
        let wide = try ATTPDU(decoding: hex("111490009600efcdab8967452301000000000ca00000")).dissection.renderText()
        #expect(wide.contains("0000A00C-0000-0000-0123-456789ABCDEF"))
    }

    @Test("every golden vector dissects with labelled fields", arguments: ATTGoldens.all)
    func everyGoldenDissects(_ golden: ATTGolden) {
        let dissection = golden.pdu.dissection
        #expect(dissection.label == golden.pdu.opcode.name)
        #expect(!dissection.renderJSON().isEmpty)
        func check(_ node: Dissection) {
            #expect(!node.label.isEmpty)
            node.children.forEach(check)
        }
        check(dissection)
    }
}

@Suite("ATT property round trips")
struct ATTPropertyTests {
    static let bytes = Gen.uint8().array(of: 0...30)

    @Test func handleValuePDUs() async {
        await propertyCheck(input: Gen.uint16(), Self.bytes, Gen.uint16()) { handle, value, offset in
            let pdus: [ATTPDU] = [
                .handleValueNotification(handle: handle, value: value),
                .handleValueIndication(handle: handle, value: value),
                .writeRequest(handle: handle, value: value),
                .writeCommand(handle: handle, value: value),
                .prepareWriteRequest(handle: handle, offset: offset, partValue: value),
                .prepareWriteResponse(handle: handle, offset: offset, partValue: value),
                .readResponse(value: value),
                .readBlobResponse(partValue: value),
                .readMultipleResponse(values: value),
                .readRequest(handle: handle),
                .readBlobRequest(handle: handle, offset: offset),
                .exchangeMTURequest(clientRxMTU: offset),
                .exchangeMTUResponse(serverRxMTU: offset),
                .errorResponse(requestOpcode: ATTOpcode(UInt8(truncatingIfNeeded: offset)), handle: handle, error: ATTErrorCode(UInt8(truncatingIfNeeded: handle))),
                .findByTypeValueRequest(range: ATTHandleRange(start: handle, end: offset), attributeType: offset, value: value),
                .signedWriteCommand(handle: handle, value: value, signature: ATTAuthenticationSignature(bytes: .init(repeating: UInt8(truncatingIfNeeded: offset), count: 12))!),
            ]
            for pdu in pdus {
                let encoded = pdu.encode()
                #expect((try? ATTPDU(decoding: encoded)) == pdu)
            }
        }
    }

    @Test func listPDUs() async {
        await propertyCheck(input: Gen.uint16().array(of: 2...20), Gen.uint8(in: 0...20), Self.bytes.array(of: 2...6)) { handles, length, values in
            let sameLength = values.map { Array(($0 + [UInt8](repeating: 0x5A, count: Int(length))).prefix(Int(length))) }
            let pdus: [ATTPDU] = [
                .readMultipleRequest(handles: handles),
                .readMultipleVariableRequest(handles: handles),
                .findByTypeValueResponse(handles.map { ATTHandlesInformation(foundAttributeHandle: $0, groupEndHandle: ~$0) }),
                .readByTypeResponse(try ATTReadByTypeResponse(elements: zip(handles, sameLength).map { ATTHandleValue(handle: $0, value: $1) })),
                .readByGroupTypeResponse(try ATTReadByGroupTypeResponse(elements: zip(handles, sameLength).map {
                    ATTAttributeGroupData(handle: $0, endGroupHandle: $0, value: $1)
                })),
                .multipleHandleValueNotification(try ATTMultipleHandleValueNotification(tuples: zip(handles, values).map { ATTHandleValue(handle: $0, value: $1) })),
                .readMultipleVariableResponse(try ATTReadMultipleVariableResponse(tuples: values.compactMap { ATTLengthValue(value: $0) })),
                .findInformationResponse(try ATTFindInformationResponse(information: handles.map { ATTHandleUUID(handle: $0, uuid: BluetoothUUID($0)) })),
                .findInformationResponse(try ATTFindInformationResponse(format: .uuid128, information: handles.map { ATTHandleUUID(handle: $0, uuid: BluetoothUUID(uuid32: UInt32($0) << 16 | 1)) })),
            ]
            for pdu in pdus {
                let encoded = pdu.encode()
                #expect((try? ATTPDU(decoding: encoded)) == pdu)
                #expect((try? ATTPDU(decoding: encoded))?.encode() == encoded)
            }
        }
    }

    @Test func uuidRequests() async {
        await propertyCheck(input: Gen.uint16(), Gen.uint16(), Gen.uint8().array(of: 16)) { start, end, raw in
            guard let wide = BluetoothUUID(bigEndianBytes: raw) else { return }
            for type in [BluetoothUUID(start), wide] {
                let range = ATTHandleRange(start: start, end: end)
                for pdu: ATTPDU in [
                    .readByTypeRequest(range: range, attributeType: type),
                    .readByGroupTypeRequest(range: range, groupType: type),
                    .findInformationRequest(range),
                ] {
                    #expect((try? ATTPDU(decoding: pdu.encode())) == pdu)
                }
            }
        }
    }
}
