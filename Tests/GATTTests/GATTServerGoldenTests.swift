import ATT
import BluetoothCore
import BluetoothRuntime
import GATT
import Testing
import TestSupport

/// Our server's answers to the client side of BlueZ's `SERVICE_DATA_1_PDUS` exchange (spec-vectors.md §2.2),
/// byte for byte, plus the canonical single PDUs of the same section.
@Suite("GATT server golden exchange (BlueZ SERVICE_DATA_1)")
struct GATTServerGoldenTests {
    @Test("the BlueZ exchange, request by request")
    func bluezExchange() throws {
        let harness = GATTServerTestHarness(database: try bluezServiceData1(), preferredMTU: 512)
        #expect(harness.exchange("020002") == ["030002"])
        #expect(harness.server.mtu(for: GATTConnectionID(1)) == 512)
        // #3/#4: BlueZ's scripted server answered one service per response; a server must pack as many as fit
        // (Vol 3 Part F §3.4.4.10), so ours answers both services in the first response.
        #expect(harness.exchange("100100ffff0028") == ["110601000400011805000800" + "0d18"])
        // #5/#6: the continuation from 0x0005 is exactly BlueZ's.
        #expect(harness.exchange("100500ffff0028") == ["1106050008000d18"])
        #expect(harness.exchange("100900ffff0028") == ["011009000a"])
        #expect(harness.exchange("100100ffff0128") == ["011001000a"])
        #expect(harness.exchange("08010004000228") == ["010801000a"])
        #expect(harness.exchange("08010004000328") == ["09070200020300002a"])
        #expect(harness.exchange("08030004000328") == ["010803000a"])
        #expect(harness.exchange("0404000400") == ["050104000129"])
        #expect(harness.exchange("08050008000328") == ["090706000a0700292a"])
        harness.expectClean()
    }

    @Test("canonical PDUs of spec-vectors §2.2 against the same database")
    func canonicalPDUs() throws {
        let harness = GATTServerTestHarness(database: try bluezServiceData1())
        #expect(harness.exchange("060100ffff00280d18") == ["0705000800"])
        #expect(harness.exchange("0a0300") == ["0b" + Hex.encode(Array("BlueZ".utf8))])
        #expect(harness.exchange("0c03000200") == ["0d" + Hex.encode(Array("ueZ".utf8))])
        #expect(harness.exchange("0e03000500") == ["0f" + Hex.encode(Array("BlueZ".utf8)) + "0d18"])
        #expect(harness.exchange("2003000500") == ["21" + "0500" + Hex.encode(Array("BlueZ".utf8)) + "0200" + "0d18"])
        // Write Req to the CCCD (0x0008) enabling notifications, then read it back.
        #expect(harness.exchange("1208000100") == ["13"])
        #expect(harness.exchange("0a0800") == ["0b0100"])
        #expect(harness.events == [.subscriptionChanged(connection: GATTConnectionID(1), valueHandle: 7, configuration: .notification)])
        // Prepare + Execute into the Manufacturer Name (0x0007, read|write).
        #expect(harness.exchange("1607000000010203") == ["1707000000010203"])
        #expect(harness.exchange("1801") == ["19"])
        #expect(harness.exchange("0a0700") == ["0b010203"])
        #expect(harness.exchange("5207000405") == [])
        #expect(harness.exchange("0a0700") == ["0b0405"])
        // Find Information over the whole database: 16-bit pairs, as many as fit 23 octets (5 pairs).
        #expect(harness.exchange("040100ffff") == ["050101000028020003280300002a0400012905000028"])
        harness.expectClean()
    }

    @Test("malformed and unsupported requests: Invalid PDU, Request Not Supported, silence, Invalid Handle")
    func malformed() throws {
        let harness = GATTServerTestHarness(database: try bluezServiceData1())
        #expect(harness.exchange("0a03") == ["010a000004"])
        #expect(harness.exchange("3f0102") == ["013f000006"])
        #expect(harness.exchange("7f0102") == [])
        #expect(harness.exchange("52") == [])
        #expect(harness.exchange("0a0900") == ["010a090001"])
        #expect(harness.exchange("0a0000") == ["010a000001"])
        #expect(harness.exchange("0405000100") == ["0104050001"])
        #expect(harness.exchange("100100ffff0328") == ["0110010010"])
        #expect(harness.exchange("021000") == ["030502"])
        #expect(harness.server.mtu(for: GATTConnectionID(1)) == 23)
        harness.expectClean()
    }

    @Test("pipelined requests are answered in order")
    func pipelined() throws {
        let harness = GATTServerTestHarness(database: try bluezServiceData1())
        // The harness answers each request at once, so pipelining is simulated on the bearer directly.
        var bearer = ATTBearer()
        var server = harness.server
        let connection = GATTConnectionID(1)
        var first = bearer.receive(hex("0a0300"), now: .zero)
        #expect(first == [.request(.readRequest(handle: 3))])
        #expect(bearer.receive(hex("0a0500"), now: .zero).isEmpty)
        #expect(bearer.receive(hex("0a0900"), now: .zero).isEmpty)
        var sent: [String] = []
        while let action = first.first {
            first.removeFirst()
            switch action {
            case .send(let bytes): sent.append(Hex.encode(bytes))
            case .request(let pdu): first += try bearer.respond(server.handleRequest(pdu, from: connection).response, now: .zero)
            default: Issue.record("unexpected \(action)")
            }
        }
        #expect(sent == ["0b" + Hex.encode(Array("BlueZ".utf8)), "0b0d18", "010a090001"])
        #expect(bearer.pendingIncomingRequestCount == 0)
    }
}
